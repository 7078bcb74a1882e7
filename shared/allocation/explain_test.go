package allocation

import (
	"strings"
	"testing"
)

func TestExplain(t *testing.T) {
	f := newFixture("a", "b", "c").
		index("x", 10<<30, []float64{2, 1}, []string{"a", "b"}, []string{"a", "c"})
	cases := []struct {
		name    string
		index   string
		shard   int
		primary bool
		want    map[string]Decision // node name → overall decision
		wantErr string
	}{
		{name: "primary of x[0]: its own node can keep it, b holds the replica, c may take it", index: "x", shard: 0, primary: true,
			want: map[string]Decision{"a": Yes, "b": No, "c": Yes}},
		{name: "replica of x[1] on c", index: "x", shard: 1, primary: false,
			want: map[string]Decision{"a": No, "b": Yes, "c": Yes}},
		{name: "no such copy", index: "nope", shard: 0, primary: true, wantErr: "no assigned primary copy"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Explain(f.snap(), DefaultConfig(), nil, tc.index, tc.shard, tc.primary)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error: got %v want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 3 {
				t.Fatalf("nodes: got %d want 3", len(got))
			}
			for _, e := range got {
				if e.Decision != tc.want[e.NodeName] {
					t.Errorf("%s: got %s want %s (%+v)", e.NodeName, e.Decision, tc.want[e.NodeName], e.Verdicts)
				}
				for _, vd := range e.Verdicts {
					if vd.Reason == "" {
						t.Errorf("%s: verdict of %s has no reason built", e.NodeName, vd.Decider)
					}
				}
			}
		})
	}
}
