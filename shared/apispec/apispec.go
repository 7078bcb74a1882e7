// Package apispec checks OpenSearch REST responses against the official OpenSearch API
// specification (opensearch-project/opensearch-api-specification, vendored under
// third_party/opensearch-api-spec). The simulator's responses are validated with it, so the
// production client code is exercised against bodies shaped like a real cluster's.
//
// Loading, reference resolution, routing and JSON Schema validation are done by
// github.com/pb33f/libopenapi and github.com/pb33f/libopenapi-validator. The specification is
// split into one OpenAPI document per namespace (spec/namespaces/*.yaml) that reference shared
// schema files (spec/schemas/*.yaml); Load gives the library a small root document whose paths
// are $refs to those namespace path items, and the library's rolodex resolves every file.
package apispec

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/pb33f/libopenapi"
	validatorconfig "github.com/pb33f/libopenapi-validator/config"
	validatorerrors "github.com/pb33f/libopenapi-validator/errors"
	"github.com/pb33f/libopenapi-validator/responses"
	"github.com/pb33f/libopenapi-validator/router"
	"github.com/pb33f/libopenapi/datamodel"
	"github.com/pb33f/libopenapi/datamodel/high/base"
	v3 "github.com/pb33f/libopenapi/datamodel/high/v3"
	"gopkg.in/yaml.v3"
)

// specSubdir is where the vendored specification lives relative to the module root.
var specSubdir = filepath.Join("third_party", "opensearch-api-spec", "spec")

// errorSchemaName names the root document's component that points at the specification's
// generic error body. OpenSearch renders every REST error through the same
// BytesRestResponse shape, and the specification itself uses this schema for the error
// responses it does declare (search@400, search@404, get_source@404).
const errorSchemaName = "ErrorResponseBase"

// errorSchemaRef is the specification's own definition of that error body.
const errorSchemaRef = "schemas/_common.yaml#/components/schemas/ErrorResponseBase"

// openAPIVersion is the root document's OpenAPI version (3.1.0), as the validator wants it.
const openAPIVersion = 3.1

// ErrUnknownOperation reports a request whose method and path match no operation in the
// specification.
var ErrUnknownOperation = errors.New("no operation in the OpenSearch API specification")

// Spec is the loaded OpenSearch API specification. It is safe for concurrent use.
type Spec struct {
	// mu serializes validation: libopenapi's lazily built schema caches race under concurrent
	// use (the race detector reports it in the library), so Spec does the locking.
	mu          sync.Mutex
	dir         string
	model       *v3.Document
	router      router.Router
	bodies      responses.ResponseBodyValidator
	options     *validatorconfig.ValidationOptions
	errorSchema *base.Schema
}

// Operation is the specification operation a request was routed to.
type Operation struct {
	ID           string // operationId, e.g. "indices.stats.2"
	Method       string // HTTP method of the request
	PathTemplate string // path as written in the specification, e.g. "/{index}/_stats"
}

// DefaultDir returns the vendored specification directory, found by walking up from the
// working directory to the module root (the directory holding go.mod). Tests run in their
// package directory, so this finds the copy in a clean clone without any configuration.
// When no go.mod is found it returns the path relative to the working directory, so that
// Load fails with an error naming it.
func DefaultDir() string {
	wd, err := os.Getwd()
	if err != nil {
		return specSubdir
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return filepath.Join(dir, specSubdir)
		}
		if filepath.Dir(dir) == dir {
			return specSubdir
		}
	}
}

