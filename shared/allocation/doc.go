// Package allocation decides where shard copies should be: deciders answer YES, NO or NOT_PREFERRED
// for a (copy, node) pair with the reason as data, hotspot detection finds saturated WRITE pools, and
// the planner turns both into moves, phase by phase. It is pure: a snapshot, the stored streaks and a
// config in; a plan with reasons out. Every threshold below is a field of [Config].
//
// # From a hot node to a move and its reason
//
// "Why did it move that shard" is answered by following one cycle, [PlanCycle]:
//
//  1. Evidence ([DetectHotspots], hotspot.go). A data node meets the criteria in a sample when its
//     estimated WRITE queue latency is at or over QueueLatencyThreshold (a stalled queue or
//     rejections count as queueing) and its WRITE utilization (index time, or the active threads if
//     more) is at or over HotUtilization. After SustainedSamples consecutive such samples it is hot;
//     a queue that shrank by more than a tenth is draining and holds its count. A sample without
//     rates neither counts nor resets. [Hotspot.Reason] says which criteria held, for example
//     "a: estimated WRITE queue latency 6.0s ≥ 3.0s and utilization 100% ≥ 50%, 2 of 2 samples (hot)".
//  2. Phases (plan.go), in order: unassigned copies are only noted; copies a decider says may not
//     remain where they are (a drained node, a filter, a heap over HeapLimit) go to the least utilized
//     node every decider accepts, else to one only NOT_PREFERRED ([PhaseCannotRemain]); then each
//     hot node gets at most one group of moves, possibly a bundle ([PhaseWriteHotspot]); only
//     when no node meets the criteria and nothing else moved, one
//     index-colocation fix per ColocationEvery ([PhaseIndexBalance]), then one group that spreads
//     segment-replication primaries by load ([PhasePrimaryBalance], primaries.go; a replica of
//     such an index bears [View.CopyLoad], cluster.SegmentReplicaShare of its shard's load).
//  3. The goal ([View.Goal], admit.go): a hot node is relieved to AllocationUtilization, or lower
//     when its backlog would not drain within DrainWithin, never under HotUtilization.
//  4. Before any search (relieve.go): relocations already leaving the node that bring it to its goal,
//     or one that ended since the last sample, make it wait (notes "relief-in-flight",
//     "relief-settling"), as does a queue that shrinks fast enough to empty before the best plan
//     found could land (drainsSooner, Hotspot.DrainingDemand); a copy whose load alone is at or over AllocationUtilization × the threads
//     of the largest node it may go to makes the node unfixable (note "unfixable-hotspot").
//  5. Candidates ([ChooseOrder], choose.go): the node's copies ranked by the ½-of-hottest heuristic
//     (tier 1: loads in [T, max) with T half the hottest, closest to T first; then (0, T); then the
//     hottest). Copies under MinShardWriteLoad, or whose load alone would make any node hot, are
//     not tried; those that alone bring the node to its goal are tried first.
//  6. Targets (search.targets): nodes not hot, not drained, not holding the shard and with an
//     incoming recovery slot free; nodes no move touched yet this cycle first, then the least
//     utilized, the fewest copies, the name.
//  7. Verdicts ([Evaluate], decider_*.go): each decider's [Verdict] carries its decision, the
//     measured value, the limit and a sentence. NO is absolute; NOT_PREFERRED from the write-load
//     decider is weighed on the group's projection and from index balance (counted per awareness
//     zone) on the group's counts (weighable and blocks, admit.go); any other is a refusal.
//  8. Admission ([Admit], [AdmitGroup], admit.go): a group of moves issued in one call (a move, a
//     swap with cooler copies sent back, a chain that first makes room on the target) is judged
//     whole on the projected utilizations ([View.Project]). The rule that admitted it is named:
//     all-yes, fits-after-group, count-neutral, improves-excess (lowers the cluster's excess over
//     the goal and leaves the target unsaturated and cooler than the source), swap-return or
//     cannot-remain.
//  9. Choice: for one copy (better), a group that reaches the goal, then the gentler rule, then the
//     larger drop in excess, then the preferred target; across copies (cheaper), reaching the goal
//     (unless, for a hot node, a group short of it takes the node off saturation and empties its
//     queue more than reliefSpeedup times sooner: soonerStep, drainTime, quicker; a rising or
//     skewed node has no queue to empty), the gentler rule, then the sooner relief ([EstimateRelocation]: a move's files at the
//     cluster's recovery rate shared on its busier node, then the translog replay of the copy's
//     writes meanwhile at TranslogReplaySpeed, so a cooler copy can land before a smaller hot one),
//     then the fewer bytes. A lone move OpenSearch's own balancer would undo
//     ([BuiltinBalancer]) takes a count-neutral return copy with it, or is not made; except that
//     a lone move bringing the hot node to its goal goes alone when the balancer's own first step
//     once it lands (it counts a relocating copy on its target) is predicted to be a cool
//     copy the planner did not place, evening the counts: a return sent with it would share the
//     hot node's recovery rate (one limiter, in and out) for the whole relocation. The expected
//     return is kept in the [Memory] and weighed in the counts until the balancer makes it (its
//     step waits for a rebalance slot when cluster_concurrent_rebalance is taken, so it may come
//     after the move lands); meanwhile no group brings a higher-numbered copy of its index to its
//     source, which the balancer would take instead (View.preempts). When it
//     comes off the move's target and leaves target and hot node within their goals, a lone move
//     the improvement rule admitted is weighed as a swap (rule fits-after-return, fitsAfterReturn).
//     An index already spread past the balancer's threshold that it cannot even out (the deciders
//     refuse every copy it would move: stuck) is played through with the group applied
//     (builtinPlay): a group one of whose copies becomes a copy the balancer can move is weighed as
//     one that spreads the index.
//  10. The [Move]: its Phase, its Verdicts, a SwapGroup shared with the moves issued with it, and a
//     Reason that chains the evidence, the copy and its tier, the kind of group, where source and
//     target end, and the admission rule: "…(hot); moving hot[0] (3.50 WRITE threads, tier 3 of the
//     ½-of-hottest heuristic) to b as a swap: a ends at 64% (goal 90%), b at 86%; relocation est.
//     …; rule fits-after-group: …; with warm[0] b→a (0.60 threads)". The moves issued with it carry their
//     own phase, rule and sentence.
//
// When no group is admitted and a segment-replication primary on the node would fit a cooler node
// but for its replica there, that replica moves first ([PhaseClearWay], primaries.go). Failing
// that, a desired placement for the node (placement.go): a bounded local search over every node for
// moves, swaps, pass-ons ([PlanPassOn]) and rotations that lower the excess, each admitted as the
// move function re-checks it and within OpenSearch's balance threshold; its first groups go out
// merged when the whole placement takes the node off saturation. Otherwise the node gets a [Note]
// instead: [NoteDeferred] (its shards already move
// this cycle), [NoteThrottled] (the nodes with room have no recovery slot free), or
// [NoteUnrelieved] with the first candidate's blockers and the [SearchBounds] used; such a node is
// listed in [Plan.Unrelieved]. A search that found nothing is the planner's shortfall, never a
// proof: a [ScaleUp] is raised only on proof, in this precedence: the cluster's write load over
// AllocationUtilization of its threads ([BoundCapacity]), every node in service hot
// ([BoundAllHot]), the copies an awareness zone must keep over its nodes' threads ([BoundZone]), a
// copy that outweighs any node ([BoundCopy]). The search is bounded by counts,
// not a clock, so the same snapshot always gives the same plan. [Explain] gives every decider's
// answer for one copy on every node.
//
// Several groups for one node go out as one bundle when the best group lowers its excess without
// reaching the goal and no candidate alone carries what the node must shed (search.bundle), within
// the node's recovery limits. A group must take a quarter
// of its hot copy's load off the node (a trade of near-equal copies is not relief), and a copy does
// not go back within the hour to a node it left unless that node's load changed ([Memory.Departed]).
//
// # What a relief group did
//
// Each group planned for a hot node is kept as a [ReliefProjection] in [Memory.Projections]: its
// kind ([PlanMove], [PlanCountSwap], [PlanSwap], [PlanChain], [PlanBundle], [PlanPassOn]), the hot node's load
// then and what the group was to leave on it and on its target. Once every copy is started on its
// target, the first sample whose interval starts after that measures the node again (measure.go):
// a [Measurement] in a note, [NoteReliefMeasured] when its WRITE load fell as projected (short by at
// most half the projected relief or 5 % of its threads), [NoteReliefMissed] when it did not. A
// group the move function never issued is dropped after an hour. A kind of plan that relieved
// nothing is not planned on that node again for ReliefCoolingOff ([Memory.Missed]) unless the
// node's load changed by a fifth of its threads: the search tries the other kinds, and if none fits
// the node is an unrelieved hotspot whose reason carries the measured figures
// ([NoteKindCoolingOff]), never a scale-up.
package allocation
