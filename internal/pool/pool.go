// Package pool holds a bounded last-in, first-out free list, safe for
// concurrent use. Unlike sync.Pool it keeps what it holds across garbage
// collections, up to its bound.
package pool

import "sync"

// Bounded keeps at most Max idle values.
type Bounded[T any] struct {
	Max  int
	mu   sync.Mutex
	idle []T
}

// Get returns the value put last and true, or the zero value and false
// when the pool is empty.
func (p *Bounded[T]) Get() (T, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var zero T
	n := len(p.idle)
	if n == 0 {
		return zero, false
	}
	v := p.idle[n-1]
	p.idle[n-1] = zero
	p.idle = p.idle[:n-1]
	return v, true
}

// Put keeps v and reports true, or reports false when the pool is full.
func (p *Bounded[T]) Put(v T) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.idle) >= p.Max {
		return false
	}
	p.idle = append(p.idle, v)
	return true
}

// Drain empties the pool and returns what it held.
func (p *Bounded[T]) Drain() []T {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := p.idle
	p.idle = nil
	return out
}

// Len returns the number of idle values the pool holds.
func (p *Bounded[T]) Len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.idle)
}
