package hugeheap

import "testing"

func TestAlign(t *testing.T) {
	for _, c := range []struct{ p, n, start, size uintptr }{
		{0, 4 * PageSize, 0, 4 * PageSize},
		{1, 4 * PageSize, PageSize, 3 * PageSize},
		{PageSize - 1, PageSize + 1, PageSize, PageSize},
		{PageSize + 1, PageSize, 2 * PageSize, 0},
		{3 * PageSize, PageSize - 1, 3 * PageSize, 0},
	} {
		if start, size := align(c.p, c.n); start != c.start || size != c.size {
			t.Errorf("align(%#x, %#x) = %#x, %#x; want %#x, %#x", c.p, c.n, start, size, c.start, c.size)
		}
	}
}

func TestReserveBelowAPage(t *testing.T) {
	if n, err := Reserve(PageSize - 1); n != 0 || err != nil {
		t.Errorf("Reserve of less than a huge page = %d, %v; want 0, nil", n, err)
	}
}

func TestParseMode(t *testing.T) {
	for in, want := range map[string]string{
		"always [madvise] never\n": "madvise",
		"[always] madvise never\n": "always",
		"always madvise [never]":   "never",
	} {
		if got, err := ParseMode(in); got != want || err != nil {
			t.Errorf("ParseMode(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "always madvise never", "[] madvise", "[madvise"} {
		if got, err := ParseMode(bad); err == nil {
			t.Errorf("ParseMode(%q) = %q, want an error", bad, got)
		}
	}
}

// TestAutoIsOffWithItsEnv: Env "0" turns Auto off before it reads the
// system; unset, or any other value, leaves it on.
func TestAutoIsOffWithItsEnv(t *testing.T) {
	env := map[string]string{}
	getenv := func(k string) string { return env[k] }
	if !Wanted(getenv) {
		t.Errorf("Auto is off with %s unset", Env)
	}
	env[Env] = "1"
	if !Wanted(getenv) {
		t.Errorf("Auto is off with %s=1", Env)
	}
	env[Env] = "0"
	if Wanted(getenv) {
		t.Errorf("Auto is on with %s=0", Env)
	}
	if n, err := Auto(getenv); n != 0 || err != nil {
		t.Errorf("Auto with %s=0 = %d, %v; want 0, nil", Env, n, err)
	}
}
