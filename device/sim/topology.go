package sim

import "fmt"

type topoKind int

const (
	fullyConnected topoKind = iota
	ring
	partial
	none
)

// Topology is the NVLink topology a [World] reports. The zero value is
// fully connected: every pair of devices linked by 18 NVLinks (an NVSwitch
// system such as HGX H100/H200).
type Topology struct {
	kind  topoKind
	links [][]int
}

// Ring links device i with devices i-1 and i+1 (mod N) with 18 NVLinks.
func Ring() Topology { return Topology{kind: ring} }

// None has no NVLinks (PCIe only).
func None() Topology { return Topology{kind: none} }

// Partial uses the given N x N matrix of NVLink counts (copied).
func Partial(links [][]int) Topology {
	c := make([][]int, len(links))
	for i := range links {
		c[i] = append([]int(nil), links[i]...)
	}
	return Topology{kind: partial, links: c}
}

func (t Topology) String() string {
	switch t.kind {
	case fullyConnected:
		return "fully-connected"
	case ring:
		return "ring"
	case none:
		return "none"
	}
	return fmt.Sprintf("partial%v", t.links)
}

func (t Topology) check(n int) error {
	if t.kind != partial {
		return nil
	}
	if len(t.links) != n {
		return fmt.Errorf("topology matrix has %d rows for %d devices", len(t.links), n)
	}
	for i, row := range t.links {
		if len(row) != n {
			return fmt.Errorf("topology matrix row %d has %d entries for %d devices", i, len(row), n)
		}
		for j, v := range row {
			if v < 0 {
				return fmt.Errorf("topology matrix [%d][%d] = %d is negative", i, j, v)
			}
			if i == j && v != 0 {
				return fmt.Errorf("topology matrix diagonal [%d][%d] = %d, want 0", i, j, v)
			}
		}
	}
	return nil
}

// Matrix is the N x N NVLink count matrix of t for n devices.
func (t Topology) Matrix(n int) [][]int {
	m := make([][]int, n)
	for i := range m {
		m[i] = make([]int, n)
		for j := range m[i] {
			switch t.kind {
			case fullyConnected:
				if i != j {
					m[i][j] = nvlinksPerPair
				}
			case ring:
				if i != j && ((i+1)%n == j || (j+1)%n == i) {
					m[i][j] = nvlinksPerPair
				}
			case partial:
				m[i][j] = t.links[i][j]
			}
		}
	}
	return m
}
