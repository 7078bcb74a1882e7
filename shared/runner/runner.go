// Package runner is the local runner: every shardwise function in one process against the simulator
// on its virtual clock. The simulator serves OpenSearch's REST API on 127.0.0.1 and the functions
// reach it through the production client over HTTP; events go through an in-memory bus and are
// dispatched the way the EventBridge rules dispatch them in AWS.
package runner

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/shardwise/shardwise/shared/allocation"
	"github.com/shardwise/shardwise/shared/baseline/sway"
	"github.com/shardwise/shardwise/shared/bus"
	"github.com/shardwise/shardwise/shared/collect"
	"github.com/shardwise/shardwise/shared/config"
	"github.com/shardwise/shardwise/shared/engine"
	"github.com/shardwise/shardwise/shared/opensearch"
	"github.com/shardwise/shardwise/shared/sim"
	"github.com/shardwise/shardwise/shared/state"
	"github.com/shardwise/shardwise/shared/telemetry"
)

// Balancers the runner knows.
const (
	BalancerShardwise = "shardwise"
	// BalancerNone is OpenSearch's own count balancer and nothing else.
	BalancerNone = "none"
	// BalancerESWeights runs Elasticsearch's weight function (write load and disk) instead of
	// OpenSearch's count balancer.
	BalancerESWeights = "es-weights"
	// BalancerSway runs the Sway rebalancer each cycle instead of OpenSearch's count balancer.
	BalancerSway = "sway"
	// BalancerESWeightsLive is es-weights fed each shard's true write load every tick instead of
	// Elasticsearch's fixed per-index forecast: an oracle, not a baseline anyone can run.
	BalancerESWeightsLive = "es-weights-live"
	// BalancerESWriteLoad is es-weights with Elasticsearch's write-load decider, which moves copies
	// off write-load hotspots and keeps them from nodes near saturation.
	BalancerESWriteLoad = "es-writeload"
)

// Balancers lists every balancer, in the order reports show them.
var Balancers = []string{BalancerShardwise, BalancerNone, BalancerESWeights, BalancerSway, BalancerESWriteLoad, BalancerESWeightsLive}

// ClusterName is the simulated cluster's name in the configuration.
const ClusterName = "sim"

// Options configure a run.
type Options struct {
	Balancer string
	// Config is the shardwise configuration; its clusters are replaced by the simulator.
	Config config.Config
	// Log receives the functions' JSON logs (io.Discard by default).
	Log io.Writer
	// OnTick is called after each tick with what happened.
	OnTick func(Tick)
	// Concurrency runs this many racing copies of every function per trigger, as duplicate
	// EventBridge deliveries and overlapping schedules would: the schedule's ingest N times at
	// once, then each distinct event N times at once. 0 or 1 runs each once.
	Concurrency int
	// Store builds the state store on the simulator's clock; nil: an in-memory store. A caller
	// that measures what the functions write wraps one.
	Store func(clock state.Clock) state.Store
	// Metrics receives the functions' metrics; nil: none.
	Metrics engine.MetricSink
	// ClockSkew offsets racing copy i's clock by ClockSkew[i mod len]: invocations on different
	// Lambda hosts do not share one clock. Copies differing by more than the lease's documented
	// bound (engine.leaseClockSkew, 5 s) could both hold the lease, so faults stay within it.
	ClockSkew []time.Duration
	// AlertsPerTick adds this many alarm-triggered ingest-and-plan calls per tick (what the
	// CloudWatch alarm and the metrics webhook invoke), racing the schedule's ingest and each
	// other: a flood of triggers within one stats interval.
	AlertsPerTick int
	// AtEnd, when set, is called after the last tick with the simulator's REST API, so a test can
	// read the cluster as an operator would (settings, routing) before the run is torn down.
	AtEnd func(api http.Handler) error
	// KillMoves is the share of move invocations killed part-way, as a Lambda timeout or a crashed
	// host ends one: at a random one of its first store writes, the write fails and the
	// invocation's context is cancelled, so whatever it had not yet recorded stays unrecorded. The
	// lease it held is left to expire. Kills are drawn from the scenario's seed.
	KillMoves float64
	// PluginAlone leaves the sandboxes to the simulated workload-management plugin where it
	// enforces them, without shardwise's second line beside it (engine.SandboxLoop.PluginAlone).
	PluginAlone bool
}

