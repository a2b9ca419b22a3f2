package campaign

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// The exit statuses of a merged campaign (see [Merged.Status]).
const (
	StatusClean    = 0 // every shard ran all its seeds and nothing was found
	StatusFindings = 1 // every shard ran all its seeds; something was found
	StatusFailed   = 2 // the campaign failed: a shard is missing, failed, was interrupted, or two reports of one shard disagree
)

// Merged is the report of a whole campaign, merged from its shards'.
type Merged struct {
	Command  string
	Build    Build
	Flags    []string
	Campaign Range
	Shards   int // the campaign's shard count
	// Used are the reports merged, one per shard present, by shard.
	Used []*Report
	// Missing are the shards no report covers; Duplicates the shards
	// with more than one report (their paths; the first one is used).
	Missing    []int
	Duplicates map[int][]string
	// Problems say why the campaign failed: shards missing, interrupted or
	// failed, duplicates that disagree.
	Problems []string
	// Counts, Sets and Durations are the shards' summed, joined and
	// longest (see [Summary]).
	Counts    map[string]int64
	Sets      map[string][]string
	Durations map[string]float64
	// Fixed are the lines every shard computes alike (see [Summary]).
	Fixed map[string][]string
	// Wall is the longest shard's wall time; CPU the sum of all shards'.
	Wall, CPU float64
	// Findings are the distinct findings, each the one found first, with
	// the count of every shard's; in the order one process finds them.
	Findings []Finding
}

// Status is the campaign's exit status: [StatusFailed] when it has
// problems, else [StatusFindings] when it found anything, else
// [StatusClean].
func (m *Merged) Status() int {
	switch {
	case len(m.Problems) > 0:
		return StatusFailed
	case len(m.Findings) > 0:
		return StatusFindings
	}
	return StatusClean
}

// Merge merges the reports of a campaign's shards. It refuses reports of
// different commands, builds, flags, seed ranges or shard counts. Missing
// shards, duplicated ones, interrupted or failed ones are listed in the
// result, whose Status says the campaign failed.
func Merge(reports []*Report) (*Merged, error) {
	if len(reports) == 0 {
		return nil, fmt.Errorf("no reports to merge")
	}
	first := reports[0].Summary
	m := &Merged{
		Command: first.Command, Build: first.Build, Flags: first.Flags, Campaign: first.Campaign, Shards: first.Shard.Count,
		Duplicates: map[int][]string{}, Counts: map[string]int64{}, Sets: map[string][]string{}, Durations: map[string]float64{},
	}
	var refuse []string
	for _, r := range reports[1:] {
		s := r.Summary
		if d := differ(first, s); d != "" {
			refuse = append(refuse, fmt.Sprintf("%s: %s (%s has %s)", r.Path, d, reports[0].Path, differ(s, first)))
		}
	}
	if len(refuse) > 0 {
		return nil, fmt.Errorf("these reports are not of one campaign:\n  %s", strings.Join(refuse, "\n  "))
	}
	byShard := make([]*Report, m.Shards)
	for _, r := range reports {
		i := r.Summary.Shard.Index
		if old := byShard[i]; old != nil {
			if len(m.Duplicates[i]) == 0 {
				m.Duplicates[i] = []string{old.Path}
			}
			m.Duplicates[i] = append(m.Duplicates[i], r.Path)
			if d := disagree(old, r); d != "" {
				m.Problems = append(m.Problems, fmt.Sprintf("shard %d/%d: %s and %s ran the same seeds and disagree: %s", i, m.Shards, old.Path, r.Path, d))
			}
			continue
		}
		byShard[i] = r
	}
	bySig := map[string]int{}
	for i, r := range byShard {
		if r == nil {
			m.Missing = append(m.Missing, i)
			continue
		}
		m.Used = append(m.Used, r)
		s := r.Summary
		if len(m.Used) == 1 {
			m.Fixed = s.Fixed
		} else if !maps.EqualFunc(m.Fixed, s.Fixed, slices.Equal) {
			m.Problems = append(m.Problems, fmt.Sprintf("shard %d/%d (%s) computed other seed-independent results than %s", i, m.Shards, r.Path, m.Used[0].Path))
		}
		if s.Interrupted {
			m.Problems = append(m.Problems, fmt.Sprintf("shard %d/%d (%s) was interrupted before it ran all its seeds %s", i, m.Shards, r.Path, s.Seeds))
		}
		if s.Error != "" {
			m.Problems = append(m.Problems, fmt.Sprintf("shard %d/%d (%s) failed: %s", i, m.Shards, r.Path, s.Error))
		}
		for k, v := range s.Counts {
			m.Counts[k] += v
		}
		for k, v := range s.Sets {
			m.Sets[k] = append(m.Sets[k], v...)
		}
		for k, v := range s.Durations {
			m.Durations[k] = max(m.Durations[k], v)
		}
		m.Wall = max(m.Wall, s.WallSeconds)
		m.CPU += s.CPUSeconds
		for _, f := range r.Findings {
			j, ok := bySig[f.Signature]
			if !ok {
				bySig[f.Signature] = len(m.Findings)
				m.Findings = append(m.Findings, f)
				continue
			}
			old := &m.Findings[j]
			count := old.Count + f.Count
			if slices.Compare(f.Order, old.Order) < 0 {
				*old = f
			}
			old.Count = count
		}
	}
	if len(m.Missing) > 0 {
		m.Problems = append(m.Problems, fmt.Sprintf("%d of %d shards have no report: %s", len(m.Missing), m.Shards, shardList(m.Missing, m.Shards)))
	}
	for k, v := range m.Sets {
		slices.Sort(v)
		m.Sets[k] = slices.Compact(v)
	}
	sortFindings(m.Findings)
	return m, nil
}

