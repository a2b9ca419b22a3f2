package ptxcheck

import (
	"fmt"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/symmem/symmem/device/sim/ptx"
)

// Source is a PTX module as the checker runs it: its text, the module the
// interpreter parsed, the signature of every entry point, and the CUDA
// source line of every PTX line when the text carries .loc directives
// (nvcc -lineinfo).
type Source struct {
	Name    string // the file's name, or "<text>"
	Text    string // as given
	Module  *ptx.Module
	entries map[string]*Signature
	order   []string // entries in the order of the text
	locs    []Loc    // by PTX line (1-based); the zero Loc where none
	// starts are the offsets in Text where its lines start, made on
	// first use (findings name lines often).
	starts     []int
	startsOnce sync.Once
}

// Loc is a place in the CUDA source: file and line, and for code inlined
// from a function, the line it was inlined at.
type Loc struct {
	File      string
	Line      int
	InlinedAt string // "file:line", or "" when not inlined
}

func (l Loc) String() string {
	if l.Line == 0 {
		return ""
	}
	s := l.File + ":" + strconv.Itoa(l.Line)
	if l.InlinedAt != "" {
		s += " (inlined at " + l.InlinedAt + ")"
	}
	return s
}

// LoadFile reads and parses a PTX file.
func LoadFile(path string) (*Source, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("ptx: %w", err)
	}
	return Parse(path, string(b))
}

// Parse parses PTX text; name names it in messages. The debug directives
// (.loc, .file, .section) become the line table and are hidden from the
// interpreter, every line keeping its number.
func Parse(name, text string) (*Source, error) {
	clean, locs := debugLines(text)
	s := readSignatures(name, text, clean)
	s.locs = locs
	var err error
	if s.Module, err = ptx.Parse(clean); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return s, nil
}

// ParseSignatures reads only the entry points' parameter lists of PTX
// text, as [Skeleton] needs them: the Source it returns has no Module (it
// cannot run) and no line table, and text the interpreter cannot parse
// is no error. An entry whose parameter list cannot be read is refused
// when it is asked for, by [Source.Signature].
func ParseSignatures(name, text string) *Source {
	clean, _ := debugLines(text)
	return readSignatures(name, text, clean)
}

// readSignatures makes the Source of text, whose debug lines are blanked
// in clean, with its entries' parameter lists.
func readSignatures(name, text, clean string) *Source {
	s := &Source{Name: name, Text: text, entries: map[string]*Signature{}}
	for _, sig := range signatures(clean) {
		s.entries[sig.Entry] = sig
		s.order = append(s.order, sig.Entry)
	}
	return s
}

// Entries lists the module's entry points in the order of the text.
func (s *Source) Entries() []string { return append([]string(nil), s.order...) }

// Signature is the parameter list an entry point declares.
func (s *Source) Signature(entry string) (*Signature, error) {
	sig := s.entries[entry]
	if sig == nil {
		return nil, fmt.Errorf("%s has no entry point %q (entries: %s)", s.Name, entry, strings.Join(s.order, ", "))
	}
	if sig.err != nil {
		return nil, fmt.Errorf("%s: %w", s.Name, sig.err)
	}
	return sig, nil
}

// Loc is the CUDA source place of PTX line n, the zero Loc when the text
// has no .loc directive for it.
func (s *Source) Loc(n int) Loc {
	if n <= 0 || n >= len(s.locs) {
		return Loc{}
	}
	return s.locs[n]
}

// HasLineInfo reports whether the text has .loc directives (PTX built
// with nvcc -lineinfo), which name the CUDA lines of the PTX lines.
func (s *Source) HasLineInfo() bool {
	for _, l := range s.locs {
		if l.Line > 0 {
			return true
		}
	}
	return false
}

// Line is the text of PTX line n, trimmed.
func (s *Source) Line(n int) string {
	s.startsOnce.Do(func() {
		s.starts = append(s.starts, 0)
		for i := range len(s.Text) {
			if s.Text[i] == '\n' {
				s.starts = append(s.starts, i+1)
			}
		}
	})
	if n <= 0 || n > len(s.starts) {
		return ""
	}
	end := len(s.Text)
	if n < len(s.starts) {
		end = s.starts[n] - 1
	}
	return strings.TrimSpace(s.Text[s.starts[n-1]:end])
}

var (
	fileDirective = regexp.MustCompile(`^\s*\.file\s+(\d+)\s+"([^"]*)"`)
	locDirective  = regexp.MustCompile(`^\s*\.loc\s+(\d+)\s+(\d+)\s+\d+(.*)$`)
	inlinedAt     = regexp.MustCompile(`inlined_at\s+(\d+)\s+(\d+)`)
)

