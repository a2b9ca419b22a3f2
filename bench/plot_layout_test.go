package bench

import (
	"bytes"
	"fmt"
	"image/color"
	"strings"
	"testing"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// TestSeriesColorsAreDistinct: no two curves share a colour, however many
// there are.
func TestSeriesColorsAreDistinct(t *testing.T) {
	for _, n := range []int{1, 7, 8, 9, 16, 40} {
		seen := map[color.RGBA]int{}
		for i := range n {
			r, g, b, a := SeriesColor(i, n).RGBA()
			c := color.RGBA{R: uint8(r >> 8), G: uint8(g >> 8), B: uint8(b >> 8), A: uint8(a >> 8)}
			if j, ok := seen[c]; ok {
				t.Errorf("%d curves: curves %d and %d share colour %v", n, j, i, c)
			}
			seen[c] = i
		}
	}
}

// TestLegendStandsApart: the legend of 1 to 60 curves lies inside the
// image and outside both plots.
func TestLegendStandsApart(t *testing.T) {
	for n := 1; n <= 60; n++ {
		l := plot.NewLegend()
		for i := range n {
			l.Add(fmt.Sprintf("torch-symm two-shot+graph world %d bfloat16 sum", i))
		}
		ext := l.Rectangle(draw.Canvas{})
		w, h := ext.Max.X-ext.Min.X, ext.Max.Y-ext.Min.Y
		lay := layoutPlot(w, h)
		leg, plots := lay.Legend, lay.Plots
		if leg.Max.X-leg.Min.X < w || leg.Max.Y-leg.Min.Y < h {
			t.Errorf("%d curves: legend box %v smaller than the legend %v x %v", n, leg, w, h)
		}
		if leg.Min.X < 0 || leg.Min.Y < 0 || leg.Max.X > lay.Width || leg.Max.Y > lay.Height {
			t.Errorf("%d curves: legend %v outside the %v x %v image", n, leg, lay.Width, lay.Height)
		}
		if leg.Min.X < plots.Max.X && plots.Min.X < leg.Max.X && leg.Min.Y < plots.Max.Y && plots.Min.Y < leg.Max.Y {
			t.Errorf("%d curves: legend %v overlaps the plots %v", n, leg, plots)
		}
		if plots.Max.Y-plots.Min.Y < 5*vg.Inch {
			t.Errorf("%d curves: plots squeezed to %v", n, plots)
		}
	}
}

// TestPlotNamesTheDevice: the line under the title names the device each
// report was measured on.
func TestPlotNamesTheDevice(t *testing.T) {
	gpu := Report{Device: "cuda", DeviceName: "NVIDIA H100 80GB HBM3", World: 4, Rows: []Row{
		{Impl: "symmem", Algo: "one-shot", DType: "bfloat16", Op: "sum", World: 4, Bytes: 1024, TimeUs: 10, BusBW: 1}}}
	sim := Report{Device: "sim", Simulated: true, World: 4, Rows: gpu.Rows}
	var svg bytes.Buffer
	if err := WritePlot(&svg, "svg", "mine", gpu, sim); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"mine", "on NVIDIA H100 80GB HBM3 and the simulator (CPU time, not GPU performance)"} {
		if !strings.Contains(svg.String(), want) {
			t.Errorf("svg lacks %q", want)
		}
	}
	if got := devicesOf([]Report{{Device: "cuda"}}); got != "on cuda" {
		t.Errorf("devicesOf(an unnamed GPU) = %q", got)
	}
}
