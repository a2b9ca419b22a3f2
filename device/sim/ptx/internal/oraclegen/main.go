// Command oraclegen writes the semantics oracle of the PTX interpreter
// (see package oracle) into a directory: kernels.ptx, manifest.txt and
// in.bin.gz (in.bin, gzipped), which testdata/oracle/host.cu runs on a
// GPU; its outputs, gzipped, go to gpu/out.bin.gz with the manifest it
// ran and its status.txt. The warp oracle goes to the warp directory
// under it: warp.ptx and in.bin.gz, which warp/host.cu runs, and the GPU's
// gpu/out.bin.gz.
//
//	go run ./device/sim/ptx/internal/oraclegen [-dir device/sim/ptx/testdata/oracle]
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/symmem/symmem/device/sim/ptx/internal/oracle"
)

func main() {
	dir := flag.String("dir", "device/sim/ptx/testdata/oracle", "directory to write the oracle's files into")
	flag.Parse()
	if err := write(*dir); err != nil {
		fmt.Fprintln(os.Stderr, "oraclegen:", err)
		os.Exit(1)
	}
}

func write(dir string) error {
	forms := oracle.Forms()
	f := oracle.Build(forms)
	for name, data := range map[string][]byte{
		"kernels.ptx":  []byte(f.Kernels),
		"manifest.txt": []byte(f.Manifest),
		"in.bin.gz":    oracle.Gzip(f.In),
	} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			return err
		}
	}
	recs := oracle.WarpRecords()
	for name, data := range map[string][]byte{
		"warp.ptx":  []byte(oracle.WarpKernel),
		"in.bin.gz": oracle.Gzip(oracle.WarpIn(recs)),
	} {
		if err := os.WriteFile(filepath.Join(dir, "warp", name), data, 0o644); err != nil {
			return err
		}
	}
	n := 0
	for _, fm := range forms {
		n += len(fm.Inputs)
	}
	fmt.Printf("%d forms, %d records; warp oracle: %d records\n", len(forms), n, len(recs))
	return nil
}
