package ptxcheck

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Signature is an entry point's parameter list as its .entry declares it.
type Signature struct {
	Entry  string
	Params []ParamDecl
	Size   int // bytes of the launch's parameter block

	err error // why the parameter list cannot be read; the entry is refused when launched
}

// ParamDecl is one declared parameter: ".param [.align A] .TYPE name[[N]]".
type ParamDecl struct {
	Name   string
	Type   string // ".u64", ".b8", ...
	Elem   int    // bytes of one element of Type
	Count  int    // 1, or N for an array
	Align  int    // the .align, or the element size
	Offset int    // in the parameter block
	// Ptr is set when the declaration carries .ptr (a kernel parameter
	// nvcc knows to be a pointer: a __grid_constant__ or restrict one).
	Ptr bool
}

// Size is the parameter's size in bytes.
func (p ParamDecl) Size() int { return p.Elem * p.Count }

func (p ParamDecl) String() string {
	s := ".param"
	if p.Align != p.Elem {
		s += " .align " + strconv.Itoa(p.Align)
	}
	s += " " + p.Type + " " + p.Name
	if p.Count > 1 || p.Type == ".b8" {
		s += "[" + strconv.Itoa(p.Count) + "]"
	}
	return s
}

var (
	entryHeader = regexp.MustCompile(`\.entry\s+([A-Za-z_$%][\w$]*)\s*\(([^)]*)\)`)
	typeSizes   = map[string]int{
		".b8": 1, ".u8": 1, ".s8": 1, ".b16": 2, ".u16": 2, ".s16": 2, ".f16": 2, ".bf16": 2,
		".b32": 4, ".u32": 4, ".s32": 4, ".f32": 4, ".b64": 8, ".u64": 8, ".s64": 8, ".f64": 8,
	}
)

// signatures finds every .entry's parameter list in text (debug
// directives removed). A list it cannot read is the error of that
// entry's signature only, so that a harness of the other entries runs.
func signatures(text string) []*Signature {
	var out []*Signature
	for _, m := range entryHeader.FindAllStringSubmatch(text, -1) {
		sig := &Signature{Entry: m[1]}
		for _, decl := range strings.Split(m[2], ",") {
			if strings.TrimSpace(decl) == "" {
				continue
			}
			p, err := paramDecl(strings.Fields(decl))
			if err != nil {
				sig.err = fmt.Errorf("entry %s: %w", sig.Entry, err)
				break
			}
			p.Offset = (sig.Size + p.Align - 1) / p.Align * p.Align
			sig.Size = p.Offset + p.Size()
			sig.Params = append(sig.Params, p)
		}
		out = append(out, sig)
	}
	return out
}

// paramDecl parses the words of one parameter declaration.
func paramDecl(w []string) (ParamDecl, error) {
	bad := fmt.Errorf("bad parameter declaration %q", strings.Join(w, " "))
	if len(w) < 3 || w[0] != ".param" {
		return ParamDecl{}, bad
	}
	var p ParamDecl
	align, ptr := 0, false
	for i := 1; i < len(w); i++ {
		switch x := w[i]; {
		case x == ".align":
			if i+1 >= len(w) {
				return ParamDecl{}, bad
			}
			n, err := strconv.Atoi(w[i+1])
			if err != nil || n < 1 || n&(n-1) != 0 {
				return ParamDecl{}, bad
			}
			if !ptr {
				align = n // after .ptr, the pointee's alignment
			}
			i++
		case x == ".ptr":
			p.Ptr = true
		case x == ".global" || x == ".const" || x == ".shared" || x == ".local":
			// pointer attributes: the value is still a 64-bit address
			ptr = true
		case typeSizes[x] > 0:
			p.Type, p.Elem = x, typeSizes[x]
		case strings.HasPrefix(x, "."):
			return ParamDecl{}, fmt.Errorf("unsupported parameter type %s in %q", x, strings.Join(w, " "))
		default:
			name, count := x, 1
			if j := strings.IndexByte(x, '['); j >= 0 {
				n, err := strconv.Atoi(strings.TrimSuffix(x[j+1:], "]"))
				if !strings.HasSuffix(x, "]") || err != nil || n < 1 {
					return ParamDecl{}, bad
				}
				name, count = x[:j], n
			}
			p.Name, p.Count = name, count
		}
	}
	if p.Type == "" || p.Name == "" {
		return ParamDecl{}, bad
	}
	p.Align = max(align, p.Elem)
	return p, nil
}
