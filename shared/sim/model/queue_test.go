package model

import (
	"math"
	"testing"
)

func TestErlangC(t *testing.T) {
	// Reference values computed independently with exact fractions from the textbook formula
	// C = (a^c/c! · c/(c−a)) / (Σ_{k<c} a^k/k! + a^c/c! · c/(c−a)).
	tests := []struct {
		name string
		c    int
		a    float64
		want float64
	}{
		{"M/M/1 waits with probability rho", 1, 0.5, 0.5},
		{"two servers half busy", 2, 1, 1.0 / 3},
		{"ten servers at eight erlangs", 10, 8, 0.40918015079644354},
		{"write pool of 8 at 6 threads", 8, 6, 0.35698108587868027},
		{"search pool near saturation", 13, 12.5, 0.845051426292249},
		{"a hundred servers (a^c/c! would overflow)", 100, 90, 0.2169404809063664},
		{"two hundred servers one short of saturation", 200, 199, 0.9155567103538955},
		{"no load never waits", 8, 0, 0},
		{"at saturation always waits", 8, 8, 1},
		{"above saturation always waits", 8, 12, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := erlangC(tc.c, tc.a); math.Abs(got-tc.want) > 1e-12 {
				t.Errorf("erlangC(%d, %v): got %.17g, want %.17g", tc.c, tc.a, got, tc.want)
			}
		})
	}
}

func TestErlangWait(t *testing.T) {
	tests := []struct {
		name string
		c    int
		a, s float64
		want float64
	}{
		{"M/M/1 at rho 0.5 with 50 ms tasks", 1, 0.5, 0.05, 0.05},
		{"eight threads at six", 8, 6, 0.05, 0.008924527146967008},
		{"idle", 8, 0, 0.05, 0},
		{"saturated is unbounded", 8, 8, 0.05, math.Inf(1)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := ErlangWait(tc.c, tc.a, tc.s)
			if math.IsInf(tc.want, 1) {
				if !math.IsInf(got, 1) {
					t.Errorf("erlangWait: got %v, want +Inf", got)
				}
				return
			}
			if math.Abs(got-tc.want) > 1e-12 {
				t.Errorf("erlangWait: got %.17g, want %.17g", got, tc.want)
			}
		})
	}
}

func TestPoolGrowthAndDrain(t *testing.T) {
	// Eight threads of 50 ms tasks serve 160 tasks/s. Each step is 30 s at the given load.
	type step struct {
		load         float64
		wantBacklog  float64
		wantWait     float64
		wantRejected float64
		wantServed   float64
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"below saturation stays in steady state", []step{
			{load: 6, wantBacklog: 0, wantWait: 0.008924527146967008, wantServed: 120 * 30},
		}},
		{"overload grows the backlog by the excess each tick", []step{
			{load: 10, wantBacklog: 1200, wantWait: 7.5, wantServed: 160 * 30},
			{load: 10, wantBacklog: 2400, wantWait: 15, wantServed: 160 * 30},
		}},
		{"backlog drains when load falls, then steady state resumes", []step{
			{load: 10, wantBacklog: 1200, wantWait: 7.5, wantServed: 4800},
			{load: 6, wantBacklog: 0, wantWait: 0.008924527146967008, wantServed: 1200 + 3600},
		}},
		{"slow drain keeps the backlog above zero", []step{
			{load: 10, wantBacklog: 1200, wantWait: 7.5, wantServed: 4800},
			{load: 10, wantBacklog: 2400, wantWait: 15, wantServed: 4800},
			{load: 7, wantBacklog: 1800, wantWait: 11.25, wantServed: 4800},
		}},
		{"queue beyond 10,000 tasks is rejected", []step{
			{load: 20, wantBacklog: 7200, wantWait: 45, wantServed: 4800},
			{load: 20, wantBacklog: 10000, wantWait: 62.5, wantRejected: 4400, wantServed: 4800},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := Pool{Threads: 8, TaskSeconds: writeTaskSeconds}
			totalServed, totalRejected := 0.0, 0.0
			for i, st := range tc.steps {
				got := p.step(st.load, 30)
				totalServed += got.served
				totalRejected += got.rejected
				if math.Abs(p.Backlog-st.wantBacklog) > 1e-6 {
					t.Errorf("step %d backlog: got %v, want %v", i, p.Backlog, st.wantBacklog)
				}
				if math.Abs(got.wait-st.wantWait) > 1e-9 {
					t.Errorf("step %d wait: got %v, want %v", i, got.wait, st.wantWait)
				}
				if math.Abs(got.rejected-st.wantRejected) > 1e-6 {
					t.Errorf("step %d rejected: got %v, want %v", i, got.rejected, st.wantRejected)
				}
				if math.Abs(got.served-st.wantServed) > 1e-6 {
					t.Errorf("step %d served: got %v, want %v", i, got.served, st.wantServed)
				}
			}
			if math.Abs(p.Completed-totalServed) > 1e-6 || math.Abs(p.Rejected-totalRejected) > 1e-6 {
				t.Errorf("counters: got completed %v rejected %v, want %v and %v", p.Completed, p.Rejected, totalServed, totalRejected)
			}
		})
	}
}

