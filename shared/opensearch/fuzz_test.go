package opensearch

import (
	"os"
	"path/filepath"
	"testing"
)

// addFixtures seeds a fuzz target with the testdata fixtures and a few edge cases.
func addFixtures(f *testing.F, names ...string) {
	f.Helper()
	for _, name := range names {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, s := range []string{"", "null", "{}", "[]", `"x"`, "0", `{"nodes":null}`, `{"indices":{"a":{"shards":{"0":null}}}}`} {
		f.Add([]byte(s))
	}
}

// Each target only checks that decoding never panics, whatever the bytes: every decoder must turn
// a malformed body into an error.

func FuzzDecodeInfo(f *testing.F) {
	addFixtures(f, "info.json")
	f.Fuzz(func(t *testing.T, b []byte) { _, _ = decodeInfo(b) })
}

func FuzzDecodeHealth(f *testing.F) {
	addFixtures(f, "health.json")
	f.Fuzz(func(t *testing.T, b []byte) { _, _ = decodeHealth(b) })
}

func FuzzDecodeNodesStats(f *testing.F) {
	addFixtures(f, "nodes_stats.json")
	f.Fuzz(func(t *testing.T, b []byte) { _, _ = decodeNodesStats(b) })
}

func FuzzDecodeNodesInfo(f *testing.F) {
	addFixtures(f, "nodes_info.json")
	f.Fuzz(func(t *testing.T, b []byte) { _, _ = decodeNodesInfo(b) })
}

func FuzzDecodeShardStats(f *testing.F) {
	addFixtures(f, "shard_stats.json")
	f.Fuzz(func(t *testing.T, b []byte) { _, _ = decodeShardStats(b) })
}

func FuzzDecodeClusterState(f *testing.F) {
	addFixtures(f, "cluster_state.json")
	f.Fuzz(func(t *testing.T, b []byte) { _, _ = decodeClusterState(b) })
}

func FuzzDecodeClusterSettings(f *testing.F) {
	addFixtures(f, "cluster_settings.json")
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := decodeClusterSettings(b)
		if err != nil {
			return
		}
		// The helpers read whatever the cluster sent; they too must not panic on it.
		_, _ = s.DiskHighWatermark()
		_, _ = s.DiskThresholdEnabled()
		_ = s.AwarenessAttributes()
		_ = s.ForcedAwareness()
		_ = s.Filters()
		_ = s.AllocationEnable()
		_, _ = s.RecoveryBytesPerSecond()
	})
}

func FuzzDecodeIndexSettings(f *testing.F) {
	addFixtures(f, "index_settings.json")
	f.Fuzz(func(t *testing.T, b []byte) { _, _ = decodeIndexSettings(b) })
}

func FuzzDecodeReroute(f *testing.F) {
	addFixtures(f, "reroute_explain.json", "acknowledged.json")
	f.Fuzz(func(t *testing.T, b []byte) { _, _ = decodeReroute(b) })
}

func FuzzDecodeAllocationExplain(f *testing.F) {
	addFixtures(f, "allocation_explain.json")
	f.Fuzz(func(t *testing.T, b []byte) { _, _ = decodeAllocationExplain(b) })
}

func FuzzDecodeTasks(f *testing.F) {
	addFixtures(f, "tasks.json")
	f.Fuzz(func(t *testing.T, b []byte) { _, _ = decodeTasks(b) })
}

func FuzzDecodeCancelTask(f *testing.F) {
	addFixtures(f, "cancel_task.json", "cancel_task_node_failure.json")
	f.Fuzz(func(t *testing.T, b []byte) { _ = decodeCancelTask(b) })
}

func FuzzDecodeAcknowledged(f *testing.F) {
	addFixtures(f, "acknowledged.json", "not_acknowledged.json")
	f.Fuzz(func(t *testing.T, b []byte) { _ = decodeAcknowledged("fuzz", b) })
}

func FuzzDecodeAPIError(f *testing.F) {
	addFixtures(f, "error_task_not_found.json")
	f.Add([]byte(`{"Message":"denied"}`))
	f.Add([]byte(`{"error":"string","status":405}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		e := parseAPIError(500, b)
		if len(e.Body) > maxErrorBody {
			t.Fatalf("kept %d bytes of body, limit %d", len(e.Body), maxErrorBody)
		}
		_ = e.Error()
	})
}

func FuzzParseWatermark(f *testing.F) {
	for _, s := range []string{"90%", "0.9", "10gb", "1.5t", "-1", "0", "", "%", "1e308pb", "0x1p-2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		w, err := ParseWatermark(s)
		if err != nil {
			return
		}
		if w.UsedRatio < 0 || w.UsedRatio > 1 || w.MinFreeBytes < 0 {
			t.Fatalf("ParseWatermark(%q) = %+v, outside its range", s, w)
		}
	})
}
