package jsonstrict

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

type seconds int

func (s *seconds) UnmarshalJSON(b []byte) error {
	if !strings.HasSuffix(string(b), `s"`) {
		return errors.New("no unit: write \"30s\"")
	}
	*s = 1
	return nil
}

type node struct {
	Name string  `json:"name"`
	Disk int64   `json:"disk_bytes"`
	Wait seconds `json:"wait"`
}

type scenario struct {
	Name   string            `json:"name"`
	Nodes  []node            `json:"nodes"`
	Labels map[string]string `json:"labels"`
	Shaped shaped            `json:"shaped"`
}

// shaped reads its own document and tells Check its keys through JSONShape; as the contract asks,
// its UnmarshalJSON refuses what the shape has no key for.
type shaped struct{ n int }

func (s *shaped) UnmarshalJSON(b []byte) error {
	var v struct {
		Limit int `json:"limit"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		return err
	}
	s.n = v.Limit
	return nil
}
func (shaped) JSONShape() any {
	return struct {
		Limit int `json:"limit"`
	}{}
}

func TestCheck(t *testing.T) {
	doc := func(lines ...string) string { return strings.Join(lines, "\n") }
	cases := []struct {
		name  string
		in    string
		exact bool
		want  string
	}{
		{"valid", doc(`{"name": "a",`, `  "nodes": [{"name": "n0", "disk_bytes": 10, "wait": "3s"}]}`), false, ""},
		{"a number of the wrong type, deep", doc(`{"name": "a",`, `  "nodes": [{}, {},`, `    {"disk_bytes": "8GiB"}]}`), false,
			`3:20: nodes[2].disk_bytes: want a whole number, got string`},
		{"an unknown field names its section", doc(`{"nodes": [`, `  {"nom": "x"}]}`), false,
			`2:4: nodes[0].nom: unknown field "nom" in nodes[0]`},
		{"a field's own UnmarshalJSON error", doc(`{"nodes": [{"wait": "30"}]}`), false,
			`1:21: nodes[0].wait: no unit: write "30s"`},
		{"a map's values are checked", `{"labels": {"a": 1}}`, false, `1:18: labels.a: want a string, got number`},
		{"a Shaper's keys are checked", `{"shaped": {"limt": 1}}`, false, `1:13: shaped.limt: unknown field "limt" in shaped`},
		{"a syntax error", doc(`{"name": "a",`, `  "nodes": [}`), false, `2:13: invalid character '}' looking for beginning of value`},
		{"cut short", doc(`{"name": "a",`, `  "nodes": [`), false, `2:13: the document ends early`},
		{"case folds without ExactKeys", `{"NAME": "a"}`, false, ""},
		{"case is refused with ExactKeys", `{"NAME": "a"}`, true, `1:2: NAME: keys are case-sensitive: write "name"`},
		{"a repeated key with ExactKeys", `{"name": "a", "name": "b"}`, true, `1:15: name: the key appears twice in one object`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := Check([]byte(tc.in), reflect.TypeFor[scenario](), Options{ExactKeys: tc.exact})
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("got %v, want no error", err)
			case tc.want != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.want)):
				t.Errorf("got %v, want %s", err, tc.want)
			}
		})
	}
}

func TestInFile(t *testing.T) {
	err := Decode([]byte("{\n \"nme\": 1}"), &node{})
	if got, want := InFile("scenario.json", err).Error(), `scenario.json:2:2: nme: unknown field "nme" at the top level`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	if !errors.Is(InFile("x.json", err), ErrUnknownField) {
		t.Error("InFile lost the error it wraps")
	}
}

type withUnits struct {
	Disk  int64    `json:"disk_bytes" unit:"bytes"`
	Tick  float64  `json:"tick_seconds" unit:"seconds"`
	Delay *float64 `json:"delay_seconds,omitempty" unit:"seconds"`
	Rate  float64  `json:"rate"`
	Steps []struct {
		At float64 `json:"at_seconds" unit:"seconds"`
	} `json:"steps"`
}

func TestNormalize(t *testing.T) {
	cases := []struct {
		name, in, want, wantErr string
	}{
		{"numbers stay", `{"disk_bytes": 1024, "tick_seconds": 30}`, `{"disk_bytes": 1024, "tick_seconds": 30}`, ""},
		{"units become numbers", `{"disk_bytes": "8GiB", "tick_seconds": "30s", "delay_seconds": "1m", "steps": [{"at_seconds": "1h30m"}]}`,
			`{"disk_bytes": 8589934592, "tick_seconds": 30, "delay_seconds": 60, "steps": [{"at_seconds": 5400}]}`, ""},
		{"a size that is not one", "{\n  \"disk_bytes\": \"8 gigs\"}", "", `2:17: disk_bytes: size "8 gigs": want a number of bytes`},
		{"a duration without a unit names its field", `{"steps": [{}, {"at_seconds": "90"}]}`, "",
			`1:31: steps[1].at_seconds: duration "90" has no unit: write "90s"`},
		{"an untagged field takes no unit", `{"rate": "5m"}`, "", `1:10: rate: want a number, got string`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Normalize([]byte(tc.in), reflect.TypeFor[withUnits](), Options{})
			switch {
			case tc.wantErr != "":
				if err == nil || !strings.HasPrefix(err.Error(), tc.wantErr) {
					t.Errorf("got %v, want %s", err, tc.wantErr)
				}
			case err != nil:
				t.Errorf("got %v, want %s", err, tc.want)
			case string(got) != tc.want:
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
}
