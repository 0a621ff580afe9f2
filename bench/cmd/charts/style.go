package main

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
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

// Each library keeps its colour in every chart; ohbloom's variants are
// told apart by shade, dashes and markers.
var (
	ohbloomColor      = rgb(0x1f, 0x77, 0xb4) // blue
	ohbloomDarkColor  = rgb(0x08, 0x30, 0x6b) // navy: ohbloom's batched and parallel calls
	ohbloomLightColor = rgb(0x6b, 0xae, 0xd6) // light blue: ohbloom's other variants
	bitsColor         = rgb(0xff, 0x7f, 0x0e) // orange: bits-and-blooms
	redisColor        = rgb(0xd6, 0x27, 0x28) // red: redis-server's own sets
	redisBloomColor   = rgb(0x94, 0x67, 0xbd) // purple: RedisBloom
	// light purple: RedisBloom's figures published elsewhere, not measured here
	redisBloomLightColor = rgb(0xd8, 0xc8, 0xe8)
	textbookColor        = rgb(0x7f, 0x7f, 0x7f) // grey: a blocked filter sized by the textbook
	theoryColor          = rgb(0x00, 0x00, 0x00) // black: formulas
	cacheColor           = rgb(0xa0, 0xa0, 0xa0)
)

func init() {
	// Sans-serif text reads better at chart sizes than gonum's default
	// serif face.
	plot.DefaultFont = font.Font{Typeface: "Liberation", Variant: "Sans"}
	plotter.DefaultFont = plot.DefaultFont
}

func rgb(r, g, b uint8) color.Color { return color.RGBA{r, g, b, 0xff} }

// Sizes that fit a Markdown page at its natural width (about 670 pixels
// for 7 inches).
const (
	chartWidth  = 7 * vg.Inch
	chartHeight = 4.4 * vg.Inch
)

const margin = 4 // points

var dashed = []vg.Length{vg.Points(5), vg.Points(3)}

// newPlot returns a plot with a title (and, below it, one line for each
// note: the machine, what the data is), axis labels and a light grid.
func newPlot(title, xLabel, yLabel string, notes ...string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	if sub := strings.Join(nonEmpty(notes), "\n"); sub != "" {
		p.Title.Text += "\n" + sub
	}
	p.Title.TextStyle.Font.Size = vg.Points(12)
	p.Title.Padding = vg.Points(6)
	p.X.Label.Text, p.Y.Label.Text = xLabel, yLabel
	p.X.Label.TextStyle.Font.Size = vg.Points(11)
	p.Y.Label.TextStyle.Font.Size = vg.Points(11)
	p.Legend.TextStyle.Font.Size = vg.Points(10)
	p.Legend.ThumbnailWidth = vg.Points(24)
	grid := plotter.NewGrid()
	grid.Vertical.Color = rgb(0xe6, 0xe6, 0xe6)
	grid.Horizontal.Color = rgb(0xe6, 0xe6, 0xe6)
	p.Add(grid)
	return p
}

