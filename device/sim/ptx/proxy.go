package ptx

import "strings"

// proxyRefusal is why an instruction that goes through a proxy other than
// the generic one, or orders proxies, is refused; "" for others. Kernel
// runs model every location through the generic proxy only, so they
// could neither catch a missing proxy fence nor give a surface or texture
// access its weaker ordering; the litmus model (package memmodel) has the
// PTX proxy rules.
func proxyRefusal(text string) string {
	base, _, _ := strings.Cut(text, ".")
	switch {
	case strings.HasPrefix(text, "fence.proxy."):
		return text + ": a proxy fence orders accesses through different proxies (async, surface, texture, constant, virtual aliases); kernel runs model only the generic proxy"
	case base == "suld" || base == "sust" || base == "sured" || base == "suatom" || base == "suq":
		return text + ": a surface access goes through the surface proxy; kernel runs model only the generic proxy"
	case base == "tex" || base == "tld4" || base == "txq":
		return text + ": a texture access goes through the texture proxy; kernel runs model only the generic proxy"
	}
	return ""
}
