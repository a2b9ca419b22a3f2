package kernels

import (
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"
)

// Fatbin is the CUDA kernel image built from cuda/*.cu by
// scripts/build-fatbin.sh (sm_90 machine code and compute_80 PTX). The CUDA
// device loads it at the first launch.
//
//go:embed cuda/kernels.fatbin
var Fatbin []byte

//go:embed cuda/SOURCES.sha256
var sourcesSHA256 string

// FatbinSourcesSHA256 is the hash (see [SourcesHash]) of the CUDA sources
// that Fatbin was built from, as the build script recorded it.
func FatbinSourcesSHA256() string { return strings.TrimSpace(sourcesSHA256) }

// SourcesHash hashes the CUDA sources in the root of fsys the way
// scripts/build-fatbin.sh does: the files named *.cu and *.cuh, sorted
// bytewise by name; for each the line "<sha256 hex>  <name>\n"; the hash
// is the sha256 hex of those lines concatenated.
func SourcesHash(fsys fs.FS) (string, error) {
	entries, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return "", fmt.Errorf("hash CUDA sources: %w", err)
	}
	var names []string
	for _, e := range entries {
		if e.Type().IsRegular() && (path.Ext(e.Name()) == ".cu" || path.Ext(e.Name()) == ".cuh") {
			names = append(names, e.Name())
		}
	}
	if len(names) == 0 {
		return "", fmt.Errorf("hash CUDA sources: no *.cu or *.cuh files")
	}
	sort.Strings(names)
	var list strings.Builder
	for _, n := range names {
		b, err := fs.ReadFile(fsys, n)
		if err != nil {
			return "", fmt.Errorf("hash CUDA sources: %w", err)
		}
		sum := sha256.Sum256(b)
		fmt.Fprintf(&list, "%s  %s\n", hex.EncodeToString(sum[:]), n)
	}
	sum := sha256.Sum256([]byte(list.String()))
	return hex.EncodeToString(sum[:]), nil
}