// Tick is one tick's summary for progress output.
type Tick struct {
	N, Of      int
	At         time.Duration
	Nodes      []string // nodes in the cluster this tick
	Hot        []string // nodes at or over 3 s true queue latency
	Moves      []string // moves executed (or dry-run) this tick: outcome, index[shard] from→to
	Replicas   []string
	Breaker    string
	ScaleUp    string
	Relocating int
	// ScaleUpBound is the bound the tick's Scale Up Needed named, when one was emitted.
	ScaleUpBound string
	// Report is the simulator's own view of the tick: true loads, threads, queues.
	Report sim.TickReport
	// Plans are the plans detect made this tick (not those it found already made), and Issued the
	// moves the move function executed (or dry-ran), as planned: loads, phases and swap groups.
	Plans  []allocation.Plan
	Issued []allocation.Move
}

// Result is the run result of docs/scenarios.md.
type Result struct {
	sim.Result
	Balancer       string  `json:"balancer"`
	PlanMsP50      float64 `json:"plan_ms_p50"`
	PlanMsMax      float64 `json:"plan_ms_max"`
	ScaleUpSignals int     `json:"scale_up_signals"`
	// UnrelievedHotspotCycles counts the cycles whose plan left a hot node with no move planned
	// for it, none relocating off it, and no bound proving the cluster short of room: the
	// planner's shortfall ("Hotspot Unrelieved"), never a scale-up.
	UnrelievedHotspotCycles int `json:"unrelieved_hotspot_cycles"`
	// HotCyclesByOutcome counts, per outcome, the hot nodes of every plan made (a node hot in n
	// plans counts n times): allocation.OutcomePlanned when a group of moves off it was planned,
	// otherwise why not, as the kind of the plan's note on it (Hotspot.Outcome). It tells where a
	// run's hot time went: waiting for relocations in flight, for recovery slots, or a search that
	// found nothing.
	HotCyclesByOutcome map[string]int `json:"hot_cycles_by_outcome,omitempty"`
	// KilledMoves counts the move invocations Options.KillMoves killed (a test's figure, not part
	// of the result format).
	KilledMoves int `json:"-"`
}

// Outcomes lists HotCyclesByOutcome, the most frequent outcome first ("relief-in-flight 148,
// planned 2"); empty when no plan had a hot node.
func (r Result) Outcomes() string {
	kinds := slices.SortedFunc(maps.Keys(r.HotCyclesByOutcome), func(a, b string) int {
		return cmp.Or(cmp.Compare(r.HotCyclesByOutcome[b], r.HotCyclesByOutcome[a]), cmp.Compare(a, b))
	})
	parts := make([]string, len(kinds))
	for i, k := range kinds {
		parts[i] = fmt.Sprintf("%s %d", k, r.HotCyclesByOutcome[k])
	}
	return strings.Join(parts, ", ")
}

// MarshalJSON keeps the documented field order readable: the simulator's fields with ours.
func (r Result) MarshalJSON() ([]byte, error) {
	type plain Result
	return json.Marshal(plain(r))
}

// Attach serves the simulator over HTTP on 127.0.0.1 and builds an engine that reaches it through
// the production client, on the simulator's virtual clock, with the given store and an in-memory
// bus. stop shuts the server down.
func Attach(ctx context.Context, s *sim.Sim, cfg config.Config, store state.Store, logw io.Writer) (*engine.Engine, *bus.Memory, func(), error) {
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return nil, nil, nil, fmt.Errorf("simulator listen: %w", err)
	}
	srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	stop := func() { _ = srv.Close() }
	url := "http://" + ln.Addr().String()
	cfg.Clusters = []config.Cluster{{Name: ClusterName, URLs: []string{url}, Auth: string(opensearch.AuthNone)}}
	if err := cfg.Validate(); err != nil {
		stop()
		return nil, nil, nil, err
	}
	client, err := opensearch.New(ctx, opensearch.Config{URLs: []string{url}, Auth: opensearch.AuthNone})
	if err != nil {
		stop()
		return nil, nil, nil, err
	}
	conns := collect.One(collect.New(client, s.Now))
	events := &bus.Memory{}
	eng := &engine.Engine{
		Store:   store,
		Bus:     events,
		Cluster: conns.Cluster,
		Tenants: conns.Tenants,
		Clock:   s.Now,
		Log:     slog.New(slog.NewJSONHandler(logw, nil)),
		Config:  cfg,
	}
	return eng, events, stop, nil
}

