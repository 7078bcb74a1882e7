// Package wire is OpenSearch's JSON answers as the simulator writes them: ordered JSON trees
// (Object keeps keys in the order OpenSearch writes them), filter_path applied once, generically,
// while a tree streams out, and OpenSearch's error bodies with the request and reply types the
// REST handlers share.
package wire
