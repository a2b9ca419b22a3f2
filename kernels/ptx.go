package kernels

import (
	"bytes"
	"compress/gzip"
	_ "embed"
	"fmt"
	"io"
	"sync"
)

// ptxGzip is the kernels' PTX, built by scripts/build-fatbin.sh from the
// same sources and with the same flags as Fatbin (nvcc -ptx, compute_80),
// gzip-compressed.
//
//go:embed cuda/kernels.ptx.gz
var ptxGzip []byte

var ptxText = sync.OnceValues(func() (string, error) {
	zr, err := gzip.NewReader(bytes.NewReader(ptxGzip))
	if err != nil {
		return "", fmt.Errorf("kernels: PTX: %w", err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		return "", fmt.Errorf("kernels: PTX: %w", err)
	}
	return string(b), nil
})

// PTX is the text of the kernels' PTX: the code the GPU runs (its entry
// points are the names [Entry] returns), which the simulator's PTX mode
// interprets.
func PTX() (string, error) { return ptxText() }
