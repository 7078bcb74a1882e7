package sim

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/shardwise/shardwise/shared/cluster"
)

// maxBodyBytes bounds request bodies, as OpenSearch's http.max_content_length (100mb) does.
const maxBodyBytes = 100 << 20

// apiError is an OpenSearch error answer: status and JSON body.
type apiError struct {
	status int
	body   any
}

// errorBody is OpenSearch's error JSON: {"error":{"root_cause":[...],"type","reason",...},"status"}.
func errorBody(typ, reason string, extra object) object {
	cause := append(object{{"type", typ}, {"reason", reason}}, extra...)
	errObj := append(object{{"root_cause", []any{cause}}}, cause...)
	return object{{"error", errObj}}
}

func newError(status int, typ, reason string, extra object) *apiError {
	return &apiError{status: status, body: append(errorBody(typ, reason, extra), field{"status", status})}
}

func illegalArgument(reason string) *apiError {
	return newError(http.StatusBadRequest, "illegal_argument_exception", reason, nil)
}

func parseError(typ, reason string) *apiError {
	return newError(http.StatusBadRequest, typ, reason, nil)
}

func indexNotFound(name string) *apiError {
	return newError(http.StatusNotFound, "index_not_found_exception", "no such index ["+name+"]", object{
		{"index", name}, {"resource.id", name}, {"resource.type", "index_or_alias"}, {"index_uuid", "_na_"},
	})
}

// noHandler is RestController's answer to a path no handler serves.
func noHandler(r *http.Request) *apiError {
	return &apiError{status: http.StatusBadRequest, body: object{
		{"error", fmt.Sprintf("no handler found for uri [%s] and method [%s]", r.URL.RequestURI(), r.Method)},
	}}
}

// badMethod is RestController's answer to a known path with a method it does not serve.
func badMethod(r *http.Request, allowed ...string) *apiError {
	return &apiError{status: http.StatusMethodNotAllowed, body: object{
		{"error", fmt.Sprintf("Incorrect HTTP method for uri [%s] and method [%s], allowed: [%s]", r.URL.RequestURI(), r.Method, strings.Join(allowed, ", "))},
		{"status", http.StatusMethodNotAllowed},
	}}
}

// request is one HTTP request, split for routing.
type request struct {
	r    *http.Request
	w    http.ResponseWriter
	segs []string
	q    url.Values
	body []byte
}

// flag reads an OpenSearch boolean parameter: present with no value or "true" is true.
func (rq *request) flag(name string) bool {
	v, ok := rq.q[name]
	if !ok {
		return false
	}
	return len(v) == 0 || v[0] == "" || v[0] == "true"
}

func (rq *request) param(name string) string { return rq.q.Get(name) }

// reply is a handler's answer: a JSON tree, or text for _cat without format=json.
type reply struct {
	status  int
	json    any
	text    string
	isText  bool
	written bool // already sent by read or write
}

func jsonReply(v any) reply { return reply{status: http.StatusOK, json: v} }

// Handler serves the OpenSearch REST subset the shardwise functions use. It is safe for concurrent
// requests; reads share a lock with each other and wait for Step.
func (s *Sim) Handler() http.Handler { return http.HandlerFunc(s.serveHTTP) }

func (s *Sim) serveHTTP(w http.ResponseWriter, r *http.Request) {
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
		writeError(w, newError(http.StatusServiceUnavailable, "cluster_block_exception",
			"blocked by: [SERVICE_UNAVAILABLE/2/no cluster-manager];", nil))
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBodyBytes+1))
	if err != nil {
		writeError(w, parseError("parse_exception", "failed to read request body: "+err.Error()))
		return
	}
	if len(body) > maxBodyBytes {
		writeError(w, newError(http.StatusRequestEntityTooLarge, "too_long_frame_exception", "request body is larger than 100mb", nil))
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
	rq := &request{r: r, w: w, segs: segs, q: r.URL.Query(), body: body}
	rep, apiErr := s.route(rq)
	if rep.written {
		return
	}
	s.respond(rq, rep, apiErr)
}

