package bench

import (
	"errors"
	"fmt"
	"image/color"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	_ "gonum.org/v1/plot/vg/vgimg" // png, jpg, tiff
	_ "gonum.org/v1/plot/vg/vgsvg" // svg
)

// PlotFormat returns the image format named by path's extension (png, svg,
// jpg, tiff).
func PlotFormat(path string) (string, error) {
	ext := strings.ToLower(strings.TrimPrefix(filepath.Ext(path), "."))
	switch ext {
	case "png", "svg", "jpg", "jpeg", "tif", "tiff":
		return ext, nil
	}
	return "", fmt.Errorf("plot %q: unknown image format %q (want .png, .svg, .jpg or .tiff)", path, ext)
}

// SavePlot draws the reports' rows into the image file path (its format
// from the extension): per-call time and bus bandwidth against size, both
// on log axes, one curve per implementation and algorithm.
func SavePlot(path, title string, reports ...Report) error {
	format, err := PlotFormat(path)
	if err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("plot: %w", err)
	}
	if err := WritePlot(f, format, title, reports...); err != nil {
		f.Close()
		os.Remove(path)
		return err
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("plot %s: %w", path, err)
	}
	return nil
}

// WritePlot is SavePlot writing to w in format. The title (by default
// "all-reduce" and the worlds) is followed by a line naming the devices
// the reports were measured on; the legend, one entry per curve in its own
// colour, stands to the right of both plots, and the image grows taller
// when the legend needs it.
func WritePlot(w io.Writer, format, title string, reports ...Report) error {
	var rows []Row
	for _, rep := range reports {
		rows = append(rows, rep.Rows...)
	}
	curves := seriesOf(rows)
	if title == "" {
		title = "all-reduce" + worldsOf(reports)
	}
	timeP, bwP := newLogPlot("per-call time (us)"), newLogPlot("bus bandwidth (GB/s)")
	legend := plot.NewLegend()
	legend.Top, legend.Left = true, true
	drawn := 0
	for i, s := range curves {
		tpts, bpts := points(s.rows, func(r Row) float64 { return r.TimeUs }), points(s.rows, func(r Row) float64 { return r.BusBW })
		if len(tpts) == 0 && len(bpts) == 0 {
			continue
		}
		own := len(s.rows) > 0 && s.rows[0].Impl == "symmem"
		col := SeriesColor(i, len(curves))
		var thumbs []plot.Thumbnailer
		for _, c := range []struct {
			p   *plot.Plot
			pts plotter.XYs
		}{{timeP, tpts}, {bwP, bpts}} {
			if len(c.pts) == 0 {
				continue
			}
			line, scatter, err := plotter.NewLinePoints(c.pts)
			if err != nil {
				return fmt.Errorf("plot %s: %w", s.name, err)
			}
			line.Color, scatter.Color = col, col
			scatter.Shape = plotutil.Shape(i)
			line.Width = vg.Points(1)
			if own {
				line.Width = vg.Points(2)
			} else {
				line.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
			}
			c.p.Add(line, scatter)
			thumbs = []plot.Thumbnailer{line, scatter}
		}
		legend.Add(s.name, thumbs...)
		drawn++
	}
	if drawn == 0 {
		return errors.New("plot: no row has a positive time or bandwidth to draw")
	}
	// A log axis over a single value would be widened to include 0: give it
	// a factor of two each side instead.
	for _, p := range []*plot.Plot{timeP, bwP} {
		for _, ax := range []*plot.Axis{&p.X, &p.Y} {
			if ax.Min == ax.Max {
				ax.Min, ax.Max = ax.Min/2, ax.Max*2
			}
		}
	}
	ext := legend.Rectangle(draw.Canvas{})
	lay := layoutPlot(ext.Max.X-ext.Min.X, ext.Max.Y-ext.Min.Y)
	c, err := draw.NewFormattedCanvas(lay.Width, lay.Height, format)
	if err != nil {
		return fmt.Errorf("plot: %w", err)
	}
	dc := draw.New(c)
	titleStyle := text.Style{
		Color: color.Black, Font: font.From(plot.DefaultFont, 14),
		XAlign: draw.XCenter, YAlign: draw.YTop, Handler: plot.DefaultTextHandler,
	}
	dc.FillText(titleStyle, vg.Point{X: lay.Plots.Max.X / 2, Y: lay.Height - vg.Points(8)}, title)
	sub := titleStyle
	sub.Font = font.From(plot.DefaultFont, 11)
	dc.FillText(sub, vg.Point{X: lay.Plots.Max.X / 2, Y: lay.Height - vg.Points(28)}, devicesOf(reports))
	tiles := draw.Tiles{Rows: 1, Cols: 2, PadX: vg.Inch / 3, PadTop: vg.Inch / 8, PadBottom: vg.Inch / 8, PadLeft: vg.Inch / 8, PadRight: vg.Inch / 8}
	canvases := plot.Align([][]*plot.Plot{{timeP, bwP}}, tiles, draw.Canvas{Canvas: c, Rectangle: lay.Plots})
	timeP.Draw(canvases[0][0])
	bwP.Draw(canvases[0][1])
	legend.Draw(draw.Canvas{Canvas: c, Rectangle: lay.Legend})
	if _, err := c.WriteTo(w); err != nil {
		return fmt.Errorf("plot: write %s: %w", format, err)
	}
	return nil
}

