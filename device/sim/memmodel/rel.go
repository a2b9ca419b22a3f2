package memmodel

import "math/bits"

// rel is a binary relation over n events, as a bit matrix.
type rel struct {
	n, w int
	b    []uint64
}

func newRel(n int) rel {
	w := (n + 63) / 64
	return rel{n: n, w: w, b: make([]uint64, n*w)}
}

func (r rel) row(i int) []uint64 { return r.b[i*r.w : (i+1)*r.w] }

func (r rel) has(i, j int) bool { return r.b[i*r.w+j/64]&(1<<(j%64)) != 0 }

func (r rel) set(i, j int) { r.b[i*r.w+j/64] |= 1 << (j % 64) }

func (r rel) clone() rel {
	c := r
	c.b = append([]uint64(nil), r.b...)
	return c
}

// union adds o to r.
func (r rel) union(o rel) {
	for i := range r.b {
		r.b[i] |= o.b[i]
	}
}

// close makes r transitive.
func (r rel) close() {
	for k := 0; k < r.n; k++ {
		rk := r.row(k)
		for i := 0; i < r.n; i++ {
			if r.has(i, k) {
				ri := r.row(i)
				for x := range ri {
					ri[x] |= rk[x]
				}
			}
		}
	}
}

// compose returns r;o.
func (r rel) compose(o rel) rel {
	out := newRel(r.n)
	for i := 0; i < r.n; i++ {
		ri, oi := r.row(i), out.row(i)
		for wi, word := range ri {
			for word != 0 {
				k := wi*64 + bits.TrailingZeros64(word)
				word &= word - 1
				ok := o.row(k)
				for x := range oi {
					oi[x] |= ok[x]
				}
			}
		}
	}
	return out
}

// reflexive reports whether some element is related to itself.
func (r rel) reflexive() bool {
	for i := 0; i < r.n; i++ {
		if r.has(i, i) {
			return true
		}
	}
	return false
}

// acyclic reports whether r has no cycle (r is left unchanged).
func (r rel) acyclic() bool {
	c := r.clone()
	c.close()
	return !c.reflexive()
}
