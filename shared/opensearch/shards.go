package opensearch

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// ShardCopyStats is one shard copy's routing and counters from _stats?level=shards.
type ShardCopyStats struct {
	Index   string
	Shard   int
	Primary bool
	// State is STARTED, RELOCATING or INITIALIZING.
	State string
	// Node and RelocatingNode are node IDs; RelocatingNode is empty unless the copy is moving.
	Node           string
	RelocatingNode string
	// The counters below reset when the copy moves or its node restarts.
	IndexTimeMillis int64 // indexing.index_time_in_millis
	IndexTotal      int64 // indexing.index_total
	QueryTimeMillis int64 // search.query_time_in_millis
	FetchTimeMillis int64 // search.fetch_time_in_millis
	QueryTotal      int64 // search.query_total
	StoreBytes      int64 // store.size_in_bytes
	Docs            int64 // docs.count
}

// ShardStats is every shard copy's stats, sorted by index, shard, primary first, then node, and how
// many shard copies answered.
type ShardStats struct {
	Copies           []ShardCopyStats
	ShardsTotal      int
	ShardsSuccessful int
	ShardsFailed     int
}

// indicesStatsRequest is GET _stats with a level: opensearch-go v4's IndicesStatsParams has no
// level parameter, so this type implements opensearch.Request itself.
type indicesStatsRequest struct {
	Level           string
	ExpandWildcards string
	FilterPath      []string
}

// GetRequest builds the request; the transport fills in scheme and host.
func (r indicesStatsRequest) GetRequest(method string) (*http.Request, error) {
	// opensearch.Do puts the caller's context on the request; the interface passes none here.
	req, err := http.NewRequestWithContext(context.Background(), method, "/_stats", nil)
	if err != nil {
		return nil, fmt.Errorf("build _stats request: %w", err)
	}
	q := url.Values{}
	if r.Level != "" {
		q.Set("level", r.Level)
	}
	if r.ExpandWildcards != "" {
		q.Set("expand_wildcards", r.ExpandWildcards)
	}
	if len(r.FilterPath) > 0 {
		q.Set("filter_path", strings.Join(r.FilterPath, ","))
	}
	req.URL.RawQuery = q.Encode()
	return req, nil
}

var shardStatsFilter = joinFilters(
	prefixed("_shards.", "total", "successful", "failed"),
	prefixed("indices.*.shards.*.",
		"routing.state", "routing.primary", "routing.node", "routing.relocating_node",
		"indexing.index_time_in_millis", "indexing.index_total",
		"search.query_time_in_millis", "search.fetch_time_in_millis", "search.query_total",
		"store.size_in_bytes", "docs.count"),
)

// shardStatsRequest reads hidden indices too: data stream backing indices are hidden and are often
// the hottest writers. Closed indices have no stats, so "all" would be wrong.
var shardStatsRequest = indicesStatsRequest{Level: "shards", ExpandWildcards: "open,hidden", FilterPath: shardStatsFilter}

// ShardStats reads GET _stats?level=shards.
func (c *Client) ShardStats(ctx context.Context) (ShardStats, error) {
	return get(ctx, c, "shard stats", shardStatsRequest, decodeShardStats)
}

type shardCopyWire struct {
	Routing struct {
		State          string `json:"state"`
		Primary        bool   `json:"primary"`
		Node           string `json:"node"`
		RelocatingNode string `json:"relocating_node"`
	} `json:"routing"`
	Indexing struct {
		IndexTimeInMillis int64 `json:"index_time_in_millis"`
		IndexTotal        int64 `json:"index_total"`
	} `json:"indexing"`
	Search struct {
		QueryTimeInMillis int64 `json:"query_time_in_millis"`
		FetchTimeInMillis int64 `json:"fetch_time_in_millis"`
		QueryTotal        int64 `json:"query_total"`
	} `json:"search"`
	Store struct {
		SizeInBytes int64 `json:"size_in_bytes"`
	} `json:"store"`
	Docs struct {
		Count int64 `json:"count"`
	} `json:"docs"`
}

func decodeShardStats(body []byte) (ShardStats, error) {
	if out, ok := streamShardStats(body); ok {
		return out, nil
	}
	return decodeShardStatsWith(body, unmarshalLarge)
}

