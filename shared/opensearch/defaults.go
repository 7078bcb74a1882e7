package opensearch

import (
	"net/http"
	"time"
)

// Defaults of Config and of the settings helpers, each with where its number comes from.
const (
	// DefaultService is the SigV4 signing name of Amazon OpenSearch Service domains (AWS docs,
	// "Signing HTTP requests to Amazon OpenSearch Service").
	DefaultService = ServiceES

	// DefaultTimeout bounds one HTTP attempt. shardwise reads the cluster every 30 s,
	// so a call that takes longer than a third of a cycle is better retried than waited for.
	DefaultTimeout = 10 * time.Second

	// DefaultMaxRetries is opensearch-go's own default (opensearchtransport defaultMaxRetries = 3).
	DefaultMaxRetries = 3

	// DefaultRetryBackoff is the base of the exponential backoff: 200, 400, 800 ms for three
	// retries, about 1.4 s in all, well inside one 30 s cycle.
	DefaultRetryBackoff = 200 * time.Millisecond

	// DefaultMaxResponseBytes caps a response body: the largest, _stats?level=shards, is about
	// 7 MB filtered for a 30,000-copy cluster, so 64 MiB leaves room for about 270,000 copies and
	// stays well inside a 512 MB function.
	DefaultMaxResponseBytes = 64 << 20

	// maxRetryBackoff caps one wait: waiting longer than a 30 s stats cycle only delays fresher data.
	maxRetryBackoff = 30 * time.Second

	// defaultAllocationEnable is OpenSearch's default of cluster.routing.allocation.enable
	// (EnableAllocationDecider).
	defaultAllocationEnable = "all"

	// maxErrorBody bounds the response body kept in an APIError: enough for any OpenSearch or AWS
	// error document, small enough that an HTML error page from a proxy cannot bloat logs.
	maxErrorBody = 4 << 10

	// maxPresizedBody caps the buffer reserved up front from a response's Content-Length, so a
	// wrong or hostile header cannot make the client allocate more than a real answer needs: the
	// largest, _stats?level=shards of a 30,000-copy cluster, is about 7 MB filtered. A longer
	// body is still read, piece by piece.
	maxPresizedBody = 64 << 20

	// firstBodyPiece and maxBodyPiece size the pieces a body of unknown length is read in: most
	// answers (health, settings) fit the first; the large ones double up to 1 MiB pieces.
	firstBodyPiece = 16 << 10
	maxBodyPiece   = 1 << 20

	// maxRequestLine is OpenSearch's default http.max_initial_line_length (4kb): a request line
	// longer than this is refused with 400, so every filter_path list must stay below it.
	maxRequestLine = 4 << 10
)

// retryOnStatus are the statuses opensearch-go retries: 429 is OpenSearch's (and AWS's) "too many
// requests", 502/503/504 are the library's own default set (a node or proxy briefly unavailable).
var retryOnStatus = []int{
	http.StatusTooManyRequests,
	http.StatusBadGateway,
	http.StatusServiceUnavailable,
	http.StatusGatewayTimeout,
}
