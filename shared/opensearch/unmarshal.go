package opensearch

import jsonv1 "github.com/go-json-experiment/json/v1"

// unmarshalLarge decodes the two answers that grow with the cluster, _stats?level=shards and
// _cluster/state: 13 MB and 30,000 copies at 37 nodes, read every sample. It is encoding/json's
// Unmarshal as package v1 of github.com/go-json-experiment/json implements it (encoding/json/v2's
// origin, running encoding/json's semantics on the v2 decoder): case-insensitive names, the last
// of duplicate keys, nulls left alone. It decodes the 30,000-copy _stats answer in about half the
// time (BenchmarkDecodeShardStats30k). FuzzDecodeLargeMatchesStd holds its results and its
// errors' presence to encoding/json's.
var unmarshalLarge = jsonv1.Unmarshal
