package rest

import (
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/shardwise/shardwise/shared/sim/scenario"
	"github.com/shardwise/shardwise/shared/sim/wire"
)

// Handler serves the OpenSearch REST subset the shardwise functions use. It is safe for concurrent
// requests; reads share a lock with each other and wait for Step.
func (s *Server) Handler() http.Handler { return http.HandlerFunc(s.serveHTTP) }

func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	if d := s.faultLatency(); d > 0 {
		// A real delay, so clients' timeouts and the runner's wall-clock measures see it.
		t := time.NewTimer(d)
		select {
		case <-r.Context().Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
	if s.faultError() {
		wire.WriteError(w, wire.NewError(http.StatusServiceUnavailable, "cluster_block_exception",
			"blocked by: [SERVICE_UNAVAILABLE/2/no cluster-manager];", nil))
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, wire.MaxBodyBytes+1))
	if err != nil {
		wire.WriteError(w, wire.ParseError("parse_exception", "failed to read request body: "+err.Error()))
		return
	}
	if len(body) > wire.MaxBodyBytes {
		wire.WriteError(w, wire.NewError(http.StatusRequestEntityTooLarge, "too_long_frame_exception", "request body is larger than 100mb", nil))
		return
	}
	path := strings.Trim(r.URL.Path, "/")
	var segs []string
	if path != "" {
		for _, p := range strings.Split(path, "/") {
			if u, err := url.PathUnescape(p); err == nil {
				p = u
			}
			segs = append(segs, p)
		}
	}
	rq := &wire.Request{R: r, W: w, Segs: segs, Q: r.URL.Query(), Body: body}
	rep, apiErr := s.route(rq)
	if rep.Written {
		return
	}
	s.respond(rq, rep, apiErr)
}

// respond writes a handler's answer. Handlers run through read and write call it while they still hold
// the lock, because lazily built parts of the answer read the cluster as they are written.
func (s *Server) respond(rq *wire.Request, rep wire.Reply, apiErr *wire.APIError) {
	w, r := rq.W, rq.R
	if apiErr != nil {
		wire.WriteError(w, apiErr)
		return
	}
	if r.Method == http.MethodHead {
		w.Header().Set("Content-Type", "application/json; charset=UTF-8")
		w.WriteHeader(rep.Status)
		return
	}
	if rep.IsText {
		w.Header().Set("Content-Type", "text/plain; charset=UTF-8")
		w.WriteHeader(rep.Status)
		_, _ = io.WriteString(w, rep.Text)
		return
	}
	wire.WriteJSON(w, rep.Status, rep.JSON, wire.ParseFilterPath(rq.Param("filter_path")), rq.Flag("pretty"))
}

// FaultsAt returns the fault windows in force at scenario time t (from at_seconds, before
// until_seconds): the largest error rate and latency, and whether reroutes are refused. They are a
// function of the clock alone, so a request made at exactly at_seconds, between two Steps, sees it.
func (s *Server) FaultsAt(t float64) (errorRate float64, latency time.Duration, rejectReroute bool) {
	for _, e := range s.Faults {
		if t < e.AtSeconds || t >= e.UntilSeconds {
			continue
		}
		switch e.Kind {
		case scenario.EventAPIErrors:
			errorRate = max(errorRate, e.Rate)
		case scenario.EventAPILatency:
			latency = max(latency, time.Duration(e.MS*float64(time.Millisecond)))
		case scenario.EventRerouteRejects:
			rejectReroute = true
		}
	}
	return errorRate, latency, rejectReroute
}

// faultLatency is the api_latency delay in force now, if any.
func (s *Server) faultLatency() time.Duration {
	_, d, _ := s.FaultsAt(s.ElapsedLocked())
	return d
}

// faultError draws whether this request fails under an api_errors window, from the seeded fault stream.
func (s *Server) faultError() bool {
	rate, _, _ := s.FaultsAt(s.ElapsedLocked())
	if rate <= 0 {
		return false
	}
	s.FaultMu.Lock()
	defer s.FaultMu.Unlock()
	return s.FaultRN.Float64() < rate
}

// rerouteRejected reports whether a reroute_rejects window is in force.
func (s *Server) rerouteRejected() bool {
	_, _, reject := s.FaultsAt(s.ElapsedLocked())
	return reject
}

