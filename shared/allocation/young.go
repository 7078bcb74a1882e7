package allocation

import (
	"fmt"
	"time"

	"github.com/shardwise/shardwise/shared/cluster"
)

// The rollover guard (issue 25, item 4). OpenSearch's allocator puts a new index's copies on the
// nodes with the fewest shards, so a rollover often lands every primary of the index that takes the
// alias's writes on the node that joined last (ES#17213, ES#37638), and that node saturates the
// moment writes switch to it. Its copies are then nearly empty: they relocate in seconds, against
// the hour a hot copy written as hard takes once it has grown. The planner relieves such a node as
// any other, and one rule is set aside for them: a node one of shardwise's own moves still
// relocates to or from is held until that move lands (own_move_in_flight_per_node), so that the
// move's effect is measured first; a young index's arrival changes the node's load whatever that
// move does, and the hold kept rollover-new-node's new node at 112 % for 20 minutes while a
// relocation of an hour onto it went on. A young index's quick copy may leave a held node: alone
// (never with a copy sent back to the held node), within the recovery limits, each to a node
// free of shardwise's moves.
const (
	// YoungIndexAge is how long after its creation an index is young (index.creation_date).
	YoungIndexAge = 15 * time.Minute
	// YoungRelocationSeconds bounds the estimated relocation of a young index's copy that may
	// leave a held node: two sampling intervals, so that it lands before the next move is judged.
	YoungRelocationSeconds = 60.0
)

// youngQuick reports whether c is a copy of an index created within YoungIndexAge of the snapshot
// whose relocation, alone, is estimated within YoungRelocationSeconds, and says so for a reason.
func (p *planner) youngQuick(c *cluster.Copy) (string, bool) {
	v := p.v
	ix := v.Snap.IndexByName(c.Index)
	if ix == nil || ix.Created.IsZero() || ix.System() {
		return "", false
	}
	age := v.Snap.At.Sub(ix.Created)
	if age < 0 || age > YoungIndexAge {
		return "", false
	}
	est := EstimateRelocation(v.Snap.Settings, v.Cfg, c.SizeBytes, c.WriteLoad, 1)
	if est.Seconds() > YoungRelocationSeconds {
		return "", false
	}
	return fmt.Sprintf("%s was created %s ago and %s[%d] relocates in about %s (%d bytes)",
		c.Index, age.Round(time.Second), c.Index, c.Shard, roundSeconds(est.Seconds()), c.SizeBytes), true
}

// youngOn lists the movable copies on node that youngQuick allows off it while it is held.
func (p *planner) youngOn(node string) []*cluster.Copy {
	var out []*cluster.Copy
	for _, c := range p.copiesOn(node) {
		if _, ok := p.youngQuick(c); ok && p.movable(c) {
			out = append(out, c)
		}
	}
	return out
}
