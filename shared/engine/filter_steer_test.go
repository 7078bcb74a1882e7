package engine

import "testing"

// Cleanup takes off the source and the steering names it added: the value before comes back
// exactly when the list is still what shardwise wrote, and otherwise only the last entry naming
// each of them goes.
func TestWithoutNames(t *testing.T) {
	cases := []struct {
		name, cur, orig string
		nodes           []string
		want            any
	}{
		{"unchanged, nothing before: the setting is removed", "a,b,d", "", []string{"a", "b", "d"}, nil},
		{"unchanged: the operator's value comes back as written", "x , y,a,b", "x , y", []string{"a", "b"}, "x , y"},
		{"another exclusion added since: it stays", "a,b,c", "", []string{"a", "b"}, "c"},
		{"an operator's entry naming a steered node stays", "b,a,b", "", []string{"a", "b"}, "b"},
		{"the operator removed the setting", "", "", []string{"a", "b"}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := withoutNames(tc.cur, tc.nodes, tc.orig); got != tc.want {
				t.Errorf("got %#v, want %#v", got, tc.want)
			}
		})
	}
}
