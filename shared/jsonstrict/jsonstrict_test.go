package jsonstrict

import (
	"strings"
	"testing"
)

func TestDecode(t *testing.T) {
	type doc struct {
		Name  string `json:"name"`
		Count int    `json:"count"`
	}
	tests := []struct {
		name, in, wantErr string
		want              doc
	}{
		{name: "exact", in: `{"name":"a","count":2}`, want: doc{"a", 2}},
		{name: "white space after", in: "{\"name\":\"a\"}\n\t ", want: doc{Name: "a"}},
		{name: "unknown field", in: `{"name":"a","cuont":2}`, wantErr: `1:13: cuont: unknown field "cuont" at the top level`},
		{name: "second document", in: `{"name":"a"} {"name":"b"}`, wantErr: "1:14: trailing data after the JSON document"},
		{name: "trailing garbage", in: `{"name":"a"}x`, wantErr: "1:13: trailing data after the JSON document"},
		{name: "wrong type", in: `{"count":"2"}`, wantErr: "1:10: count: want a whole number, got string"},
		{name: "empty", in: ``, wantErr: "1:1: empty document"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got doc
			err := Decode([]byte(tc.in), &got)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("got %v, want no error", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("got %v, want an error containing %q", err, tc.wantErr)
			case tc.wantErr == "" && got != tc.want:
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}
