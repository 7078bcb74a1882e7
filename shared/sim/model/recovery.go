package model

// Hot-copy recovery, on by default at DefaultTranslogReplaySpeed (the figure `make it` measures);
// a scenario sets its own speed with cluster.translog_replay_speed, or 0 to turn it off. A peer recovery copies the shard's files at the recovery rate (phase 1 of
// OpenSearch's RecoverySourceHandler) and then replays, from the source's translog, the operations
// indexed while the files were copied (phase 2) before the copy starts. A relocation of a copy that
// is being written therefore takes bytes/rate for the files and then
//
//	replay seconds = w × copy seconds / DefaultTranslogReplaySpeed
//
// where w is the copy's write load in threads, integrated over the copy when it changes. Operations
// indexed during the replay are not replayed again: by then the target is in the replication group
// and receives them as a replica does. Until the replay ends the copy counts on both nodes' disk,
// holds its recovery slots and its load stays on the source. An idle copy (w = 0), and a new
// replica's recovery (whose copy bears no load until it starts), take bytes/rate alone.
//
// A check against a published relocation, not a fit: a 2.90 GB primary under bulk load took
// 861.5 s to move, with about 1.02 M translog operations replayed, where bytes/rate at 40 MB/s
// gives 72 s. The model gives 861.5 s when w / DefaultTranslogReplaySpeed = (861.5 − 72) / 72 ≈ 11:
// a copy written at 11 × DefaultTranslogReplaySpeed threads (2.5 threads at 0.23). The replay of
// 1.02 M operations in 790 s is about 1,300 operations a second. The figure shows the order of the
// effect — the replay, not the bytes, decides the time a hot copy takes to move — while the replay
// speed itself is the figure `make it` measures (calibration.go).

// LeastSecondsLeft is, in seconds from now, when the recovery would end at rate bytes per second
// and replaySpeed with its copy written at load threads from now on: the files left, then the
// replay of what was indexed over the whole file copy; once the files are copied, the replay left.
// A lower bound where the rate is the node's whole recovery rate.
func (r *Recovery) LeastSecondsLeft(rate, replaySpeed, load float64) float64 {
	if r.copied {
		return max(r.replayLeft, 0)
	}
	files := 0.0
	if rate > 0 {
		files = max(r.Bytes-r.done, 0) / rate
	}
	if replaySpeed <= 0 {
		return files
	}
	return files + (r.replayWork+max(load, 0)*files)/replaySpeed
}

// progress advances the recovery by dt seconds at rate bytes per second, replaying at
// replaySpeed (0: no replay modelled), and reports whether it has ended: its files copied and its
// translog replayed.
func (r *Recovery) progress(rate, replaySpeed, dt float64) bool {
	left := dt
	if !r.copied {
		step := rate * dt
		used := dt
		if r.done+step >= r.Bytes {
			used = 0
			if rate > 0 {
				used = min(dt, max(0, (r.Bytes-r.done)/rate))
			}
			r.copied = true
		}
		r.done += step
		r.copySeconds += used
		// The source indexes the copy's write load meanwhile; the target replays it afterwards.
		r.replayWork += r.copy.WriteDemand * used
		if !r.copied {
			return false
		}
		if replaySpeed > 0 {
			r.replayLeft = r.replayWork / replaySpeed
		}
		left = dt - used
	}
	r.replayLeft -= left
	return r.replayLeft <= 1e-9
}
