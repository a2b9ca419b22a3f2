//go:build cgo

package nvml

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
)

// link is one NVLink of a fake device: its remote end.
type link struct {
	active bool
	typ    gonvml.IntNvLinkDeviceType
	remote string // NVML-style bus id of a remote GPU
}

// fakeHost builds an NVML mock whose devices (keyed by NVML bus id, 8-digit
// domain) have the given links.
func fakeHost(t *testing.T, links map[string][]link) *mock.Interface {
	t.Helper()
	devs := map[string]*mock.Device{}
	for id, ls := range links {
		ls := ls
		devs[id] = &mock.Device{
			GetNvLinkStateFunc: func(n int) (gonvml.EnableState, gonvml.Return) {
				if n < 0 || n >= len(ls) {
					return 0, gonvml.ERROR_INVALID_ARGUMENT
				}
				if ls[n].active {
					return gonvml.FEATURE_ENABLED, gonvml.SUCCESS
				}
				return gonvml.FEATURE_DISABLED, gonvml.SUCCESS
			},
			GetNvLinkRemoteDeviceTypeFunc: func(n int) (gonvml.IntNvLinkDeviceType, gonvml.Return) {
				return ls[n].typ, gonvml.SUCCESS
			},
			GetNvLinkRemotePciInfoFunc: func(n int) (gonvml.PciInfo, gonvml.Return) {
				var p gonvml.PciInfo
				copy(p.BusId[:], ls[n].remote)
				return p, gonvml.SUCCESS
			},
		}
	}
	return &mock.Interface{
		DeviceGetHandleByPciBusIdFunc: func(id string) (gonvml.Device, gonvml.Return) {
			a, err := parseBusID(id)
			if err != nil {
				return nil, gonvml.ERROR_INVALID_ARGUMENT
			}
			for k, d := range devs {
				if b, _ := parseBusID(k); b == a {
					return d, gonvml.SUCCESS
				}
			}
			return nil, gonvml.ERROR_NOT_FOUND
		},
	}
}

// nvmlID and cudaID spell the bus id of GPU i the way NVML and CUDA do.
func nvmlID(i int) string { return fmt.Sprintf("00000000:%02X:00.0", 0x18+i*0x10) }
func cudaID(i int) string { return fmt.Sprintf("0000:%02x:00.0", 0x18+i*0x10) }

func cudaIDs(n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = cudaID(i)
	}
	return ids
}

func TestFullyConnected(t *testing.T) {
	// 4 GPUs whose 18 links each go to NVSwitches: every pair is connected
	// by 18 links.
	links := map[string][]link{}
	for i := 0; i < 4; i++ {
		ls := make([]link, gonvml.NVLINK_MAX_LINKS)
		for k := range ls {
			ls[k] = link{active: true, typ: gonvml.NVLINK_DEVICE_TYPE_SWITCH}
		}
		links[nvmlID(i)] = ls
	}
	m, err := Matrix(fakeHost(t, links), cudaIDs(4))
	if err != nil {
		t.Fatal(err)
	}
	want := [][]int{
		{0, 18, 18, 18},
		{18, 0, 18, 18},
		{18, 18, 0, 18},
		{18, 18, 18, 0},
	}
	if !reflect.DeepEqual(m, want) {
		t.Fatalf("matrix = %v, want %v", m, want)
	}
}

func TestDirectMesh(t *testing.T) {
	// 4 GPUs linked directly, 6 links to each of 3 peers: 18 links per GPU,
	// the most NVML reports.
	links := map[string][]link{}
	for i := 0; i < 4; i++ {
		var ls []link
		for k := 0; k < 6; k++ {
			for j := 0; j < 4; j++ {
				if j != i {
					ls = append(ls, link{active: true, typ: gonvml.NVLINK_DEVICE_TYPE_GPU, remote: nvmlID(j)})
				}
			}
		}
		links[nvmlID(i)] = ls
	}
	m, err := Matrix(fakeHost(t, links), cudaIDs(4))
	if err != nil {
		t.Fatal(err)
	}
	for i := range m {
		for j := range m[i] {
			want := 6
			if i == j {
				want = 0
			}
			if m[i][j] != want {
				t.Fatalf("m[%d][%d] = %d, want %d (matrix %v)", i, j, m[i][j], want, m)
			}
		}
	}
}

