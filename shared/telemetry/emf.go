package telemetry

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strings"
	"sync"
	"time"
)

// Namespace is the CloudWatch namespace of every shardwise metric.
const Namespace = "shardwise"

// Limits of the CloudWatch Embedded Metric Format specification ("Specification: Embedded metric
// format", CloudWatch user guide) and of the CloudWatch Dimension API it defers to.
const (
	// MaxMetricsPerDocument: a MetricDirective's Metrics array holds at most 100 definitions.
	MaxMetricsPerDocument = 100
	// MaxValuesPerMetric: a numeric array metric target holds at most 100 values.
	MaxValuesPerMetric = 100
	// maxDimensions: a DimensionSet holds at most 9 keys in the specification and its JSON schema
	// (CloudWatch itself now takes 30 dimensions per metric; 9 is valid under both).
	maxDimensions = 9
	// maxNameLen: Namespace, metric names and dimension names are 1-255 characters (the schema).
	maxNameLen = 255
	// maxDimensionValueLen: a dimension value is 1-1024 ASCII characters (CloudWatch Dimension).
	maxDimensionValueLen = 1024
	// MaxDocumentBytes: an EMF document is one CloudWatch Logs event, 256 KB at most.
	MaxDocumentBytes = 256 * 1024
)

// ErrInvalidMetric is wrapped by every error about a metric that cannot be sent.
var ErrInvalidMetric = errors.New("telemetry: invalid metric")

// Unit is a CloudWatch metric unit; the EMF specification accepts exactly these.
type Unit string

// The CloudWatch metric units (MetricDatum.Unit) shardwise sends.
const (
	UnitSeconds        Unit = "Seconds"
	UnitMilliseconds   Unit = "Milliseconds"
	UnitBytes          Unit = "Bytes"
	UnitPercent        Unit = "Percent"
	UnitCount          Unit = "Count"
	UnitCountPerSecond Unit = "Count/Second"
	UnitNone           Unit = "None"
)

// validUnits are every unit CloudWatch accepts: a Unit built from any other string is refused.
var validUnits = map[Unit]bool{
	"Seconds": true, "Microseconds": true, "Milliseconds": true,
	"Bytes": true, "Kilobytes": true, "Megabytes": true, "Gigabytes": true, "Terabytes": true,
	"Bits": true, "Kilobits": true, "Megabits": true, "Gigabits": true, "Terabits": true,
	"Percent": true, "Count": true,
	"Bytes/Second": true, "Kilobytes/Second": true, "Megabytes/Second": true, "Gigabytes/Second": true, "Terabytes/Second": true,
	"Bits/Second": true, "Kilobits/Second": true, "Megabits/Second": true, "Gigabits/Second": true, "Terabits/Second": true,
	"Count/Second": true, "None": true,
}

// Dimension is one name/value pair of a metric's identity (e.g. cluster=prod-logs).
type Dimension struct{ Name, Value string }

// Metrics collects metric values during an invocation and writes them as EMF documents. It is
// safe for concurrent use.
type Metrics struct {
	now func() time.Time

	mu   sync.Mutex
	sets map[string]*metricSet
	errs []error
}

// metricSet is the metrics sharing one dimension set: they go out in the same documents.
type metricSet struct {
	dims    []Dimension // sorted by name
	metrics map[string]*metric
}

type metric struct {
	unit   Unit
	values []float64
}

// NewMetrics returns an empty collector stamping documents with now (time.Now when nil).
func NewMetrics(now func() time.Time) *Metrics {
	if now == nil {
		now = time.Now
	}
	return &Metrics{now: now, sets: make(map[string]*metricSet)}
}

// Add records one value of metric name in unit under dims. Values added more than once under
// the same name and dimensions are all sent (CloudWatch aggregates them). An invalid metric is
// dropped and reported by the next Flush, so instrumentation never needs its own error path.
func (m *Metrics) Add(name string, unit Unit, value float64, dims ...Dimension) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.add(name, unit, value, dims); err != nil {
		m.errs = append(m.errs, fmt.Errorf("metric %q: %w", name, err))
	}
}