// Load reads the specification in specDir (the spec directory holding namespaces/ and
// schemas/) and prepares it for Validate. Schemas are compiled on first use and cached, so
// Load itself only parses and resolves the documents.
func Load(specDir string) (*Spec, error) {
	dir, err := filepath.Abs(specDir)
	if err != nil {
		return nil, fmt.Errorf("load OpenSearch API spec %q: %w", specDir, err)
	}
	root, err := rootDocument(dir)
	if err != nil {
		return nil, fmt.Errorf("load OpenSearch API spec %s: %w", dir, err)
	}
	doc, err := libopenapi.NewDocumentWithConfiguration(root, &datamodel.DocumentConfiguration{
		BasePath:            dir,
		AllowFileReferences: true,
	})
	if err != nil {
		return nil, fmt.Errorf("parse OpenSearch API spec %s: %w", dir, err)
	}
	model, err := doc.BuildV3Model()
	if err != nil {
		return nil, fmt.Errorf("resolve OpenSearch API spec %s: %w", dir, err)
	}
	errorSchema, err := componentSchema(&model.Model, errorSchemaName)
	if err != nil {
		return nil, fmt.Errorf("resolve OpenSearch API spec %s: %w", dir, err)
	}
	// One option set, so the body validator and the error-body fallback share the
	// compiled-schema cache. Path-only routing: the specification declares no servers.
	options := validatorconfig.NewValidationOptions()
	return &Spec{
		dir:         dir,
		model:       &model.Model,
		router:      router.NewRouter(&model.Model, router.WithPathOnlyMatching()),
		bodies:      responses.NewResponseBodyValidator(&model.Model, validatorconfig.WithExistingOpts(options)),
		options:     options,
		errorSchema: errorSchema,
	}, nil
}

// Dir is the absolute specification directory the Spec was loaded from.
func (s *Spec) Dir() string { return s.dir }

// Find routes a request (method and concrete path, e.g. GET /logs-a/_stats) to its operation.
// Literal path segments win over parameters, so GET /_nodes/stats is nodes.stats, not
// nodes.info for a node called "stats".
func (s *Spec) Find(req *http.Request) (Operation, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	route, err := s.route(req)
	if err != nil {
		return Operation{}, err
	}
	return operationOf(route), nil
}

func (s *Spec) route(req *http.Request) (*router.Route, error) {
	route, err := s.router.FindRoute(req)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w: %w", req.Method, req.URL.Path, ErrUnknownOperation, err)
	}
	return route, nil
}

func operationOf(route *router.Route) Operation {
	return Operation{ID: route.Operation.OperationId, Method: route.Method, PathTemplate: route.Path}
}

// Validate checks one exchange: the operation is found by the request's method and path and
// the response schema the specification declares for status is applied to body, using the
// Content-Type in header to pick the media type. An error status the operation does not
// declare is checked against the specification's generic error body (ErrorResponseBase).
// It returns nil, an error wrapping ErrUnknownOperation, or a *ValidationError listing every
// violation with its JSON pointer.
func (s *Spec) Validate(req *http.Request, status int, header http.Header, body []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	route, err := s.route(req)
	if err != nil {
		return err
	}
	resp := &http.Response{
		StatusCode: status,
		Header:     header,
		Body:       http.NoBody,
		Request:    req,
	}
	if resp.Header == nil {
		resp.Header = http.Header{}
	}
	if len(body) > 0 {
		resp.Body = io.NopCloser(bytes.NewReader(body))
	}

	var found []*validatorerrors.ValidationError
	if status >= http.StatusBadRequest && !declaresStatus(route.Operation, status) {
		found = s.validateErrorBody(req, resp)
	} else {
		_, found = s.bodies.ValidateResponseBodyWithPathItem(req, resp, route.PathItem, route.Path)
	}
	if len(found) == 0 {
		return nil
	}
	return newValidationError(operationOf(route), req.URL.Path, status, found)
}

// validateErrorBody applies ErrorResponseBase to an error response the operation does not
// declare, with the library's own schema validator.
func (s *Spec) validateErrorBody(req *http.Request, resp *http.Response) []*validatorerrors.ValidationError {
	mediaType, _, err := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if err != nil || mediaType != "application/json" {
		return []*validatorerrors.ValidationError{{
			Message: fmt.Sprintf("%d error response has Content-Type %q", resp.StatusCode, resp.Header.Get("Content-Type")),
			Reason:  "OpenSearch error bodies are application/json",
		}}
	}
	_, found := responses.ValidateResponseSchema(&responses.ValidateResponseSchemaInput{
		Request:  req,
		Response: resp,
		Schema:   s.errorSchema,
		Version:  openAPIVersion,
		Options:  []validatorconfig.Option{validatorconfig.WithExistingOpts(s.options)},
	})
	return found
}

