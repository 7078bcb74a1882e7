package telemetry_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shardwise/shardwise/shared/telemetry"
)

var flushTime = time.Date(2025, 6, 1, 10, 30, 0, 123_000_000, time.UTC)

// specUnit is the MetricUnit pattern of the EMF specification's JSON schema, copied rather than
// derived from the package so that a wrong Unit constant fails here.
var specUnit = regexp.MustCompile(`^(Seconds|Microseconds|Milliseconds|Bytes|Kilobytes|Megabytes|Gigabytes|Terabytes|Bits|Kilobits|Megabits|Gigabits|Terabits|Percent|Count|Bytes\/Second|Kilobytes\/Second|Megabytes\/Second|Gigabytes\/Second|Terabytes\/Second|Bits\/Second|Kilobits\/Second|Megabits\/Second|Gigabits\/Second|Terabits\/Second|Count\/Second|None)$`)

// emfDoc is what a document says once checked against the specification.
type emfDoc struct {
	dims    map[string]string
	metrics map[string]emfMetric
}

type emfMetric struct {
	unit   string
	values []float64
}

// parseEMF checks one line against the EMF specification's required shape and returns its
// content. Every rule is the specification's (or its JSON schema's), not this package's.
func parseEMF(t *testing.T, line []byte) emfDoc {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	var root map[string]json.RawMessage
	if err := dec.Decode(&root); err != nil {
		t.Fatalf("document is not a JSON object: %v\n%s", err, line)
	}
	if dec.More() {
		t.Fatalf("document has data after the JSON object:\n%s", line)
	}
	rawAWS, ok := root["_aws"]
	if !ok {
		t.Fatalf("document lacks the required _aws member:\n%s", line)
	}
	var aws struct {
		Timestamp         json.Number
		CloudWatchMetrics []struct {
			Namespace  string
			Dimensions [][]string
			Metrics    []struct {
				Name string
				Unit *string
			}
		}
	}
	awsDec := json.NewDecoder(bytes.NewReader(rawAWS))
	awsDec.UseNumber()
	awsDec.DisallowUnknownFields() // "objects defined by this specification MUST NOT contain any additional members"
	if err := awsDec.Decode(&aws); err != nil {
		t.Fatalf("_aws does not match the Metadata object: %v\n%s", err, rawAWS)
	}
	ts, err := strconv.ParseInt(aws.Timestamp.String(), 10, 64)
	if err != nil {
		t.Fatalf("_aws.Timestamp %q is not an integer of milliseconds: %v", aws.Timestamp, err)
	}
	if ts != flushTime.UnixMilli() {
		t.Errorf("_aws.Timestamp: got %d, want %d", ts, flushTime.UnixMilli())
	}
	if len(aws.CloudWatchMetrics) != 1 {
		t.Fatalf("CloudWatchMetrics: got %d directives, want 1", len(aws.CloudWatchMetrics))
	}
	dir := aws.CloudWatchMetrics[0]
	if dir.Namespace != telemetry.Namespace {
		t.Errorf("Namespace: got %q, want %q", dir.Namespace, telemetry.Namespace)
	}
	if len(dir.Dimensions) != 1 {
		t.Fatalf("Dimensions: got %d dimension sets, want 1 (schema: minItems 1)", len(dir.Dimensions))
	}
	if dir.Dimensions[0] == nil {
		t.Fatalf("Dimensions[0] is null, want an array (possibly empty)")
	}
	if n := len(dir.Dimensions[0]); n > 9 {
		t.Errorf("DimensionSet has %d keys, the specification allows 9", n)
	}
	doc := emfDoc{dims: map[string]string{}, metrics: map[string]emfMetric{}}
	for _, name := range dir.Dimensions[0] {
		if len(name) < 1 || len(name) > 255 {
			t.Errorf("dimension reference %q: length out of 1-255", name)
		}
		var v string
		if err := json.Unmarshal(root[name], &v); err != nil {
			t.Fatalf("dimension target %q: got %s, want a string root member", name, root[name])
		}
		doc.dims[name] = v
	}
	if n := len(dir.Metrics); n == 0 || n > 100 {
		t.Fatalf("Metrics: got %d definitions, want 1-100", n)
	}
	for _, md := range dir.Metrics {
		if len(md.Name) < 1 || len(md.Name) > 255 {
			t.Errorf("metric name %q: length out of 1-255", md.Name)
		}
		if md.Unit == nil || !specUnit.MatchString(*md.Unit) {
			t.Errorf("metric %q: unit %v is not a CloudWatch unit", md.Name, md.Unit)
		}
		target, ok := root[md.Name]
		if !ok {
			t.Fatalf("metric %q has no root member", md.Name)
		}
		var values []float64
		var one float64
		if err := json.Unmarshal(target, &one); err == nil {
			values = []float64{one}
		} else if err := json.Unmarshal(target, &values); err != nil {
			t.Fatalf("metric target %q: got %s, want a number or an array of numbers", md.Name, target)
		}
		if len(values) > 100 {
			t.Errorf("metric target %q has %d values, the specification allows 100", md.Name, len(values))
		}
		doc.metrics[md.Name] = emfMetric{unit: *md.Unit, values: values}
	}
	return doc
}

