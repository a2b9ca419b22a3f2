package kernels

import (
	"encoding/binary"
	"os"
	"testing"
	"testing/fstest"
)

func TestFatbinIsFresh(t *testing.T) {
	got, err := SourcesHash(os.DirFS("cuda"))
	if err != nil {
		t.Fatal(err)
	}
	if want := FatbinSourcesSHA256(); got != want {
		t.Fatalf("fatbin is stale: run scripts/build-fatbin.sh on a GPU machine (sources hash %s, fatbin built from %s)", got, want)
	}
}

func TestFatbinIsAFatbin(t *testing.T) {
	// A fatbin starts with the magic 0xBA55ED50 (little endian).
	if len(Fatbin) < 16 || binary.LittleEndian.Uint32(Fatbin) != 0xBA55ED50 {
		t.Fatalf("cuda/kernels.fatbin (%d bytes) is not a fatbin: run scripts/build-fatbin.sh on a GPU machine", len(Fatbin))
	}
}

func TestSourcesHash(t *testing.T) {
	// The value sha256sum gives for: printf 'x' >a.cu; printf 'y' >b.cuh;
	// sha256sum a.cu b.cuh | sha256sum
	fsys := fstest.MapFS{
		"b.cuh":     {Data: []byte("y")},
		"a.cu":      {Data: []byte("x")},
		"notes.txt": {Data: []byte("ignored")},
		"c.cu.orig": {Data: []byte("ignored")},
	}
	got, err := SourcesHash(fsys)
	if err != nil {
		t.Fatal(err)
	}
	const want = "9958b450dff0635c1c2992758fbd6e8015c923bd441c7b6dbe06967e17d19b7c"
	if got != want {
		t.Fatalf("SourcesHash = %s, want %s", got, want)
	}
	if _, err := SourcesHash(fstest.MapFS{"x.txt": {Data: nil}}); err == nil {
		t.Fatal("SourcesHash of a folder without sources: no error")
	}
}