// declaresStatus reports whether op lists a response for status: exact, range (4XX) or default.
func declaresStatus(op *v3.Operation, status int) bool {
	if op.Responses == nil {
		return false
	}
	if op.Responses.Default != nil {
		return true
	}
	if op.Responses.Codes == nil {
		return false
	}
	code := strconv.Itoa(status)
	_, exact := op.Responses.Codes.Get(code)
	_, ranged := op.Responses.Codes.Get(code[:1] + "XX")
	return exact || ranged
}

func componentSchema(model *v3.Document, name string) (*base.Schema, error) {
	if model.Components == nil || model.Components.Schemas == nil {
		return nil, fmt.Errorf("component schema %s: no components", name)
	}
	proxy, ok := model.Components.Schemas.Get(name)
	if !ok || proxy == nil {
		return nil, fmt.Errorf("component schema %s: not found", name)
	}
	schema, err := proxy.BuildSchema()
	if err != nil {
		return nil, fmt.Errorf("component schema %s: %w", name, err)
	}
	return schema, nil
}

// rootDocument builds the OpenAPI document handed to libopenapi: every path of every
// namespace file as a $ref to that file's path item, plus the error body schema. The
// upstream project merges the namespaces with its own TypeScript tool; a root of references
// lets the library resolve the files instead of a merger of our own. Global query parameters
// (_global_parameters.yaml) and superseded _opendistro aliases (_superseded_operations.yaml)
// only matter to request validation and are left out.
func rootDocument(dir string) ([]byte, error) {
	files, err := filepath.Glob(filepath.Join(dir, "namespaces", "*.yaml"))
	if err != nil {
		return nil, fmt.Errorf("list namespaces: %w", err)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no namespaces/*.yaml in %s", dir)
	}
	paths := map[string]map[string]string{}
	owner := map[string]string{}
	for _, file := range files {
		keys, err := pathKeys(file)
		if err != nil {
			return nil, err
		}
		name := filepath.Base(file)
		for _, key := range keys {
			if prev, dup := owner[key]; dup {
				return nil, fmt.Errorf("path %s is in both namespaces/%s and namespaces/%s", key, prev, name)
			}
			owner[key] = name
			paths[key] = map[string]string{"$ref": "namespaces/" + name + "#/paths/" + escapePointer(key)}
		}
	}
	root := map[string]any{
		"openapi": "3.1.0", // as every namespace file; openAPIVersion matches it
		"info":    map[string]string{"title": "OpenSearch API (shardwise root)", "version": "fbe9edeb"},
		"paths":   paths,
		"components": map[string]any{
			"schemas": map[string]any{errorSchemaName: map[string]string{"$ref": errorSchemaRef}},
		},
	}
	out, err := yaml.Marshal(root)
	if err != nil {
		return nil, fmt.Errorf("render root document: %w", err)
	}
	return out, nil
}

// pathKeys returns the keys of a namespace file's paths object in file order.
func pathKeys(file string) ([]string, error) {
	raw, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("read namespace: %w", err)
	}
	var doc struct {
		Paths yaml.Node `yaml:"paths"`
	}
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("parse namespace %s: %w", filepath.Base(file), err)
	}
	if doc.Paths.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("namespace %s: paths is not a mapping", filepath.Base(file))
	}
	keys := make([]string, 0, len(doc.Paths.Content)/2)
	for i := 0; i < len(doc.Paths.Content); i += 2 {
		keys = append(keys, doc.Paths.Content[i].Value)
	}
	return keys, nil
}

// escapePointer turns a path key into a JSON pointer token (RFC 6901).
func escapePointer(token string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(token)
}
