// Package jsonstrict decodes documents that shardwise reads from its users and from its own
// events, where a misspelt field must be an error rather than a setting silently left at its
// default, and where an error says where it is: line, column and field path.
package jsonstrict

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
)

// Decode decodes exactly one JSON document from data into v. A field v has no place for is an
// error, and so is anything but white space after the document. The error is an *Error, with
// the line, column and field path, wherever Check can place it.
func Decode(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return locate(data, v, err)
	}
	end := dec.InputOffset()
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return locate(data, v, fmt.Errorf("trailing data after the JSON document, which ends at byte %d", end))
	}
	return nil
}

// DecodeExact is Decode with Options.ExactKeys: a key must spell its field exactly and appear
// once in its object.
func DecodeExact(data []byte, v any) error {
	if err := Check(data, reflect.TypeOf(v), Options{ExactKeys: true}); err != nil {
		return err
	}
	return Decode(data, v)
}

// locate is Check's positioned error for a document decoding into v failed on, or err itself when
// Check finds nothing to place (an UnmarshalJSON that refuses what it was given in context only).
func locate(data []byte, v any, err error) error {
	if perr := Check(data, reflect.TypeOf(v), Options{}); perr != nil {
		return perr
	}
	return err
}
