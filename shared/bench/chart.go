package bench

import (
	"bytes"
	"fmt"
	"html/template"
	"image/color"
	"io"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// hotQueueSeconds is the simulator's hot threshold (docs/scenarios.md: a node is hot at or over
// 3 s of true queue latency), drawn on the queue charts.
const hotQueueSeconds = 3

// Chart sizes in points; the report scales the SVGs to its columns.
const (
	chartWidth  = 5 * vg.Inch
	chartHeight = 2.8 * vg.Inch
)

// style is how a balancer's line is drawn: its colour and dash pattern (nil: solid).
type style struct {
	Color  color.Color
	Dashes []vg.Length
}

// balancerStyles keep a balancer's line the same on every chart. Each has a colour of Okabe and
// Ito's palette, which colour-blind readers can tell apart, and the related ones also differ in
// dash: es-weights solid orange, es-weights-live dashed vermilion, es-writeload dotted purple.
// Equal series, drawn one over the other, still show each dash.
var balancerStyles = map[string]style{
	"shardwise":       {Color: color.RGBA{R: 0x00, G: 0x72, B: 0xb2, A: 0xff}},
	"none":            {Color: color.RGBA{R: 0x44, G: 0x44, B: 0x44, A: 0xff}, Dashes: []vg.Length{vg.Points(7), vg.Points(3)}},
	"es-weights":      {Color: color.RGBA{R: 0xe6, G: 0x9f, B: 0x00, A: 0xff}},
	"es-weights-live": {Color: color.RGBA{R: 0xd5, G: 0x5e, B: 0x00, A: 0xff}, Dashes: []vg.Length{vg.Points(5), vg.Points(3)}},
	"sway":            {Color: color.RGBA{R: 0x00, G: 0x9e, B: 0x73, A: 0xff}, Dashes: []vg.Length{vg.Points(1.5), vg.Points(2.5)}},
	"es-writeload":    {Color: color.RGBA{R: 0xcc, G: 0x79, B: 0xa7, A: 0xff}, Dashes: []vg.Length{vg.Points(8), vg.Points(2), vg.Points(2), vg.Points(2)}},
}

// nodeColors cycle over a scenario's nodes; every other round of them is dashed (nodeDashed).
var nodeColors = []color.Color{
	color.RGBA{R: 0x00, G: 0x72, B: 0xb2, A: 0xff},
	color.RGBA{R: 0xd5, G: 0x5e, B: 0x00, A: 0xff},
	color.RGBA{R: 0x00, G: 0x9e, B: 0x73, A: 0xff},
	color.RGBA{R: 0xcc, G: 0x79, B: 0xa7, A: 0xff},
	color.RGBA{R: 0xe6, G: 0x9f, B: 0x00, A: 0xff},
	color.RGBA{R: 0x56, G: 0xb4, B: 0xe9, A: 0xff},
	color.RGBA{R: 0x44, G: 0x44, B: 0x44, A: 0xff},
	color.RGBA{R: 0xf0, G: 0xe4, B: 0x42, A: 0xff},
}

// seriesOf picks one per-tick count from a run's series.
type seriesOf func(Series) []int

// countChart draws one per-tick count of each run of one scenario over time, a line per balancer.
// With legend the chart names the balancers itself (the PNG), with room above the lines for it;
// the report names them once per scenario instead.
func countChart(title, ylabel string, runs []Record, value seriesOf, legend bool) (*plot.Plot, error) {
	p := newPlot(title, ylabel)
	top := 0
	for i, r := range runs {
		vals := value(r.Series)
		if len(vals) > 0 {
			top = max(top, slices.Max(vals))
		}
		pts := make(plotter.XYs, 0, len(vals)+1)
		for tick, v := range vals {
			pts = append(pts, plotter.XY{X: minutes(tick, r.Series.TickSeconds), Y: float64(v)})
		}
		if len(vals) > 0 {
			// The last value holds until the end of its tick.
			pts = append(pts, plotter.XY{X: minutes(len(vals), r.Series.TickSeconds), Y: float64(vals[len(vals)-1])})
		}
		l, err := plotter.NewLine(pts)
		if err != nil {
			return nil, fmt.Errorf("%s, %s: %w", title, r.Balancer, err)
		}
		l.StepStyle = plotter.PostStep
		st := balancerStyle(r.Balancer, i)
		l.Color, l.Dashes = st.Color, st.Dashes
		// Earlier balancers are drawn wider and first, so equal lines stay visible beneath later ones.
		l.Width = vg.Points(1 + 1.2*float64(len(runs)-1-i))
		p.Add(l)
		if legend {
			p.Legend.Add(r.Balancer, l)
		}
	}
	// At least 1 high, so an all-zero line sits on the axis, not mid-chart; a line at the top
	// keeps clear of the frame, and of the legend when there is one.
	headroom := 1.1
	if legend {
		headroom += 0.15 * float64(len(runs))
	}
	p.Y.Max = float64(max(top, 1)) * headroom
	return p, nil
}

// cumulative turns per-tick counts into running totals.
func cumulative(vals []int) []int {
	out := make([]int, len(vals))
	sum := 0
	for i, v := range vals {
		sum += v
		out[i] = sum
	}
	return out
}

// queueChart draws each node's WRITE queue latency over one run, on a y-axis up to ymax so the
// balancers' charts of one scenario compare at a glance. The report names the nodes under it.
func queueChart(r Record, ymax float64) (*plot.Plot, error) {
	p := newPlot("WRITE queue latency, "+r.Balancer, "seconds")
	p.Y.Max = ymax
	for i, n := range r.Series.Nodes {
		for _, seg := range segments(n, r.Series.TickSeconds) {
			l, err := plotter.NewLine(seg)
			if err != nil {
				return nil, fmt.Errorf("queue latency of %s, %s: %w", n.Name, r.Balancer, err)
			}
			l.Color = nodeColor(i)
			l.Width = vg.Points(1.2)
			if nodeDashed(i) {
				l.Dashes = []vg.Length{vg.Points(4), vg.Points(2)}
			}
			p.Add(l)
		}
	}
	end := minutes(len(r.Series.HotNodes), r.Series.TickSeconds)
	hot, err := plotter.NewLine(plotter.XYs{{X: 0, Y: hotQueueSeconds}, {X: end, Y: hotQueueSeconds}})
	if err != nil {
		return nil, fmt.Errorf("hot line, %s: %w", r.Balancer, err)
	}
	hot.Color = hotColor
	hot.Dashes = []vg.Length{vg.Points(2), vg.Points(3)}
	p.Add(hot)
	return p, nil
}

// segments splits a node's samples where it was out of the cluster.
func segments(n NodeSeries, tickSeconds float64) []plotter.XYs {
	var out []plotter.XYs
	var cur plotter.XYs
	for k, tick := range n.Ticks {
		if k > 0 && tick != n.Ticks[k-1]+1 {
			out = append(out, cur)
			cur = nil
		}
		cur = append(cur, plotter.XY{X: minutes(tick+1, tickSeconds), Y: n.QueueSeconds[k]})
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

// maxQueue is the highest queue latency over runs, and at least a little over the hot threshold
// so the threshold line always shows.
func maxQueue(runs []Record) float64 {
	m := hotQueueSeconds * 1.2
	for _, r := range runs {
		for _, n := range r.Series.Nodes {
			if len(n.QueueSeconds) > 0 {
				m = max(m, slices.Max(n.QueueSeconds)*1.05)
			}
		}
	}
	return m
}

// sans is the charts' typeface, one of those gonum/plot embeds, so PNGs render the same anywhere.
var sans = font.Font{Typeface: "Liberation", Variant: "Sans"}

func newPlot(title, ylabel string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font = font.From(sans, 12)
	p.X.Label.Text = "minutes"
	p.Y.Label.Text = ylabel
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.Min = 0
		a.Label.TextStyle.Font = font.From(sans, 11)
		a.Tick.Label.Font = font.From(sans, 10)
	}
	p.Legend.TextStyle.Font = font.From(sans, 10)
	p.Legend.Top = true
	p.Legend.ThumbnailWidth = vg.Points(14)
	p.Add(plotter.NewGrid())
	return p
}

// balancerStyle is b's style, or for a balancer without one the i-th node colour, dashed.
func balancerStyle(b string, i int) style {
	if st, ok := balancerStyles[b]; ok {
		return st
	}
	return style{Color: nodeColor(i), Dashes: []vg.Length{vg.Points(3), vg.Points(3)}}
}

// cssBorder is st's dash pattern as a CSS border style for the report's keys.
func (st style) cssBorder() string {
	switch {
	case len(st.Dashes) == 0:
		return "solid"
	case st.Dashes[0] < vg.Points(2):
		return "dotted"
	}
	return "dashed"
}

func nodeColor(i int) color.Color { return nodeColors[i%len(nodeColors)] }

// nodeDashed tells apart nodes whose colours repeat.
func nodeDashed(i int) bool { return (i/len(nodeColors))%2 == 1 }

// cssColor is c as a CSS hex colour, for the report's legends.
func cssColor(c color.Color) string {
	r, g, b, _ := c.RGBA()
	return fmt.Sprintf("#%02x%02x%02x", r>>8, g>>8, b>>8)
}

// minutes is the start of 0-based tick in minutes.
func minutes(tick int, tickSeconds float64) float64 {
	return float64(tick) * tickSeconds / 60
}

// svg renders p as an SVG element for inlining into HTML: the XML prolog and comment dropped.
func svg(p *plot.Plot) (template.HTML, error) {
	var buf bytes.Buffer
	if err := render(&buf, p, "svg"); err != nil {
		return "", err
	}
	b := buf.Bytes()
	i := bytes.Index(b, []byte("<svg"))
	if i < 0 {
		return "", fmt.Errorf("render %q: no <svg> element", p.Title.Text)
	}
	// Markup generated here, its text escaped by the SVG writer: it goes into the page as is.
	return template.HTML(b[i:]), nil
}

// pngDPI makes the PNG sharp on high-density screens: twice the usual 96.
const pngDPI = 192

// render writes p in format ("svg", "png") at the chart size.
func render(buf *bytes.Buffer, p *plot.Plot, format string) error {
	var c interface {
		vg.CanvasSizer
		io.WriterTo
	}
	switch format {
	case "svg":
		c = vgsvg.New(chartWidth, chartHeight)
	case "png":
		c = vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(chartWidth, chartHeight), vgimg.UseDPI(pngDPI))}
	default:
		return fmt.Errorf("render %q: unknown format %q", p.Title.Text, format)
	}
	p.Draw(draw.New(c))
	if _, err := c.WriteTo(buf); err != nil {
		return fmt.Errorf("render %q as %s: %w", p.Title.Text, format, err)
	}
	return nil
}

// hotColor draws the hot threshold.
var hotColor = color.RGBA{R: 0xc0, A: 0xff}