// flush runs Flush and checks every line, returning the documents in order.
func flush(t *testing.T, m *telemetry.Metrics) ([]emfDoc, error) {
	t.Helper()
	var buf bytes.Buffer
	err := m.Flush(&buf)
	var docs []emfDoc
	sc := bufio.NewScanner(&buf)
	sc.Buffer(nil, telemetry.MaxDocumentBytes+1)
	for sc.Scan() {
		docs = append(docs, parseEMF(t, sc.Bytes()))
	}
	if sc.Err() != nil {
		t.Fatalf("reading flushed lines: %v", sc.Err())
	}
	return docs, err
}

func newMetrics() *telemetry.Metrics {
	return telemetry.NewMetrics(func() time.Time { return flushTime })
}

func seq(n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = float64(i)
	}
	return out
}

func TestMetricsFlush(t *testing.T) {
	cluster := telemetry.Dimension{Name: "cluster", Value: "prod-logs"}
	function := telemetry.Dimension{Name: "function", Value: "detect"}
	tests := []struct {
		name string
		add  func(m *telemetry.Metrics)
		want []emfDoc
	}{
		{
			name: "no metrics writes nothing",
			add:  func(*telemetry.Metrics) {},
		},
		{
			name: "one metric without dimensions",
			add:  func(m *telemetry.Metrics) { m.Add("Invocations", telemetry.UnitCount, 1) },
			want: []emfDoc{{dims: map[string]string{}, metrics: map[string]emfMetric{"Invocations": {"Count", []float64{1}}}}},
		},
		{
			name: "metrics sharing dimensions in any order share a document",
			add: func(m *telemetry.Metrics) {
				m.Add("HotNodes", telemetry.UnitCount, 2, cluster, function)
				m.Add("PlanLatency", telemetry.UnitMilliseconds, 1.5, function, cluster)
				m.Add("BytesMoved", telemetry.UnitBytes, 10737418240, cluster, function)
			},
			want: []emfDoc{{
				dims: map[string]string{"cluster": "prod-logs", "function": "detect"},
				metrics: map[string]emfMetric{
					"BytesMoved":  {"Bytes", []float64{10737418240}},
					"HotNodes":    {"Count", []float64{2}},
					"PlanLatency": {"Milliseconds", []float64{1.5}},
				},
			}},
		},
		{
			name: "each dimension set gets its own document",
			add: func(m *telemetry.Metrics) {
				m.Add("QueueLatency", telemetry.UnitSeconds, 3.5, cluster, telemetry.Dimension{Name: "node", Value: "node-1"})
				m.Add("QueueLatency", telemetry.UnitSeconds, 0.2, cluster, telemetry.Dimension{Name: "node", Value: "node-2"})
				m.Add("Moves", telemetry.UnitCount, 1, cluster)
			},
			want: []emfDoc{
				{dims: map[string]string{"cluster": "prod-logs"}, metrics: map[string]emfMetric{"Moves": {"Count", []float64{1}}}},
				{dims: map[string]string{"cluster": "prod-logs", "node": "node-1"}, metrics: map[string]emfMetric{"QueueLatency": {"Seconds", []float64{3.5}}}},
				{dims: map[string]string{"cluster": "prod-logs", "node": "node-2"}, metrics: map[string]emfMetric{"QueueLatency": {"Seconds", []float64{0.2}}}},
			},
		},
		{
			name: "repeated values of a metric are an array",
			add: func(m *telemetry.Metrics) {
				for _, v := range []float64{0.5, -2, 0} {
					m.Add("Utilization", telemetry.UnitPercent, v, cluster)
				}
			},
			want: []emfDoc{{dims: map[string]string{"cluster": "prod-logs"}, metrics: map[string]emfMetric{"Utilization": {"Percent", []float64{0.5, -2, 0}}}}},
		},
		{
			name: "more than 100 values split over documents",
			add: func(m *telemetry.Metrics) {
				for _, v := range seq(150) {
					m.Add("ShardLoad", telemetry.UnitNone, v)
				}
				m.Add("Cycles", telemetry.UnitCount, 1)
			},
			want: []emfDoc{
				{dims: map[string]string{}, metrics: map[string]emfMetric{"ShardLoad": {"None", seq(100)}, "Cycles": {"Count", []float64{1}}}},
				{dims: map[string]string{}, metrics: map[string]emfMetric{"ShardLoad": {"None", seq(150)[100:]}}},
			},
		},
		{
			name: "more than 100 metrics split over documents",
			add: func(m *telemetry.Metrics) {
				for i := range 120 {
					m.Add(fmt.Sprintf("M%03d", i), telemetry.UnitCountPerSecond, float64(i), function)
				}
			},
			want: func() []emfDoc {
				docs := []emfDoc{
					{dims: map[string]string{"function": "detect"}, metrics: map[string]emfMetric{}},
					{dims: map[string]string{"function": "detect"}, metrics: map[string]emfMetric{}},
				}
				for i := range 120 {
					docs[i/100].metrics[fmt.Sprintf("M%03d", i)] = emfMetric{"Count/Second", []float64{float64(i)}}
				}
				return docs
			}(),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := newMetrics()
			tc.add(m)
			got, err := flush(t, m)
			if err != nil {
				t.Fatalf("Flush: %v", err)
			}
			assertDocs(t, got, tc.want)
		})
	}
}