// route dispatches a request the way OpenSearch's RestController would.
func (s *Server) route(rq *wire.Request) (wire.Reply, *wire.APIError) {
	r, segs := rq.R, rq.Segs
	m := r.Method
	is := func(allowed ...string) *wire.APIError {
		if slices.Contains(allowed, m) {
			return nil
		}
		return wire.BadMethod(r, allowed...)
	}
	get := func(h func(*wire.Request) (wire.Reply, *wire.APIError)) (wire.Reply, *wire.APIError) {
		if err := is(http.MethodGet, http.MethodHead); err != nil {
			return wire.Reply{}, err
		}
		return s.read(rq, h)
	}
	// getPut serves GET and HEAD with read and PUT with write; a nil write takes no PUT.
	getPut := func(read, write func(*wire.Request) (wire.Reply, *wire.APIError)) (wire.Reply, *wire.APIError) {
		switch m {
		case http.MethodGet, http.MethodHead:
			return s.read(rq, read)
		case http.MethodPut:
			if write != nil {
				return s.write(rq, write)
			}
		}
		return wire.Reply{}, wire.BadMethod(r, "GET", "PUT")
	}
	if len(segs) == 0 {
		return get(s.handleInfo)
	}
	n := len(segs)
	switch segs[0] {
	case "_cluster":
		switch {
		case n == 2 && segs[1] == "health", n == 3 && segs[1] == "health":
			return get(s.handleHealth)
		case n >= 2 && n <= 4 && segs[1] == "state":
			return get(s.handleState)
		case n == 2 && segs[1] == "settings":
			return getPut(s.handleGetClusterSettings, s.handlePutClusterSettings)
		case n == 2 && segs[1] == "reroute":
			if err := is(http.MethodPost); err != nil {
				return wire.Reply{}, err
			}
			if s.rerouteRejected() {
				// Amazon OpenSearch Service's answer to an operation it does not allow.
				return wire.Reply{}, &wire.APIError{Status: http.StatusForbidden, Body: wire.Object{{"Message", "Your request: '/_cluster/reroute' is not allowed."}}}
			}
			return s.write(rq, s.handleReroute)
		case n == 3 && segs[1] == "allocation" && segs[2] == "explain":
			if err := is(http.MethodGet, http.MethodPost); err != nil {
				return wire.Reply{}, err
			}
			return s.write(rq, s.handleAllocationExplain)
		}
	case "_cat":
		if n >= 2 && n <= 3 {
			switch segs[1] {
			case "shards":
				return get(s.handleCatShards)
			case "nodes":
				if n == 2 {
					return get(s.handleCatNodes)
				}
			case "indices":
				return get(s.handleCatIndices)
			}
		}
	case "_nodes":
		if n <= 5 {
			return get(s.handleNodes)
		}
	case "_stats":
		if n <= 2 {
			return get(s.handleStats)
		}
	case "_settings":
		if n == 1 {
			return getPut(s.handleGetIndexSettings, s.handlePutIndexSettings)
		}
	case "_wlm", "_rules":
		return s.routeWLM(rq)
	case "_tasks":
		switch {
		case n == 1:
			return get(s.handleTasks)
		case n == 2 && segs[1] == "_cancel", n == 3 && segs[2] == "_cancel":
			if err := is(http.MethodPost); err != nil {
				return wire.Reply{}, err
			}
			return s.write(rq, s.handleCancelTasks)
		case n == 2:
			return get(s.handleGetTask)
		}
	default:
		if strings.HasPrefix(segs[0], "_") {
			break
		}
		switch {
		case n == 1:
			return get(s.handleGetIndex)
		case n >= 2 && n <= 3 && segs[1] == "_stats":
			return get(s.handleStats)
		case n == 2 && segs[1] == "_settings":
			return getPut(s.handleGetIndexSettings, s.handlePutIndexSettings)
		case n == 3 && segs[1] == "_settings":
			return getPut(s.handleGetIndexSettings, nil)
		}
	}
	return wire.Reply{}, wire.NoHandler(r)
}

// read runs a handler and writes its answer under the shared lock.
func (s *Server) read(rq *wire.Request, h func(*wire.Request) (wire.Reply, *wire.APIError)) (wire.Reply, *wire.APIError) {
	s.Mu.RLock()
	defer s.Mu.RUnlock()
	rep, err := h(rq)
	s.respond(rq, rep, err)
	return wire.Reply{Written: true}, nil
}

// write runs a handler and writes its answer under the exclusive lock.
func (s *Server) write(rq *wire.Request, h func(*wire.Request) (wire.Reply, *wire.APIError)) (wire.Reply, *wire.APIError) {
	s.Mu.Lock()
	defer s.Mu.Unlock()
	rep, err := h(rq)
	s.respond(rq, rep, err)
	return wire.Reply{Written: true}, nil
}
