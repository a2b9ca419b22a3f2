// Package slab hands out values carved from arrays, one allocation per
// array rather than one per value, for records that mostly live as long
// as their owner: an array stays alive while any of its values does.
package slab

// Size is how many values one array holds.
const Size = 64

// Slab carves zero values of T from arrays of Size. Its zero value is
// ready; it is not safe for concurrent use.
type Slab[T any] struct {
	free []T
}

// New returns a pointer to a zero T, taking a new array of Size once the
// last one is used up.
func (s *Slab[T]) New() *T {
	if len(s.free) == 0 {
		s.free = make([]T, Size)
	}
	x := &s.free[0]
	s.free = s.free[1:]
	return x
}