func assertDocs(t *testing.T, got, want []emfDoc) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d documents %+v, want %d %+v", len(got), got, len(want), want)
	}
	for i := range want {
		if fmt.Sprint(got[i].dims) != fmt.Sprint(want[i].dims) {
			t.Errorf("document %d dimensions: got %v, want %v", i, got[i].dims, want[i].dims)
		}
		if len(got[i].metrics) != len(want[i].metrics) {
			t.Errorf("document %d: got %d metrics, want %d", i, len(got[i].metrics), len(want[i].metrics))
		}
		for name, w := range want[i].metrics {
			g, ok := got[i].metrics[name]
			if !ok {
				t.Errorf("document %d: metric %s missing", i, name)
				continue
			}
			if g.unit != w.unit || fmt.Sprint(g.values) != fmt.Sprint(w.values) {
				t.Errorf("document %d metric %s: got %s %v, want %s %v", i, name, g.unit, g.values, w.unit, w.values)
			}
		}
	}
}

func TestMetricsRejectInvalid(t *testing.T) {
	d := func(name, value string) telemetry.Dimension { return telemetry.Dimension{Name: name, Value: value} }
	var tooMany []telemetry.Dimension
	for i := range 10 {
		tooMany = append(tooMany, d(fmt.Sprintf("d%d", i), "v"))
	}
	tests := []struct {
		name   string
		metric string
		unit   telemetry.Unit
		value  float64
		dims   []telemetry.Dimension
	}{
		{name: "empty metric name", metric: "", unit: telemetry.UnitCount},
		{name: "metric name over 255", metric: strings.Repeat("m", 256), unit: telemetry.UnitCount},
		{name: "metric named _aws", metric: "_aws", unit: telemetry.UnitCount},
		{name: "unknown unit", metric: "Bad", unit: "Requests"},
		{name: "empty unit", metric: "Bad", unit: ""},
		{name: "NaN", metric: "Bad", unit: telemetry.UnitCount, value: math.NaN()},
		{name: "infinity", metric: "Bad", unit: telemetry.UnitCount, value: math.Inf(1)},
		{name: "ten dimensions", metric: "Bad", unit: telemetry.UnitCount, dims: tooMany},
		{name: "dimension given twice", metric: "Bad", unit: telemetry.UnitCount, dims: []telemetry.Dimension{d("node", "a"), d("node", "b")}},
		{name: "empty dimension name", metric: "Bad", unit: telemetry.UnitCount, dims: []telemetry.Dimension{d("", "a")}},
		{name: "dimension name starting with a colon", metric: "Bad", unit: telemetry.UnitCount, dims: []telemetry.Dimension{d(":node", "a")}},
		{name: "dimension named _aws", metric: "Bad", unit: telemetry.UnitCount, dims: []telemetry.Dimension{d("_aws", "a")}},
		{name: "empty dimension value", metric: "Bad", unit: telemetry.UnitCount, dims: []telemetry.Dimension{d("node", "")}},
		{name: "blank dimension value", metric: "Bad", unit: telemetry.UnitCount, dims: []telemetry.Dimension{d("node", "  ")}},
		{name: "non-ASCII dimension value", metric: "Bad", unit: telemetry.UnitCount, dims: []telemetry.Dimension{d("zone", "zürich")}},
		{name: "control character in dimension value", metric: "Bad", unit: telemetry.UnitCount, dims: []telemetry.Dimension{d("node", "a\nb")}},
		{name: "dimension value over 1024", metric: "Bad", unit: telemetry.UnitCount, dims: []telemetry.Dimension{d("node", strings.Repeat("n", 1025))}},
		{name: "metric named like its dimension", metric: "node", unit: telemetry.UnitCount, dims: []telemetry.Dimension{d("node", "a")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := newMetrics()
			m.Add("Good", telemetry.UnitCount, 1)
			m.Add(tc.metric, tc.unit, tc.value, tc.dims...)
			got, err := flush(t, m)
			if !errors.Is(err, telemetry.ErrInvalidMetric) {
				t.Fatalf("Flush: got err %v, want ErrInvalidMetric", err)
			}
			assertDocs(t, got, []emfDoc{{dims: map[string]string{}, metrics: map[string]emfMetric{"Good": {"Count", []float64{1}}}}})
		})
	}
}

