#!/usr/bin/env bash
# Builds the CUDA kernels into kernels/cuda/kernels.fatbin (and their PTX into
# kernels/cuda/kernels.ptx.gz) and records the
# hash of their sources in kernels/cuda/SOURCES.sha256. Run it from anywhere
# on a machine with nvcc (CUDA 12 or newer); it needs no Go.
#
# The hash: list the files kernels/cuda/*.cu and kernels/cuda/*.cuh by base
# name, sorted bytewise; for each, the line "<sha256 hex>  <name>\n" (what
# sha256sum prints); the hash is the sha256 hex of those lines concatenated.
# kernels/fatbin_test.go computes the same and fails when they differ.
#
# Targets: sm_90 machine code (H100/H200) and compute_80 PTX, which newer
# GPUs compile at load. No fast-math: the kernels must round as the Go
# twins do.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
src="$root/kernels/cuda"
nvcc="${NVCC:-nvcc}"
if ! command -v "$nvcc" >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then
	nvcc=/usr/local/cuda/bin/nvcc
fi

"$nvcc" --version | tail -n 2
"$nvcc" -fatbin -std=c++17 -O3 \
	-gencode arch=compute_90,code=sm_90 \
	-gencode arch=compute_80,code=compute_80 \
	-Xptxas -warn-spills,-warn-lmem-usage \
	--resource-usage \
	-I "$src" \
	-o "$src/kernels.fatbin.tmp" \
	"$src/kernels.cu"
mv "$src/kernels.fatbin.tmp" "$src/kernels.fatbin"

# The same sources and flags as PTX (compute_80), for the simulator's PTX
# mode (device/sim/ptx); committed gzip-compressed beside the fatbin.
"$nvcc" -ptx -std=c++17 -O3 -arch=compute_80 \
	-I "$src" \
	-o "$src/kernels.ptx.tmp" \
	"$src/kernels.cu"
gzip -9 -n -c "$src/kernels.ptx.tmp" >"$src/kernels.ptx.gz"
rm -f "$src/kernels.ptx.tmp"

(
	cd "$src"
	LC_ALL=C ls -1 -- *.cu *.cuh | LC_ALL=C sort | while IFS= read -r f; do sha256sum -- "$f"; done |
		sha256sum | cut -d ' ' -f 1 >SOURCES.sha256
)
echo "kernels.fatbin: $(wc -c <"$src/kernels.fatbin") bytes; sources sha256 $(cat "$src/SOURCES.sha256")"
