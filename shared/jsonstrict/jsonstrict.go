// Package jsonstrict decodes documents that shardwise reads from its users and from its own
// events, where a misspelt field must be an error rather than a setting silently left at its
// default.
package jsonstrict

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// Decode decodes exactly one JSON document from data into v. A field v has no place for is an
// error, and so is anything but white space after the document.
func Decode(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	end := dec.InputOffset()
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return fmt.Errorf("trailing data after the JSON document, which ends at byte %d", end)
	}
	return nil
}
