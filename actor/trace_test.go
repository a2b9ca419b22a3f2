package actor

import (
	"fmt"
	"strings"
	"testing"
)

// TestAddfKeepsTheText: a kept Addf event reads as fmt.Sprintf would
// write it, for every argument type Addf takes.
func TestAddfKeepsTheText(t *testing.T) {
	tr := NewTrace(true)
	const format = "dev%d %s#%d at %#x lane %d wrote %d (%v) err=%v"
	args := []any{3, "one_shot", uint64(7), uint64(0x7f00_0000_0800), int64(-1), uint32(1), uint(9), true}
	tr.Addf(5, 2, "signal", format, args...)
	got := tr.Events()[0]
	want := Event{Step: 5, Task: 2, Kind: "signal", Detail: fmt.Sprintf(format, args...)}
	if got != want {
		t.Fatalf("event %+v, want %+v", got, want)
	}
}

// TestAddfHashesValues: the hash depends on the format and every
// argument's value, not on whether events are kept, and two traces of the
// same events agree.
func TestAddfHashesValues(t *testing.T) {
	hash := func(keep bool, add func(*Trace)) string {
		tr := NewTrace(keep)
		add(tr)
		return tr.Hash()
	}
	base := func(tr *Trace) { tr.Addf(1, 0, "k", "a %d %s %v", 1, "x", false) }
	first, again, kept := hash(false, base), hash(false, base), hash(true, base)
	if first != again || first != kept {
		t.Fatalf("the same events hash differently: %s, then %s, and %s when kept", first, again, kept)
	}
	for name, other := range map[string]func(*Trace){
		"int":    func(tr *Trace) { tr.Addf(1, 0, "k", "a %d %s %v", 2, "x", false) },
		"string": func(tr *Trace) { tr.Addf(1, 0, "k", "a %d %s %v", 1, "y", false) },
		"bool":   func(tr *Trace) { tr.Addf(1, 0, "k", "a %d %s %v", 1, "x", true) },
		"format": func(tr *Trace) { tr.Addf(1, 0, "k", "b %d %s %v", 1, "x", false) },
		"type":   func(tr *Trace) { tr.Addf(1, 0, "k", "a %d %s %v", uint64(1), "x", false) },
		"step":   func(tr *Trace) { tr.Addf(2, 0, "k", "a %d %s %v", 1, "x", false) },
		"task":   func(tr *Trace) { tr.Addf(1, 1, "k", "a %d %s %v", 1, "x", false) },
		"kind":   func(tr *Trace) { tr.Addf(1, 0, "j", "a %d %s %v", 1, "x", false) },
		"text":   func(tr *Trace) { tr.Add(1, 0, "k", "a 1 x false") },
	} {
		if hash(false, other) == hash(false, base) {
			t.Errorf("changing the %s left the hash as it was", name)
		}
	}
}

// TestTraceHashCoversBufferedRecords: records still buffered when Hash is
// called count, and adding after Hash goes on from there.
func TestTraceHashCoversBufferedRecords(t *testing.T) {
	long, short := NewTrace(false), NewTrace(false)
	for i := range 1000 { // several buffer flushes
		long.Add(int64(i), i%7, "run", strings.Repeat("p", i%50))
		short.Add(int64(i), i%7, "run", strings.Repeat("p", i%50))
	}
	h1 := long.Hash()
	if h1 != short.Hash() {
		t.Fatal("identical traces hash differently")
	}
	long.Add(1000, 0, "run", "more")
	if long.Hash() == h1 || long.Len() != 1001 {
		t.Fatalf("an event added after Hash changed nothing (%d events)", long.Len())
	}
}

func TestAddfRejectsOtherTypes(t *testing.T) {
	defer func() {
		if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "unsupported type") {
			t.Fatalf("recovered %v, want an unsupported-type panic", r)
		}
	}()
	type named uint64
	NewTrace(false).Addf(0, 0, "k", "%d", named(3))
}