// plotLayout places a plot image's parts: the two plots side by side
// under the title lines, and the legend in a column of its own to their
// right, so that it never covers a curve.
type plotLayout struct {
	Width, Height vg.Length
	Plots, Legend vg.Rectangle
}

// Sizes of the plot image's parts.
const (
	plotsWidth   = 14 * vg.Inch // both plots
	plotsHeight  = 6 * vg.Inch  // the least height of the image
	titleSpace   = 44           // points above the plots for the title and the devices line
	legendMargin = vg.Inch / 4  // around the legend
)

// layoutPlot lays out an image whose legend is legendW x legendH.
func layoutPlot(legendW, legendH vg.Length) plotLayout {
	top := vg.Points(titleSpace)
	height := max(plotsHeight, legendH+top+2*legendMargin)
	width := plotsWidth + legendW + 2*legendMargin
	return plotLayout{
		Width: width, Height: height,
		Plots: vg.Rectangle{Max: vg.Point{X: plotsWidth, Y: height - top}},
		Legend: vg.Rectangle{
			Min: vg.Point{X: plotsWidth + legendMargin, Y: height - top - legendH},
			Max: vg.Point{X: plotsWidth + legendMargin + legendW, Y: height - top},
		},
	}
}

// SeriesColor is the colour of curve i of n: the plotting library's
// default palette while it has a colour for each curve, otherwise n hues
// evenly spaced around the colour wheel, alternately darker, so that no two
// curves share a colour.
func SeriesColor(i, n int) color.Color {
	if n <= len(plotutil.DefaultColors) {
		return plotutil.Color(i)
	}
	v := 0.85
	if i%2 == 1 {
		v = 0.6
	}
	return hsv(360*float64(i)/float64(n), 0.8, v)
}

// hsv converts a hue in degrees, a saturation and a value in [0, 1] to an
// opaque RGB colour.
func hsv(h, s, v float64) color.Color {
	c := v * s
	x := c * (1 - math.Abs(math.Mod(h/60, 2)-1))
	var r, g, b float64
	switch {
	case h < 60:
		r, g = c, x
	case h < 120:
		r, g = x, c
	case h < 180:
		g, b = c, x
	case h < 240:
		g, b = x, c
	case h < 300:
		r, b = x, c
	default:
		r, b = c, x
	}
	m := v - c
	to8 := func(f float64) uint8 { return uint8(math.Round((f + m) * 255)) }
	return color.RGBA{R: to8(r), G: to8(g), B: to8(b), A: 255}
}

