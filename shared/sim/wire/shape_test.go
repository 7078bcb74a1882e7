package wire

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

// shapedDoc is an answer of 3,000 indices of 3 shards of 2 copies, each copy built by copyOf.
func shapedDoc(copyOf func(i, s, c int) any) Object {
	var indices Object
	for i := range 3000 {
		var shards Object
		for s := range 3 {
			var copies []any
			for c := range 2 {
				copies = append(copies, copyOf(i, s, c))
			}
			shards = append(shards, Field{fmt.Sprint(s), copies})
		}
		indices = append(indices, Field{fmt.Sprintf("logs-%04d", i), Object{{"uuid", "u"}, {"shards", shards}}})
	}
	return Object{{"_shards", Object{{"total", 18000}, {"failed", 0}}}, {"indices", indices}}
}

// copyTree is one copy as a plain tree; its relocating node is null on every other copy, its
// padding a string of varying length and needing escapes, its ratio a float.
func copyTree(i, s, c int) Object {
	var relocating any
	if (i+c)%2 == 0 {
		relocating = fmt.Sprintf("node-%d", (i+s)%7)
	}
	return Object{
		{"routing", Object{{"state", "STARTED"}, {"primary", c == 0}, {"node", fmt.Sprintf("node-%d", (i+s+c)%7)}, {"relocating_node", relocating}}},
		{"docs", Object{{"count", int64(i * s)}, {"deleted", 0}}},
		{"store", Object{{"size_in_bytes", int64(i) << 20}, {"reserved_in_bytes", 0}}},
		{"padding", strings.Repeat("x\"", i%50)},
		{"ratio", float64(i) / 7e9},
		{"seq_no", Object{{"max_seq_no", int64(i)}, {"local_checkpoint", int64(i)}}},
	}
}

var copyShape = NewShape(8, Object{
	{"routing", Object{{"state", "STARTED"}, {"primary", Slot(0)}, {"node", Slot(1)}, {"relocating_node", Slot(2)}}},
	{"docs", Object{{"count", Slot(3)}, {"deleted", 0}}},
	{"store", Object{{"size_in_bytes", Slot(4)}, {"reserved_in_bytes", 0}}},
	{"padding", Slot(5)},
	{"ratio", Slot(6)},
	{"seq_no", Object{{"max_seq_no", Slot(7)}, {"local_checkpoint", Slot(7)}}},
})

func copyShaped(i, s, c int) Shaped {
	return Shaped{Shape: copyShape, Fill: func(v []Scalar) {
		v[0], v[1] = Bool(c == 0), Str(fmt.Sprintf("node-%d", (i+s+c)%7))
		if (i+c)%2 == 0 {
			v[2] = Str(fmt.Sprintf("node-%d", (i+s)%7))
		}
		v[3], v[4], v[5] = Int(int64(i*s)), Int(int64(i)<<20), Str(strings.Repeat("x\"", i%50))
		v[6], v[7] = Float(float64(i)/7e9), Int(int64(i))
	}}
}

// TestShapedEncodesAsItsTree: an answer whose copies are Shaped writes the same bytes as the same
// answer built as plain trees, under every kind of filter, streamed or not; and a Shaped's Object
// is its tree.
func TestShapedEncodesAsItsTree(t *testing.T) {
	trees := shapedDoc(func(i, s, c int) any { return copyTree(i, s, c) })
	shaped := shapedDoc(func(i, s, c int) any { return copyShaped(i, s, c) })
	want0, err := AppendJSON(nil, copyTree(4, 1, 0))
	if err != nil {
		t.Fatal(err)
	}
	if got0, err := AppendJSON(nil, copyShaped(4, 1, 0).Object()); err != nil || !bytes.Equal(got0, want0) {
		t.Fatalf("Object of a Shaped: %s, %v; want %s", got0, err, want0)
	}
	filters := []string{
		"",
		"_shards.total,indices.*.shards.*.routing.state,indices.*.shards.*.routing.node,indices.*.shards.*.docs.count,indices.*.shards.*.store.size_in_bytes",
		"indices.*.shards.*.routing.relocating_node",
		"indices.*.shards.*.seq_no.local_checkpoint,indices.*.shards.*.ratio",
		"indices.logs-1500.shards.*.routing.node",
		"indices.*.shards.*.routing.nope",
		"indices.*.shards.*.padding.deeper",
		"nope",
		"indices.logs-*5.shards.1.docs",
		"**.primary",
		"**.routing",
		"indices.*.shards.*.*",
		"-indices.*.shards.*.padding,-indices.*.uuid",
		"indices.*.shards.*.docs,-indices.*.shards.*.docs.deleted",
		"-indices.*.shards.*.routing.node,indices.*.shards.*.routing",
	}
	for _, filter := range filters {
		fp := ParseFilterPath(filter)
		var want, got bytes.Buffer
		if err := encodeFiltered(&want, trees, fp); err != nil {
			t.Fatal(err)
		}
		if err := encodeFiltered(&got, shaped, fp); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Bytes(), want.Bytes()) {
			t.Errorf("filter_path=%q: streamed, got %d bytes, want %d; first difference at %d", filter, got.Len(), want.Len(), firstDiff(got.Bytes(), want.Bytes()))
		}
		whole, err := AppendJSON(nil, fp.apply(shaped))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(whole, want.Bytes()) {
			t.Errorf("filter_path=%q: applied, got %d bytes, want %d; first difference at %d", filter, len(whole), want.Len(), firstDiff(whole, want.Bytes()))
		}
	}
}

// TestFilterMemoKeptBetweenAnswers: a filter's memo, kept from one answer to the next (takeMemo),
// gives each answer what the tree filter gives it, whatever answers came before.
func TestFilterMemoKeptBetweenAnswers(t *testing.T) {
	small := Object{{"indices", Object{
		{"metrics-1", Object{{"shards", Object{{"0", []any{Object{{"routing", Object{{"node", "n1"}, {"state", "STARTED"}}}}}}}}}},
		{"logs-0001", Object{{"uuid", "v"}}},
	}}}
	docs := []Object{shapedDoc(func(i, s, c int) any { return copyTree(i, s, c) }), small, shapedDoc(func(i, s, c int) any { return copyShaped(i, s, c) })}
	filter := "indices.*.shards.*.routing.node,indices.logs-0001.uuid"
	fp := ParseFilterPath(filter)
	for round := range 2 {
		for i, doc := range docs {
			want, err := AppendJSON(nil, fp.apply(doc))
			if err != nil {
				t.Fatal(err)
			}
			var got bytes.Buffer
			if err := encodeFiltered(&got, doc, ParseFilterPath(filter)); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got.Bytes(), want) {
				t.Errorf("round %d, answer %d: got %d bytes, want %d; first difference at %d", round, i, got.Len(), len(want), firstDiff(got.Bytes(), want))
			}
		}
	}
	memos.Lock()
	_, kept := memos.m[filter]
	memos.Unlock()
	if !kept {
		t.Errorf("no memo kept for %q", filter)
	}
}