// Run drives the scenario to its end.
func Run(ctx context.Context, sc *sim.Scenario, opts Options) (Result, error) {
	if opts.Balancer == "" {
		opts.Balancer = BalancerShardwise
	}
	// The simulator holds each balancer that issues reroute moves to its own cap per cycle.
	rebalancer, perCycle := sim.RebalancerOpenSearch, 0
	switch opts.Balancer {
	case BalancerShardwise:
		perCycle = opts.Config.Safety.MaxMovesPerCycle
	case BalancerNone:
	case BalancerESWeights:
		rebalancer = sim.RebalancerESWeights
	case BalancerESWeightsLive:
		rebalancer = sim.RebalancerESWeightsLive
	case BalancerESWriteLoad:
		rebalancer = sim.RebalancerESWriteLoad
	case BalancerSway:
		rebalancer, perCycle = sim.RebalancerOff, sway.Default().MaxMovesPerCycle
	default:
		return Result{}, fmt.Errorf("balancer %q: want one of %s", opts.Balancer, strings.Join(Balancers, ", "))
	}
	s, err := sim.New(sc, sim.Options{MaxMovesPerCycle: perCycle, Rebalancer: rebalancer})
	if err != nil {
		return Result{}, err
	}
	defer collectLess()()
	logw := opts.Log
	if logw == nil || logw == io.Discard {
		logw = io.Discard
	} else {
		// The functions' loggers and the logs of those invoked at once (invokeAll) write to it.
		logw = &lockedWriter{w: logw}
	}
	var store state.Store = state.NewMemory(s.Now)
	if opts.Store != nil {
		store = opts.Store(s.Now)
	}
	eng, events, stop, err := Attach(ctx, s, opts.Config, store, logw)
	if err != nil {
		return Result{}, err
	}
	eng.Metrics = opts.Metrics
	eng.SandboxLoop.PluginAlone = opts.PluginAlone
	defer stop()
	r := &run{events: events, logw: logw, copies: max(opts.Concurrency, 1), alerts: opts.AlertsPerTick,
		killShare: opts.KillMoves, kills: rand.New(rand.NewPCG(sc.Seed, sc.Seed^0x4b111))}
	if r.copies == 1 {
		paceSandbox(eng, s)
	}
	for i := range r.copies {
		// Each copy is its own invocation on its own host: the same store, cluster and bus, its
		// own clock.
		c := *eng
		if len(opts.ClockSkew) > 0 {
			skew := opts.ClockSkew[i%len(opts.ClockSkew)]
			c.Clock = func() time.Time { return s.Now().Add(skew) }
		}
		r.engs = append(r.engs, &c)
	}
	var sw *swayRun
	if opts.Balancer == BalancerSway {
		if sw, err = newSwayRun(ctx, eng, s.Now, opts.Config.Safety.DryRun, logw); err != nil {
			return Result{}, err
		}
	}
	total := int(sc.DurationSeconds / sc.TickSeconds)
	n := 0
	for !s.Done() {
		if err := ctx.Err(); err != nil {
			return Result{}, err
		}
		rep := s.Step()
		n++
		t := Tick{N: n, Of: total, At: s.Elapsed(), Relocating: rep.Relocating, Report: rep}
		for _, nt := range rep.Nodes {
			t.Nodes = append(t.Nodes, nt.Name)
			if nt.Hot {
				t.Hot = append(t.Hot, fmt.Sprintf("%s %.1fs", nt.Name, nt.QueueLatencySeconds))
			}
		}
		if opts.Balancer == BalancerShardwise {
			if err := r.cycle(ctx, &t); err != nil {
				return Result{}, err
			}
		}
		if sw != nil {
			if err := sw.cycle(ctx, &t); err != nil {
				return Result{}, err
			}
		}
		if opts.OnTick != nil {
			opts.OnTick(t)
		}
	}
	if opts.AtEnd != nil {
		if err := opts.AtEnd(s.Handler()); err != nil {
			return Result{}, fmt.Errorf("at end: %w", err)
		}
	}
	res := Result{Result: s.Result(), Balancer: opts.Balancer, ScaleUpSignals: r.scaleUps, UnrelievedHotspotCycles: r.unrelieved, KilledMoves: r.killed}
	if len(r.outcomes) > 0 {
		res.HotCyclesByOutcome = r.outcomes
	}
	if len(r.planMs) > 0 {
		slices.Sort(r.planMs)
		res.PlanMsP50 = r.planMs[len(r.planMs)/2]
		res.PlanMsMax = r.planMs[len(r.planMs)-1]
	}
	return res, nil
}

