package sim

import (
	"strings"
	"testing"
)

// sharedPTX: every thread of a block of 64 stores its index to its word
// of shared memory with LD_ST, waits at a barrier, loads the word of the
// next thread, and stores it to global word tid.
const sharedPTX = `
.version 8.0
.target sm_90
.address_size 64
.visible .entry sh(.param .u64 p)
{
	.shared .align 4 .b8 buf[256];
	.reg .b32 %r<6>;
	.reg .b64 %rd<4>;
	ld.param.u64 %rd1, [p];
	mov.u32 %r1, %tid.x;
	mov.u32 %r5, buf;
	shl.b32 %r2, %r1, 2;
	add.u32 %r2, %r2, %r5;
	STORE [%r2], %r1;
	bar.sync 0;
	add.u32 %r3, %r1, 1;
	and.b32 %r3, %r3, 63;
	shl.b32 %r3, %r3, 2;
	add.u32 %r3, %r3, %r5;
	LOAD %r4, [%r3];
	mul.wide.u32 %rd2, %r1, 4;
	add.s64 %rd3, %rd1, %rd2;
	st.global.u32 [%rd3], %r4;
	ret;
}
`

// runShared runs sharedPTX with the given shared load and store; it
// returns the global words the threads stored, the shared accesses the
// observer saw (strong: those it saw as strong ones), and how many steps
// ran a lane from a shared access.
func runShared(t *testing.T, load, store string) (stored []uint32, seen, strong, points int) {
	t.Helper()
	src := strings.NewReplacer("LOAD", load, "STORE", store).Replace(sharedPTX)
	out, s := runOnGranule(t, src, "sh", 64, 256, 3, Kernels{PTX: true}, func(a *Access) {
		if a.Shared && (a.Kind == Load || a.Kind == Store || a.Kind == Atomic) {
			seen++
		}
		if a.Shared && a.Kind == Atomic {
			strong++
		}
	})
	for _, e := range s.Trace().Events() {
		if e.Kind == "run" && e.Detail == "ptx shared" {
			points++
		}
	}
	return words(out), seen, strong, points
}

// TestPlainSharedAccessesAreNoSchedulingPoints: a plain ld or st of
// shared memory is no scheduling point (as a plain global access is
// not), while a strong one is; the race detector is told of each either
// way, a strong one as strong, and the kernel computes the same.
func TestPlainSharedAccessesAreNoSchedulingPoints(t *testing.T) {
	for _, c := range []struct {
		load, store string
		points      int
	}{
		{"ld.shared.u32", "st.shared.u32", 0},
		{"ld.volatile.shared.u32", "st.volatile.shared.u32", 128},
		{"ld.relaxed.cta.shared.u32", "st.shared.u32", 64},
	} {
		stored, seen, strong, points := runShared(t, c.load, c.store)
		if seen != 128 {
			t.Errorf("%s/%s: the observer saw %d shared accesses, want 128 (one load and one store a thread)", c.load, c.store, seen)
		}
		if strong != c.points {
			t.Errorf("%s/%s: the observer saw %d strong shared accesses, want %d", c.load, c.store, strong, c.points)
		}
		if points != c.points {
			t.Errorf("%s/%s: %d steps ran a lane from a shared access, want %d", c.load, c.store, points, c.points)
		}
		for i, v := range stored {
			if want := uint32((i + 1) % 64); v != want {
				t.Errorf("%s/%s: thread %d stored %d, want %d", c.load, c.store, i, v, want)
				break
			}
		}
	}
}
