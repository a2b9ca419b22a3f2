package cuda

import (
	"os"
	"strings"
	"testing"
	"unsafe"
)

// TestSharingPoolsUntilLastClose: streams given back while another device
// object of the ordinal is open stay pooled and are handed out again; the
// last close returns them all for freeing.
func TestSharingPoolsUntilLastClose(t *testing.T) {
	o := sharing{by: map[int]*shared{}}
	for range 2 {
		if err := o.add(3, LoadingEager); err != nil {
			t.Fatal(err)
		}
	}
	var rec [8]byte
	o.give(3, pooledStream{cu: 7, rec: unsafe.Pointer(&rec), recDev: 9})
	if got, ok := o.take(3); !ok || got.cu != 7 || got.recDev != 9 {
		t.Fatalf("take = %+v, %v; want the stream given back", got, ok)
	}
	if _, ok := o.take(3); ok {
		t.Fatal("take of an empty pool succeeded")
	}
	o.give(3, pooledStream{cu: 8})
	loads := 0
	load := func() (uintptr, error) { loads++; return uintptr(100 + loads), nil }
	m1, _ := o.module(3, []byte("image"), load)
	m2, _ := o.module(3, []byte("image"), load)
	m3, _ := o.module(3, []byte("other image"), load)
	if m1 != m2 || m1 == m3 || loads != 2 {
		t.Fatalf("modules %d %d %d after %d loads: want one load per image", m1, m2, m3, loads)
	}
	if free := o.remove(3); free.streams != nil || free.modules != nil {
		t.Fatalf("first close of two freed %v", free)
	}
	free := o.remove(3)
	if len(free.streams) != 1 || free.streams[0].cu != 8 || len(free.modules) != 2 {
		t.Fatalf("last close freed %+v, want the pooled stream 8 and both modules", free)
	}
	if free := o.remove(3); free.streams != nil || free.modules != nil {
		t.Fatalf("a close too many freed %v", free)
	}
}

// TestSharingRefusesSecondOpenUnderLazyLoading: a second open of one
// device is refused under lazy module loading, naming the variable; a
// first open, and other devices, are not.
func TestSharingRefusesSecondOpenUnderLazyLoading(t *testing.T) {
	o := sharing{by: map[int]*shared{}}
	if err := o.add(0, LoadingLazy); err != nil {
		t.Fatalf("first open: %v", err)
	}
	if err := o.add(1, LoadingLazy); err != nil {
		t.Fatalf("another device: %v", err)
	}
	err := o.add(0, LoadingLazy)
	if err == nil || !strings.Contains(err.Error(), LoadingEnv) {
		t.Fatalf("second open under lazy loading: %v, want a refusal naming %s", err, LoadingEnv)
	}
	if err := o.add(0, LoadingEager); err != nil {
		t.Fatalf("second open under eager loading: %v", err)
	}
}

// TestPreferEagerLoading: the variable is set to EAGER unless the process
// set it; a value the user chose stands.
func TestPreferEagerLoading(t *testing.T) {
	t.Setenv(LoadingEnv, "LAZY")
	if err := preferEagerLoading(); err != nil {
		t.Fatal(err)
	}
	if v := os.Getenv(LoadingEnv); v != "LAZY" {
		t.Fatalf("a user's %s=LAZY became %q", LoadingEnv, v)
	}
	os.Unsetenv(LoadingEnv)
	if err := preferEagerLoading(); err != nil {
		t.Fatal(err)
	}
	if v := os.Getenv(LoadingEnv); v != "EAGER" {
		t.Fatalf("%s = %q, want EAGER", LoadingEnv, v)
	}
	if LoadingEager.String() != "eager" || LoadingLazy.String() != "lazy" || LoadingMode(9).String() != "LoadingMode(9)" {
		t.Fatal("LoadingMode names")
	}
}
