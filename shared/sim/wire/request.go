package wire

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// MaxBodyBytes bounds request bodies, as OpenSearch's http.max_content_length (100mb) does.
const MaxBodyBytes = 100 << 20

// APIError is an OpenSearch error answer: status and JSON body.
type APIError struct {
	Status int
	Body   any
}

// ErrorBody is OpenSearch's error JSON: {"error":{"root_cause":[...],"type","reason",...},"status"}.
func ErrorBody(typ, reason string, extra Object) Object {
	cause := append(Object{{"type", typ}, {"reason", reason}}, extra...)
	errObj := append(Object{{"root_cause", []any{cause}}}, cause...)
	return Object{{"error", errObj}}
}

// NewError is an OpenSearch error answer: the error object and the HTTP status.
func NewError(status int, typ, reason string, extra Object) *APIError {
	return &APIError{Status: status, Body: append(ErrorBody(typ, reason, extra), Field{"status", status})}
}

// IllegalArgument is OpenSearch's 400 illegal_argument_exception.
func IllegalArgument(reason string) *APIError {
	return NewError(http.StatusBadRequest, "illegal_argument_exception", reason, nil)
}

// ParseError is a 400 for a body or parameter that does not parse, with the exception type given.
func ParseError(typ, reason string) *APIError {
	return NewError(http.StatusBadRequest, typ, reason, nil)
}

// IndexNotFound is OpenSearch's 404 index_not_found_exception for name.
func IndexNotFound(name string) *APIError {
	return NewError(http.StatusNotFound, "index_not_found_exception", "no such index ["+name+"]", Object{
		{"index", name}, {"resource.id", name}, {"resource.type", "index_or_alias"}, {"index_uuid", "_na_"},
	})
}

// NoHandler is RestController's answer to a path no handler serves.
func NoHandler(r *http.Request) *APIError {
	return &APIError{Status: http.StatusBadRequest, Body: Object{
		{"error", fmt.Sprintf("no handler found for uri [%s] and method [%s]", r.URL.RequestURI(), r.Method)},
	}}
}

// BadMethod is RestController's answer to a known path with a method it does not serve.
func BadMethod(r *http.Request, allowed ...string) *APIError {
	return &APIError{Status: http.StatusMethodNotAllowed, Body: Object{
		{"error", fmt.Sprintf("Incorrect HTTP method for uri [%s] and method [%s], allowed: [%s]", r.URL.RequestURI(), r.Method, strings.Join(allowed, ", "))},
		{"status", http.StatusMethodNotAllowed},
	}}
}

// Request is one HTTP request, split for routing.
type Request struct {
	R    *http.Request
	W    http.ResponseWriter
	Segs []string
	Q    url.Values
	Body []byte
}

// Flag reads an OpenSearch boolean parameter: present with no value or "true" is true.
func (rq *Request) Flag(name string) bool {
	v, ok := rq.Q[name]
	if !ok {
		return false
	}
	return len(v) == 0 || v[0] == "" || v[0] == "true"
}

// Param is the query parameter's value, "" when absent.
func (rq *Request) Param(name string) string { return rq.Q.Get(name) }

// Reply is a handler's answer: a JSON tree, or text for _cat without format=json.
type Reply struct {
	Status  int
	JSON    any
	Text    string
	IsText  bool
	Written bool // already sent by read or write
}

// JSONReply is a 200 answer with the JSON tree v.
func JSONReply(v any) Reply { return Reply{Status: http.StatusOK, JSON: v} }

// WriteJSON writes what fp keeps of a tree (all of it when fp is nil), streaming it unless pretty
// printing needs it whole. An encoding error is a bug in a handler; a write error means the client
// went away, and there is no one left to tell.
func WriteJSON(w http.ResponseWriter, status int, v any, fp *FilterPath, pretty bool) {
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	if pretty {
		b, err := AppendJSON(nil, fp.apply(v))
		var buf bytes.Buffer
		if err == nil {
			err = json.Indent(&buf, b, "", "  ")
		}
		if err != nil {
			b, _ = AppendJSON(nil, append(ErrorBody("exception", err.Error(), nil), Field{"status", 500}))
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

// WriteError sends e's body with its status.
func WriteError(w http.ResponseWriter, e *APIError) {
	WriteJSON(w, e.Status, e.Body, nil, false)
}

// DecodeBody parses a JSON request body into generic values, numbers kept exact.
func DecodeBody(body []byte) (map[string]any, *APIError) {
	if len(bytes.TrimSpace(body)) == 0 {
		return map[string]any{}, nil
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v map[string]any
	if err := dec.Decode(&v); err != nil {
		return nil, ParseError("json_parse_exception", "failed to parse request body: "+err.Error())
	}
	return v, nil
}
