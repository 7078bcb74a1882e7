package rest

import (
	"sync"

	"github.com/shardwise/shardwise/shared/sim/alloc"
	"github.com/shardwise/shardwise/shared/sim/model"
	"github.com/shardwise/shardwise/shared/sim/plugins"
	"github.com/shardwise/shardwise/shared/sim/settings"
	"github.com/shardwise/shardwise/shared/sim/wire"
)

// Server serves one cluster's REST API: the cluster's state, its allocator (reroute, explain) and
// its plugins (tasks, workload management).
type Server struct {
	*model.Sim
	Alloc   *alloc.Allocator
	Plugins *plugins.Plugins

	// settings caches each index's settings as the cluster state renders them (renderedSettings).
	settingsMu sync.Mutex
	settings   map[settingsKey]settingsEntry
}

// New returns the REST server of the cluster s with its allocator a and plugins p.
func New(s *model.Sim, a *alloc.Allocator, p *plugins.Plugins) *Server {
	return &Server{Sim: s, Alloc: a, Plugins: p}
}

// settingsKey is an index's settings rendered flat or nested.
type settingsKey struct {
	ix   *model.Index
	flat bool
}

// settingsEntry is a rendering and what it was rendered from, besides the index's fixed fields.
type settingsEntry struct {
	version        int64
	replicas, size int
	rendered       wire.Object
}

// renderedSettings is settings.RenderSettings(s.indexSettings(ix), flat), rendered again only when
// the index's settings changed: the cluster state of 4,000 indices renders all of them on every
// read. The rendering is shared between answers, which only read it.
func (s *Server) renderedSettings(ix *model.Index, flat bool) wire.Object {
	k := settingsKey{ix, flat}
	s.settingsMu.Lock()
	defer s.settingsMu.Unlock()
	if e, ok := s.settings[k]; ok && e.version == ix.SettingsVersion && e.replicas == ix.Replicas && e.size == len(ix.Shards) {
		return e.rendered
	}
	if s.settings == nil || len(s.settings) > 2*len(s.Indices)+64 {
		// Deleted indices' entries go with the rest.
		s.settings = map[settingsKey]settingsEntry{}
	}
	o := settings.RenderSettings(s.indexSettings(ix), flat)
	s.settings[k] = settingsEntry{version: ix.SettingsVersion, replicas: ix.Replicas, size: len(ix.Shards), rendered: o}
	return o
}