// respond writes a handler's answer. Handlers run through read and write call it while they still hold
// the lock, because lazily built parts of the answer read the cluster as they are written.
func (s *Sim) respond(rq *request, rep reply, apiErr *apiError) {
	w, r := rq.w, rq.r
	if apiErr != nil {
		writeError(w, apiErr)
		return
	}
	if r.Method == http.MethodHead {
		w.Header().Set("Content-Type", "application/json; charset=UTF-8")
		w.WriteHeader(rep.status)
		return
	}
	if rep.isText {
		w.Header().Set("Content-Type", "text/plain; charset=UTF-8")
		w.WriteHeader(rep.status)
		_, _ = io.WriteString(w, rep.text)
		return
	}
	writeJSON(w, rep.status, rep.json, parseFilterPath(rq.param("filter_path")), rq.flag("pretty"))
}

// writeJSON writes what fp keeps of a tree (all of it when fp is nil), streaming it unless pretty
// printing needs it whole. An encoding error is a bug in a handler; a write error means the client
// went away, and there is no one left to tell.
func writeJSON(w http.ResponseWriter, status int, v any, fp *filterPath, pretty bool) {
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	if pretty {
		b, err := appendJSON(nil, fp.apply(v))
		var buf bytes.Buffer
		if err == nil {
			err = json.Indent(&buf, b, "", "  ")
		}
		if err != nil {
			b, _ = appendJSON(nil, append(errorBody("exception", err.Error(), nil), field{"status", 500}))
			w.WriteHeader(http.StatusInternalServerError)
			_, _ = w.Write(b)
			return
		}
		w.WriteHeader(status)
		_, _ = w.Write(append(buf.Bytes(), '\n'))
		return
	}
	w.WriteHeader(status)
	bw := bufio.NewWriterSize(w, flushBytes)
	if encodeFiltered(bw, v, fp) == nil {
		_ = bw.WriteByte('\n')
		_ = bw.Flush()
	}
}

func writeError(w http.ResponseWriter, e *apiError) {
	writeJSON(w, e.status, e.body, nil, false)
}

// faultsAt returns the fault windows in force at scenario time t (from at_seconds, before
// until_seconds): the largest error rate and latency, and whether reroutes are refused. They are a
// function of the clock alone, so a request made at exactly at_seconds, between two Steps, sees it.
func (s *Sim) faultsAt(t float64) (errorRate float64, latency time.Duration, rejectReroute bool) {
	for _, e := range s.faults {
		if t < e.AtSeconds || t >= e.UntilSeconds {
			continue
		}
		switch e.Kind {
		case EventAPIErrors:
			errorRate = max(errorRate, e.Rate)
		case EventAPILatency:
			latency = max(latency, time.Duration(e.MS*float64(time.Millisecond)))
		case EventRerouteRejects:
			rejectReroute = true
		}
	}
	return errorRate, latency, rejectReroute
}

// faultLatency is the api_latency delay in force now, if any.
func (s *Sim) faultLatency() time.Duration {
	_, d, _ := s.faultsAt(s.elapsedLocked())
	return d
}

// faultError draws whether this request fails under an api_errors window, from the seeded fault stream.
func (s *Sim) faultError() bool {
	rate, _, _ := s.faultsAt(s.elapsedLocked())
	if rate <= 0 {
		return false
	}
	s.faultMu.Lock()
	defer s.faultMu.Unlock()
	return s.faultRN.Float64() < rate
}

// rerouteRejected reports whether a reroute_rejects window is in force.
func (s *Sim) rerouteRejected() bool {
	_, _, reject := s.faultsAt(s.elapsedLocked())
	return reject
}

func (s *Sim) elapsedLocked() float64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.elapsedSeconds()
}

// route dispatches a request the way OpenSearch's RestController would.
func (s *Sim) route(rq *request) (reply, *apiError) {
	r, segs := rq.r, rq.segs
	m := r.Method
	is := func(allowed ...string) *apiError {
		if slices.Contains(allowed, m) {
			return nil
		}
		return badMethod(r, allowed...)
	}
	get := func(h func(*request) (reply, *apiError)) (reply, *apiError) {
		if err := is(http.MethodGet, http.MethodHead); err != nil {
			return reply{}, err
		}
		return s.read(rq, h)
	}
	// getPut serves GET and HEAD with read and PUT with write; a nil write takes no PUT.
	getPut := func(read, write func(*request) (reply, *apiError)) (reply, *apiError) {
		switch m {
		case http.MethodGet, http.MethodHead:
			return s.read(rq, read)
		case http.MethodPut:
			if write != nil {
				return s.write(rq, write)
			}
		}
		return reply{}, badMethod(r, "GET", "PUT")
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
				return reply{}, err
			}
			if s.rerouteRejected() {
				// Amazon OpenSearch Service's answer to an operation it does not allow.
				return reply{}, &apiError{status: http.StatusForbidden, body: object{{"Message", "Your request: '/_cluster/reroute' is not allowed."}}}
			}
			return s.write(rq, s.handleReroute)
		case n == 3 && segs[1] == "allocation" && segs[2] == "explain":
			if err := is(http.MethodGet, http.MethodPost); err != nil {
				return reply{}, err
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
				return reply{}, err
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
	return reply{}, noHandler(r)
}

// read runs a handler and writes its answer under the shared lock.
func (s *Sim) read(rq *request, h func(*request) (reply, *apiError)) (reply, *apiError) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	rep, err := h(rq)
	s.respond(rq, rep, err)
	return reply{written: true}, nil
}