func (m *Metrics) add(name string, unit Unit, value float64, dims []Dimension) error {
	if err := checkName("metric name", name); err != nil {
		return err
	}
	if !validUnits[unit] {
		return fmt.Errorf("%w: unit %q is not a CloudWatch unit", ErrInvalidMetric, unit)
	}
	if math.IsNaN(value) || math.IsInf(value, 0) {
		return fmt.Errorf("%w: value %v is not a finite number", ErrInvalidMetric, value)
	}
	sorted, err := checkDimensions(dims)
	if err != nil {
		return err
	}
	for _, d := range sorted {
		if d.Name == name {
			// Dimension and metric values are both root members of the document.
			return fmt.Errorf("%w: name is also a dimension of this set", ErrInvalidMetric)
		}
	}
	key := dimensionKey(sorted)
	set := m.sets[key]
	if set == nil {
		set = &metricSet{dims: sorted, metrics: make(map[string]*metric)}
		m.sets[key] = set
	}
	mt := set.metrics[name]
	if mt == nil {
		mt = &metric{unit: unit}
		set.metrics[name] = mt
	}
	if mt.unit != unit {
		return fmt.Errorf("%w: unit %s differs from the %s it was first added with", ErrInvalidMetric, unit, mt.unit)
	}
	mt.values = append(mt.values, value)
	return nil
}

// Flush writes every collected metric to w as EMF documents, one JSON object per line (one
// CloudWatch Logs event each), and empties the collector. It writes one document per dimension
// set, more when a set has over MaxMetricsPerDocument metrics or a metric over
// MaxValuesPerMetric values. It returns the errors of metrics dropped since the last Flush along
// with any write error.
func (m *Metrics) Flush(w io.Writer) error {
	m.mu.Lock()
	sets, errs := m.sets, m.errs
	m.sets, m.errs = make(map[string]*metricSet), nil
	m.mu.Unlock()

	timestamp := m.now().UnixMilli()
	for _, key := range slices.Sorted(maps.Keys(sets)) {
		for _, doc := range sets[key].documents(timestamp) {
			line, err := encode(doc)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			if _, err := w.Write(line); err != nil {
				return errors.Join(append(errs, fmt.Errorf("telemetry: write metrics: %w", err))...)
			}
		}
	}
	return errors.Join(errs...)
}

// document is one EMF document: the metadata plus the root members it references.
type document struct {
	aws     metadata
	members map[string]any
}

type metadata struct {
	Timestamp         int64             `json:"Timestamp"`
	CloudWatchMetrics []metricDirective `json:"CloudWatchMetrics"`
}

type metricDirective struct {
	Namespace  string             `json:"Namespace"`
	Dimensions [][]string         `json:"Dimensions"`
	Metrics    []metricDefinition `json:"Metrics"`
}

type metricDefinition struct {
	Name string `json:"Name"`
	Unit Unit   `json:"Unit"`
}

// documents splits the set into documents within the per-document limits.
func (s *metricSet) documents(timestamp int64) []document {
	dimNames := make([]string, 0, len(s.dims))
	for _, d := range s.dims {
		dimNames = append(dimNames, d.Name)
	}
	names := slices.Sorted(maps.Keys(s.metrics))
	var docs []document
	for chunk := range slices.Chunk(names, MaxMetricsPerDocument) {
		for offset := 0; ; offset += MaxValuesPerMetric {
			doc := document{
				aws: metadata{Timestamp: timestamp, CloudWatchMetrics: []metricDirective{{
					Namespace: Namespace, Dimensions: [][]string{dimNames},
				}}},
				members: make(map[string]any, len(s.dims)+len(chunk)),
			}
			for _, d := range s.dims {
				doc.members[d.Name] = d.Value
			}
			for _, name := range chunk {
				mt := s.metrics[name]
				if offset >= len(mt.values) {
					continue
				}
				vals := mt.values[offset:min(offset+MaxValuesPerMetric, len(mt.values))]
				doc.aws.CloudWatchMetrics[0].Metrics = append(doc.aws.CloudWatchMetrics[0].Metrics, metricDefinition{Name: name, Unit: mt.unit})
				if len(vals) == 1 {
					doc.members[name] = vals[0]
				} else {
					doc.members[name] = vals
				}
			}
			if len(doc.aws.CloudWatchMetrics[0].Metrics) == 0 {
				break
			}
			docs = append(docs, doc)
		}
	}
	return docs
}

