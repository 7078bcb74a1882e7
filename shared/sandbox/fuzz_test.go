package sandbox

import (
	"encoding/json"
	"reflect"
	"testing"
)

// FuzzParse checks that Parse never panics and that whatever it accepts is valid, survives a
// round trip through JSON unchanged, and can be resolved, evaluated and mapped to WLM.
func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		rfcExample,
		`[{"name":"a","attributes":{"custom_id":"x",},"resources":{"cpu":{"allocation":"0.4","threshold":0.5},},"enforcement":"hard"},]`,
		`[]`,
		`[,]`,
		`{}`,
		`null`,
		`{"sandboxes":[{"name":"a","attributes":{"user_name":"alice","custom_id":"x,y*"},"resources":{"cpu":{"allocation":0.4}},"enforcement":"monitor"}]}`,
		`{"sandboxes":[{"name":"a","attributes":{"role":"r"},"resources":{"jvm":{"allocation":"1e-3"}},"enforcement":"hard"}],"resources":{"jvm":{"threshold":{"rejection":"0.5","cancellation":0.5}}}}`,
		`{"sandboxes":[{"name":"a","attributes":{"role":"r"},"resources":{"jvm":{"allocation":2}},"enforcement":"soft"}]}`,
		`{"sandboxes":[{"name":"genPop"}]} trailing`,
		`{"resources":{"cpu":{"threshold":{"rejection":0.9,"cancellation":0.8},"enforcement":"x"}}}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := Parse(data)
		if err != nil {
			if !reflect.DeepEqual(d, Definitions{}) {
				t.Fatalf("Parse returned %+v with error %v, want the zero value", d, err)
			}
			return
		}
		if err := d.Validate(); err != nil {
			t.Fatalf("Parse accepted definitions that fail Validate: %v", err)
		}
		out, err := json.Marshal(d)
		if err != nil {
			t.Fatalf("marshal accepted definitions: %v", err)
		}
		back, err := Parse(out)
		if err != nil {
			t.Fatalf("re-parse %s: %v", out, err)
		}
		if !reflect.DeepEqual(back, d) {
			t.Fatalf("round trip changed the definitions:\n got %+v\nwant %+v", back, d)
		}
		if got := len(ToWLM(d)); got != len(d.Sandboxes) {
			t.Fatalf("ToWLM returned %d groups for %d sandboxes", got, len(d.Sandboxes))
		}
		req := Request{UserName: "alice", Roles: []string{"r", "ba-1"}, Indices: []string{"transactions-1"}, CustomID: "x"}
		if name, score, _ := d.Resolve(req); (name == GenPop) != (score == 0) {
			t.Fatalf("Resolve returned %s with score %d; genPop and only genPop scores 0", name, score)
		}
		usage := NodeUsage{"n": {Total: Usage{JVM: 0.95, CPU: 0.95}, Sandboxes: map[string]Usage{GenPop: {JVM: 0.5, CPU: 0.5}}}}
		for _, s := range d.Sandboxes {
			usage["n"].Sandboxes[s.Name] = Usage{JVM: 0.5, CPU: 0.5}
		}
		Evaluate(usage, d)
	})
}