// SandboxLoopBudget is how long the sandbox function loops in a run: as deployed, its 35 s timeout
// less engine.SandboxMargin, one 30 s stats cycle.
const SandboxLoopBudget = 35*time.Second - engine.SandboxMargin

// errRunOver ends the sandbox function's loop when the scenario has run its course.
var errRunOver = errors.New("the scenario has run its course")

// paceSandbox lets the sandbox function's loop run on the simulator's clock: each of its sleeps
// steps the simulator by whole ticks. That is only faithful when a tick is no longer than the
// loop's interval; with longer ticks the function makes one pass per cycle, as before any loop.
// Racing copies of the function would step the simulator concurrently, so Run paces only one.
func paceSandbox(eng *engine.Engine, s *sim.Sim) {
	tick := time.Duration(s.Scenario().TickSeconds * float64(time.Second))
	if tick > engine.DefaultSandboxInterval {
		return
	}
	eng.SandboxLoop = engine.SandboxLoop{Budget: SandboxLoopBudget, PluginAlone: eng.SandboxLoop.PluginAlone}
	eng.Sleep = func(ctx context.Context, d time.Duration) error {
		for range max(int(d/tick), 1) {
			if err := ctx.Err(); err != nil {
				return err
			}
			if s.Done() {
				return errRunOver
			}
			s.Step()
		}
		return nil
	}
}

// runGCPercent is the garbage collector's target (GOGC) while runs are in progress. Nearly all of a
// run's garbage is the JSON of each tick's HTTP round trips and stored state, dropped within the
// tick: collecting a quarter as often took a quarter off a production-size run's CPU time, for about
// three times the peak heap. Decisions do not depend on it. It was 400; at 300 the whole
// production simulate took 141.1 s of CPU and peaked at 441 MiB, against 139.7 s and 562 MiB
// at 400, the two side by side: the decode memos (issue 30) keep a few MB live between cycles,
// which the target multiplies.
const runGCPercent = 300

var gcRuns struct {
	sync.Mutex
	n    int // runs in progress
	prev int // the GC percent before the first of them
}

// collectLess raises the GC percent to runGCPercent until the returned function has been called
// by every run that raised it, unless GOGC is set, which then stands.
func collectLess() (restore func()) {
	if os.Getenv("GOGC") != "" {
		return func() {}
	}
	gcRuns.Lock()
	defer gcRuns.Unlock()
	if gcRuns.n == 0 {
		gcRuns.prev = debug.SetGCPercent(runGCPercent)
	}
	gcRuns.n++
	return func() {
		gcRuns.Lock()
		defer gcRuns.Unlock()
		if gcRuns.n--; gcRuns.n == 0 {
			debug.SetGCPercent(gcRuns.prev)
		}
	}
}

type run struct {
	// engs are the racing copies' engines, one per copy: each its own clock (Options.ClockSkew).
	engs   []*engine.Engine
	events *bus.Memory
	logw   io.Writer // the functions' log (Options.Log); io.Discard or nil when none
	copies int       // racing copies of each function per trigger
	alerts int       // alarm-triggered ingest-and-plan calls per tick (Options.AlertsPerTick)
	// killShare is Options.KillMoves; kills draws which invocations die and where (under mu).
	killShare float64
	kills     *rand.Rand
	// Killed counts the move invocations killed.
	killed int

	mu       sync.Mutex // guards what racing copies record: planMs, scaleUps and the tick
	planMs   []float64
	scaleUps int
	// unrelieved counts the plans that published "Hotspot Unrelieved".
	unrelieved int
	// outcomes counts the plans' hot nodes by outcome (Result.HotCyclesByOutcome).
	outcomes map[string]int
}

