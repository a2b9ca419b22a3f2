//go:build !cgo

package nvml

import "errors"

// NVLinkMatrix is unavailable without cgo.
func NVLinkMatrix(busIDs []string) ([][]int, error) {
	return nil, errors.New("nvml: NVLink topology needs a build with cgo")
}
