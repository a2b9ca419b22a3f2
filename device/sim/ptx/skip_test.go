package ptx

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/symmem/symmem/kernels"
)

// skipBlockByTokens is skipBlock as first written: it reads tokens until
// the "}" matching a "{" already read.
func (lx *lexer) skipBlockByTokens() error {
	depth := 1
	start := lx.line
	for {
		tok, ok, err := lx.next()
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("line %d: body not closed", start)
		}
		switch tok.s {
		case "{":
			depth++
		case "}":
			depth--
			if depth == 0 {
				return nil
			}
		}
	}
}

// TestSkipBlockMatchesTokens: skipBlock ends where reading tokens ends,
// on the same line and with the same error, after every "{" of the
// kernels' PTX, the PTX files of the repository, and texts made to trip
// it: braces in comments and in debug directives, words that only begin
// like them, qualifiers with "::", an unterminated comment, an unclosed
// body.
func TestSkipBlockMatchesTokens(t *testing.T) {
	texts := map[string]string{
		"comments":  "{ a; // } x\n /* } \n { */ b; }\n}",
		"loc":       "{ .loc 1 2 3 }\n.file 1 \"a{b}.cu\"\n add; }",
		"loc-word":  "{ .locx }  .loc::y } x.loc } .file/x } .file//c\n }",
		"loc-qual":  "{ .loc::y } }\n } { x.loc } }\n } { .file/x } }\n } { x::.loc } }\n }",
		"loc-punct": "{ .loc; } .loc{ } .file/*c*/ } }",
		"qualifier": "{ ld.L1::evict_last {a}; x ::.loc } \n } .loc",
		"at-end":    "{ } .loc",
		"unclosed":  "{ a; { b; }",
		"comment":   "{ a; /* b; }",
		"slash":     "{ a/b } c/ } /",
	}
	text, err := kernels.PTX()
	if err != nil {
		t.Fatal(err)
	}
	texts["kernels"] = text
	for _, glob := range []string{"../../../examples/kernels/*.ptx", "testdata/*/*.ptx", "testdata/*/*/*.ptx", "../../../ptxcheck/testdata/*.ptx"} {
		files, err := filepath.Glob(glob)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			texts[f] = string(b)
		}
	}
	if len(texts) < 15 {
		t.Fatalf("only %d texts: the PTX files were not found", len(texts))
	}
	starts := 0
	for name, src := range texts {
		for at := 0; at < len(src); at++ {
			if src[at] != '{' {
				continue
			}
			line := 1 + strings.Count(src[:at], "\n")
			fast, slow := lexer{src: src, pos: at + 1, line: line}, lexer{src: src, pos: at + 1, line: line}
			errFast, errSlow := fast.skipBlock(), slow.skipBlockByTokens()
			if fast.pos != slow.pos || fast.line != slow.line || fmt.Sprint(errFast) != fmt.Sprint(errSlow) {
				t.Fatalf("%s, from byte %d: skipBlock ends at byte %d line %d (%v), by tokens at %d line %d (%v)",
					name, at, fast.pos, fast.line, errFast, slow.pos, slow.line, errSlow)
			}
			starts++
		}
	}
	if starts < 1000 {
		t.Fatalf("only %d blocks compared", starts)
	}
}