// decodeShardStatsWith decodes with the given unmarshal, which the tests vary.
func decodeShardStatsWith(body []byte, unmarshal func([]byte, any) error) (ShardStats, error) {
	var wire struct {
		Shards struct {
			Total      int `json:"total"`
			Successful int `json:"successful"`
			Failed     int `json:"failed"`
		} `json:"_shards"`
		Indices shardTable[shardCopyWire] `json:"indices"`
	}
	if err := unmarshal(body, &wire); err != nil {
		return ShardStats{}, fmt.Errorf("decode: %w", err)
	}
	out := ShardStats{
		Copies:           make([]ShardCopyStats, 0, wire.Indices.count()),
		ShardsTotal:      wire.Shards.Total,
		ShardsSuccessful: wire.Shards.Successful,
		ShardsFailed:     wire.Shards.Failed,
	}
	// A few dozen node IDs and states repeat across 30,000 copies: keeping one string each lets the
	// decoder's copies be collected and keeps the result small.
	in := make(interner)
	err := wire.Indices.each(func(index string, shard int, w shardCopyWire) {
		out.Copies = append(out.Copies, ShardCopyStats{
			Index:           index,
			Shard:           shard,
			Primary:         w.Routing.Primary,
			State:           in.get(w.Routing.State),
			Node:            in.get(w.Routing.Node),
			RelocatingNode:  in.get(w.Routing.RelocatingNode),
			IndexTimeMillis: w.Indexing.IndexTimeInMillis,
			IndexTotal:      w.Indexing.IndexTotal,
			QueryTimeMillis: w.Search.QueryTimeInMillis,
			FetchTimeMillis: w.Search.FetchTimeInMillis,
			QueryTotal:      w.Search.QueryTotal,
			StoreBytes:      w.Store.SizeInBytes,
			Docs:            w.Docs.Count,
		})
	})
	if err != nil {
		return ShardStats{}, err
	}
	sortShards(out.Copies, func(c *ShardCopyStats) copyKey { return copyKey{c.Index, c.Shard, c.Primary, c.Node} })
	return out, nil
}

// shardTable is how _stats?level=shards and _cluster/state's routing_table list shard copies: by
// index name, then by shard number (a JSON key), each shard's copies C in a list.
type shardTable[C any] map[string]struct {
	Shards map[string][]C `json:"shards"`
}

// count is the number of copies.
func (t shardTable[C]) count() int {
	n := 0
	for _, idx := range t {
		for _, copies := range idx.Shards {
			n += len(copies)
		}
	}
	return n
}

// each calls f with every copy, its index and its shard number, by index name and shard number:
// the order of ShardStats.Copies and ClusterState.Routing but within a shard (sortShards). It
// stops at a shard key that is not a shard number and says which.
func (t shardTable[C]) each(f func(index string, shard int, c C)) error {
	type shardKey struct {
		num int
		key string
	}
	var keys []shardKey
	for _, index := range slices.Sorted(maps.Keys(t)) {
		shards := t[index].Shards
		keys = keys[:0]
		for key := range shards {
			shard, err := strconv.Atoi(key)
			if err != nil || shard < 0 {
				return fmt.Errorf("index %q: shard %q is not a shard number", index, key)
			}
			keys = append(keys, shardKey{shard, key})
		}
		slices.SortFunc(keys, func(a, b shardKey) int { return cmp.Or(cmp.Compare(a.num, b.num), strings.Compare(a.key, b.key)) })
		for _, k := range keys {
			for _, c := range shards[k.key] {
				f(index, k.num, c)
			}
		}
	}
	return nil
}

// sortShards finishes the order of copies that each listed: within each shard, as compareCopies
// orders them. Sorting 30,000 copies whole took a fifth of decoding them.
func sortShards[T any](copies []T, key func(*T) copyKey) {
	for start := 0; start < len(copies); {
		first := key(&copies[start])
		end := start + 1
		for end < len(copies) {
			k := key(&copies[end])
			if k.index != first.index || k.shard != first.shard {
				break
			}
			end++
		}
		// Insertion sort: a shard has a primary and a few replicas.
		for i := start + 1; i < end; i++ {
			for j := i; j > start && compareCopies(key(&copies[j-1]), key(&copies[j])) > 0; j-- {
				copies[j-1], copies[j] = copies[j], copies[j-1]
			}
		}
		start = end
	}
}

// copyKey is what shard copies are ordered by.
type copyKey struct {
	index   string
	shard   int
	primary bool
	node    string
}

// compareCopies orders copies by index, shard number, primary first, then node: the order of
// ShardStats.Copies and ClusterState.Routing.
func compareCopies(a, b copyKey) int {
	return cmp.Or(
		strings.Compare(a.index, b.index),
		cmp.Compare(a.shard, b.shard),
		comparePrimaryFirst(a.primary, b.primary),
		strings.Compare(a.node, b.node),
	)
}

func comparePrimaryFirst(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return -1
	default:
		return 1
	}
}

// interner hands out one shared string per distinct value.
type interner map[string]string

func (in interner) get(s string) string {
	if s == "" {
		return ""
	}
	if v, ok := in[s]; ok {
		return v
	}
	in[s] = s
	return s
}
