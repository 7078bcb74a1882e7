package model

import (
	"time"
)

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
	Wall     func() time.Time // the wall clock; time.Now unless a test sets it
	rep      TickReport       // the report of the tick in progress, finished by endTick
}

// frac is the part of the tick in progress gone by, in [0, 1]: 0 outside sim serve's ticks.
func (l *live) frac() float64 {
	if !l.inTick {
		return 0
	}
	f := float64(l.Wall().Sub(l.start)) / float64(l.interval)
	return min(max(f, 0), 1)
}

// Lag is the part of the last tick's work that reads do not show yet: 1 − frac within sim serve's
// tick in progress, 0 otherwise (every read sees the last tick's end).
func (s *Sim) Lag() float64 {
	if !s.Live.inTick {
		return 0
	}
	return 1 - s.Live.frac()
}

// Shown is a cumulative counter as a read sees it: its value at the last tick's end less the
// part of that tick's addition not yet shown. A copy created within the tick shows from 0.
func Shown(cur, tick, lag float64) float64 { return max(0, cur-lag*tick) }

// ShownQueue is a pool's queue length as a read sees it: from the tick's start to its end.
func ShownQueue(p *Pool, lag float64) float64 { return p.LastQueue - lag*(p.LastQueue-p.prevQueue) }

// beginLiveTick starts a tick of sim serve at the wall clock's now. Callers hold the lock.
func (s *Sim) beginLiveTick() {
	s.Live.rep = s.beginTick()
	s.Live.start, s.Live.inTick = s.Live.Wall(), true
}

// LiveStep ends sim serve's tick in progress and begins the next unless the run is done.
func (s *Sim) LiveStep() {
	s.Mu.Lock()
	defer s.Mu.Unlock()
	if !s.Live.inTick {
		return
	}
	rep := s.Live.rep
	s.Live.inTick = false
	s.endTick(&rep)
	if s.Ticks < s.maxTicks {
		s.beginLiveTick()
	}
}

// StartLive begins sim serve's first tick, each tick taking interval of wall time.
func (s *Sim) StartLive(interval time.Duration) {
	s.Mu.Lock()
	defer s.Mu.Unlock()
	if s.Live.Wall == nil {
		s.Live.Wall = time.Now
	}
	s.Live.interval = interval
	if s.Ticks < s.maxTicks && !s.Live.inTick {
		s.beginLiveTick()
	}
}
