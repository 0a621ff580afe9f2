package main

import (
	"cmp"
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// chart is one SVG file and how it is drawn from the data directory.
type chart struct {
	file string
	draw func(data string) ([]byte, error)
}

var charts = []chart{
	{"fpr.svg", fprChart},
	{"fpr-target.svg", fprTargetChart},
	{"speed.svg", speedChart},
	{"startup.svg", startupChart},
	{"server-cpu.svg", serverCPUChart},
	{"server-memory.svg", serverMemoryChart},
}

// run draws every chart from the files in data and writes them into out,
// returning the paths written. It writes nothing unless every chart could
// be drawn, so that a bad data file never leaves a mix of old and new
// charts.
func run(data, out string) ([]string, error) {
	images := make([][]byte, len(charts))
	for i, c := range charts {
		img, err := c.draw(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", c.file, err)
		}
		images[i] = img
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return nil, err
	}
	var written []string
	for i, c := range charts {
		path := filepath.Join(out, c.file)
		if err := os.WriteFile(path, images[i], 0o644); err != nil {
			return nil, err
		}
		written = append(written, path)
	}
	return written, nil
}

// fprFilters are the filters of fpr.csv, in legend order.
var fprFilters = []struct {
	name, label string
	color       color.Color
	shape       draw.GlyphDrawer
	dashes      []vg.Length
}{
	{"ohbloom", "ohbloom.New(n, p)", ohbloomColor, draw.CircleGlyph{}, nil},
	{"blocked-textbook", "blocked, sized by the textbook formula", textbookColor, draw.SquareGlyph{}, dashed},
	{"bitsandblooms", "bits-and-blooms (standard Bloom filter)", bitsColor, draw.TriangleGlyph{}, nil},
}

// fprPoint is one filter measured at one target.
type fprPoint struct {
	target, bitsPerKey, measured float64
}

// readFPR reads fpr.csv into points by filter, each sorted by target, and
// returns the number of keys per filter.
func readFPR(data string) (map[string][]fprPoint, float64, *table, error) {
	t, err := readTable(filepath.Join(data, "fpr.csv"), "filter", "target_p", "keys", "bits_per_key", "measured_fpr")
	if err != nil {
		return nil, 0, nil, err
	}
	points := map[string][]fprPoint{}
	keys := 0.0
	for i := range t.rows {
		var pt fprPoint
		if pt.target, err = t.num(i, "target_p"); err != nil {
			return nil, 0, nil, err
		}
		if pt.bitsPerKey, err = t.num(i, "bits_per_key"); err != nil {
			return nil, 0, nil, err
		}
		if pt.measured, err = t.num(i, "measured_fpr"); err != nil {
			return nil, 0, nil, err
		}
		if keys, err = t.num(i, "keys"); err != nil {
			return nil, 0, nil, err
		}
		for what, v := range map[string]float64{"target_p": pt.target, "measured_fpr": pt.measured} {
			if err := mustPositive(fmt.Sprintf("%s row %d: %s", t.name, i+2, what), v); err != nil {
				return nil, 0, nil, err
			}
		}
		name := t.str(i, "filter")
		points[name] = append(points[name], pt)
	}
	for _, f := range fprFilters {
		if len(points[f.name]) == 0 {
			return nil, 0, nil, fmt.Errorf("%s: no rows for filter %q", t.name, f.name)
		}
		slices.SortFunc(points[f.name], func(a, b fprPoint) int { return cmp.Compare(b.target, a.target) })
	}
	return points, keys, t, nil
}

// fprChart: false positive rate against bits per key, measured, with the
// standard Bloom filter's optimum as a curve.
func fprChart(data string) ([]byte, error) {
	points, keys, t, err := readFPR(data)
	if err != nil {
		return nil, err
	}
	p := newPlot(fmt.Sprintf("False positive rate against memory, measured (%s keys per filter)", formatCount(keys)),
		"memory (bits per key)", "false positive rate", t.notes...)
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = logTicks{formatPercent}
	// The rates fall from the top left: the bottom left is free.
	p.Legend.Left = true
	p.Legend.XOffs = vg.Points(8)
	p.Legend.YOffs = vg.Points(8)

	lo, hi := math.Inf(1), math.Inf(-1)
	for _, pts := range points {
		for _, pt := range pts {
			lo, hi = min(lo, pt.bitsPerKey), max(hi, pt.bitsPerKey)
		}
	}
	optimum := plotter.NewFunction(func(bits float64) float64 { return math.Exp(-bits * math.Ln2 * math.Ln2) })
	optimum.Color, optimum.Width, optimum.Dashes = theoryColor, vg.Points(1), []vg.Length{vg.Points(2), vg.Points(2)}
	optimum.Samples = 200
	optimum.XMin, optimum.XMax = lo, hi
	p.Add(optimum)
	p.Legend.Add("standard Bloom optimum: 1.44·log₂(1/p) bits", optimum)
	for _, f := range fprFilters {
		xys := make(plotter.XYs, len(points[f.name]))
		for i, pt := range points[f.name] {
			xys[i] = plotter.XY{X: pt.bitsPerKey, Y: pt.measured}
		}
		l, s, err := plotter.NewLinePoints(xys)
		if err != nil {
			return nil, err
		}
		lineStyle(l, s, f.color, f.dashes, f.shape)
		p.Add(l, s)
		p.Legend.Add(f.label, l, s)
	}
	p.X.Min, p.X.Max = math.Floor(lo), math.Ceil(hi)
	p.X.Tick.Marker = stepTicks{major: 4, minor: 1}
	return svg(p, chartWidth, chartHeight)
}

// fprTargetChart: each filter's measured rate as a multiple of its target.
func fprTargetChart(data string) ([]byte, error) {
	points, keys, t, err := readFPR(data)
	if err != nil {
		return nil, err
	}
	p := newPlot(fmt.Sprintf("Does the filter keep its promise? Measured rate ÷ target (%s keys)", formatCount(keys)),
		"target false positive rate p", "measured rate ÷ p", t.notes...)
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	p.X.Tick.Marker = logTicks{formatPercent}
	p.Y.Tick.Marker = logTicks{func(v float64) string { return formatNumber(v) + "×" }}
	p.Legend.Top, p.Legend.Left = true, true

	lo, hi := math.Inf(1), math.Inf(-1)
	for _, f := range fprFilters {
		xys := make(plotter.XYs, len(points[f.name]))
		for i, pt := range points[f.name] {
			xys[i] = plotter.XY{X: pt.target, Y: pt.measured / pt.target}
			lo, hi = min(lo, xys[i].Y), max(hi, xys[i].Y)
		}
		l, s, err := plotter.NewLinePoints(xys)
		if err != nil {
			return nil, err
		}
		lineStyle(l, s, f.color, f.dashes, f.shape)
		p.Add(l, s)
		p.Legend.Add(f.label, l, s)
	}
	target := plotter.NewFunction(func(float64) float64 { return 1 })
	target.Color, target.Width, target.Dashes = theoryColor, vg.Points(1), []vg.Length{vg.Points(2), vg.Points(2)}
	p.Add(target)
	p.Legend.Add("the target: rate = p", target)
	// Room above the highest point for the legend.
	p.Y.Min, p.Y.Max = min(0.5, lo*0.9), max(2, hi)*1.6
	// Rates fall to the right, as memory grows.
	p.X.Scale = reversedLog{}
	return svg(p, chartWidth, chartHeight)
}

// stepTicks marks a linear axis every minor units and labels every major.
type stepTicks struct{ major, minor float64 }

func (s stepTicks) Ticks(min, max float64) []plot.Tick {
	// Counting steps rather than adding them keeps 0.1 + 0.1 + 0.1 from
	// drifting off the labels.
	every := int(math.Round(s.major / s.minor))
	var ticks []plot.Tick
	for i := int(math.Ceil(min / s.minor)); float64(i)*s.minor <= max; i++ {
		t := plot.Tick{Value: float64(i) * s.minor}
		if i%every == 0 {
			t.Label = formatNumber(t.Value)
		}
		ticks = append(ticks, t)
	}
	return ticks
}

// niceStep returns the smallest of 1, 2 and 5 times a power of ten that is
// at least x.
func niceStep(x float64) float64 {
	e := math.Pow10(int(math.Floor(math.Log10(x))))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*e >= x {
			return m * e
		}
	}
	return 10 * e
}

