package snapshots

import (
	"testing"
	"time"
)

// BenchmarkSave30k stores the 37-node, 30,000-copy snapshot of large (random sizes, loads and
// counters, which compression gets no help from).
func BenchmarkSave30k(b *testing.B) {
	snap, ctrs := large(37, 0)
	st := store()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Save(b.Context(), st, snap, ctrs, nil, time.Hour, t0); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLoad30k loads that snapshot with nothing decoded kept, as a function's first Load does.
func BenchmarkLoad30k(b *testing.B) {
	snap, ctrs := large(37, 0)
	st := store()
	key, err := Save(b.Context(), st, snap, ctrs, nil, time.Hour, t0)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		Forget()
		if _, _, err := Load(b.Context(), st, "big", key); err != nil {
			b.Fatal(err)
		}
	}
}
