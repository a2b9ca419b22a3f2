package main

import (
	"bytes"
	"fmt"
	"io"
	"strings"

	"github.com/symmem/symmem/campaign"
	"github.com/symmem/symmem/ptxcheck"
)

// checkShard is a shard of a symmem check campaign: a [shardRun] that also
// keeps the lines of the shrunk forms printed.
type checkShard struct {
	*shardRun
	shrunkLines map[int][]string // by finding index
}

// startCheckShard resolves the shard of a check and narrows opts to its
// seeds; a check of one --seed is no campaign and takes no shard.
func startCheckShard(out io.Writer, f *checkFlags, opts *ptxcheck.Options, oneSeed bool) (*checkShard, error) {
	all := campaign.Range{First: opts.FirstSeed, Count: uint64(opts.Seeds)}
	getenv := f.getenv
	if oneSeed {
		if f.campaign != (campaignFlags{}) {
			return nil, fmt.Errorf("--seed runs one seed: --shard, --shard-count and --report go with --seeds")
		}
		getenv = func(string) string { return "" }
	}
	sh, err := startShard("check", &f.campaign, all, f.identity, getenv)
	if err != nil {
		return nil, err
	}
	if sh.seeds.Count == 0 {
		sh.abort()
		return nil, fmt.Errorf("shard %s (%s) of %d seeds has none: use at most %d shards", sh.shard, sh.shard.Source, all.Count, all.Count)
	}
	opts.FirstSeed, opts.Seeds = sh.seeds.First, int(sh.seeds.Count)
	io.WriteString(out, sh.line())
	return &checkShard{shardRun: sh, shrunkLines: map[int][]string{}}, nil
}

// shrunk is where the shrunk form of finding i is printed: out, and the
// report's lines of it.
func (c *checkShard) shrunk(out io.Writer, i int) io.Writer {
	if c.w == nil {
		return out
	}
	return &lineTee{out: out, lines: func(ls []string) { c.shrunkLines[i] = ls }}
}

// lineTee writes to out and hands the lines written, without the blank
// line and the number that start them, to lines.
type lineTee struct {
	out   io.Writer
	buf   bytes.Buffer
	lines func([]string)
}

func (t *lineTee) Write(p []byte) (int, error) {
	t.buf.Write(p)
	text := strings.TrimLeft(t.buf.String(), "\n")
	if _, rest, ok := strings.Cut(text, ". "); ok {
		text = rest
	}
	t.lines(strings.Split(strings.TrimSuffix(text, "\n"), "\n"))
	return t.out.Write(p)
}

// The names of a check report's counts, sets and fixed lines.
const (
	checkRuns   = "runs"
	checkShapes = "shapes"
	checkHeader = "header"
	checkNotes  = "notes"
)

// finishCheckShard writes the report of a check's shard: its findings,
// numbered as the command printed them, the header line the whole
// campaign prints, and the launch shapes; interrupted marks a shard that a
// signal stopped.
func finishCheckShard(c *checkShard, rep *ptxcheck.Report, f *checkFlags, harness string, opts ptxcheck.Options, interrupted bool) error {
	if c.w == nil {
		return nil
	}
	var findings []campaign.Finding
	for i, x := range rep.Findings {
		var block bytes.Buffer
		one := *rep
		one.Runs, one.Findings = nil, []*ptxcheck.Finding{x}
		printCheck(&block, &one, f, harness, opts, false)
		// The lines after the title and the "found at" line, unindented.
		_, body, _ := strings.Cut(block.String(), "\n1. ")
		lines := strings.Split(strings.TrimSuffix(body, "\n"), "\n")[2:]
		for j := range lines {
			lines[j] = strings.TrimPrefix(lines[j], "   ")
		}
		findings = append(findings, campaign.Finding{Signature: x.Key(), Kind: x.Kind, Title: x.Title,
			Order: []uint64{uint64(worldIndex(rep.Worlds, x.World)), x.Seed, uint64(i)}, Seed: x.Seed, World: x.World,
			Count: x.Runs, Lines: lines, Shrunk: c.shrunkLines[i]})
	}
	var head bytes.Buffer
	whole := *rep
	whole.Seeds, whole.Runs, whole.Findings, whole.Shapes = int(c.all.Count), nil, nil, nil
	printCheck(&head, &whole, f, harness, opts, false)
	header, _, _ := strings.Cut(head.String(), "\n")
	sum := campaign.Summary{
		Counts: map[string]int64{checkRuns: int64(len(rep.Runs))},
		Sets:   map[string][]string{checkShapes: rep.Shapes},
		Fixed:  map[string][]string{checkHeader: {header}, checkNotes: rep.Notes},
	}
	return c.finish(findings, sum, interrupted, nil)
}

// worldIndex is the place of w in worlds.
func worldIndex(worlds []int, w int) int {
	for i, x := range worlds {
		if x == w {
			return i
		}
	}
	return len(worlds)
}

// printMergedCheck prints a merged check campaign's report as printCheck
// and printShrunk print one process's.
func printMergedCheck(out io.Writer, m *campaign.Merged) error {
	header := m.Fixed[checkHeader]
	if len(header) != 1 {
		return fmt.Errorf("the reports have no header line")
	}
	fmt.Fprintln(out, header[0])
	for _, s := range m.Sets[checkShapes] {
		fmt.Fprintf(out, "launch %s\n", s)
	}
	for _, n := range m.Fixed[checkNotes] {
		fmt.Fprintln(out, n)
	}
	runs := m.Counts[checkRuns]
	fmt.Fprintf(out, "%d runs, %d distinct findings\n", runs, len(m.Findings))
	for i, x := range m.Findings {
		printFindingHead(out, i+1, x.Title, x.World, x.Seed, int64(x.Seed-m.Campaign.First+1), int64(x.Count), runs)
		for _, l := range x.Lines {
			fmt.Fprintf(out, "   %s\n", l)
		}
	}
	for i, x := range m.Findings {
		if len(x.Shrunk) > 0 {
			fmt.Fprintf(out, "\n%d. %s\n", i+1, strings.Join(x.Shrunk, "\n"))
		}
	}
	return nil
}