// reversedLog is a logarithmic scale that runs from high to low.
type reversedLog struct{}

func (reversedLog) Normalize(min, max, x float64) float64 {
	return 1 - plot.LogScale{}.Normalize(min, max, x)
}

// speedSeries are the lines of the speed chart, in legend order.
var speedSeries = []struct {
	lib, op, label string
	color          color.Color
	shape          draw.GlyphDrawer
	dashes         []vg.Length
}{
	{"ohbloom", "test", "ohbloom Test, one key a call", ohbloomColor, draw.CircleGlyph{}, nil},
	{"ohbloom", "test-batch", "ohbloom TestBatch, 4,096 keys a call", ohbloomDarkColor, draw.TriangleGlyph{}, dashed},
	{"bitsandblooms", "test", "bits-and-blooms Test", bitsColor, draw.SquareGlyph{}, nil},
}

// speedChart: ns per key against filter size, keys present and absent side
// by side, with the machine's cache sizes marked.
func speedChart(data string) ([]byte, error) {
	bf, err := readBench(filepath.Join(data, "speed.txt"))
	if err != nil {
		return nil, err
	}
	var panels []*plot.Plot
	var legend []legendEntry
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, set := range []struct{ keys, title string }{
		{"present", "keys in the filter"},
		{"absent", "keys not in the filter"},
	} {
		p := newPlot(set.title, "filter size", "ns per key")
		p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
		p.X.Tick.Marker = logTicks{formatBytes}
		p.Y.Tick.Marker = logTicks{formatNumber}
		for _, s := range speedSeries {
			mine := func(r benchResult) bool {
				return strings.HasPrefix(r.name, "Speed/") && r.parts["keys"] == set.keys &&
					r.parts["lib"] == s.lib && r.parts["op"] == s.op
			}
			key := func(r benchResult) string {
				if !mine(r) {
					return ""
				}
				return r.parts["cap"]
			}
			caps, ns, err := medians(bf.results, key, "ns/key")
			if err != nil {
				return nil, err
			}
			_, size, err := medians(bf.results, key, "filter-bytes")
			if err != nil {
				return nil, err
			}
			if len(caps) == 0 {
				return nil, fmt.Errorf("speed.txt: no results for keys=%s/lib=%s/op=%s", set.keys, s.lib, s.op)
			}
			var xys plotter.XYs
			for _, c := range caps {
				if err := mustPositive("ns/key of cap="+c, ns[c]); err != nil {
					return nil, err
				}
				if err := mustPositive("filter-bytes of cap="+c, size[c]); err != nil {
					return nil, err
				}
				xys = append(xys, plotter.XY{X: size[c], Y: ns[c]})
				lo, hi = min(lo, ns[c]), max(hi, ns[c])
			}
			slices.SortFunc(xys, func(a, b plotter.XY) int { return cmp.Compare(a.X, b.X) })
			l, sc, err := plotter.NewLinePoints(xys)
			if err != nil {
				return nil, err
			}
			lineStyle(l, sc, s.color, s.dashes, s.shape)
			p.Add(l, sc)
			if len(panels) == 0 {
				legend = append(legend, legendEntry{s.label, []plot.Thumbnailer{l, sc}})
			}
		}
		var caches verticalMarks
		for level := 1; level <= 4; level++ {
			if v, err := strconv.ParseFloat(bf.config[fmt.Sprintf("cache-l%d-bytes", level)], 64); err == nil && level > 1 {
				caches.xs = append(caches.xs, v)
				caches.labels = append(caches.labels, fmt.Sprintf("L%d %s", level, formatBinaryBytes(v)))
			}
		}
		p.Add(caches)
		panels = append(panels, p)
	}
	for _, p := range panels {
		// One scale for both panels, with room at the top for the
		// cache labels.
		p.Y.Min, p.Y.Max = lo/1.2, hi*1.6
	}

	title := "Lookup cost against filter size, p = 1%, 32-byte keys"
	sub := nonEmpty([]string{bf.config["cpu"], preliminary(bf)})
	if len(sub) > 0 {
		title += "\n" + strings.Join(sub, "\n")
	}
	return tiledSVG(title, panels, legend, 9*vg.Inch, chartHeight+vg.Points(16))
}

