package fuzz

import (
	"bytes"
	"testing"
)

// TestOverwrittenGuard checks the guard check on a span of 5 guard bytes,
// a tensor of 8 and 3 guard bytes: the tensor's bytes never count, the
// first overwritten guard byte is named, before the tensor first.
func TestOverwrittenGuard(t *testing.T) {
	const lead, n = 5, 8
	fresh := func() []byte {
		b := bytes.Repeat([]byte{guardByte}, lead+n+3)
		for i := lead; i < lead+n; i++ {
			b[i] = 0 // a result unlike the sentinel
		}
		return b
	}
	if i, ok := overwrittenGuard(fresh(), lead, n); ok {
		t.Fatalf("intact guards: byte %d reported overwritten", i)
	}
	for _, c := range []struct {
		name  string
		wrote []int
		want  uint64
	}{
		{"first byte", []int{0}, 0},
		{"just before", []int{lead - 1}, lead - 1},
		{"just after", []int{lead + n}, lead + n},
		{"last byte", []int{lead + n + 2}, lead + n + 2},
		{"both sides", []int{lead + n + 1, 2}, 2},
	} {
		b := fresh()
		for _, i := range c.wrote {
			b[i] = 1
		}
		if i, ok := overwrittenGuard(b, lead, n); !ok || i != c.want {
			t.Errorf("%s: got (%d, %v), want (%d, true)", c.name, i, ok, c.want)
		}
	}
	// A tensor without guards (lead 0, the span the tensor alone).
	if i, ok := overwrittenGuard(make([]byte, n), 0, n); ok {
		t.Errorf("no guards: byte %d reported overwritten", i)
	}
}