// differ says how b differs from a as a shard of a's campaign ("" when it
// does not): command, build, flags, seeds or shard count.
func differ(a, b Summary) string {
	switch {
	case a.Command != b.Command:
		return "command " + b.Command
	case a.Build != b.Build:
		return "build " + b.Build.String()
	case !slices.Equal(a.Flags, b.Flags):
		var only []string
		for _, f := range b.Flags {
			if !slices.Contains(a.Flags, f) {
				only = append(only, f)
			}
		}
		return "flags " + strings.Join(only, " ")
	case a.Campaign != b.Campaign:
		return "campaign seeds " + b.Campaign.String()
	case a.Shard.Count != b.Shard.Count:
		return fmt.Sprintf("%d shards", b.Shard.Count)
	}
	return ""
}

// disagree says how two reports of one shard differ in what they found or
// counted ("" when they agree, as two runs of the same seeds must).
func disagree(a, b *Report) string {
	sa, sb := a.Summary, b.Summary
	switch {
	case sa.Interrupted || sb.Interrupted || sa.Error != "" || sb.Error != "":
		return "" // reported as such
	case !maps.Equal(sa.Counts, sb.Counts):
		return fmt.Sprintf("counts %v and %v", sa.Counts, sb.Counts)
	case len(a.Findings) != len(b.Findings):
		return fmt.Sprintf("%d and %d findings", len(a.Findings), len(b.Findings))
	}
	for i := range a.Findings {
		fa, fb := a.Findings[i], b.Findings[i]
		if fa.Signature != fb.Signature || fa.Count != fb.Count || !slices.Equal(fa.Order, fb.Order) {
			return fmt.Sprintf("finding %d: %q (%d) and %q (%d)", i+1, fa.Signature, fa.Count, fb.Signature, fb.Count)
		}
	}
	for k, v := range sa.Sets {
		if !slices.Equal(v, sb.Sets[k]) {
			return "the " + k + " differ"
		}
	}
	return ""
}

// shardList is "1/4, 3/4".
func shardList(idx []int, n int) string {
	s := make([]string, len(idx))
	for i, x := range idx {
		s[i] = fmt.Sprintf("%d/%d", x, n)
	}
	return strings.Join(s, ", ")
}
