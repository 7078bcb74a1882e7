package size

import (
	"encoding/json"
	"errors"
	"testing"
)

func TestParse(t *testing.T) {
	cases := []struct {
		name, in string
		want     Bytes
		wantErr  bool
	}{
		{"bare bytes", "4096", 4096, false},
		{"GiB", "8GiB", 8 << 30, false},
		{"OpenSearch's mb is binary", "500mb", 500 << 20, false},
		{"upper case with a space", "1.5 TB", 3 << 39, false},
		{"bytes unit", "10b", 10, false},
		{"short unit", "2g", 2 << 30, false},
		{"no number", "GiB", 0, true},
		{"unknown unit", "8 parsecs", 0, true},
		{"negative", "-1gb", 0, true},
		{"past int64", "9000pb", 0, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse(tc.in)
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Errorf("Parse(%q) = %d, %v; want %d, error %v", tc.in, got, err, tc.want, tc.wantErr)
			}
		})
	}
}

func TestUnmarshalJSON(t *testing.T) {
	cases := []struct {
		name, in string
		want     Bytes
		wantErr  error
	}{
		{"a number of bytes, as scenarios have always had", `10737418240`, 10 << 30, nil},
		{"a number in exponent form", `1e9`, 1e9, nil},
		{"a string with a unit", `"10GiB"`, 10 << 30, nil},
		{"a boolean", `true`, 0, ErrSyntax},
		{"a string without a number", `"big"`, 0, ErrSyntax},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got Bytes
			err := json.Unmarshal([]byte(tc.in), &got)
			if !errors.Is(err, tc.wantErr) || got != tc.want {
				t.Errorf("got %d, %v; want %d, %v", got, err, tc.want, tc.wantErr)
			}
		})
	}
}

func TestFormat(t *testing.T) {
	cases := []struct {
		in   int64
		want string
	}{
		{512, "512 B"}, {1536, "1.5 KiB"}, {8 << 30, "8 GiB"}, {5 << 40, "5 TiB"}, {3 << 50, "3 PiB"},
	}
	for _, tc := range cases {
		if got := Format(tc.in); got != tc.want {
			t.Errorf("Format(%d) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
