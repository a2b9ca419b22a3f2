package rank

import (
	"bytes"
	"testing"
)

// FuzzDecodeRequest: the rendezvous request decoder never panics, accepts
// only canonical encodings (what encode writes, byte for byte) and only
// requests that pass its own checks. The seed corpus is in
// testdata/fuzz/FuzzDecodeRequest.
func FuzzDecodeRequest(f *testing.F) {
	for _, q := range []request{
		{Device: 0, PID: 1000, Host: "sim-host", BlockSize: 2 << 20, BufferSize: 1 << 20, PadOffset: 1 << 20, PadSize: 2048},
		{Device: 7, PID: 1, Host: "", Multicast: true},
		{Device: 3, PID: 1 << 30, Host: string(bytes.Repeat([]byte{'h'}, maxHost)), BlockSize: 1 << 62},
	} {
		b, err := q.encode()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		q, err := decodeRequest(b)
		if err != nil {
			if q != (request{}) {
				t.Fatalf("failed decode returned %+v", q)
			}
			return
		}
		if q.Device < 0 || q.PID <= 0 || len(q.Host) > maxHost || bytes.IndexByte([]byte(q.Host), 0) >= 0 {
			t.Fatalf("decoded an invalid request %+v", q)
		}
		again, err := q.encode()
		if err != nil {
			t.Fatalf("decoded request %+v does not encode: %v", q, err)
		}
		if !bytes.Equal(again, b) {
			t.Fatalf("decode then encode changed the bytes:\n%x\n%x", b, again)
		}
	})
}
