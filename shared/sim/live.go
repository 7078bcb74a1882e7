package sim

import "time"

// live is sim serve's clock within a tick. A simulate run steps whole ticks between the functions'
// cycles and reads see every tick's end. sim serve runs in real time instead, and OpenSearch's
// counters move continuously: there each tick's first half (beginTick: the loads, queues and work
// served over the tick) runs at the tick's start, and a read made a fraction f of the way through
// the tick sees the virtual clock, and the counters that accumulate work (index_total,
// index_time_in_millis, query and fetch totals and times, thread pool completed, rejected and
// total_wait_time_in_nanos), f of the way from the tick's start to its end; the queue length moves
// linearly from the tick's start to its end. The second half (endTick: recoveries, the allocator,
// the clock's whole tick) runs at the tick's end, as in a simulate run. So a client sampling faster
// than tick_seconds sees counters that moved in proportion to the time since its last sample, and
// one sampling slower sees the same piecewise-linear counters sampled further apart.
type live struct {
	inTick   bool             // a tick is in progress: beginTick has run and endTick not yet
	start    time.Time        // the wall time the tick in progress began
	interval time.Duration    // the wall time one tick takes
	wall     func() time.Time // the wall clock; time.Now unless a test sets it
	rep      TickReport       // the report of the tick in progress, finished by endTick
}

// frac is the part of the tick in progress gone by, in [0, 1]: 0 outside sim serve's ticks.
func (l *live) frac() float64 {
	if !l.inTick {
		return 0
	}
	f := float64(l.wall().Sub(l.start)) / float64(l.interval)
	return min(max(f, 0), 1)
}

// lag is the part of the last tick's work that reads do not show yet: 1 − frac within sim serve's
// tick in progress, 0 otherwise (every read sees the last tick's end).
func (s *Sim) lag() float64 {
	if !s.live.inTick {
		return 0
	}
	return 1 - s.live.frac()
}

// shown is a cumulative counter as a read sees it: its value at the last tick's end less the
// part of that tick's addition not yet shown. A copy created within the tick shows from 0.
func shown(cur, tick, lag float64) float64 { return max(0, cur-lag*tick) }

// shownQueue is a pool's queue length as a read sees it: from the tick's start to its end.
func shownQueue(p *pool, lag float64) float64 { return p.lastQueue - lag*(p.lastQueue-p.prevQueue) }

// beginLiveTick starts a tick of sim serve at the wall clock's now. Callers hold the lock.
func (s *Sim) beginLiveTick() {
	s.live.rep = s.beginTick()
	s.live.start, s.live.inTick = s.live.wall(), true
}

// liveStep ends sim serve's tick in progress and begins the next unless the run is done.
func (s *Sim) liveStep() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.live.inTick {
		return
	}
	rep := s.live.rep
	s.live.inTick = false
	s.endTick(&rep)
	if s.ticks < s.maxTicks {
		s.beginLiveTick()
	}
}

// startLive begins sim serve's first tick, each tick taking interval of wall time.
func (s *Sim) startLive(interval time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.live.wall == nil {
		s.live.wall = time.Now
	}
	s.live.interval = interval
	if s.ticks < s.maxTicks && !s.live.inTick {
		s.beginLiveTick()
	}
}
