package runner

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shardwise/shardwise/shared/config"
	"github.com/shardwise/shardwise/shared/state"
)

// meetingStore holds the first read of a key whose sort key starts with wait until a write of a key
// whose sort key starts with arrive has been made, or until patience runs out (met then says no).
type meetingStore struct {
	state.Store
	wait, arrive string
	patience     time.Duration

	mu      sync.Mutex
	waited  bool
	arrived chan struct{}
	met     bool
}

func (s *meetingStore) Get(ctx context.Context, key state.Key) (state.Item, error) {
	s.mu.Lock()
	first := !s.waited && strings.HasPrefix(key.SK, s.wait)
	s.waited = s.waited || first
	s.mu.Unlock()
	if first {
		select {
		case <-s.arrived:
			s.mu.Lock()
			s.met = true
			s.mu.Unlock()
		case <-time.After(s.patience):
		}
	}
	return s.Store.Get(ctx, key)
}

func (s *meetingStore) Put(ctx context.Context, item state.Item, cond state.Condition) (state.Item, error) {
	it, err := s.Store.Put(ctx, item, cond)
	if strings.HasPrefix(item.Key.SK, s.arrive) {
		s.mu.Lock()
		select {
		case <-s.arrived:
		default:
			close(s.arrived)
		}
		s.mu.Unlock()
	}
	return it, err
}

// TestDetectAlongsideReplicas checks that "Stats Ingested" invokes detect and the replica
// controller at once, as EventBridge invokes a rule's targets: detect's first look for its plan
// waits for the replica controller's claim on the same snapshot, which it only gets when the two run
// at once (one after the other, detect waits in vain and goes on when its patience is out).
func TestDetectAlongsideReplicas(t *testing.T) {
	for _, tc := range []struct {
		name   string
		wait   string // the sort key prefix of the read held
		arrive string // and of the write it waits for
	}{
		{"detect's plan read waits for the replicas claim", "plan#", "replicas#done#"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var st *meetingStore
			sc := scenario(t, "steady")
			sc.DurationSeconds = 2 * sc.TickSeconds
			_, err := Run(context.Background(), sc, Options{Balancer: BalancerShardwise, Config: config.Default(),
				Store: func(clock state.Clock) state.Store {
					st = &meetingStore{Store: state.NewMemory(clock), wait: tc.wait, arrive: tc.arrive,
						patience: 20 * time.Second, arrived: make(chan struct{})}
					return st
				}})
			if err != nil {
				t.Fatal(err)
			}
			st.mu.Lock()
			defer st.mu.Unlock()
			if !st.waited {
				t.Fatalf("no read of a %q key", tc.wait)
			}
			if !st.met {
				t.Errorf("a write of a %q key never came while a read of %q waited: the functions ran one after the other", tc.arrive, tc.wait)
			}
		})
	}
}
