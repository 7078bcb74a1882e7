package jsonstrict

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"testing"
)

// FuzzCheckAgreesWithDecoder: Check refuses exactly what encoding/json, with unknown fields
// disallowed, refuses (a document it cannot place is still refused by Decode), so the positioned
// errors never turn a valid document away.
func FuzzCheckAgreesWithDecoder(f *testing.F) {
	f.Add([]byte(`{"name": "a", "nodes": [{"name": "n0", "disk_bytes": 10, "wait": "3s"}], "labels": {"a": "b"}}`))
	f.Add([]byte(`{"nodes": [{"disk_bytes": "8GiB"}]}`))
	f.Add([]byte(`{"shaped": {"limit": 1}, "NAME": "x"}`))
	f.Add([]byte(`{"nodes": [}`))
	f.Add([]byte(`{} {}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var v scenario
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.DisallowUnknownFields()
		decodeErr := dec.Decode(&v)
		if decodeErr == nil {
			if _, err := dec.Token(); !errors.Is(err, io.EOF) {
				return // trailing data: the document is refused by Decode either way
			}
		}
		checkErr := Check(data, reflect.TypeFor[scenario](), Options{})
		if decodeErr == nil && checkErr != nil {
			t.Fatalf("encoding/json decodes %q, Check refuses it: %v", data, checkErr)
		}
	})
}
