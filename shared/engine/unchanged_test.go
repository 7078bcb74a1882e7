package engine

import (
	"testing"
	"time"

	"github.com/shardwise/shardwise/shared/state"
)

// calmWorld is three nodes sharing a light write load, nobody queueing: nothing to correct.
func calmWorld() *world {
	return newWorld("a", "b", "c").
		index("x", 0, []float64{0.5}, []float64{1}, []string{"a"}).
		index("y", 0, []float64{0.5}, []float64{1}, []string{"b"}).
		index("z", 0, []float64{0.5}, []float64{1}, []string{"c"})
}

// memoryVersion is the stored version of a memory item, 0 when there is none.
func memoryVersion(t *testing.T, r *rig, sk string) int64 {
	t.Helper()
	_, ref, err := state.GetLarge(t.Context(), r.store, state.Key{PK: pk("prod"), SK: sk})
	if err != nil {
		t.Fatalf("read %s: %v", sk, err)
	}
	return ref.Version
}

// A cycle that leaves a memory as it was does not store it again (a DynamoDB write a cycle per
// cluster for nothing); a cycle that changes it stores it.
func TestUnchangedMemoryIsNotRewritten(t *testing.T) {
	tests := []struct {
		name  string
		world func() *world
		sk    string
		cycle func(t *testing.T, r *rig, key string)
		// seeded: the memory a calm cycle leaves is stored instead of a first cycle (a cluster
		// whose decisions are all due in the second).
		seeded      bool
		wantWritten bool
	}{
		{name: "detect, calm: the streaks stay empty", world: calmWorld, sk: memoryKey, cycle: detectCycle, wantWritten: false},
		{name: "detect, a hot node: its streak grows", world: hotWorld, sk: memoryKey, cycle: detectCycle, wantWritten: true},
		{name: "replicas, calm: no cooldown changes", world: calmWorld, sk: replicasMemoryKey, cycle: replicasCycle, wantWritten: false},
		{name: "replicas, a cap and a scale-up applied", world: replicaWorld, sk: replicasMemoryKey, cycle: replicasCycle, seeded: true,
			wantWritten: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := tc.world()
			r := newRig(t, replicasConfig(), map[string]*world{"prod": w})
			// The first sample has no rates; the second stores the memory (none was stored).
			r.ingest(t, "prod")
			w.tick(30 * time.Second)
			if key := r.ingest(t, "prod"); tc.seeded {
				calm := map[string]any{}
				if _, err := state.PutLargeJSON(t.Context(), r.store, state.Key{PK: pk("prod"), SK: tc.sk}, calm, state.LargeRef{},
					state.Condition{IfAbsent: true}, 0, w.Now()); err != nil {
					t.Fatal(err)
				}
			} else {
				tc.cycle(t, r, key)
			}
			before := memoryVersion(t, r, tc.sk)
			if before == 0 {
				t.Fatalf("%s: not stored by the first cycle with rates", tc.sk)
			}
			w.tick(30 * time.Second)
			tc.cycle(t, r, r.ingest(t, "prod"))
			if written := memoryVersion(t, r, tc.sk) != before; written != tc.wantWritten {
				t.Errorf("%s written again: %v, want %v", tc.sk, written, tc.wantWritten)
			}
		})
	}
}

func detectCycle(t *testing.T, r *rig, key string) {
	t.Helper()
	if _, err := r.e.Detect(t.Context(), "prod", key); err != nil {
		t.Fatalf("detect: %v", err)
	}
}

func replicasCycle(t *testing.T, r *rig, key string) {
	t.Helper()
	if _, err := r.e.Replicas(t.Context(), "prod", key); err != nil {
		t.Fatalf("replicas: %v", err)
	}
}