func nonEmpty(ss []string) []string {
	var out []string
	for _, s := range ss {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// lineStyle returns a line and its markers in one colour.
func lineStyle(l *plotter.Line, s *plotter.Scatter, c color.Color, dashes []vg.Length, shape draw.GlyphDrawer) {
	l.Color, l.Width, l.Dashes = c, vg.Points(1.6), dashes
	s.Color, s.Shape, s.Radius = c, shape, vg.Points(2.6)
}

// svg draws p on an SVG canvas of the given size.
func svg(p *plot.Plot, w, h vg.Length) ([]byte, error) {
	c := vgsvg.New(w, h)
	// A margin, so that no text touches the image's edges.
	p.Draw(draw.Crop(draw.New(c), margin, -margin, margin, -margin))
	return svgBytes(c)
}

// svgBytes returns the SVG document of c. The plots are laid out with the
// metrics of Liberation Sans (gonum's default, not embedded, to keep the
// files small); Arial and Helvetica have the same metrics, so they are
// named as fallbacks for viewers that lack Liberation.
func svgBytes(c *vgsvg.Canvas) ([]byte, error) {
	var buf bytes.Buffer
	if _, err := c.WriteTo(&buf); err != nil {
		return nil, err
	}
	out := bytes.ReplaceAll(buf.Bytes(), []byte("font-family:Liberation Sans;"),
		[]byte("font-family:'Liberation Sans',Arial,Helvetica,sans-serif;"))
	return out, nil
}

// logTicks marks a logarithmic axis at 1, 2 and 5 times each power of ten,
// labelling them all when the axis spans less than three decades and only
// the powers of ten otherwise; format writes the labels.
type logTicks struct{ format func(float64) string }

func (t logTicks) Ticks(min, max float64) []plot.Tick {
	if min <= 0 || max <= min {
		return nil
	}
	all := math.Log10(max/min) < 3
	var ticks []plot.Tick
	for e := math.Floor(math.Log10(min)); e <= math.Ceil(math.Log10(max)); e++ {
		for _, m := range []float64{1, 2, 3, 4, 5, 6, 7, 8, 9} {
			v := m * math.Pow10(int(e))
			if v < min*(1-1e-9) || v > max*(1+1e-9) {
				continue
			}
			label := ""
			if m == 1 || all && (m == 2 || m == 5) {
				label = t.format(v)
			}
			ticks = append(ticks, plot.Tick{Value: v, Label: label})
		}
	}
	return ticks
}

// formatNumber writes v with at most three significant digits and no
// exponent: 0.02, 300, 1500.
func formatNumber(v float64) string {
	return strconv.FormatFloat(roundSig(v, 3), 'f', -1, 64)
}

// formatPercent writes a rate as a percentage: 0.01 -> "1%", 1e-5 -> "0.001%".
func formatPercent(v float64) string {
	return strconv.FormatFloat(roundSig(v*100, 3), 'f', -1, 64) + "%"
}

// formatBytes writes a size in decimal units: 12.5 kB, 1 MB, 1.25 GB.
func formatBytes(v float64) string {
	units := []string{"B", "kB", "MB", "GB", "TB"}
	i := 0
	for v >= 1000 && i < len(units)-1 {
		v /= 1000
		i++
	}
	return strconv.FormatFloat(roundSig(v, 3), 'f', -1, 64) + " " + units[i]
}

// formatThousands writes a rate with k for thousands and M for millions:
// 592k, 74.3k, 1.25M.
func formatThousands(v float64) string {
	if v >= 1e6 {
		return formatNumber(v/1e6) + "M"
	}
	if v >= 1000 {
		return formatNumber(v/1000) + "k"
	}
	return formatNumber(v)
}

// formatBinaryBytes writes a cache size in binary units: 2 MiB.
func formatBinaryBytes(v float64) string {
	units := []string{"B", "KiB", "MiB", "GiB"}
	i := 0
	for v >= 1024 && i < len(units)-1 {
		v /= 1024
		i++
	}
	return strconv.FormatFloat(roundSig(v, 3), 'f', -1, 64) + " " + units[i]
}

// formatCount writes a key count as a power of ten when it is one: 10^8 is
// "10⁸", 3·10^7 is "3·10⁷", 12345 is "12,345".
func formatCount(n float64) string {
	if n >= 1e4 {
		e := math.Floor(math.Log10(n))
		m := n / math.Pow(10, e)
		if math.Abs(m-math.Round(m)) < 1e-9 {
			s := "10" + superscript(int(e))
			if math.Round(m) != 1 {
				s = strconv.Itoa(int(math.Round(m))) + "·" + s
			}
			return s
		}
	}
	s := strconv.FormatInt(int64(n), 10)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

func superscript(n int) string {
	const digits = "⁰¹²³⁴⁵⁶⁷⁸⁹"
	var b strings.Builder
	for _, d := range strconv.Itoa(n) {
		b.WriteString(string([]rune(digits)[d-'0']))
	}
	return b.String()
}

// roundSig rounds v to n significant digits, in decimal, so that 1e8
// stays 1e8.
func roundSig(v float64, n int) float64 {
	r, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'g', n, 64), 64)
	return r
}

// verticalMarks draws labelled vertical lines across a plot at given X
// values (the cache sizes on the speed chart); it takes no part in the
// axes' ranges, and values outside them are not drawn.
type verticalMarks struct {
	xs     []float64
	labels []string
}

func (m verticalMarks) Plot(c draw.Canvas, p *plot.Plot) {
	trX, _ := p.Transforms(&c)
	style := draw.LineStyle{Color: cacheColor, Width: vg.Points(1), Dashes: []vg.Length{vg.Points(2), vg.Points(2)}}
	ts := text.Style{Color: rgb(0x60, 0x60, 0x60), Font: font.From(plot.DefaultFont, 8.5),
		Handler: plot.DefaultTextHandler, XAlign: draw.XLeft, YAlign: draw.YTop}
	for i, x := range m.xs {
		if x < p.X.Min || x > p.X.Max {
			continue
		}
		at := trX(x)
		c.StrokeLine2(style, at, c.Min.Y, at, c.Max.Y)
		c.FillText(ts, vg.Point{X: at + vg.Points(2), Y: c.Max.Y - vg.Points(2)}, m.labels[i])
	}
}

// valueLabels returns labels written just past the end of each bar.
func valueLabels(xys plotter.XYs, labels []string, horizontal bool) (*plotter.Labels, error) {
	l, err := plotter.NewLabels(plotter.XYLabels{XYs: xys, Labels: labels})
	if err != nil {
		return nil, err
	}
	for i := range l.TextStyle {
		l.TextStyle[i].Font.Size = vg.Points(9)
		if horizontal {
			l.TextStyle[i].YAlign = draw.YCenter
		} else {
			l.TextStyle[i].XAlign = draw.XCenter
		}
	}
	if horizontal {
		l.Offset = vg.Point{X: vg.Points(4)}
	} else {
		l.Offset = vg.Point{Y: vg.Points(3)}
	}
	return l, nil
}

// mustPositive checks that a value drawn on a logarithmic axis can be.
func mustPositive(what string, v float64) error {
	if !(v > 0) || math.IsInf(v, 0) {
		return fmt.Errorf("%s = %v: not a positive number", what, v)
	}
	return nil
}
