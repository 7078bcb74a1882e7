package rest

import (
	"github.com/shardwise/shardwise/shared/sim/alloc"
	"github.com/shardwise/shardwise/shared/sim/model"
	"github.com/shardwise/shardwise/shared/sim/plugins"
)

// Server serves one cluster's REST API: the cluster's state, its allocator (reroute, explain) and
// its plugins (tasks, workload management).
type Server struct {
	*model.Sim
	Alloc   *alloc.Allocator
	Plugins *plugins.Plugins
}

// New returns the REST server of the cluster s with its allocator a and plugins p.
func New(s *model.Sim, a *alloc.Allocator, p *plugins.Plugins) *Server {
	return &Server{Sim: s, Alloc: a, Plugins: p}
}
