package allocation

import (
	"encoding/json"
	"testing"
)

// TestDecisionUnmarshal: the names as MarshalJSON writes them, the same names escaped (valid JSON
// the fast path does not see), and what is no decision.
func TestDecisionUnmarshal(t *testing.T) {
	cases := []struct {
		name    string
		in      string
		want    Decision
		wantErr bool
	}{
		{"yes", `"YES"`, Yes, false},
		{"not preferred", `"NOT_PREFERRED"`, NotPreferred, false},
		{"no", `"NO"`, No, false},
		{"escaped yes", `"\u0059ES"`, Yes, false},
		{"escaped no", `"N\u004f"`, No, false},
		{"lower case", `"yes"`, 0, true},
		{"number", `1`, 0, true},
		{"unterminated", `"YES`, 0, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := Decision(-1)
			err := d.UnmarshalJSON([]byte(tc.in))
			if (err != nil) != tc.wantErr {
				t.Fatalf("UnmarshalJSON(%s) error %v, want error: %v", tc.in, err, tc.wantErr)
			}
			if err == nil && d != tc.want {
				t.Errorf("UnmarshalJSON(%s) = %v, want %v", tc.in, d, tc.want)
			}
		})
	}
	// Round trip through a verdict, as plans and ledger entries store them.
	for _, d := range []Decision{Yes, NotPreferred, No} {
		b, err := json.Marshal(Verdict{Decider: "x", Decision: d, Reason: "r"})
		if err != nil {
			t.Fatal(err)
		}
		var got Verdict
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatal(err)
		}
		if got.Decision != d {
			t.Errorf("round trip of %v: got %v", d, got.Decision)
		}
	}
}