// Just under saturation Erlang C's mean wait diverges; the queue's capacity bounds it.
func TestSteadyWaitBoundedByQueueCapacity(t *testing.T) {
	p := &Pool{Threads: 8, TaskSeconds: 0.05}
	full := QueueCapacity * 0.05 / 8
	for _, load := range []float64{8 - 1e-12, 8 - 1e-6, 7.9999} {
		got := p.step(load, 30)
		if got.wait > full || math.IsInf(got.wait, 0) || math.IsNaN(got.wait) {
			t.Errorf("load %v: wait %v, want at most %v", load, got.wait, full)
		}
		if got.queue > QueueCapacity {
			t.Errorf("load %v: queue %v over capacity %v", load, got.queue, float64(QueueCapacity))
		}
	}
}

// The wait is continuous and non-decreasing in the load across saturation: a load just under c
// once showed the full queue's 62.5 s and a load of exactly c none. Loads from 0.9c to 1.1c in
// steps of c/10,000, each from the same pool state, must give waits that never fall and never jump
// by more than maxJump, and load c must wait at least as long as the backlog takes to serve.
func TestWaitContinuousAcrossSaturation(t *testing.T) {
	const (
		steps   = 2000
		maxJump = 0.01 // seconds per step of c/10,000; the old model jumped 62.5 s at c
	)
	tests := []struct {
		name     string
		threads  int
		task     float64
		backlog  float64
		dt       float64
		wantAtC  float64 // the wait at load c exactly
		wantNote string
	}{
		{"write pool, empty", 8, writeTaskSeconds, 0, 30, 2 * math.Sqrt(0.05*30/(math.Pi*8)), "one tick's saturated queue"},
		{"write pool, 50 tasks behind, less than one tick builds", 8, writeTaskSeconds, 50, 30, 2 * math.Sqrt(0.05*30/(math.Pi*8)), "one tick's saturated queue"},
		{"write pool, 1,200 tasks behind", 8, writeTaskSeconds, 1200, 30, 7.5, "the backlog over capacity"},
		{"write pool, full queue", 8, writeTaskSeconds, QueueCapacity, 30, 62.5, "the full queue"},
		{"search pool, empty", 13, SearchTaskSeconds, 0, 30, 2 * math.Sqrt(0.02*30/(math.Pi*13)), "one tick's saturated queue"},
		{"32 threads, 10 s ticks, 500 tasks behind", 32, writeTaskSeconds, 500, 10, 500 * 0.05 / 32, "the backlog over capacity"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := float64(tc.threads)
			wait := func(load float64) float64 {
				p := Pool{Threads: tc.threads, TaskSeconds: tc.task, Backlog: tc.backlog}
				return p.step(load, tc.dt).wait
			}
			prev := wait(0.9 * c)
			for i := 1; i <= steps; i++ {
				load := c * (0.9 + 0.2*float64(i)/steps)
				got := wait(load)
				if got < prev-1e-12 {
					t.Fatalf("load %.5f: wait %v fell from %v", load, got, prev)
				}
				if got-prev > maxJump {
					t.Fatalf("load %.5f: wait %v jumped %v from %v, want at most %v", load, got, got-prev, prev, maxJump)
				}
				prev = got
			}
			atC := wait(c)
			if math.Abs(atC-tc.wantAtC) > 1e-9 {
				t.Errorf("load c: got wait %v, want %v (%s)", atC, tc.wantAtC, tc.wantNote)
			}
			if tc.backlog > 0 && atC < tc.backlog*tc.task/c {
				t.Errorf("load c with %v tasks behind: got wait %v, want at least %v", tc.backlog, atC, tc.backlog*tc.task/c)
			}
			eps := c * 1e-9
			if below, above := wait(c-eps), wait(c+eps); math.Abs(atC-below) > 1e-6 || math.Abs(above-atC) > 1e-6 {
				t.Errorf("load c: got wait %v, want the limit from both sides (%v below, %v above)", atC, below, above)
			}
		})
	}
}