// cycle runs ingest and then every function the published events trigger, until none is left.
func (r *run) cycle(ctx context.Context, t *Tick) error {
	failed := 0
	err := r.race(func(eng *engine.Engine) error {
		if _, err := eng.Ingest(ctx, []string{ClusterName}); err != nil {
			if !isTransient(err) {
				return err
			}
			// A failed read (an injected API fault) costs this copy's cycle, as it would in Lambda.
			r.mu.Lock()
			failed++
			t.Breaker = "ingest failed: " + err.Error()
			r.mu.Unlock()
		}
		return nil
	})
	if err != nil || failed == max(r.copies, 1) {
		return err
	}
	if err := r.alert(ctx); err != nil {
		return err
	}
	for {
		evs := distinct(r.events.Drain())
		if len(evs) == 0 {
			return nil
		}
		for _, ev := range evs {
			run := r.race
			if ev.DetailType == bus.TypeScaleUpNeeded || ev.DetailType == bus.TypeHotspotUnrelieved {
				// No function consumes it (it goes to people): the run counts the signal once.
				run = func(fn func(*engine.Engine) error) error { return fn(r.engs[0]) }
			}
			if err := run(func(eng *engine.Engine) error { return r.dispatch(ctx, eng, ev, t) }); err != nil {
				return err
			}
		}
	}
}

