package runner

import (
	"context"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shardwise/shardwise/shared/config"
	"github.com/shardwise/shardwise/shared/engine"
	"github.com/shardwise/shardwise/shared/replicas"
	"github.com/shardwise/shardwise/shared/sim"
	"github.com/shardwise/shardwise/shared/state"
	"github.com/shardwise/shardwise/shared/state/dynamotest"
)

func TestMain(m *testing.M) { dynamotest.Main(m) }

// Two move invocations racing on one plan, with the state in DynamoDB (moto server) and the cluster
// the simulator over HTTP: each move reaches OpenSearch once, and the simulator, which flags a move
// command accepted twice, sees no violation.
func TestConcurrentMovesOnDynamoDB(t *testing.T) {
	if testing.Short() {
		t.Skip("needs moto")
	}
	ctx := context.Background()
	client := dynamotest.Client(t, dynamotest.Endpoint(t))
	table := dynamotest.NewTable(t, client)
	s, err := sim.New(scenario(t, "write-hotspot"), sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.Safety.DryRun = false
	// The breaker would also stop a second invocation that starts after the first one's relocations:
	// let it pass so the ledger alone is what keeps each move to one issue.
	cfg.Safety.MaxRelocating = 1000
	eng, _, stop, err := Attach(ctx, s, cfg, state.NewDynamo(client, table, s.Now), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()

	// Step until a plan with moves appears (the write spike is at 600 s).
	var plan engine.DetectResult
	for !s.Done() && len(plan.Plan.Moves) == 0 {
		s.Step()
		res, err := eng.Ingest(ctx, []string{ClusterName})
		if err != nil {
			t.Fatalf("ingest: %v", err)
		}
		if plan, err = eng.Detect(ctx, ClusterName, res[0].SnapshotKey); err != nil {
			t.Fatalf("detect: %v", err)
		}
	}
	if len(plan.Plan.Moves) == 0 {
		t.Fatal("no plan with moves in the whole scenario")
	}

	var wg sync.WaitGroup
	results := make([]engine.MoveResult, 2)
	errs := make([]error, 2)
	for i := range results {
		wg.Go(func() { results[i], errs[i] = eng.Move(ctx, ClusterName, plan.PlanKey) })
	}
	wg.Wait()
	executed := map[string]int{}
	ledgered := map[string]int{}
	for i, r := range results {
		if errs[i] != nil {
			t.Fatalf("move %d: %v", i, errs[i])
		}
		for _, o := range r.Outcomes {
			switch {
			case o.Outcome == engine.OutcomeExecuted:
				executed[o.Move.Key()]++
			case o.Outcome == engine.OutcomeSkipped && (strings.Contains(o.Reason, "ledger") || strings.Contains(o.Reason, "lease")):
				// The cluster's lease holds back an overlapping invocation; the ledger one that
				// comes after the first released the lease.
				ledgered[o.Move.Key()]++
			default:
				// Without the lease and the ledger the loser would reach OpenSearch and be refused there.
				t.Errorf("move %s: outcome %s (%s), want executed once and skipped by the lease or the ledger once", o.Move.Key(), o.Outcome, o.Reason)
			}
		}
	}
	for _, m := range plan.Plan.Moves {
		if ledgered[m.Key()] != 1 {
			t.Errorf("move %s: held back by the lease or the ledger %d times, want 1", m.Key(), ledgered[m.Key()])
		}
	}
	for _, m := range plan.Plan.Moves {
		if executed[m.Key()] != 1 {
			t.Errorf("move %s: executed %d times, want exactly 1 (outcomes %+v / %+v)", m.Key(), executed[m.Key()], results[0].Outcomes, results[1].Outcomes)
		}
	}
	// A third, later invocation (a redelivered event) finds the ledger and issues nothing.
	again, err := eng.Move(ctx, ClusterName, plan.PlanKey)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range again.Outcomes {
		if o.Outcome == engine.OutcomeExecuted {
			t.Errorf("redelivered plan executed %s again", o.Move.Key())
		}
	}
	for !s.Done() {
		s.Step()
	}
	res := s.Result()
	if res.Moves != len(plan.Plan.Moves) || res.SafetyViolations != 0 {
		t.Errorf("simulator: got %d moves, %d violations (%+v); want %d moves, 0 violations", res.Moves, res.SafetyViolations, res.Violations, len(plan.Plan.Moves))
	}
}

// Replica cooldowns live in DynamoDB: a fresh engine (a new Lambda container) picking up half-way
// through search-spike keeps the 30-minute scale-down wait the first engine started.
func TestReplicaCooldownsSurviveInDynamoDB(t *testing.T) {
	if testing.Short() {
		t.Skip("needs moto")
	}
	ctx := context.Background()
	client := dynamotest.Client(t, dynamotest.Endpoint(t))
	table := dynamotest.NewTable(t, client)
	s, err := sim.New(scenario(t, "search-spike"), sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.Safety.DryRun = false
	var downAt float64
	for half := range 2 {
		store := state.NewDynamo(client, table, s.Now)
		eng, events, stop, err := Attach(ctx, s, cfg, store, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		r := &run{engs: []*engine.Engine{eng}, events: events, copies: 1}
		// The first engine stops at 50 min: the spike ended at 41 min, a scale-down is pending.
		for !s.Done() && (half == 1 || s.Elapsed() < 50*time.Minute) {
			s.Step()
			var tk Tick
			if err := r.cycle(ctx, &tk); err != nil {
				t.Fatal(err)
			}
			for _, c := range tk.Replicas {
				if strings.HasPrefix(c, "products ") && half == 1 {
					downAt = s.Elapsed().Seconds()
				}
			}
		}
		if half == 0 {
			mem, _, err := state.GetLargeJSON[map[string]replicas.Memory](ctx, store, state.Key{PK: "cluster#" + ClusterName, SK: "replicas#memory"})
			if err != nil {
				t.Fatalf("cooldowns in DynamoDB: %v", err)
			}
			if mem["products"].LowerSince.IsZero() {
				t.Fatalf("products cooldown after the spike: got %+v, want a pending scale-down", mem["products"])
			}
		}
		stop()
	}
	if downAt < 2460+1800 || downAt > 2460+1800+90 {
		t.Errorf("second engine scaled products down at %vs, want 30 minutes after the spike ended (4260-4350 s)", downAt)
	}
}
