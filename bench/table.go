package bench

import (
	"fmt"
	"io"
	"math"
	"strings"
)

// The table's column layout, after nccl-tests' all_reduce_perf.
const (
	rowFormat    = "%12d  %12d  %8s  %6s  %13s  %7s  %6.2f  %6.2f  %6s  %7s"
	headerFormat = "#%11s  %12s  %8s  %6s  %13s  %7s  %6s  %6s  %6s  %7s"
)

// FormatTime prints microseconds as nccl-tests does: two decimals under
// 100, one under 10000, none above, in 7 columns.
func FormatTime(us float64) string {
	switch {
	case us >= 10000:
		return fmt.Sprintf("%7.0f", us)
	case us >= 100:
		return fmt.Sprintf("%7.1f", us)
	}
	return fmt.Sprintf("%7.2f", us)
}

// FormatRow formats one table line: size, count, type, redop, algorithm,
// time, algbw, busbw, #wrong (N/A when unchecked) and host time.
func FormatRow(r Row) string {
	wrong := "N/A"
	if r.Wrong >= 0 {
		wrong = fmt.Sprint(r.Wrong)
	}
	return fmt.Sprintf(rowFormat, r.Bytes, r.Count, r.DType, r.Op, r.Algo,
		FormatTime(r.TimeUs), r.AlgBW, r.BusBW, wrong, FormatTime(r.HostUs))
}

// WriteHeader writes the comment lines that open a table: how the numbers
// were taken, then the column names and units.
func WriteHeader(w io.Writer, rep Report) error {
	var b strings.Builder
	dev := rep.Device
	if rep.DeviceName != "" {
		dev += " (" + rep.DeviceName + ")"
	}
	fmt.Fprintf(&b, "# %s: world %d on %s; warmup %d, %d loops of %d calls, median loop\n",
		rep.Tool, rep.World, dev, rep.Warmup, rep.Loops, rep.Iters)
	switch rep.Timer {
	case TimerDevice:
		b.WriteString("# time: per call of a host loop, from device events on each rank's stream, averaged over ranks\n")
	case TimerHost:
		b.WriteString("# time: per call of a host loop, from the host's wall clock, averaged over ranks\n")
	}
	b.WriteString("# host: the host's wall clock per call; busbw = algbw x 2(W-1)/W; #wrong: elements differing bitwise from the reference\n")
	if rep.Simulated {
		b.WriteString("# SIMULATOR FIGURES: CPU time spent simulating the kernels, not GPU performance\n")
	}
	if rep.Note != "" {
		for _, l := range strings.Split(strings.TrimRight(rep.Note, "\n"), "\n") {
			fmt.Fprintf(&b, "# %s\n", l)
		}
	}
	b.WriteString("#\n")
	fmt.Fprintf(&b, headerFormat+"\n", "size", "count", "type", "redop", "algo", "time", "algbw", "busbw", "#wrong", "host")
	fmt.Fprintf(&b, headerFormat+"\n", "(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)")
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteFooter writes the totals of rows: the wrong elements (and how many
// cases went unchecked) and the average bus bandwidth, overall and per
// series.
func WriteFooter(w io.Writer, rows []Row) error {
	var b strings.Builder
	var wrong int64
	unchecked := 0
	for _, r := range rows {
		if r.Wrong < 0 {
			unchecked++
		} else {
			wrong += r.Wrong
		}
	}
	status := "OK"
	if wrong > 0 {
		status = "FAILED"
	}
	fmt.Fprintf(&b, "# Out of bounds values : %d %s", wrong, status)
	if unchecked > 0 {
		fmt.Fprintf(&b, " (%d cases unchecked)", unchecked)
	}
	b.WriteString("\n")
	var all []float64
	for _, r := range rows {
		all = append(all, r.BusBW)
	}
	fmt.Fprintf(&b, "# Avg bus bandwidth    : %g\n", round4(Mean(all)))
	for _, s := range seriesOf(rows) {
		var bw []float64
		for _, r := range s.rows {
			bw = append(bw, r.BusBW)
		}
		fmt.Fprintf(&b, "#   %-32s: %g GB/s average, %g GB/s peak\n", s.name, round4(Mean(bw)), round4(maxOf(bw)))
	}
	b.WriteString("#\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func round4(x float64) float64 { return math.Round(x*1e4) / 1e4 }

func maxOf(xs []float64) float64 {
	var m float64
	for _, x := range xs {
		m = max(m, x)
	}
	return m
}

// series is the rows of one curve, in input order.
type series struct {
	name string
	rows []Row
}

// seriesOf groups rows into curves in order of first appearance, naming
// them by implementation and algorithm, plus dtype and op where rows
// differ in them.
func seriesOf(rows []Row) []series {
	worlds, dtypes, ops := map[int]bool{}, map[string]bool{}, map[string]bool{}
	for _, r := range rows {
		worlds[r.World], dtypes[r.DType], ops[r.Op] = true, true, true
	}
	var out []series
	index := map[string]int{}
	for _, r := range rows {
		name := r.Series(len(worlds) > 1, len(dtypes) > 1, len(ops) > 1)
		i, ok := index[name]
		if !ok {
			i = len(out)
			index[name] = i
			out = append(out, series{name: name})
		}
		out[i].rows = append(out[i].rows, r)
	}
	return out
}