// race runs r.copies copies of fn at once, each with its own copy's engine, and returns their
// errors joined.
func (r *run) race(fn func(eng *engine.Engine) error) error {
	if r.copies <= 1 {
		return fn(r.engs[0])
	}
	errs := make([]error, r.copies)
	var wg sync.WaitGroup
	for i := range r.copies {
		wg.Go(func() { errs[i] = fn(r.engs[i]) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// alert runs r.alerts alarm-triggered ingest-and-plan calls at once, spread over the copies'
// engines. The cluster's API faults end an alert's call, as they would end its invocation; the
// events the alerts publish are dispatched with the schedule's.
func (r *run) alert(ctx context.Context) error {
	errs := make([]error, r.alerts)
	var wg sync.WaitGroup
	for i := range r.alerts {
		eng := r.engs[i%len(r.engs)]
		wg.Go(func() {
			if _, _, err := eng.IngestAndDetect(ctx, ClusterName); err != nil && !isTransient(err) {
				errs[i] = fmt.Errorf("alert %d: %w", i, err)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// distinct drops events identical to an earlier one: racing copies of one function publishing the
// same event are one delivery, which the race then duplicates on purpose.
func distinct(evs []bus.Recorded) []bus.Recorded {
	seen := map[string]bool{}
	out := evs[:0]
	for _, ev := range evs {
		k := ev.DetailType + "\x00" + string(ev.Detail)
		if seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, ev)
	}
	return out
}

func (r *run) dispatch(ctx context.Context, eng *engine.Engine, ev bus.Recorded, t *Tick) error {
	var cluster, key string
	switch ev.DetailType {
	case bus.TypeStatsIngested, bus.TypeMovesPlanned:
		// Only the cluster and the key: a production-size plan's event carries thousands of moves
		// and notes, which the invoked function reads from the store, not from the event.
		var d struct {
			Cluster     string `json:"cluster"`
			SnapshotKey string `json:"snapshot_key"`
			PlanKey     string `json:"plan_key"`
		}
		if err := json.Unmarshal(ev.Detail, &d); err != nil {
			return fmt.Errorf("dispatch %s: %w", ev.DetailType, err)
		}
		cluster, key = d.Cluster, d.SnapshotKey
		if ev.DetailType == bus.TypeMovesPlanned {
			key = d.PlanKey
		}
	case bus.TypeScaleUpNeeded:
		var d bus.ScaleUpNeeded
		if err := json.Unmarshal(ev.Detail, &d); err != nil {
			return fmt.Errorf("dispatch %s: %w", ev.DetailType, err)
		}
		r.mu.Lock()
		r.scaleUps++
		t.ScaleUp, t.ScaleUpBound = d.Reason, d.Bound
		r.mu.Unlock()
		return nil
	case bus.TypeHotspotUnrelieved:
		// One per plan: no function consumes it either.
		r.mu.Lock()
		r.unrelieved++
		r.mu.Unlock()
		return nil
	}
	// The functions the event invokes, in the order of the one event-to-function table the
	// deployed EventBridge rules come from; those that may run alongside each other at once.
	fns := bus.Subscribers(ev.DetailType)
	for i := 0; i < len(fns); {
		j := i + 1
		for j < len(fns) && alongside[fns[i]] && alongside[fns[j]] {
			j++
		}
		if err := r.invokeAll(ctx, eng, fns[i:j], cluster, key, t); err != nil {
			return err
		}
		i = j
	}
	return nil
}

// alongside are the functions the runner invokes at once for one event, as EventBridge invokes
// a rule's targets: it uses the machine's second core, and nothing either does reaches the other
// within the cycle. Detect reads only the store (the snapshot, its plan, its memory, the ledger)
// and writes its own items; the replica controller writes its own items and changes index
// settings, which detect does not read. The sandbox function may step the simulator's clock
// (paceSandbox) and the move function acts on the plan, so each runs on its own.
var alongside = map[string]bool{bus.FunctionDetect: true, bus.FunctionReplicas: true}

// invokeAll invokes fns at once, each with an engine of its own whose events, logs and metrics
// are held until all have returned and then passed on in fns' order: what the run records does
// not depend on which finished first. As when they run one after another, the first error in
// fns' order ends the dispatch, and what the functions after it did is not passed on.
func (r *run) invokeAll(ctx context.Context, eng *engine.Engine, fns []string, cluster, key string, t *Tick) error {
	if len(fns) == 1 {
		return r.invoke(ctx, eng, fns[0], cluster, key, t)
	}
	helds := make([]*held, len(fns))
	errs := make([]error, len(fns))
	var wg sync.WaitGroup
	for i, fn := range fns {
		h := r.hold(eng)
		helds[i] = h
		wg.Go(func() { errs[i] = r.invoke(ctx, &h.eng, fn, cluster, key, t) })
	}
	wg.Wait()
	for i, h := range helds {
		if err := h.release(r.events, eng, r.logw); err != nil {
			return err
		}
		if errs[i] != nil {
			return errs[i]
		}
	}
	return nil
}

// held is a copy of an engine whose events, logs and metrics wait for release.
type held struct {
	eng     engine.Engine
	events  bus.Memory
	logs    bytes.Buffer
	metrics heldMetrics
}

// hold returns a copy of eng that holds what it publishes, logs and measures.
func (r *run) hold(eng *engine.Engine) *held {
	h := &held{eng: *eng}
	h.eng.Bus = &h.events
	if r.logw != nil && r.logw != io.Discard {
		h.eng.Log = slog.New(slog.NewJSONHandler(&h.logs, nil))
	}
	if eng.Metrics != nil {
		h.eng.Metrics = &h.metrics
	}
	return h
}

// release passes on what h held: its events to events, its logs to logw and its metrics to
// eng's.
func (h *held) release(events *bus.Memory, eng *engine.Engine, logw io.Writer) error {
	events.Record(h.events.Drain()...)
	for _, m := range h.metrics.adds {
		eng.Metrics.Add(m.name, m.unit, m.value, m.dims...)
	}
	if h.logs.Len() == 0 {
		return nil
	}
	if _, err := logw.Write(h.logs.Bytes()); err != nil {
		return fmt.Errorf("log: %w", err)
	}
	return nil
}

// heldMetrics keeps the metrics a held engine measures.
type heldMetrics struct {
	mu   sync.Mutex
	adds []heldMetric
}

type heldMetric struct {
	name  string
	unit  telemetry.Unit
	value float64
	dims  []telemetry.Dimension
}

func (m *heldMetrics) Add(name string, unit telemetry.Unit, value float64, dims ...telemetry.Dimension) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.adds = append(m.adds, heldMetric{name: name, unit: unit, value: value, dims: slices.Clone(dims)})
}

// lockedWriter serialises writes to w: the functions' loggers and the logs a held engine kept.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// invoke runs one function for an event: key is the snapshot's (detect, replicas) or the plan's
// (move). The cluster's API errors end the function's cycle, not the run; detect's do not.
func (r *run) invoke(ctx context.Context, eng *engine.Engine, fn, cluster, key string, t *Tick) error {
	switch fn {
	case bus.FunctionDetect:
		dr, err := eng.Detect(ctx, cluster, key)
		if err != nil {
			return err
		}
		if !dr.Repeated {
			r.mu.Lock()
			r.planMs = append(r.planMs, float64(dr.PlanTime.Microseconds())/1000)
			t.Plans = append(t.Plans, dr.Plan)
			for _, h := range dr.Plan.Hotspots {
				if !h.Hot {
					continue
				}
				if r.outcomes == nil {
					r.outcomes = map[string]int{}
				}
				r.outcomes[cmp.Or(h.Outcome, allocation.OutcomeNone)]++
			}
			r.mu.Unlock()
		}
	case bus.FunctionReplicas:
		rr, err := eng.Replicas(ctx, cluster, key)
		if err != nil && !isTransient(err) {
			return err
		}
		r.mu.Lock()
		for _, a := range rr.Applied {
			t.Replicas = append(t.Replicas, fmt.Sprintf("%s %d→%d", a.Index, a.From, a.To))
		}
		r.mu.Unlock()
	case bus.FunctionSandbox:
		if _, err := eng.Sandbox(ctx, cluster); err != nil && !isTransient(err) {
			return err
		}
	case bus.FunctionMove:
		eng, ctx, killed := r.mayKill(ctx, eng)
		mr, err := eng.Move(ctx, cluster, key)
		if killed() {
			// Its outcome died with it: a later cycle finds what it left.
			return nil
		}
		if err != nil && !isTransient(err) {
			return err
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		if !mr.Breaker.Closed && len(mr.Breaker.Checks) > 0 {
			t.Breaker = mr.Breaker.Reason()
		}
		for _, o := range mr.Outcomes {
			if o.Outcome == engine.OutcomeExecuted || o.Outcome == engine.OutcomeDryRun {
				t.Moves = append(t.Moves, fmt.Sprintf("%s %s[%d] %s→%s", o.Outcome, o.Move.Index, o.Move.Shard, o.Move.FromName, o.Move.ToName))
				t.Issued = append(t.Issued, o.Move)
			}
		}
	default:
		return fmt.Errorf("dispatch: no runner for function %q", fn)
	}
	return nil
}

// mayKill returns the engine and context a move invocation runs with: as given, or, for a share
// killShare of invocations, ones that kill it at its nth store write (n from 1 to 4). killed
// reports afterwards whether it was killed.
func (r *run) mayKill(ctx context.Context, eng *engine.Engine) (_ *engine.Engine, _ context.Context, killed func() bool) {
	if r.killShare <= 0 || r.kills == nil {
		return eng, ctx, func() bool { return false }
	}
	r.mu.Lock()
	kill := r.kills.Float64() < r.killShare
	at := 1 + r.kills.IntN(4)
	r.mu.Unlock()
	if !kill {
		return eng, ctx, func() bool { return false }
	}
	kctx, cancel := context.WithCancel(ctx)
	ks := &killingStore{Store: eng.Store, left: at, cancel: cancel}
	k := *eng
	k.Store = ks
	return &k, kctx, func() bool {
		cancel()
		if !ks.fired() {
			return false
		}
		r.mu.Lock()
		r.killed++
		r.mu.Unlock()
		return true
	}
}

// errKilled is the store write that a killed invocation did not live to make.
var errKilled = errors.New("invocation killed (fault)")

// killingStore fails the left-th write and every call after it, cancelling the invocation's
// context as it does: the invocation is over from that write on.
type killingStore struct {
	state.Store
	cancel context.CancelFunc
	mu     sync.Mutex
	left   int
	dead   bool
}

// write counts one write and reports whether the invocation is dead by it.
func (k *killingStore) write() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	if !k.dead {
		if k.left--; k.left <= 0 {
			k.dead = true
			k.cancel()
		}
	}
	return k.dead
}

func (k *killingStore) fired() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.dead
}

func (k *killingStore) Get(ctx context.Context, key state.Key) (state.Item, error) {
	if k.fired() {
		return state.Item{}, errKilled
	}
	return k.Store.Get(ctx, key)
}

func (k *killingStore) Query(ctx context.Context, pk, skPrefix string) ([]state.Item, error) {
	if k.fired() {
		return nil, errKilled
	}
	return k.Store.Query(ctx, pk, skPrefix)
}

func (k *killingStore) Put(ctx context.Context, item state.Item, cond state.Condition) (state.Item, error) {
	if k.write() {
		return state.Item{}, errKilled
	}
	return k.Store.Put(ctx, item, cond)
}

func (k *killingStore) Delete(ctx context.Context, key state.Key, cond state.Condition) error {
	if k.write() {
		return errKilled
	}
	return k.Store.Delete(ctx, key, cond)
}

func (k *killingStore) BatchPut(ctx context.Context, items []state.Item) error {
	if k.write() {
		return errKilled
	}
	return k.Store.BatchPut(ctx, items)
}

// isTransient reports errors from the cluster's API (injected faults) that end one function's
// cycle without ending the run; anything else is a defect and stops it.
func isTransient(err error) bool {
	var apiErr *opensearch.APIError
	var netErr net.Error
	return errors.As(err, &apiErr) || errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &netErr) && netErr.Timeout())
}