// devicesOf names the devices the reports were measured on, for the line
// under a plot's title: "on NVIDIA H100 80GB HBM3", "on the simulator (CPU
// time, not GPU performance)", or several joined with "and".
func devicesOf(reports []Report) string {
	var names []string
	for _, rep := range reports {
		name := rep.DeviceName
		switch {
		case rep.Simulated || rep.Device == "sim":
			name = "the simulator (CPU time, not GPU performance)"
		case name == "" && rep.Device != "":
			name = rep.Device
		case name == "":
			name = "an unnamed device"
		}
		if !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		return ""
	}
	if len(names) == 1 {
		return "on " + names[0]
	}
	return "on " + strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// worldsOf names the world sizes of the reports and their rows for a
// title: ", world 4", ", worlds 2, 4 and 8", or nothing when none is known.
func worldsOf(reports []Report) string {
	var worlds []int
	add := func(w int) {
		if w > 0 && !slices.Contains(worlds, w) {
			worlds = append(worlds, w)
		}
	}
	for _, rep := range reports {
		add(rep.World)
		for _, r := range rep.Rows {
			add(r.World)
		}
	}
	slices.Sort(worlds)
	switch len(worlds) {
	case 0:
		return ""
	case 1:
		return fmt.Sprintf(", world %d", worlds[0])
	}
	names := make([]string, len(worlds))
	for i, w := range worlds {
		names[i] = strconv.Itoa(w)
	}
	return ", worlds " + strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// newLogPlot is a plot with log-scaled axes, sizes labelled in bytes.
func newLogPlot(ylabel string) *plot.Plot {
	p := plot.New()
	p.X.Label.Text = "size (bytes)"
	p.Y.Label.Text = ylabel
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	p.X.Tick.Marker = plot.TickerFunc(sizeTicks)
	p.Y.Tick.Marker = plot.TickerFunc(valueTicks)
	p.Add(plotter.NewGrid())
	return p
}

// points are a series' positive (size, y) pairs: log axes cannot show the
// rest.
func points(rows []Row, y func(Row) float64) plotter.XYs {
	var pts plotter.XYs
	for _, r := range rows {
		if v := y(r); v > 0 && !math.IsInf(v, 0) && r.Bytes > 0 {
			pts = append(pts, plotter.XY{X: float64(r.Bytes), Y: v})
		}
	}
	return pts
}

// sizeTicks marks every power of two in [min, max], labelling every other
// one (every fourth over a wide range) as 1K, 4K, ... 256M.
func sizeTicks(min, max float64) []plot.Tick {
	if !(min > 0) || max < min {
		return nil
	}
	lo, hi := int(math.Floor(math.Log2(min))), int(math.Ceil(math.Log2(max)))
	every := 2
	if hi-lo > 24 {
		every = 4
	}
	var ticks []plot.Tick
	for k := lo; k <= hi && k < 63; k++ {
		v := math.Ldexp(1, k)
		if v < min || v > max {
			continue
		}
		t := plot.Tick{Value: v}
		if k%every == 0 || hi-lo < 4 {
			t.Label = FormatSize(uint64(v))
		}
		ticks = append(ticks, t)
	}
	return ticks
}

// valueTicks marks 1, 2, ..., 9 times each power of ten in [min, max],
// labelling 1, 2 and 5 over a narrow range and powers of ten over a wide
// one.
func valueTicks(min, max float64) []plot.Tick {
	if !(min > 0) || max < min || math.IsInf(max, 0) {
		return nil
	}
	lo, hi := int(math.Floor(math.Log10(min))), int(math.Ceil(math.Log10(max)))
	wide := hi-lo > 3
	var ticks []plot.Tick
	for k := lo; k <= hi; k++ {
		for m := 1; m <= 9; m++ {
			v := float64(m) * math.Pow(10, float64(k))
			if v < min || v > max {
				continue
			}
			t := plot.Tick{Value: v}
			if m == 1 || (!wide && (m == 2 || m == 5)) {
				t.Label = strconv.FormatFloat(v, 'g', -1, 64)
			}
			ticks = append(ticks, t)
		}
	}
	return ticks
}