// write runs a handler and writes its answer under the exclusive lock.
func (s *Sim) write(rq *request, h func(*request) (reply, *apiError)) (reply, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rep, err := h(rq)
	s.respond(rq, rep, err)
	return reply{written: true}, nil
}

// decodeBody parses a JSON request body into generic values, numbers kept exact.
func decodeBody(body []byte) (map[string]any, *apiError) {
	if len(bytes.TrimSpace(body)) == 0 {
		return map[string]any{}, nil
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v map[string]any
	if err := dec.Decode(&v); err != nil {
		return nil, parseError("json_parse_exception", "failed to parse request body: "+err.Error())
	}
	return v, nil
}

// resolveIndices expands an index expression (comma list, wildcards, -exclusions, _all) in index order.
// A concrete name that does not exist is index_not_found unless ignore_unavailable is set.
func (s *Sim) resolveIndices(expr string, ignoreUnavailable bool) ([]*index, *apiError) {
	if expr == "" || expr == "_all" || expr == "*" {
		return slices.Clone(s.indices), nil
	}
	selected := map[*index]bool{}
	for i, part := range strings.Split(expr, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		if name, ok := strings.CutPrefix(part, "-"); ok && i > 0 {
			for _, ix := range s.indices {
				if cluster.SimpleMatch(name, ix.name) {
					delete(selected, ix)
				}
			}
			continue
		}
		if part == "_all" || strings.Contains(part, "*") {
			for _, ix := range s.indices {
				if part == "_all" || cluster.SimpleMatch(part, ix.name) {
					selected[ix] = true
				}
			}
			continue
		}
		ix, ok := s.byIndex[part]
		if !ok {
			if ignoreUnavailable {
				continue
			}
			return nil, indexNotFound(part)
		}
		selected[ix] = true
	}
	var out []*index
	for _, ix := range s.indices {
		if selected[ix] {
			out = append(out, ix)
		}
	}
	return out, nil
}

// matchNodes resolves node specs as DiscoveryNodes.resolveNodes: _all, _local, _cluster_manager
// (_master), ids, names and addresses, with wildcards; attr:value matches custom attributes.
func (s *Sim) matchNodes(specs []string) []*node {
	present := s.presentNodes()
	if len(specs) == 0 {
		return present
	}
	selected := map[*node]bool{}
	for _, spec := range specs {
		spec = strings.TrimSpace(spec)
		switch spec {
		case "", "_all":
			for _, n := range present {
				selected[n] = true
			}
			continue
		case "_local", "_cluster_manager", "_master":
			if m := s.clusterManager(); m != nil {
				selected[m] = true
			}
			continue
		}
		if k, v, ok := strings.Cut(spec, ":"); ok && !strings.Contains(v, ":") && !strings.Contains(k, ".") {
			for _, n := range present {
				if val, has := n.attrs()[k]; has && cluster.SimpleMatch(v, val) {
					selected[n] = true
				}
			}
			continue
		}
		for _, n := range present {
			if cluster.SimpleMatch(spec, n.id) || cluster.SimpleMatch(spec, n.name) || spec == n.ip() || spec == n.address() {
				selected[n] = true
			}
		}
	}
	var out []*node
	for _, n := range present {
		if selected[n] {
			out = append(out, n)
		}
	}
	return out
}

// clusterManager is the elected cluster manager: the first present node in scenario order.
func (s *Sim) clusterManager() *node {
	for _, n := range s.nodes {
		if n.present {
			return n
		}
	}
	return nil
}