// legendEntry is one entry of a legend drawn outside the plots.
type legendEntry struct {
	label  string
	thumbs []plot.Thumbnailer
}

// tiledSVG draws plots side by side under one title, with one legend for
// all of them in a row beneath, where it covers no data.
func tiledSVG(title string, plots []*plot.Plot, legend []legendEntry, w, h vg.Length) ([]byte, error) {
	c := vgsvg.New(w, h)
	dc := draw.New(c)
	ts := text.Style{Color: color.Black, Font: font.From(plot.DefaultFont, 12), Handler: plot.DefaultTextHandler,
		XAlign: draw.XCenter, YAlign: draw.YTop}
	titleHeight := ts.Height(title) + vg.Points(10)
	dc.FillText(ts, vg.Point{X: (dc.Min.X + dc.Max.X) / 2, Y: dc.Max.Y - vg.Points(5)}, title)

	ls := text.Style{Color: color.Black, Font: font.From(plot.DefaultFont, 10), Handler: plot.DefaultTextHandler,
		XAlign: draw.XLeft, YAlign: draw.YCenter}
	const thumb, gap, spacing = 24, 5, 22 // points
	rowHeight := ls.Height("M") + vg.Points(12)
	total := vg.Length(0)
	for i, e := range legend {
		total += vg.Points(thumb+gap) + ls.Width(e.label)
		if i > 0 {
			total += vg.Points(spacing)
		}
	}
	x, y := (dc.Min.X+dc.Max.X-total)/2, dc.Min.Y+rowHeight/2
	for _, e := range legend {
		icon := draw.Canvas{Canvas: c, Rectangle: vg.Rectangle{
			Min: vg.Point{X: x, Y: y - vg.Points(5)}, Max: vg.Point{X: x + vg.Points(thumb), Y: y + vg.Points(5)}}}
		for _, t := range e.thumbs {
			t.Thumbnail(&icon)
		}
		x += vg.Points(thumb + gap)
		dc.FillText(ls, vg.Point{X: x, Y: y}, e.label)
		x += ls.Width(e.label) + vg.Points(spacing)
	}

	tiles := draw.Tiles{Rows: 1, Cols: len(plots), PadX: vg.Points(14), PadTop: titleHeight,
		PadLeft: vg.Points(4), PadRight: vg.Points(8), PadBottom: rowHeight}
	canvases := plot.Align([][]*plot.Plot{plots}, tiles, dc)
	for i, p := range plots {
		p.Draw(canvases[0][i])
	}
	return svgBytes(c)
}