func TestMetricsUnitConflictKeepsFirst(t *testing.T) {
	m := newMetrics()
	m.Add("Latency", telemetry.UnitMilliseconds, 12)
	m.Add("Latency", telemetry.UnitSeconds, 0.5)
	got, err := flush(t, m)
	if !errors.Is(err, telemetry.ErrInvalidMetric) || !strings.Contains(err.Error(), `"Latency"`) {
		t.Fatalf("Flush: got err %v, want ErrInvalidMetric naming Latency", err)
	}
	assertDocs(t, got, []emfDoc{{dims: map[string]string{}, metrics: map[string]emfMetric{"Latency": {"Milliseconds", []float64{12}}}}})
}

func TestMetricsDocumentOverEventLimit(t *testing.T) {
	m := newMetrics()
	// 100 longest names x 100 longest values: about 290 KB, over one log event.
	for i := range telemetry.MaxMetricsPerDocument {
		name := fmt.Sprintf("%03d%s", i, strings.Repeat("m", 252))
		for range telemetry.MaxValuesPerMetric {
			m.Add(name, telemetry.UnitNone, -1.2345678901234567e-300)
		}
	}
	var buf bytes.Buffer
	err := m.Flush(&buf)
	if !errors.Is(err, telemetry.ErrInvalidMetric) {
		t.Fatalf("Flush: got err %v, want ErrInvalidMetric", err)
	}
	if buf.Len() != 0 {
		t.Fatalf("Flush wrote %d bytes of an oversized document, want none", buf.Len())
	}
}

func TestMetricsFlushEmptiesCollector(t *testing.T) {
	m := newMetrics()
	m.Add("Cycles", telemetry.UnitCount, 1)
	m.Add("", telemetry.UnitCount, 1)
	if docs, err := flush(t, m); len(docs) != 1 || err == nil {
		t.Fatalf("first Flush: got %d documents and err %v, want 1 and the invalid metric", len(docs), err)
	}
	if docs, err := flush(t, m); len(docs) != 0 || err != nil {
		t.Fatalf("second Flush: got %d documents and err %v, want none and nil", len(docs), err)
	}
}

type failingWriter struct{ err error }

func (w failingWriter) Write([]byte) (int, error) { return 0, w.err }

func TestMetricsFlushWriteError(t *testing.T) {
	m := newMetrics()
	m.Add("Cycles", telemetry.UnitCount, 1)
	broken := errors.New("stdout closed")
	if err := m.Flush(failingWriter{broken}); !errors.Is(err, broken) {
		t.Fatalf("Flush: got err %v, want it to wrap %v", err, broken)
	}
}

func TestMetricsConcurrentAdd(t *testing.T) {
	const goroutines, each = 20, 10
	m := newMetrics()
	var wg sync.WaitGroup
	for range goroutines {
		wg.Go(func() {
			for range each {
				m.Add("Moves", telemetry.UnitCount, 1)
			}
		})
	}
	wg.Wait()
	docs, err := flush(t, m)
	if err != nil {
		t.Fatalf("Flush: %v", err)
	}
	total := 0
	for _, d := range docs {
		total += len(d.metrics["Moves"].values)
	}
	if total != goroutines*each {
		t.Fatalf("got %d values, want %d", total, goroutines*each)
	}
}

func TestMetricsNilClockUsesWallTime(t *testing.T) {
	m := telemetry.NewMetrics(nil)
	m.Add("Cycles", telemetry.UnitCount, 1)
	before := time.Now().UnixMilli()
	var buf bytes.Buffer
	if err := m.Flush(&buf); err != nil {
		t.Fatalf("Flush: %v", err)
	}
	var doc struct {
		AWS struct{ Timestamp int64 } `json:"_aws"`
	}
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatalf("document is not JSON: %v", err)
	}
	if after := time.Now().UnixMilli(); doc.AWS.Timestamp < before || doc.AWS.Timestamp > after {
		t.Fatalf("Timestamp: got %d, want within [%d, %d]", doc.AWS.Timestamp, before, after)
	}
}
