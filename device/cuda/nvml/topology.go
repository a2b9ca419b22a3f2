//go:build cgo

package nvml

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
)

// Library is the part of NVML the topology reads; gonvml.Interface and
// its mock implement it.
type Library interface {
	DeviceGetHandleByPciBusId(busID string) (gonvml.Device, gonvml.Return)
}

// NVLinkMatrix loads NVML and returns the NVLink matrix of the devices
// whose PCI bus ids are given, in that order (the CUDA device ordinals).
func NVLinkMatrix(busIDs []string) ([][]int, error) {
	lib := gonvml.New()
	if r := lib.Init(); r != gonvml.SUCCESS {
		return nil, fmt.Errorf("nvml: init: %s", r.Error())
	}
	defer lib.Shutdown()
	return Matrix(lib, busIDs)
}

// Matrix returns m where m[i][j] counts the NVLinks between the devices
// with bus ids busIDs[i] and busIDs[j]. For each device and each active
// link: a link to a GPU adds 1 to m[i][j] for the GPU at the other end
// (found by its PCI bus id; GPUs not in busIDs are ignored); links to an
// NVSwitch are counted, and every pair i != j then gains
// min(switch links of i, switch links of j). The diagonal stays 0.
func Matrix(lib Library, busIDs []string) ([][]int, error) {
	n := len(busIDs)
	index := make(map[pciAddr]int, n)
	devs := make([]gonvml.Device, n)
	for i, id := range busIDs {
		a, err := parseBusID(id)
		if err != nil {
			return nil, fmt.Errorf("nvml: device %d: %w", i, err)
		}
		if j, dup := index[a]; dup {
			return nil, fmt.Errorf("nvml: devices %d and %d have the same bus id %s", j, i, id)
		}
		index[a] = i
		d, r := lib.DeviceGetHandleByPciBusId(id)
		if r != gonvml.SUCCESS {
			return nil, fmt.Errorf("nvml: device %d (bus id %s): get handle: %s", i, id, r.Error())
		}
		devs[i] = d
	}
	m := make([][]int, n)
	switches := make([]int, n)
	for i := range m {
		m[i] = make([]int, n)
	}
	for i, d := range devs {
		for link := 0; link < gonvml.NVLINK_MAX_LINKS; link++ {
			state, r := d.GetNvLinkState(link)
			if r == gonvml.ERROR_NOT_SUPPORTED || r == gonvml.ERROR_INVALID_ARGUMENT {
				// No such link on this device (or no NVLink at all).
				continue
			}
			if r != gonvml.SUCCESS {
				return nil, fmt.Errorf("nvml: device %d link %d: state: %s", i, link, r.Error())
			}
			if state != gonvml.FEATURE_ENABLED {
				continue
			}
			typ, r := d.GetNvLinkRemoteDeviceType(link)
			if r != gonvml.SUCCESS {
				return nil, fmt.Errorf("nvml: device %d link %d: remote device type: %s", i, link, r.Error())
			}
			switch typ {
			case gonvml.NVLINK_DEVICE_TYPE_SWITCH:
				switches[i]++
			case gonvml.NVLINK_DEVICE_TYPE_GPU:
				pci, r := d.GetNvLinkRemotePciInfo(link)
				if r != gonvml.SUCCESS {
					return nil, fmt.Errorf("nvml: device %d link %d: remote PCI info: %s", i, link, r.Error())
				}
				a, err := remoteAddr(pci)
				if err != nil {
					return nil, fmt.Errorf("nvml: device %d link %d: %w", i, link, err)
				}
				if j, ok := index[a]; ok && j != i {
					m[i][j]++
				}
			}
		}
	}
	for i := range m {
		for j := range m[i] {
			if i != j {
				m[i][j] += min(switches[i], switches[j])
			}
		}
	}
	return m, nil
}

// pciAddr is a PCI address: domain, bus, device, function.
type pciAddr struct {
	domain, bus, device, function uint64
}

// parseBusID parses "dddd:bb:dd.f" with a domain of any width (CUDA
// prints 4 hex digits, NVML 8).
func parseBusID(s string) (pciAddr, error) {
	s = strings.TrimRight(s, "\x00")
	bad := fmt.Errorf("malformed PCI bus id %q (want domain:bus:device.function)", s)
	parts := strings.Split(s, ":")
	if len(parts) != 3 {
		return pciAddr{}, bad
	}
	devFn := strings.Split(parts[2], ".")
	if len(devFn) != 2 {
		return pciAddr{}, bad
	}
	var a pciAddr
	for _, f := range []struct {
		dst  *uint64
		text string
	}{{&a.domain, parts[0]}, {&a.bus, parts[1]}, {&a.device, devFn[0]}, {&a.function, devFn[1]}} {
		v, err := strconv.ParseUint(f.text, 16, 32)
		if err != nil {
			return pciAddr{}, bad
		}
		*f.dst = v
	}
	return a, nil
}

// remoteAddr returns the address in an NVML PCI record: its bus id string
// if set, else its numeric fields (function 0).
func remoteAddr(p gonvml.PciInfo) (pciAddr, error) {
	var b []byte
	for _, c := range p.BusId {
		if c == 0 {
			break
		}
		b = append(b, c)
	}
	if len(b) > 0 {
		return parseBusID(string(b))
	}
	if p.Domain == 0 && p.Bus == 0 && p.Device == 0 {
		return pciAddr{}, errors.New("remote PCI info is empty")
	}
	return pciAddr{domain: uint64(p.Domain), bus: uint64(p.Bus), device: uint64(p.Device)}, nil
}
