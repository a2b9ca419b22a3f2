package pool

import "testing"

func TestBounded(t *testing.T) {
	p := Bounded[int]{Max: 2}
	if _, ok := p.Get(); ok {
		t.Fatal("Get on an empty pool reported a value")
	}
	if !p.Put(1) || !p.Put(2) || p.Put(3) {
		t.Fatal("Put: want the first two kept and the third refused")
	}
	if p.Len() != 2 {
		t.Fatalf("Len = %d, want 2", p.Len())
	}
	if v, ok := p.Get(); !ok || v != 2 {
		t.Fatalf("Get = %d, %v; want 2 (last in, first out)", v, ok)
	}
	if got := p.Drain(); len(got) != 1 || got[0] != 1 {
		t.Fatalf("Drain = %v, want [1]", got)
	}
	if _, ok := p.Get(); ok {
		t.Fatal("Get after Drain reported a value")
	}
}