// debugLines blanks the debug directives of text and returns, for every
// line, the CUDA place of the last .loc before it.
func debugLines(text string) (string, []Loc) {
	lines := strings.Split(text, "\n")
	files := map[string]string{}
	for _, l := range lines {
		if m := fileDirective.FindStringSubmatch(l); m != nil {
			files[m[1]] = m[2]
		}
	}
	locs := make([]Loc, len(lines)+1)
	var cur Loc
	inSection, depth := false, 0
	for i, l := range lines {
		t := strings.TrimSpace(l)
		switch {
		case inSection:
			depth += strings.Count(t, "{") - strings.Count(t, "}")
			if depth <= 0 && strings.Contains(t, "}") {
				inSection = false
			}
			lines[i] = ""
		case directive(t, ".section"):
			depth = strings.Count(t, "{") - strings.Count(t, "}")
			inSection = depth > 0 || !strings.Contains(t, "}")
			lines[i] = ""
		case directive(t, ".file"):
			lines[i] = ""
		case directive(t, ".loc"):
			if m := locDirective.FindStringSubmatch(t); m != nil {
				n, _ := strconv.Atoi(m[2])
				cur = Loc{File: files[m[1]], Line: n}
				if cur.File == "" {
					cur.File = "file " + m[1]
				}
				if in := inlinedAt.FindStringSubmatch(m[3]); in != nil {
					f := files[in[1]]
					if f == "" {
						f = "file " + in[1]
					}
					cur.InlinedAt = f + ":" + in[2]
				}
			}
			lines[i] = ""
		case strings.HasPrefix(t, "}") && i+1 < len(lines):
			cur = Loc{} // the end of a function
		}
		locs[i+1] = cur
	}
	return strings.Join(lines, "\n"), locs
}

// directive reports whether line t is the directive d (".loc" but not
// ".local").
func directive(t, d string) bool {
	return strings.HasPrefix(t, d) && (len(t) == len(d) || t[len(d)] == ' ' || t[len(d)] == '\t')
}

// Problem is a line the interpreter refuses.
type Problem struct {
	Line int    // PTX line
	Text string // the line, trimmed
	Err  string // the interpreter's reason
}

func (p Problem) String() string {
	return fmt.Sprintf("line %d: %s: %s", p.Line, p.Text, p.Err)
}

// lineNumber finds the PTX line an interpreter error names.
var lineNumber = regexp.MustCompile(`line (\d+)`)

// Unsupported lists every line of the module's functions that the
// interpreter refuses, in line order, without running anything: nil when
// it can run all of them. A module the parser cannot read at all gives
// one problem, at the line it names.
func (s *Source) Unsupported() []Problem {
	clean, _ := debugLines(s.Text)
	m, err := ptx.Parse(clean)
	if err != nil {
		n := 0
		if mm := lineNumber.FindStringSubmatch(err.Error()); mm != nil {
			n, _ = strconv.Atoi(mm[1])
		}
		return []Problem{{Line: n, Text: s.Line(n), Err: err.Error()}}
	}
	return s.problems(m.AllUnsupported())
}

// EntryUnsupported lists the lines that the interpreter refuses in entry
// and the functions it calls, in line order: nil when it can run them
// all, or when the module cannot be read or has no such entry.
func (s *Source) EntryUnsupported(entry string) []Problem {
	if s.Module == nil {
		return nil
	}
	us, err := s.Module.Unsupported(entry)
	if err != nil {
		return nil
	}
	return s.problems(us)
}

// problems turns the interpreter's refusals into Problems, in line order.
func (s *Source) problems(us []ptx.Unsupported) []Problem {
	var out []Problem
	for _, u := range us {
		where := u.Func
		if where == "" {
			where = "module scope"
		}
		out = append(out, Problem{Line: u.Line, Text: s.Line(u.Line), Err: where + ": " + explainReason(u.Reason)})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Line < out[j].Line })
	return out
}

// badOperand is the interpreter's reason for an operand it cannot read.
var badOperand = regexp.MustCompile(`bad operand "([^"]*)"`)

// explainReason says what an operand the interpreter could not read is,
// after its reason.
func explainReason(r string) string {
	m := badOperand.FindStringSubmatch(r)
	if m == nil {
		return r
	}
	op := strings.TrimSpace(m[1])
	var what string
	switch {
	case strings.HasPrefix(op, "{"):
		what = "a brace-packed vector operand (registers or constants packed into one wider value, as mov.b32 %r, {lo, hi} does), which the interpreter does not read in this place"
	case strings.HasPrefix(op, "%"):
		what = "a register or special register the interpreter does not know"
	case strings.HasPrefix(op, "["):
		what = "an address form the interpreter does not read"
	default:
		what = "an operand form the interpreter does not read (a symbol or constant expression)"
	}
	return r + ": " + what
}
