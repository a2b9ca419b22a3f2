#!/usr/bin/env bash
# Builds what a GPU run needs into .gpu/ (git-ignored): the symmem command and
# the CUDA device's test binary, for linux/amd64. Run where Go is installed;
# carry .gpu to the GPU machine.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .gpu
export GOOS=linux GOARCH=amd64 CGO_ENABLED=1
go build -o .gpu/symmem ./cmd/symmem
go test -c -o .gpu/cuda.test ./device/cuda/
echo "built .gpu/symmem and .gpu/cuda.test"