// preliminary returns the note of a "preliminary: ..." configuration line,
// or "".
func preliminary(bf *benchFile) string {
	if v, ok := bf.config["preliminary"]; ok {
		return "preliminary: " + v
	}
	return ""
}

// startupLoaders name and colour the loaders of BenchmarkStartup; a loader
// not listed keeps its own name and takes its library's colour.
var startupLoaders = map[string]struct {
	label string
	color color.Color
}{
	"ohbloom-single":      {"ohbloom AtomicFilter.Add, 1 goroutine", ohbloomLightColor},
	"ohbloom-parallel":    {"ohbloom AtomicFilter.AddParallel", ohbloomDarkColor},
	"ohbloom-partitioned": {"ohbloom, blocks split among cores", ohbloomColor},
	"ohbloom-addbatch":    {"ohbloom Filter.AddBatch, 1 goroutine", ohbloomColor},
	"bitsandblooms-mutex": {"bits-and-blooms behind a mutex", bitsColor},
}

// startupChart: seconds until the filter is ready, one bar per loader,
// fastest at the top.
func startupChart(data string) ([]byte, error) {
	bf, err := readBench(filepath.Join(data, "startup.txt"))
	if err != nil {
		return nil, err
	}
	// A file may hold runs at several sizes: draw the largest.
	n := 0.0
	for _, r := range bf.results {
		if v, err := strconv.ParseFloat(r.parts["n"], 64); err == nil && strings.HasPrefix(r.name, "Startup/") {
			n = max(n, v)
		}
	}
	key := func(r benchResult) string {
		if !strings.HasPrefix(r.name, "Startup/") || r.parts["n"] != strconv.FormatFloat(n, 'f', -1, 64) {
			return ""
		}
		return r.parts["loader"]
	}
	loaders, secs, err := medians(bf.results, key, "s-to-ready")
	if err != nil {
		return nil, err
	}
	if len(loaders) == 0 {
		return nil, fmt.Errorf("startup.txt: no Startup/n=N/loader=NAME results")
	}
	// ns/key is optional: without it the bars carry the seconds alone.
	_, nsKey, _ := medians(bf.results, key, "ns/key")
	slices.SortStableFunc(loaders, func(a, b string) int { return cmp.Compare(secs[b], secs[a]) })

	title := fmt.Sprintf("Start-up: bulk-loading %s keys while a stream adds 10,000 a second", formatCount(n))
	p := newPlot(title, "seconds until ready (median)", "", bf.config["cpu"], preliminary(bf))
	labels := make([]string, len(loaders))
	var ends plotter.XYs
	var texts []string
	for i, name := range loaders {
		style, ok := startupLoaders[name]
		if !ok {
			style.label, style.color = name, textbookColor
			if strings.HasPrefix(name, "ohbloom") {
				style.color = ohbloomColor
			} else if strings.HasPrefix(name, "bitsandblooms") {
				style.color = bitsColor
			}
		}
		labels[i] = style.label
		bar, err := plotter.NewBarChart(plotter.Values{secs[name]}, vg.Points(22))
		if err != nil {
			return nil, err
		}
		bar.Horizontal, bar.XMin, bar.Color = true, float64(i), style.color
		bar.LineStyle.Width = 0
		p.Add(bar)
		ends = append(ends, plotter.XY{X: secs[name], Y: float64(i)})
		label := fmt.Sprintf("%s s", formatNumber(secs[name]))
		if v, ok := nsKey[name]; ok {
			label += fmt.Sprintf(" (%s ns/key)", formatNumber(v))
		}
		texts = append(texts, label)
	}
	l, err := valueLabels(ends, texts, true)
	if err != nil {
		return nil, err
	}
	p.Add(l)
	longest := 0.0
	for _, v := range secs {
		longest = max(longest, v)
	}
	p.X.Min, p.X.Max = 0, longest*1.4 // room for the labels past the bars
	step := niceStep(p.X.Max / 6)
	p.X.Tick.Marker = stepTicks{major: step, minor: step / 2}
	p.Y.Min, p.Y.Max = -0.6, float64(len(loaders))-0.4
	// The loaders' names stand where the Y axis would.
	p.Y.Tick.Marker = nominalTicks(labels)
	p.Y.Tick.Length = 0
	p.Y.Tick.Label.Font.Size = vg.Points(10)
	p.Y.LineStyle.Width = 0
	p.Y.Padding = vg.Points(4)
	titleLines := strings.Count(p.Title.Text, "\n") + 1
	return svg(p, chartWidth, vg.Points(50+16*float64(titleLines)+34*float64(len(loaders))))
}

