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

// WritePlot is SavePlot writing to w in format.
func WritePlot(w io.Writer, format, title string, reports ...Report) error {
	var rows []Row
	simulated := false
	for _, rep := range reports {
		rows = append(rows, rep.Rows...)
		simulated = simulated || rep.Simulated
	}
	curves := seriesOf(rows)
	if title == "" {
		title = "all-reduce" + worldsOf(reports)
	}
	if simulated {
		title += " (simulator: CPU time, not GPU performance)"
	}
	timeP, bwP := newLogPlot("per-call time (us)"), newLogPlot("bus bandwidth (GB/s)")
	drawn := 0
	for i, s := range curves {
		tpts, bpts := points(s.rows, func(r Row) float64 { return r.TimeUs }), points(s.rows, func(r Row) float64 { return r.BusBW })
		if len(tpts) == 0 && len(bpts) == 0 {
			continue
		}
		own := len(s.rows) > 0 && s.rows[0].Impl == "symmem"
		for j, c := range []struct {
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
			line.Color, scatter.Color = plotutil.Color(i), plotutil.Color(i)
			scatter.Shape = plotutil.Shape(i)
			line.Width = vg.Points(1)
			if own {
				line.Width = vg.Points(2)
			} else {
				line.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
			}
			c.p.Add(line, scatter)
			if j == 1 || len(bpts) == 0 {
				bwP.Legend.Add(s.name, line, scatter)
			}
		}
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
	// Bandwidth grows with size, so the lower right corner is free.
	bwP.Legend.Top, bwP.Legend.Left = false, false
	bwP.Legend.XOffs, bwP.Legend.YOffs = -vg.Points(8), vg.Points(8)
	const width, height = 14 * vg.Inch, 6 * vg.Inch
	c, err := draw.NewFormattedCanvas(width, height, format)
	if err != nil {
		return fmt.Errorf("plot: %w", err)
	}
	dc := draw.New(c)
	titleStyle := text.Style{
		Color: color.Black, Font: font.From(plot.DefaultFont, 14),
		XAlign: draw.XCenter, YAlign: draw.YTop, Handler: plot.DefaultTextHandler,
	}
	dc.FillText(titleStyle, vg.Point{X: width / 2, Y: height - vg.Points(8)}, title)
	tiles := draw.Tiles{Rows: 1, Cols: 2, PadX: vg.Inch / 3, PadTop: vg.Inch / 2, PadBottom: vg.Inch / 8, PadLeft: vg.Inch / 8, PadRight: vg.Inch / 4}
	canvases := plot.Align([][]*plot.Plot{{timeP, bwP}}, tiles, dc)
	timeP.Draw(canvases[0][0])
	bwP.Draw(canvases[0][1])
	if _, err := c.WriteTo(w); err != nil {
		return fmt.Errorf("plot: write %s: %w", format, err)
	}
	return nil
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
