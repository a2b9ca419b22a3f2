package ipc

import (
	"bytes"
	"testing"
)

// FuzzDecodeHeader: the collective message decoder never panics and
// accepts only canonical headers (what encode writes, byte for byte). The
// seed corpus is in testdata/fuzz/FuzzDecodeHeader.
func FuzzDecodeHeader(f *testing.F) {
	for _, h := range []header{
		{op: opAllGather, hasFD: true, world: 4, origin: 2, step: 1},
		{op: opBroadcast, world: 8, origin: 0, step: 7},
		{op: 9, world: 1 << 31, origin: 1 << 31, step: 1 << 31},
	} {
		f.Add(h.encode())
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := decodeHeader(b)
		if err != nil {
			if h != (header{}) {
				t.Fatalf("failed decode returned %+v", h)
			}
			return
		}
		if again := h.encode(); !bytes.Equal(again, b) {
			t.Fatalf("decode then encode changed the bytes:\n%x\n%x", b, again)
		}
		_ = h.String()
	})
}
