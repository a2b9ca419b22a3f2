package fuzz

import (
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/symmem/symmem/device/sim"
	"github.com/symmem/symmem/internal/jsonfile"
)

// fileVersion is the version of the case file format (3: signal faults
// name their pad, channel and source).
const fileVersion = 3

// caseFile is a saved case: everything that determines the run, the trace
// hash it gave and how it ended.
type caseFile struct {
	Version   int    `json:"version"`
	Program   string `json:"program"`
	InputSeed uint64 `json:"input_seed"`
	Seed      uint64 `json:"seed"`
	Strategy  string `json:"strategy"`
	Depth     int    `json:"depth,omitempty"`
	Steps     int64  `json:"steps,omitempty"`
	Faults    string `json:"faults"`
	Plan      string `json:"plan,omitempty"`
	Decisions string `json:"decisions,omitempty"`
	Timeout   string `json:"timeout,omitempty"`
	// MaxSteps is absent when the case's step bound is sized from its
	// program (see [StepBudget]); a bound given must be positive.
	MaxSteps *int64 `json:"max_steps,omitempty"`
	Race     bool   `json:"race,omitempty"`
	PTX      bool   `json:"ptx,omitempty"`
	Trace    string `json:"trace"`
	Failure  string `json:"failure,omitempty"`
}

// Save writes the outcome's case, trace hash and failure to path as JSON,
// which [Load] reads back. The case is saved with the replay strategy and
// the decisions its run recorded, so that loading it repeats the run
// whatever strategy first produced it.
func Save(path string, o Outcome) error {
	c := o.Case
	f := caseFile{
		Version: fileVersion, Program: c.Program.String(), InputSeed: c.InputSeed,
		Seed: c.Seed, Strategy: StrategyReplay, Steps: c.Steps, Faults: c.Faults.String(), Plan: c.Plan.String(),
		Decisions: o.Schedule.String(), Timeout: c.timeout().String(), Race: c.Race, PTX: c.Kernels.PTX, Trace: o.Trace,
	}
	if c.MaxSteps != 0 {
		f.MaxSteps = &c.MaxSteps
	}
	if o.Failure != nil {
		f.Failure = o.Failure.Error()
	}
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return fmt.Errorf("save case: %w", err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("save case: %w", err)
	}
	return nil
}

// Load reads a case saved by [Save] and returns it with the trace hash it
// gave when saved.
func Load(path string) (Case, string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Case{}, "", fmt.Errorf("load case: %w", err)
	}
	var f caseFile
	if err := jsonfile.Decode(b, &f, false); err != nil {
		return Case{}, "", fmt.Errorf("load case %s: %w", path, err)
	}
	if f.Version != fileVersion {
		return Case{}, "", fmt.Errorf("load case %s: format version %d, want %d", path, f.Version, fileVersion)
	}
	c, err := f.toCase()
	if err != nil {
		return Case{}, "", fmt.Errorf("load case %s: %w", path, err)
	}
	return c, f.Trace, nil
}

func (f caseFile) toCase() (Case, error) {
	prog, err := ParseProgram(f.Program)
	if err != nil {
		return Case{}, err
	}
	set, err := ParseFaultSet(f.Faults)
	if err != nil {
		return Case{}, err
	}
	plan, err := ParsePlan(f.Plan)
	if err != nil {
		return Case{}, err
	}
	sched, err := ParseSchedule(f.Decisions)
	if err != nil {
		return Case{}, err
	}
	var timeout time.Duration
	if f.Timeout != "" {
		if timeout, err = time.ParseDuration(f.Timeout); err != nil {
			return Case{}, fmt.Errorf("timeout: %w", err)
		}
		if timeout <= 0 {
			return Case{}, fmt.Errorf("timeout %q: want a positive duration (no wait is unbounded)", f.Timeout)
		}
	}
	var maxSteps int64
	if f.MaxSteps != nil {
		if maxSteps = *f.MaxSteps; maxSteps <= 0 {
			return Case{}, fmt.Errorf("max_steps %d: want a positive step bound (leave it out to size it from the program)", maxSteps)
		}
	}
	c := Case{
		Program: prog, InputSeed: f.InputSeed,
		Seed: f.Seed, Strategy: f.Strategy, Depth: f.Depth, Steps: f.Steps, Faults: set, Plan: plan,
		Schedule: sched, Timeout: timeout, MaxSteps: maxSteps, Race: f.Race,
		Kernels: sim.Kernels{PTX: f.PTX},
	}
	if err := c.Validate(); err != nil {
		return Case{}, err
	}
	return c, nil
}
