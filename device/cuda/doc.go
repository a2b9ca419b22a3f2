// Package cuda is the real-GPU implementation of device.Device: a thin
// binding of the CUDA driver API loaded at run time (no cgo), one primary
// context per device with every driver call made on one OS thread, the
// virtual-memory API with POSIX file descriptor handles, kernel launches
// from the embedded fatbin of package kernels with recoverable timeouts
// reported through a per-stream error record, and the NVLink topology
// read through NVML (subpackage nvml).
//
// Multicast is only reported (the driver's attribute, forced off by
// SYMMEM_DISABLE_MULTICAST or TORCH_SYMM_MEM_DISABLE_MULTICAST); no
// multicast object is ever created.
package cuda
