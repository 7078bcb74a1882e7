package duration

import (
	"testing"
	"time"
)

func TestParseTimeValue(t *testing.T) {
	tests := []struct {
		in      string
		want    time.Duration
		wantErr bool
	}{
		{"1m", time.Minute, false},
		{"30s", 30 * time.Second, false},
		{"500ms", 500 * time.Millisecond, false},
		{"2h", 2 * time.Hour, false},
		{"1d", 24 * time.Hour, false},
		{"1.5m", 90 * time.Second, false},
		{"100micros", 100 * time.Microsecond, false},
		{"10nanos", 10, false},
		{"0", 0, false},
		{"-1", -1, false},
		{"5", 0, true},
		{"m", 0, true},
		{"-5s", 0, true},
		{"1w", 0, true},
	}
	for _, tc := range tests {
		got, err := ParseTimeValue(tc.in)
		if (err != nil) != tc.wantErr || (!tc.wantErr && got != tc.want) {
			t.Errorf("ParseTimeValue(%q): got %v, %v; want %v (error %v)", tc.in, got, err, tc.want, tc.wantErr)
		}
	}
}