// encode renders doc as one line of JSON, refusing one over MaxDocumentBytes (CloudWatch would
// drop or split it).
func encode(doc document) ([]byte, error) {
	root := make(map[string]any, len(doc.members)+1)
	for k, v := range doc.members {
		root[k] = v
	}
	root["_aws"] = doc.aws
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(root); err != nil {
		return nil, fmt.Errorf("telemetry: encode metrics: %w", err)
	}
	if buf.Len() > MaxDocumentBytes {
		return nil, fmt.Errorf("%w: document of %d metrics is %d bytes, over the %d-byte event limit",
			ErrInvalidMetric, len(doc.aws.CloudWatchMetrics[0].Metrics), buf.Len(), MaxDocumentBytes)
	}
	return buf.Bytes(), nil
}

// checkName validates a metric or dimension name: 1-255 characters and not the metadata member.
func checkName(what, name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%w: empty %s", ErrInvalidMetric, what)
	case len(name) > maxNameLen:
		return fmt.Errorf("%w: %s is %d characters, over %d", ErrInvalidMetric, what, len(name), maxNameLen)
	case name == "_aws":
		return fmt.Errorf("%w: %s _aws is the EMF metadata member", ErrInvalidMetric, what)
	}
	return nil
}

// checkDimensions validates dims and returns them sorted by name, so that one set of dimensions
// given in any order is one metric identity.
func checkDimensions(dims []Dimension) ([]Dimension, error) {
	if len(dims) > maxDimensions {
		return nil, fmt.Errorf("%w: %d dimensions, over %d", ErrInvalidMetric, len(dims), maxDimensions)
	}
	sorted := slices.Clone(dims)
	slices.SortFunc(sorted, func(a, b Dimension) int { return strings.Compare(a.Name, b.Name) })
	for i, d := range sorted {
		if err := checkName("dimension name", d.Name); err != nil {
			return nil, err
		}
		if err := checkASCII("dimension name "+d.Name, d.Name, maxNameLen); err != nil {
			return nil, err
		}
		if strings.HasPrefix(d.Name, ":") {
			return nil, fmt.Errorf("%w: dimension name %q starts with a colon", ErrInvalidMetric, d.Name)
		}
		if err := checkASCII("value of dimension "+d.Name, d.Value, maxDimensionValueLen); err != nil {
			return nil, err
		}
		if i > 0 && sorted[i-1].Name == d.Name {
			return nil, fmt.Errorf("%w: dimension %q given twice", ErrInvalidMetric, d.Name)
		}
	}
	return sorted, nil
}

// checkASCII applies CloudWatch's rule for dimension names and values: ASCII, no control
// characters, at least one non-whitespace character, at most maxLen long.
func checkASCII(what, s string, maxLen int) error {
	if len(s) > maxLen {
		return fmt.Errorf("%w: %s is %d characters, over %d", ErrInvalidMetric, what, len(s), maxLen)
	}
	if strings.TrimSpace(s) == "" {
		return fmt.Errorf("%w: %s is empty or blank", ErrInvalidMetric, what)
	}
	for _, r := range s {
		if r > 0x7e || r < 0x20 {
			return fmt.Errorf("%w: %s %q has a non-ASCII or control character", ErrInvalidMetric, what, s)
		}
	}
	return nil
}

// dimensionKey identifies a sorted dimension set. NUL cannot occur in a valid name or value.
func dimensionKey(sorted []Dimension) string {
	var b strings.Builder
	for _, d := range sorted {
		b.WriteString(d.Name)
		b.WriteByte(0)
		b.WriteString(d.Value)
		b.WriteByte(0)
	}
	return b.String()
}

// Names the deployed stack depends on: its alarm and its dashboard query these.
const (
	// MetricWriteQueueLatency is the highest estimated WRITE thread pool queue latency of a
	// cluster's nodes, in seconds (Little's law: queued tasks over completions per second),
	// emitted by detect for every snapshot it plans, with the DimensionCluster dimension only: one
	// series per cluster, not per node. Detect's "write queue latency" log line names the node.
	MetricWriteQueueLatency = "WriteQueueLatency"
	// MetricSecondsSinceLastSample is, at each sample of a cluster, how old its previous sample was:
	// the refresh period while ingest keeps up. The stack alarms on its maximum over the clusters
	// and on its absence.
	MetricSecondsSinceLastSample = "SecondsSinceLastSample"
	// DimensionCluster is the cluster's configured name, on every shardwise metric.
	DimensionCluster = "Cluster"
	// DimensionNode is a node's name, on the per-node metrics.
	DimensionNode = "Node"
)
