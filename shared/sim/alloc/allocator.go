package alloc

import "github.com/shardwise/shardwise/shared/sim/model"

// Allocator is OpenSearch's allocator acting on one cluster, with the baseline balancers that run
// in place of its rebalancing.
type Allocator struct {
	*model.Sim
	// eswl is the es-writeload rebalancer's stats between rounds (eswriteload.go).
	eswl *esWriteLoadState
}

var _ model.Allocator = (*Allocator)(nil)

// New returns the allocator of s; s.Attach hands it to the cluster.
func New(s *model.Sim) *Allocator { return &Allocator{Sim: s} }
