package tests

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

var (
	// mdLink is an inline Markdown link or image: [text](target).
	mdLink = regexp.MustCompile(`!?\[[^\]]*\]\(([^)\s]+)\)`)
	// codeSpan is inline code, where brackets are no links.
	codeSpan = regexp.MustCompile("`[^`]*`")
)

// TestDocsLinksResolve: every relative link of README.md, BENCHMARKS.md and
// docs/*.md names a file of the repository, and an anchor names a heading
// of its page.
func TestDocsLinksResolve(t *testing.T) {
	pages, err := filepath.Glob("../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	pages = append([]string{"../README.md", "../BENCHMARKS.md"}, pages...)
	links := 0
	for _, page := range pages {
		b, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for n, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(line, "    ") {
				continue // an indented code block
			}
			line = codeSpan.ReplaceAllString(line, "")
			for _, m := range mdLink.FindAllStringSubmatch(line, -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				links++
				where := strings.TrimPrefix(page, "../") + ":" + strconv.Itoa(n+1)
				file, anchor, _ := strings.Cut(target, "#")
				path := page
				if file != "" {
					path = filepath.Join(filepath.Dir(page), file)
				}
				rel, _ := filepath.Rel("..", path)
				if _, err := os.Stat(path); err != nil {
					t.Errorf("%s: link %s: %v", where, target, err)
					continue
				}
				if anchor != "" && strings.HasSuffix(path, ".md") && !hasAnchor(t, path, anchor) {
					t.Errorf("%s: link %s: %s has no heading with anchor #%s", where, target, rel, anchor)
				}
			}
		}
	}
	if links < 20 {
		t.Errorf("found %d relative links; the README alone has more", links)
	}
}

// hasAnchor says whether a heading of the Markdown file has the anchor
// GitHub gives it: lower case, punctuation but '-' and '_' dropped, spaces
// as dashes.
func hasAnchor(t *testing.T, path, anchor string) bool {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	fenced := false
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "```") {
			fenced = !fenced
		}
		if fenced || !strings.HasPrefix(line, "#") {
			continue
		}
		if slug(strings.TrimSpace(strings.TrimLeft(line, "#"))) == anchor {
			return true
		}
	}
	return false
}

func slug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 0x7f:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// TestSlug: the anchors GitHub gives headings.
func TestSlug(t *testing.T) {
	for heading, want := range map[string]string{
		"`symmem check`: the example kernels' verdicts": "symmem-check-the-example-kernels-verdicts",
		"How large the simulator can go":                "how-large-the-simulator-can-go",
		"symmem bench plot":                             "symmem-bench-plot",
		"GPU all-reduce against PyTorch and NCCL":       "gpu-all-reduce-against-pytorch-and-nccl",
	} {
		if got := slug(heading); got != want {
			t.Errorf("slug(%q) = %q, want %q", heading, got, want)
		}
	}
}
