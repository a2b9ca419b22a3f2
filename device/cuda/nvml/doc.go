// Package nvml reads the NVLink topology of the host's GPUs through NVML:
// an N x N matrix of NVLink connection counts indexed by CUDA device
// ordinal. It needs cgo (the NVML binding is a cgo package); without cgo
// NVLinkMatrix returns an error.
package nvml