func TestNVSwitch(t *testing.T) {
	// 8 GPUs with 18 links each to NVSwitches, one GPU with 2 links down:
	// pairs get min(switch links).
	links := map[string][]link{}
	for i := 0; i < 8; i++ {
		ls := make([]link, 18)
		for k := range ls {
			ls[k] = link{active: !(i == 5 && k < 2), typ: gonvml.NVLINK_DEVICE_TYPE_SWITCH}
		}
		links[nvmlID(i)] = ls
	}
	m, err := Matrix(fakeHost(t, links), cudaIDs(8))
	if err != nil {
		t.Fatal(err)
	}
	for i := range m {
		for j := range m[i] {
			want := 18
			switch {
			case i == j:
				want = 0
			case i == 5 || j == 5:
				want = 16
			}
			if m[i][j] != want {
				t.Fatalf("m[%d][%d] = %d, want %d (matrix %v)", i, j, m[i][j], want, m)
			}
		}
	}
}

func TestPartialTopology(t *testing.T) {
	// A ring 0-1-2-3-0 with 4 links per neighbour, one inactive link from
	// 2 to 3, a link to a GPU that CUDA does not see and an IBM NPU link.
	links := map[string][]link{}
	for i := 0; i < 4; i++ {
		var ls []link
		for _, j := range []int{(i + 1) % 4, (i + 3) % 4} {
			for k := 0; k < 4; k++ {
				ls = append(ls, link{active: !(i == 2 && j == 3 && k == 0), typ: gonvml.NVLINK_DEVICE_TYPE_GPU, remote: nvmlID(j)})
			}
		}
		links[nvmlID(i)] = ls
	}
	links[nvmlID(0)] = append(links[nvmlID(0)],
		link{active: true, typ: gonvml.NVLINK_DEVICE_TYPE_GPU, remote: nvmlID(9)},
		link{active: true, typ: gonvml.NVLINK_DEVICE_TYPE_IBMNPU})
	m, err := Matrix(fakeHost(t, links), cudaIDs(4))
	if err != nil {
		t.Fatal(err)
	}
	want := [][]int{
		{0, 4, 0, 4},
		{4, 0, 4, 0},
		{0, 4, 0, 3},
		{4, 0, 4, 0},
	}
	if !reflect.DeepEqual(m, want) {
		t.Fatalf("matrix = %v, want %v", m, want)
	}
}

func TestCUDAOrder(t *testing.T) {
	// CUDA may number devices differently from NVML: rows follow busIDs.
	links := map[string][]link{
		nvmlID(0): {{active: true, typ: gonvml.NVLINK_DEVICE_TYPE_GPU, remote: nvmlID(1)}},
		nvmlID(1): {{active: true, typ: gonvml.NVLINK_DEVICE_TYPE_GPU, remote: nvmlID(0)}},
		nvmlID(2): {},
	}
	m, err := Matrix(fakeHost(t, links), []string{cudaID(2), cudaID(0), cudaID(1)})
	if err != nil {
		t.Fatal(err)
	}
	want := [][]int{{0, 0, 0}, {0, 0, 1}, {0, 1, 0}}
	if !reflect.DeepEqual(m, want) {
		t.Fatalf("matrix = %v, want %v", m, want)
	}
}

func TestErrors(t *testing.T) {
	host := fakeHost(t, map[string][]link{nvmlID(0): {}})
	for _, c := range []struct {
		ids  []string
		want string
	}{
		{[]string{"0000:18:00"}, "malformed PCI bus id"},
		{[]string{"zz:18:00.0"}, "malformed PCI bus id"},
		{[]string{cudaID(0), cudaID(0)}, "same bus id"},
		{[]string{cudaID(3)}, "ERROR_NOT_FOUND"},
	} {
		_, err := Matrix(host, c.ids)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Matrix(%q) error = %v, want it to contain %q", c.ids, err, c.want)
		}
	}
	broken := &mock.Interface{
		DeviceGetHandleByPciBusIdFunc: func(string) (gonvml.Device, gonvml.Return) {
			return &mock.Device{
				GetNvLinkStateFunc: func(int) (gonvml.EnableState, gonvml.Return) {
					return 0, gonvml.ERROR_GPU_IS_LOST
				},
			}, gonvml.SUCCESS
		},
	}
	if _, err := Matrix(broken, cudaIDs(1)); err == nil || !strings.Contains(err.Error(), "device 0 link 0: state") {
		t.Errorf("lost GPU: error = %v, want it to name device 0 link 0", err)
	}
}

func TestParseBusID(t *testing.T) {
	a, err := parseBusID("00000000:1B:00.0\x00\x00")
	if err != nil {
		t.Fatal(err)
	}
	b, err := parseBusID("0000:1b:00.0")
	if err != nil {
		t.Fatal(err)
	}
	if a != b || a.bus != 0x1b {
		t.Fatalf("parse: %+v vs %+v", a, b)
	}
}