// nominalTicks labels the integers 0, 1, ... with names.
type nominalTicks []string

func (n nominalTicks) Ticks(min, max float64) []plot.Tick {
	ticks := make([]plot.Tick, len(n))
	for i, name := range n {
		ticks[i] = plot.Tick{Value: float64(i), Label: name}
	}
	return ticks
}

// A server row of server.csv, as the charts group it.
type serverGroup struct{ caseName, pipeline string }

// serverCPUChart: ohbloom serve's CPU per command as a share of
// redis-server's, paired by round: for each command and pipeline depth,
// the median of the rounds' ratios (the statistic of the table in
// docs/benchmarks.md, which bench/serve_bench.sh prints), with each
// round's ratio drawn as a dot so that the spread shows.
func serverCPUChart(data string) ([]byte, error) {
	t, err := readTable(filepath.Join(data, "server.csv"), "case", "server", "command", "pipeline", "round", "cpu_us_per_cmd")
	if err != nil {
		return nil, err
	}
	var groups []serverGroup
	commands := map[serverGroup]map[string]string{}
	cpu := map[serverGroup]map[string]map[string]float64{} // group -> round -> server -> µs
	var rounds = map[serverGroup][]string{}
	for i := range t.rows {
		g := serverGroup{t.str(i, "case"), t.str(i, "pipeline")}
		if _, ok := cpu[g]; !ok {
			groups = append(groups, g)
			cpu[g] = map[string]map[string]float64{}
			commands[g] = map[string]string{}
		}
		us, err := t.num(i, "cpu_us_per_cmd")
		if err != nil {
			return nil, err
		}
		if err := mustPositive(fmt.Sprintf("%s row %d: cpu_us_per_cmd", t.name, i+2), us); err != nil {
			return nil, err
		}
		round := t.str(i, "round")
		if _, ok := cpu[g][round]; !ok {
			cpu[g][round] = map[string]float64{}
			rounds[g] = append(rounds[g], round)
		}
		server := t.str(i, "server")
		cpu[g][round][server] = us
		commands[g][server] = t.str(i, "command")
	}
	p := newPlot("Server CPU per command: ohbloom serve ÷ redis-server",
		"", "CPU per command, ÷ redis-server's", append([]string{
			"bars: median of the rounds' ratios (the table's statistic); dots: each round",
			"ohbloom BF.ADD/BF.EXISTS against redis-server SADD/SISMEMBER, 50 clients"}, t.notes...)...)
	const barWidth = 44
	values := make(plotter.Values, len(groups))
	var ends, dots plotter.XYs
	var texts []string
	var top float64
	for gi, g := range groups {
		var ratios []float64
		for _, r := range rounds[g] {
			o, okO := cpu[g][r]["ohbloom"]
			x, okR := cpu[g][r]["redis"]
			switch {
			case !okO:
				return nil, fmt.Errorf("%s: round %s of case %s, pipeline %s has no ohbloom row", t.name, r, g.caseName, g.pipeline)
			case !okR:
				return nil, fmt.Errorf("%s: round %s of case %s, pipeline %s has no redis row", t.name, r, g.caseName, g.pipeline)
			}
			ratios = append(ratios, o/x)
			dots = append(dots, plotter.XY{X: float64(gi), Y: o / x})
			top = max(top, o/x)
		}
		values[gi] = median(ratios)
		ends = append(ends, plotter.XY{X: float64(gi), Y: values[gi]})
		texts = append(texts, fmt.Sprintf("%.2f×", values[gi]))
	}
	bar, err := plotter.NewBarChart(values, vg.Points(barWidth))
	if err != nil {
		return nil, err
	}
	bar.Color, bar.LineStyle.Width = ohbloomColor, 0
	p.Add(bar)
	rounds1, err := plotter.NewScatter(dots)
	if err != nil {
		return nil, err
	}
	rounds1.Color, rounds1.Shape, rounds1.Radius = theoryColor, draw.CircleGlyph{}, vg.Points(2.2)
	p.Add(rounds1)
	// The labels go to the right of the bars, clear of the dots.
	l, err := valueLabels(ends, texts, true)
	if err != nil {
		return nil, err
	}
	l.Offset.X = vg.Points(barWidth/2 + 3)
	p.Add(l)
	same, err := plotter.NewLine(plotter.XYs{{X: -0.6, Y: 1}, {X: float64(len(groups)) - 0.4, Y: 1}})
	if err != nil {
		return nil, err
	}
	same.Color, same.Width, same.Dashes = redisColor, vg.Points(1.2), dashed
	p.Add(same)
	p.Legend.Add("ohbloom serve, median", bar)
	p.Legend.Add("one round", rounds1)
	p.Legend.Add("redis-server = 1", same)
	p.Legend.Top, p.Legend.Left = true, true
	names := make([]string, len(groups))
	for i, g := range groups {
		pipe := "no pipelining"
		if g.pipeline != "1" {
			pipe = "pipeline " + g.pipeline
		}
		names[i] = fmt.Sprintf("%s\nvs %s\n%s", commands[g]["ohbloom"], commands[g]["redis"], pipe)
	}
	p.NominalX(names...)
	p.X.Min, p.X.Max = -0.6, float64(len(groups))-0.4
	p.Y.Min, p.Y.Max = 0, max(top, 1)*1.35
	return svg(p, chartWidth, chartHeight)
}

