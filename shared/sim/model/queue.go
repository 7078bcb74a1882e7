package model

import (
	"math"
)

// erlangC returns the probability that an arriving task waits in an M/M/c queue with c servers and
// offered load a (in servers, a = λ/μ). It is 1 at or above saturation.
//
// It uses the Erlang B recursion B(k) = a·B(k-1) / (k + a·B(k-1)), B(0) = 1, which stays within [0, 1]
// for any c, and C = c·B / (c − a·(1 − B)); the textbook form with a^c/c! overflows long before
// c = 100.
func erlangC(c int, a float64) float64 {
	if a <= 0 {
		return 0
	}
	if a >= float64(c) {
		return 1
	}
	b := 1.0
	for k := 1; k <= c; k++ {
		b = a * b / (float64(k) + a*b)
	}
	return float64(c) * b / (float64(c) - a*(1-b))
}

// ErlangWait is the mean queue wait in seconds of an M/M/c queue with c servers, offered load a and
// service time s: W = C(c, a)·s / (c − a). Infinite at or above saturation.
func ErlangWait(c int, a, s float64) float64 {
	if a <= 0 {
		return 0
	}
	if a >= float64(c) {
		return math.Inf(1)
	}
	return erlangC(c, a) * s / (float64(c) - a)
}

// Pool is one thread pool (WRITE or search) of one node: c threads serving tasks of taskSeconds.
// Its wait is the larger of two parts, each continuous and non-decreasing in the load, so the wait
// is too, across saturation included: the settled M/M/c wait (settledWait), and the wait behind a
// fluid backlog that grows by arrivals minus capacity at or above saturation and drains below it.
type Pool struct {
	Threads     int
	TaskSeconds float64

	Backlog float64 // tasks queued beyond the settled queue, carried between ticks

	// Cumulative counters, as OpenSearch's thread_pool stats report them.
	Completed   float64
	Rejected    float64
	WaitSeconds float64 // total queue wait of served tasks (search's total_wait_time)
	Largest     int
	LastActive  float64
	LastQueue   float64
	LastWait    float64
	LastServed  float64
	// What the last tick added to rejected and waitSeconds, and the queue at its start: sim serve
	// shows a tick's progress in proportion to the time gone in it (live.go).
	LastRejected, LastWaitSum, prevQueue float64
}

// poolTick is what one tick did to a pool.
type poolTick struct {
	offered  float64 // threads the arriving work needs (the load)
	served   float64 // tasks served this tick
	rejected float64 // tasks rejected this tick
	wait     float64 // true mean queue wait in seconds at the end of the tick
	queue    float64 // tasks in the queue: Little's law on the settled wait, or the backlog
	active   float64 // mean busy threads
}

// settledWait is the M/M/c mean wait at this load, bounded by the wait a queue at exactly
// saturation builds in one tick of dt seconds from empty. Erlang C's wait grows without bound as
// the load nears c, but the time the queue takes to settle grows as fast (as 1/(1 − a/c)²), so a
// tick cannot reach it. By the heavy-traffic approximation a saturated queue is a reflected
// random walk whose arrivals and completions each run at c/s a second: after dt its mean length is
// √(4·c·dt/(π·s)), a wait of 2·√(s·dt/(π·c)). The bound holds at and above saturation too, where
// Erlang C's wait is infinite, so the wait at load c is the limit from both sides. A full queue
// bounds it as well.
func (p *Pool) settledWait(load, dt float64) float64 {
	c, s := float64(p.Threads), p.TaskSeconds
	bound := min(2*math.Sqrt(s*dt/(math.Pi*c)), QueueCapacity*s/c)
	return min(ErlangWait(p.Threads, load, s), bound)
}

// step advances the pool by dt seconds at offered load (threads busy the work would need).
func (p *Pool) step(load, dt float64) poolTick {
	c := float64(p.Threads)
	s := p.TaskSeconds
	lambda := load / s // arrivals per second
	capacity := c / s  // completions per second when all threads are busy
	t := poolTick{offered: load}
	arrivals := lambda * dt
	room := capacity * dt
	if net := p.Backlog + arrivals - room; net <= 0 {
		// Below saturation with no backlog, or a backlog that drained within the tick.
		t.served = p.Backlog + arrivals
		p.Backlog = 0
	} else {
		t.served = room
		p.Backlog = net
		if p.Backlog > QueueCapacity {
			t.rejected = p.Backlog - QueueCapacity
			p.Backlog = QueueCapacity
		}
	}
	t.active = t.served * s / dt
	settled := p.settledWait(load, dt)
	t.wait = max(settled, p.Backlog/capacity)
	t.queue = max(min(lambda, capacity)*settled, p.Backlog)
	p.Completed += t.served
	p.Rejected += t.rejected
	p.WaitSeconds += t.served * t.wait
	p.Largest = max(p.Largest, int(math.Ceil(t.active)))
	p.prevQueue = p.LastQueue
	p.LastActive, p.LastQueue, p.LastWait = t.active, t.queue, t.wait
	p.LastServed, p.LastRejected, p.LastWaitSum = t.served, t.rejected, t.served*t.wait
	return t
}

// reset empties the pool, as a node restart does.
func (p *Pool) reset() {
	*p = Pool{Threads: p.Threads, TaskSeconds: p.TaskSeconds}
}
