package config

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
)

// checkKeys walks a configuration document against the type it decodes into. encoding/json
// matches keys case-insensitively and lets a repeated key silently win, so "DRY_RUN": false or a
// second "dry_run" would turn a safety off unnoticed; here a key must spell its field exactly and
// appear once in its object. The error names the key by its path.
func checkKeys(data []byte, t reflect.Type) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	return walkValue(dec, t, "")
}

var textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
var jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()

func walkValue(dec *json.Decoder, t reflect.Type, path string) error {
	tok, err := dec.Token()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil
		}
		return err
	}
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	custom := t != nil && (reflect.PointerTo(t).Implements(jsonUnmarshaler) || reflect.PointerTo(t).Implements(textUnmarshaler))
	switch tok {
	case json.Delim('{'):
		seen := map[string]bool{}
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return err
			}
			key, _ := kt.(string)
			at := path + "." + key
			if path == "" {
				at = key
			}
			if seen[key] {
				return fmt.Errorf("%s: the key appears twice in one object", at)
			}
			seen[key] = true
			var ft reflect.Type
			switch {
			case custom || t == nil:
			case t.Kind() == reflect.Struct:
				f, exact := fieldFor(t, key)
				if f != nil && !exact {
					return fmt.Errorf("%s: keys are case-sensitive: write %q", at, jsonName(*f))
				}
				if f != nil {
					ft = f.Type
				}
			case t.Kind() == reflect.Map:
				ft = t.Elem()
			}
			if err := walkValue(dec, ft, at); err != nil {
				return err
			}
		}
		_, err := dec.Token()
		return err
	case json.Delim('['):
		var et reflect.Type
		if t != nil && !custom && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
			et = t.Elem()
		}
		for i := 0; dec.More(); i++ {
			if err := walkValue(dec, et, fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
		_, err := dec.Token()
		return err
	}
	return nil
}

// fieldFor finds the field of struct t that key names, exactly or (as encoding/json would)
// case-insensitively.
func fieldFor(t reflect.Type, key string) (*reflect.StructField, bool) {
	var fold *reflect.StructField
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		if f.Anonymous && f.Tag.Get("json") == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				if g, exact := fieldFor(ft, key); g != nil {
					if exact {
						return g, true
					}
					fold = g
				}
			}
			continue
		}
		name := jsonName(f)
		if name == "-" {
			continue
		}
		if name == key {
			return &f, true
		}
		if fold == nil && strings.EqualFold(name, key) {
			fold = &f
		}
	}
	return fold, false
}

func jsonName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	if name == "" {
		return f.Name
	}
	return name
}
