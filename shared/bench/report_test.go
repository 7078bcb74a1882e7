package bench

import (
	"bytes"
	"fmt"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/net/html"
)

// outside reports whether s refers to something off the page: a URL with a scheme that would be
// fetched over the network, or a protocol-relative one.
func outside(s string) bool {
	s = strings.ToLower(s)
	return strings.Contains(s, "http://") || strings.Contains(s, "https://") || strings.Contains(s, "url(//") ||
		strings.HasPrefix(strings.TrimSpace(s), "//")
}

// fetched are the attributes whose value a browser loads.
var fetched = map[string]bool{"src": true, "href": true, "srcset": true, "action": true, "data": true, "poster": true, "background": true}

func TestReportIsSelfContained(t *testing.T) {
	res := fixedResults([]string{PNGScenario, "other"}, "shardwise", "none", "es-weights")
	page, err := Report(res)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := html.Parse(bytes.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	var problems []string
	figures, svgs := 0, 0
	var walk func(n *html.Node, inFigure bool)
	walk = func(n *html.Node, inFigure bool) {
		if n.Type == html.ElementNode {
			for _, a := range n.Attr {
				name := strings.ToLower(a.Key)
				if a.Namespace == "xmlns" || name == "xmlns" || strings.HasPrefix(name, "xmlns:") {
					continue // a namespace's name, never fetched
				}
				if outside(a.Val) {
					problems = append(problems, "<"+n.Data+" "+a.Key+"="+a.Val+">")
				}
				if fetched[name] && !strings.HasPrefix(a.Val, "#") && !strings.HasPrefix(a.Val, "data:") {
					problems = append(problems, "<"+n.Data+" "+a.Key+"="+a.Val+"> loads a file")
				}
			}
			switch n.Data {
			case "script", "iframe", "object", "embed", "img":
				problems = append(problems, "<"+n.Data+"> element")
			case "figure":
				figures++
				inFigure = true
			case "svg":
				if inFigure {
					svgs++
				}
			}
		}
		if n.Type == html.TextNode && n.Parent != nil && n.Parent.Data == "style" {
			if outside(n.Data) || strings.Contains(n.Data, "@import") || strings.Contains(n.Data, "url(") {
				problems = append(problems, "style loads: "+n.Data)
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c, inFigure)
		}
	}
	walk(doc, false)
	for _, p := range problems {
		t.Errorf("report.html refers outside itself: %s", p)
	}
	// Per scenario: hot nodes, moves, replicas, and queue latency per balancer.
	if want := 2 * (3 + 3); figures != want || svgs != want {
		t.Errorf("got %d figures holding %d SVGs, want %d of each", figures, svgs, want)
	}
	for _, want := range []string{
		"A &lt;fixed&gt; scenario &amp; more.", // scenario text is escaped
		`<td class="num">0.50 (none)</td>`,     // the table is the Markdown one
		`href="#other"`,
	} {
		if !bytes.Contains(page, []byte(want)) {
			t.Errorf("report.html lacks %q", want)
		}
	}
}

func TestOutsideCatchesReferences(t *testing.T) {
	for _, s := range []string{"https://cdn.example/x.js", "HTTP://x", "//cdn.example/x.css", "background: url(//x/y.png)"} {
		if !outside(s) {
			t.Errorf("outside(%q): got false, want true", s)
		}
	}
	for _, s := range []string{"#write-hotspot", "data:,", "border-top-color: #0072b2"} {
		if outside(s) {
			t.Errorf("outside(%q): got true, want false", s)
		}
	}
}

func TestWrite(t *testing.T) {
	tests := []struct {
		name      string
		scenarios []string
		wantPNG   bool
	}{
		{name: "with the PNG's scenario", scenarios: []string{"steady", PNGScenario}, wantPNG: true},
		{name: "without it", scenarios: []string{"steady"}, wantPNG: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "out")
			files, err := Write(dir, fixedResults(tt.scenarios, "shardwise", "none"))
			if err != nil {
				t.Fatal(err)
			}
			want := []string{ResultsJSON, ResultsMarkdown, ReportHTML}
			if tt.wantPNG {
				want = append(want, HotNodesPNG)
			}
			if len(files) != len(want) {
				t.Fatalf("wrote %q, want %q", files, want)
			}
			for i, f := range files {
				if filepath.Base(f) != want[i] {
					t.Errorf("file %d: got %s, want %s", i, filepath.Base(f), want[i])
				}
			}
			_, err = os.Stat(filepath.Join(dir, HotNodesPNG))
			if tt.wantPNG != (err == nil) {
				t.Fatalf("hot-nodes.png: got stat error %v, want it written %v", err, tt.wantPNG)
			}
			if !tt.wantPNG {
				return
			}
			f, err := os.Open(filepath.Join(dir, HotNodesPNG))
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = f.Close() }()
			img, err := png.Decode(f)
			if err != nil {
				t.Fatal(err)
			}
			// 5 × 2.8 inches at pngDPI.
			if got, want := img.Bounds().Dx(), 5*pngDPI; got != want {
				t.Errorf("PNG width: got %d, want %d", got, want)
			}
		})
	}
}

func TestReportManyNodes(t *testing.T) {
	// A production-sized cluster: colours repeat, so every other round of them is dashed.
	res := fixedResults([]string{"big"}, "shardwise")
	s := &res.Runs[0].Series
	s.Nodes = nil
	for i := range 40 {
		s.Nodes = append(s.Nodes, NodeSeries{Name: fmt.Sprintf("node-%d", i), Ticks: []int{0, 1, 2, 3}, QueueSeconds: []float64{0, 1, 2, float64(i)}})
	}
	page, err := Report(res)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`</i>node-39</span>`, `<i class="dashed" style="border-top-color: #0072b2"></i>node-8</span>`, `<i style="border-top-color: #0072b2"></i>node-16</span>`} {
		if !bytes.Contains(page, []byte(want)) {
			t.Errorf("report.html lacks %q", want)
		}
	}
}
