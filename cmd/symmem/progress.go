package main

import (
	"io"
	"os"
	"sync"

	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"
)

// progress shows how far a long command is, on a terminal only: a bar over
// a known number of items, or a spinner with a status line. Lines written
// through [progress.writer] appear above it. A nil *progress shows nothing
// and passes lines through.
type progress struct {
	p    *mpb.Progress
	bar  *mpb.Bar
	once sync.Once
}

// isTerminal reports whether w is a terminal (a character device).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// newProgress starts a progress display on out named name, over total
// items (0: a spinner), followed by status's text when status is not nil.
// It returns nil (no display) unless show is set and out is a terminal as
// a.terminal judges.
func (a *app) newProgress(out io.Writer, show bool, name string, total int, status func() string) *progress {
	if !show || a.terminal == nil || !a.terminal(out) {
		return nil
	}
	p := mpb.New(mpb.WithOutput(out), mpb.WithWidth(40), mpb.WithAutoRefresh())
	after := []decor.Decorator{decor.Name(" "), decor.Elapsed(decor.ET_STYLE_GO)}
	if status != nil {
		after = append(after, decor.Any(func(decor.Statistics) string { return "  " + status() }))
	}
	var bar *mpb.Bar
	if total > 0 {
		bar = p.AddBar(int64(total),
			mpb.PrependDecorators(decor.Name(name+" "), decor.CountersNoUnit("%d/%d ")),
			mpb.AppendDecorators(append([]decor.Decorator{decor.Percentage()}, after...)...))
	} else {
		bar = p.AddSpinner(0, mpb.PrependDecorators(decor.Name(name+" ")), mpb.AppendDecorators(after...), mpb.BarRemoveOnComplete())
	}
	return &progress{p: p, bar: bar}
}

// writer is where lines go while the display runs: above it, or to out
// when there is none.
func (p *progress) writer(out io.Writer) io.Writer {
	if p == nil {
		return out
	}
	return p.p
}

// increment counts one item done.
func (p *progress) increment() {
	if p != nil {
		p.bar.Increment()
	}
}

// done completes the display where it stands (a bar stays on the screen
// with its final count, a spinner goes) and waits until lines written
// through it are out; later calls do nothing.
func (p *progress) done() {
	if p == nil {
		return
	}
	p.once.Do(func() {
		p.bar.SetTotal(-1, true)
		p.p.Wait()
	})
}