// thousandsTicks marks a linear axis with gonum's default ticks, labelled
// with k for thousands.
type thousandsTicks struct{}

func (thousandsTicks) Ticks(min, max float64) []plot.Tick {
	ticks := plot.DefaultTicks{}.Ticks(min, max)
	for i := range ticks {
		if ticks[i].Label != "" {
			ticks[i].Label = formatThousands(ticks[i].Value)
		}
	}
	return ticks
}

// serverMemoryChart: memory per filter, ohbloom serve against RedisBloom,
// as bits per item, with the bytes and the measured rate written on the
// bars. RedisBloom's rows are drawn by where they come from (the source
// column): its published figures and its sizing formula are not drawn as
// if they were measured here.
func serverMemoryChart(data string) ([]byte, error) {
	t, err := readTable(filepath.Join(data, "server-memory.csv"), "server", "capacity", "error_rate", "items", "bytes")
	if err != nil {
		return nil, err
	}
	type group struct{ capacity, rate, items float64 }
	type measure struct {
		bytes  float64
		fpr    string // "" when not measured
		source string // "measured", "published" or "formula"
	}
	var groups []group
	measures := map[group]map[string]measure{}
	for i := range t.rows {
		var g group
		var m measure
		for _, c := range []struct {
			col string
			dst *float64
		}{{"capacity", &g.capacity}, {"error_rate", &g.rate}, {"items", &g.items}, {"bytes", &m.bytes}} {
			if *c.dst, err = t.num(i, c.col); err != nil {
				return nil, err
			}
		}
		if err := mustPositive(fmt.Sprintf("%s row %d: bytes", t.name, i+2), m.bytes); err != nil {
			return nil, err
		}
		if t.str(i, "fpr_measured") != "" {
			v, err := t.num(i, "fpr_measured")
			if err != nil {
				return nil, err
			}
			m.fpr = formatPercent(v)
		}
		switch src := strings.ToLower(t.str(i, "source")); {
		case strings.HasPrefix(src, "published"):
			m.source = "published"
		case strings.Contains(src, "formula"):
			m.source = "formula"
		default:
			m.source = "measured"
		}
		if _, ok := measures[g]; !ok {
			groups = append(groups, g)
			measures[g] = map[string]measure{}
		}
		measures[g][t.str(i, "server")] = m
	}
	type style struct {
		label  string
		fill   color.Color
		dashes []vg.Length
	}
	// Each server's bars, one bar chart per source, so that each source
	// has its own look and legend entry.
	servers := []struct {
		name   string
		styles map[string]style
	}{
		{"ohbloom", map[string]style{
			"measured": {"ohbloom serve, measured here", ohbloomColor, nil}}},
		{"redisbloom", map[string]style{
			"measured":  {"RedisBloom, measured here", redisBloomColor, nil},
			"published": {"RedisBloom, its published figures (not run here)", redisBloomLightColor, nil},
			"formula":   {"RedisBloom, its sizing formula (no figure published)", color.White, dashed}}},
	}
	p := newPlot("Memory per filter: ohbloom serve against RedisBloom",
		"", "bits per item", append([]string{"on the bars: bytes (BF.INFO SIZE) and the false positive rate at that fill"}, t.notes...)...)
	p.Legend.Top, p.Legend.Left = true, true
	p.Legend.TextStyle.Font.Size = vg.Points(9)
	const barWidth = 38
	var top float64
	for si, s := range servers {
		offset := vg.Points(float64(si*2-1) * (barWidth/2 + 1))
		var ends plotter.XYs
		var texts []string
		bySource := map[string]plotter.Values{}
		for gi, g := range groups {
			m, ok := measures[g][s.name]
			if !ok {
				return nil, fmt.Errorf("%s: no %s row for capacity %g, error rate %g, %g items", t.name, s.name, g.capacity, g.rate, g.items)
			}
			if _, ok := s.styles[m.source]; !ok {
				return nil, fmt.Errorf("%s: a %s row of source %q", t.name, s.name, m.source)
			}
			if bySource[m.source] == nil {
				bySource[m.source] = make(plotter.Values, len(groups))
			}
			v := 8 * m.bytes / max(g.capacity, g.items)
			bySource[m.source][gi] = v
			top = max(top, v)
			ends = append(ends, plotter.XY{X: float64(gi), Y: v})
			label := formatBytes(m.bytes)
			if m.fpr != "" {
				label += "\n" + m.fpr
			}
			texts = append(texts, label)
		}
		for _, source := range []string{"measured", "published", "formula"} {
			values, st := bySource[source], s.styles[source]
			if values == nil {
				continue
			}
			bar, err := plotter.NewBarChart(values, vg.Points(barWidth))
			if err != nil {
				return nil, err
			}
			bar.Offset = offset
			bar.LineStyle.Width = 0
			bar.Color = st.fill
			if source != "measured" {
				bar.LineStyle.Width, bar.LineStyle.Color, bar.LineStyle.Dashes = vg.Points(1.2), redisBloomColor, st.dashes
			}
			p.Add(bar)
			p.Legend.Add(st.label, bar)
		}
		l, err := valueLabels(ends, texts, false)
		if err != nil {
			return nil, err
		}
		for i := range l.TextStyle {
			l.TextStyle[i].Font.Size = vg.Points(8)
		}
		l.Offset.X = offset
		p.Add(l)
	}
	names := make([]string, len(groups))
	for i, g := range groups {
		names[i] = fmt.Sprintf("%s items\nat %s", formatCount(g.capacity), formatPercent(g.rate))
		if g.items > g.capacity {
			names[i] = fmt.Sprintf("%s at %s,\ngrown to\n%s items", formatCount(g.capacity), formatPercent(g.rate), formatCount(g.items))
		}
	}
	p.NominalX(names...)
	p.X.Tick.Label.Font.Size = vg.Points(9)
	p.X.Label.Text = "BF.RESERVE key error_rate capacity"
	p.X.Min, p.X.Max = -0.6, float64(len(groups))-0.4
	p.Y.Min, p.Y.Max = 0, top*1.45
	return svg(p, chartWidth, chartHeight)
}
