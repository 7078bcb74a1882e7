// Package settings is OpenSearch's cluster and index settings as the simulator accepts them: each
// setting's check with OpenSearch's error messages, the flattening of nested bodies into dotted
// keys and their rendering back, byte sizes and disk watermarks.
package settings
