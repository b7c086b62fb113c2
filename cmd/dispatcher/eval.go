package main

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/rs/zerolog"
	"go.yaml.in/yaml/v3"

	"github.com/ptcfleet/ptc/internal/missionfile"
	"github.com/ptcfleet/ptc/pkg/agent/llm/llmconfig"
	"github.com/ptcfleet/ptc/pkg/fleet"
	"github.com/ptcfleet/ptc/pkg/fleet/agentrun"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// An eval suite (docs/replay.md, "Evaluating models"): tasks, each a new
// mission (a mission file, or one written inline) or a recorded one (a
// mission id on the fleet, or an exported file), with checks on the Step;
// run against models, several times each, in PTC-Lisp and text mode.

// evalSuite is a suite file as written.
type evalSuite struct {
	// Models are the model names to evaluate (PTC_MODEL_<NAME>); the name
	// "scripted" runs each task on its own script (a recorded task on its
	// recording). Default [scripted].
	Models []string `yaml:"models"`
	// Modes are the output modes to run each task in: ptc_lisp (default)
	// and text.
	Modes []string `yaml:"modes"`
	// Runs is how many times each task runs per model and mode (default 1).
	Runs int `yaml:"runs"`
	// Concurrency bounds the runs in flight (default 4).
	Concurrency int         `yaml:"concurrency"`
	Tasks       []*evalTask `yaml:"tasks"`
}

// evalTask is one task of a suite.
type evalTask struct {
	Name string `yaml:"name"`
	// Mission is a mission file's path (relative to the suite) or a mission
	// written inline, with its context and, for the scripted model, its
	// script.
	Mission yaml.Node `yaml:"mission"`
	// Recorded names a finished mission on the fleet; Export an exported
	// mission file (relative to the suite).
	Recorded string `yaml:"recorded"`
	Export   string `yaml:"export"`
	// ScriptText are the scripted model's replies in text mode.
	ScriptText []string  `yaml:"script_text"`
	Expect     evalCheck `yaml:"expect"`

	mission *messages.Mission // read from Mission
	rec     *missionExport    // read from Recorded or Export
}

// evalCheck is what a task's Step must satisfy.
type evalCheck struct {
	// Return is the whole expected return (nil: not checked).
	Return any `yaml:"return"`
	// Fields are predicates on values of the return, by dotted path
	// ("top.0.id"; a number indexes a list).
	Fields map[string]evalPredicate `yaml:"fields"`
	// Fail is the expected failure reason; empty: the Step must succeed.
	Fail string `yaml:"fail"`
	// MaxTurns, MaxTokens (prompt and completion), MaxCostUSD and
	// MaxLatency ("30s") bound the run; zero: not checked.
	MaxTurns   int     `yaml:"max_turns"`
	MaxTokens  int64   `yaml:"max_tokens"`
	MaxCostUSD float64 `yaml:"max_cost_usd"`
	MaxLatency string  `yaml:"max_latency"`

	maxLatency time.Duration
}

// evalPredicate is a predicate on one value; every field given must hold.
type evalPredicate struct {
	Eq       any      `yaml:"eq"`
	Ne       any      `yaml:"ne"`
	Gt       *float64 `yaml:"gt"`
	Gte      *float64 `yaml:"gte"`
	Lt       *float64 `yaml:"lt"`
	Lte      *float64 `yaml:"lte"`
	Len      *int     `yaml:"len"`
	Contains any      `yaml:"contains"`
	Matches  string   `yaml:"matches"`
	Exists   *bool    `yaml:"exists"`

	re *regexp.Regexp
}

// evalModelScripted is the model name that runs each task on its script.
const evalModelScripted = "scripted"

// maxSuiteBytes bounds a suite file.
const maxSuiteBytes = 4 << 20

// maxEvalRuns bounds the runs of one eval.
const maxEvalRuns = 100_000

// readSuite reads and checks a suite file; every problem names the task
// (and its line) and the field.
func readSuite(path string) (*evalSuite, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxSuiteBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxSuiteBytes {
		return nil, fmt.Errorf("%s: larger than %d MiB", path, maxSuiteBytes>>20)
	}
	var s evalSuite
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(s.Models) == 0 {
		s.Models = []string{evalModelScripted}
	}
	if len(s.Modes) == 0 {
		s.Modes = []string{messages.ModeLisp}
	}
	for _, m := range s.Modes {
		if m != messages.ModeLisp && m != messages.ModeText {
			return nil, fmt.Errorf("%s: modes: %q is not %s or %s", path, m, messages.ModeLisp, messages.ModeText)
		}
	}
	if s.Runs == 0 {
		s.Runs = 1
	}
	if s.Concurrency == 0 {
		s.Concurrency = 4
	}
	if s.Runs < 1 || s.Concurrency < 1 {
		return nil, fmt.Errorf("%s: runs and concurrency must be at least 1", path)
	}
	if len(s.Tasks) == 0 {
		return nil, fmt.Errorf("%s: no tasks", path)
	}
	dir := filepath.Dir(path)
	names := map[string]bool{}
	for i, t := range s.Tasks {
		where := fmt.Sprintf("%s: tasks[%d]", path, i)
		if t.Name != "" {
			where += " (" + t.Name + ")"
		}
		if err := t.load(dir); err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		if names[t.Name] {
			return nil, fmt.Errorf("%s: name: another task has it", where)
		}
		names[t.Name] = true
		if err := t.Expect.compile(); err != nil {
			return nil, fmt.Errorf("%s: expect: %w", where, err)
		}
	}
	return &s, nil
}

// load reads the task's mission or export and checks its fields.
func (t *evalTask) load(dir string) error {
	if t.Name == "" {
		return errors.New("name: required")
	}
	sources := 0
	for _, set := range []bool{!t.Mission.IsZero(), t.Recorded != "", t.Export != ""} {
		if set {
			sources++
		}
	}
	if sources != 1 {
		return errors.New("exactly one of mission, recorded and export is required")
	}
	switch {
	case t.Mission.Kind == yaml.ScalarNode:
		f, err := missionfile.Read(filepath.Join(dir, t.Mission.Value))
		if err != nil {
			return fmt.Errorf("mission: %w", err)
		}
		if t.mission, err = buildTaskMission(f); err != nil {
			return fmt.Errorf("mission: %w", err)
		}
	case !t.Mission.IsZero():
		data, err := yaml.Marshal(&t.Mission)
		if err != nil {
			return fmt.Errorf("mission: %w", err)
		}
		f, err := missionfile.Parse(data)
		if err != nil {
			return fmt.Errorf("mission (line %d): %w", t.Mission.Line, err)
		}
		if t.mission, err = buildTaskMission(f); err != nil {
			return fmt.Errorf("mission (line %d): %w", t.Mission.Line, err)
		}
	case t.Export != "":
		x, err := readExport(filepath.Join(dir, t.Export))
		if err != nil {
			return fmt.Errorf("export: %w", err)
		}
		t.rec = x
	case !messages.ValidMissionID(t.Recorded):
		return fmt.Errorf("recorded: %q is not a mission id (a ULID)", t.Recorded)
	}
	if t.mission != nil && t.mission.Kind != messages.KindAgent {
		return fmt.Errorf("mission: kind %q; only agent missions are evaluated", t.mission.Kind)
	}
	return nil
}

// buildTaskMission builds a task's mission from its file, keeping the
// script (the scripted model's replies).
func buildTaskMission(f *missionfile.File) (*messages.Mission, error) {
	m, err := f.Build()
	if err != nil {
		return nil, err
	}
	m.Script, m.ScriptByPrompt = f.Script, f.ScriptByPrompt
	return m, nil
}

func (c *evalCheck) compile() error {
	var err error
	if c.Return, err = messages.Normalize(c.Return); err != nil {
		return fmt.Errorf("return: %w", err)
	}
	if c.MaxLatency != "" {
		if c.maxLatency, err = time.ParseDuration(c.MaxLatency); err != nil {
			return fmt.Errorf("max_latency: %w", err)
		}
	}
	for path, p := range c.Fields {
		if p.Eq, err = messages.Normalize(p.Eq); err != nil {
			return fmt.Errorf("fields[%s].eq: %w", path, err)
		}
		if p.Ne, err = messages.Normalize(p.Ne); err != nil {
			return fmt.Errorf("fields[%s].ne: %w", path, err)
		}
		if p.Contains, err = messages.Normalize(p.Contains); err != nil {
			return fmt.Errorf("fields[%s].contains: %w", path, err)
		}
		if p.Matches != "" {
			if p.re, err = regexp.Compile(p.Matches); err != nil {
				return fmt.Errorf("fields[%s].matches: %w", path, err)
			}
		}
		c.Fields[path] = p
	}
	return nil
}

// evalRun is the outcome of one run of a task.
type evalRun struct {
	Task      string   `json:"task"`
	Model     string   `json:"model"`
	Mode      string   `json:"mode"`
	Run       int      `json:"run"`
	MissionID string   `json:"mission_id,omitempty"`
	OK        bool     `json:"ok"`
	Failures  []string `json:"failures,omitempty"`
	// Skipped says why the run was not made (a scripted text-mode run of
	// a task with no text-mode script).
	Skipped         string  `json:"skipped,omitempty"`
	Turns           int     `json:"turns"`
	InputTokens     int64   `json:"input_tokens"`
	OutputTokens    int64   `json:"output_tokens"`
	CacheReadTokens int64   `json:"cache_read_tokens"`
	CostUSD         float64 `json:"cost_usd"`
	LatencyMs       float64 `json:"latency_ms"`
}

// check applies c to a run's Step and latency.
func (c *evalCheck) check(step *messages.Step, latency time.Duration) []string {
	var out []string
	switch {
	case c.Fail != "" && (step.Fail == nil || step.Fail.Reason != c.Fail):
		out = append(out, fmt.Sprintf("fail: want reason %s, got %s", c.Fail, stepOutcome(step)))
	case c.Fail == "" && step.Fail != nil:
		out = append(out, fmt.Sprintf("the mission failed: %s: %s", step.Fail.Reason, oneLine(step.Fail.Message, 200)))
	}
	if c.Return != nil && !reflect.DeepEqual(c.Return, step.Return) {
		out = append(out, fmt.Sprintf("return: want %s, got %s", showJSON(c.Return), showJSON(step.Return)))
	}
	for _, path := range slices.Sorted(mapsKeys(c.Fields)) {
		if msg := c.Fields[path].test(step.Return, path); msg != "" {
			out = append(out, "fields["+path+"]: "+msg)
		}
	}
	u := step.Usage
	if c.MaxTurns > 0 && u.Turns > c.MaxTurns {
		out = append(out, fmt.Sprintf("max_turns: %d turns, more than %d", u.Turns, c.MaxTurns))
	}
	if c.MaxTokens > 0 && u.InputTokens+u.OutputTokens > c.MaxTokens {
		out = append(out, fmt.Sprintf("max_tokens: %d tokens, more than %d", u.InputTokens+u.OutputTokens, c.MaxTokens))
	}
	if c.MaxCostUSD > 0 && u.CostUSD > c.MaxCostUSD {
		out = append(out, fmt.Sprintf("max_cost_usd: $%.4f, more than $%.4f", u.CostUSD, c.MaxCostUSD))
	}
	if c.maxLatency > 0 && latency > c.maxLatency {
		out = append(out, fmt.Sprintf("max_latency: %s, more than %s", fmtDuration(latency), c.MaxLatency))
	}
	return out
}

func mapsKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func showJSON(v any) string {
	b, err := json.Marshal(messages.JSONFloats(messages.MaskFirewalled(v)))
	if err != nil {
		return fmt.Sprint(v)
	}
	return oneLine(string(b), 300)
}

// lookupPath reads the value at a dotted path of v ("top.0.id").
func lookupPath(v any, path string) (any, bool) {
	for _, part := range strings.Split(path, ".") {
		switch x := v.(type) {
		case map[string]any:
			var ok bool
			if v, ok = x[part]; !ok {
				return nil, false
			}
		case []any:
			i, err := strconv.Atoi(part)
			if err != nil || i < 0 || i >= len(x) {
				return nil, false
			}
			v = x[i]
		default:
			return nil, false
		}
	}
	return v, true
}

// test returns why the value at path of ret fails p, or "".
func (p evalPredicate) test(ret any, path string) string {
	v, ok := lookupPath(ret, path)
	if p.Exists != nil && *p.Exists != ok {
		if ok {
			return "present, want absent"
		}
		return "absent, want present"
	}
	if !ok {
		if p.Exists != nil {
			return ""
		}
		return "absent"
	}
	var fails []string
	if p.Eq != nil && !reflect.DeepEqual(p.Eq, v) && !sameNumber(p.Eq, v) {
		fails = append(fails, fmt.Sprintf("want %s, got %s", showJSON(p.Eq), showJSON(v)))
	}
	if p.Ne != nil && (reflect.DeepEqual(p.Ne, v) || sameNumber(p.Ne, v)) {
		fails = append(fails, fmt.Sprintf("want other than %s", showJSON(p.Ne)))
	}
	n, isNum := number(v)
	bound := func(name string, b *float64, holds func(x, b float64) bool) {
		if b == nil {
			return
		}
		if !isNum || !holds(n, *b) {
			fails = append(fails, fmt.Sprintf("%s %v: got %s", name, *b, showJSON(v)))
		}
	}
	bound("gt", p.Gt, func(x, b float64) bool { return x > b })
	bound("gte", p.Gte, func(x, b float64) bool { return x >= b })
	bound("lt", p.Lt, func(x, b float64) bool { return x < b })
	bound("lte", p.Lte, func(x, b float64) bool { return x <= b })
	if p.Len != nil {
		if l, ok := length(v); !ok || l != *p.Len {
			fails = append(fails, fmt.Sprintf("len %d: got %s", *p.Len, showJSON(v)))
		}
	}
	if p.Contains != nil && !holdsValue(v, p.Contains) {
		fails = append(fails, fmt.Sprintf("contains %s: got %s", showJSON(p.Contains), showJSON(v)))
	}
	if p.re != nil {
		if s, ok := v.(string); !ok || !p.re.MatchString(s) {
			fails = append(fails, fmt.Sprintf("matches %q: got %s", p.Matches, showJSON(v)))
		}
	}
	return strings.Join(fails, "; ")
}

func number(v any) (float64, bool) {
	switch x := v.(type) {
	case int64:
		return float64(x), true
	case float64:
		return x, true
	}
	return 0, false
}

// sameNumber: 3 and 3.0 are the same expected number.
func sameNumber(a, b any) bool {
	x, ok1 := number(a)
	y, ok2 := number(b)
	return ok1 && ok2 && x == y
}

func length(v any) (int, bool) {
	switch x := v.(type) {
	case []any:
		return len(x), true
	case map[string]any:
		return len(x), true
	case string:
		return len([]rune(x)), true
	}
	return 0, false
}

// holdsValue: a string holding want as a substring, or a list holding
// want as an element.
func holdsValue(v, want any) bool {
	switch x := v.(type) {
	case string:
		s, ok := want.(string)
		return ok && strings.Contains(x, s)
	case []any:
		for _, e := range x {
			if reflect.DeepEqual(e, want) || sameNumber(e, want) {
				return true
			}
		}
	}
	return false
}

// evalEnv is what runs a suite's tasks: a fleet client for new missions
// (nil when the suite has none) and the replay options' models.
type evalEnv struct {
	client  *fleet.Client
	replay  agentrun.ReplayOptions // Models set
	timeout time.Duration
}

// runTask runs one task once with model in mode.
func (ev *evalEnv) runTask(ctx context.Context, t *evalTask, model, mode string, n int) evalRun {
	r := evalRun{Task: t.Name, Model: model, Mode: mode, Run: n}
	var (
		step *messages.Step
		err  error
	)
	start := time.Now()
	switch {
	case t.rec != nil:
		step, r.Skipped, err = ev.replayTask(ctx, t, model, mode)
	default:
		step, r.MissionID, r.Skipped, err = ev.missionTask(ctx, t, model, mode)
	}
	latency := time.Since(start)
	if r.Skipped != "" {
		r.OK = true
		return r
	}
	r.LatencyMs = float64(latency.Microseconds()) / 1000
	if err != nil {
		r.Failures = []string{err.Error()}
		return r
	}
	u := step.Usage
	r.Turns, r.InputTokens, r.OutputTokens, r.CacheReadTokens, r.CostUSD = u.Turns, u.InputTokens, u.OutputTokens, u.CacheReadTokens, u.CostUSD
	r.Failures = t.Expect.check(step, latency)
	r.OK = len(r.Failures) == 0
	return r
}

// missionTask submits the task's mission to the fleet and waits for it.
func (ev *evalEnv) missionTask(ctx context.Context, t *evalTask, model, mode string) (*messages.Step, string, string, error) {
	m := *t.mission
	a := *m.Agent
	m.Agent = &a
	m.ID = messages.NewMissionID()
	if mode == messages.ModeText {
		a.Output = messages.ModeText
	} else if a.Output == messages.ModeText {
		a.Output = messages.ModeLisp
	}
	if model == evalModelScripted {
		if mode == messages.ModeText {
			// the text-mode script answers the top-level agent alone
			m.Script, m.ScriptByPrompt = t.ScriptText, nil
		}
		if !m.Scripted() {
			return nil, "", "no " + mode + " script", nil
		}
		m.Model = messages.ModelScripted
	} else {
		m.Model, m.Script, m.ScriptByPrompt = model, nil, nil
	}
	ctx, cancel := context.WithTimeout(ctx, ev.timeout)
	defer cancel()
	sub, err := ev.client.Submit(ctx, &m)
	if err != nil {
		return nil, "", "", err
	}
	step, err := ev.client.Await(ctx, sub.ID)
	return step, sub.ID, "", err
}

// replayTask replays a recorded task, with model unless it is the
// scripted one.
func (ev *evalEnv) replayTask(ctx context.Context, t *evalTask, model, mode string) (*messages.Step, string, error) {
	recMode := t.rec.Step.Mode
	if recMode == "" {
		recMode = messages.ModeLisp
	}
	opts := ev.replay
	if model != evalModelScripted {
		opts.Model = model
		opts.Output = mode
	} else if mode != recMode {
		return nil, "the recording is in " + recMode + " mode", nil
	}
	r, err := agentrun.Replay(ctx, t.rec.Record, t.rec.Step, opts)
	if err != nil {
		return nil, "", err
	}
	return r.Step, "", nil
}

// evalSummary sums the runs of one model in one mode.
type evalSummary struct {
	Model           string  `json:"model"`
	Mode            string  `json:"mode"`
	Runs            int     `json:"runs"`
	Passed          int     `json:"passed"`
	Skipped         int     `json:"skipped"`
	SuccessRate     float64 `json:"success_rate"`
	MeanTurns       float64 `json:"mean_turns"`
	InputTokens     int64   `json:"input_tokens"`
	OutputTokens    int64   `json:"output_tokens"`
	CacheReadTokens int64   `json:"cache_read_tokens"`
	CostUSD         float64 `json:"cost_usd"`
	LatencyMsP50    float64 `json:"latency_ms_p50"`
	LatencyMsP95    float64 `json:"latency_ms_p95"`
}

// evalReport is an eval's outcome (-json prints it).
type evalReport struct {
	Suite   string        `json:"suite"`
	Summary []evalSummary `json:"summary"`
	Runs    []evalRun     `json:"runs"`
}

func summarize(models, modes []string, runs []evalRun) []evalSummary {
	var out []evalSummary
	for _, model := range models {
		for _, mode := range modes {
			s := evalSummary{Model: model, Mode: mode}
			var lat []float64
			turns := 0
			for _, r := range runs {
				if r.Model != model || r.Mode != mode {
					continue
				}
				if r.Skipped != "" {
					s.Skipped++
					continue
				}
				s.Runs++
				if r.OK {
					s.Passed++
				}
				turns += r.Turns
				s.InputTokens += r.InputTokens
				s.OutputTokens += r.OutputTokens
				s.CacheReadTokens += r.CacheReadTokens
				s.CostUSD += r.CostUSD
				lat = append(lat, r.LatencyMs)
			}
			if s.Runs > 0 {
				s.SuccessRate = float64(s.Passed) / float64(s.Runs)
				s.MeanTurns = float64(turns) / float64(s.Runs)
				slices.Sort(lat)
				s.LatencyMsP50 = lat[(len(lat)-1)*50/100]
				s.LatencyMsP95 = lat[(len(lat)-1)*95/100]
			}
			out = append(out, s)
		}
	}
	return out
}

// errEvalFailed: some runs failed their checks.
var errEvalFailed = errors.New("eval: runs failed their checks")

// runEval runs every task of s against every model in every mode, runs
// times, at most s.Concurrency at once, and returns the report.
func runEval(ctx context.Context, s *evalSuite, path string, ev *evalEnv) *evalReport {
	type job struct {
		t           *evalTask
		model, mode string
		n           int
	}
	var jobs []job
	for _, t := range s.Tasks {
		for _, model := range s.Models {
			for _, mode := range s.Modes {
				for n := 1; n <= s.Runs; n++ {
					jobs = append(jobs, job{t, model, mode, n})
				}
			}
		}
	}
	runs := make([]evalRun, len(jobs))
	sem := make(chan struct{}, s.Concurrency)
	var wg sync.WaitGroup
	for i, j := range jobs {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			runs[i] = ev.runTask(ctx, j.t, j.model, j.mode, j.n)
		}()
	}
	wg.Wait()
	return &evalReport{Suite: path, Summary: summarize(s.Models, s.Modes, runs), Runs: runs}
}

// failed counts the runs that failed their checks.
func (r *evalReport) failed() int {
	n := 0
	for _, run := range r.Runs {
		if !run.OK {
			n++
		}
	}
	return n
}

// printEval prints the report as a table, then each failed run.
func printEval(w io.Writer, r *evalReport) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "model\tmode\truns\tpassed\tsuccess\tturns\tprompt tok\tcompletion tok\tcache read\tcost $\tp50 ms\tp95 ms\t")
	for _, s := range r.Summary {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%.0f%%\t%.2f\t%d\t%d\t%d\t%.4f\t%.1f\t%.1f\t\n", s.Model, s.Mode, s.Runs, s.Passed, 100*s.SuccessRate,
			s.MeanTurns, s.InputTokens, s.OutputTokens, s.CacheReadTokens, s.CostUSD, s.LatencyMsP50, s.LatencyMsP95)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	skipped := 0
	for _, run := range r.Runs {
		if run.Skipped != "" {
			skipped++
		}
		if run.OK {
			continue
		}
		if _, err := fmt.Fprintf(w, "FAIL %s (%s, %s, run %d):\n", run.Task, run.Model, run.Mode, run.Run); err != nil {
			return err
		}
		for _, f := range run.Failures {
			if _, err := fmt.Fprintf(w, "  %s\n", f); err != nil {
				return err
			}
		}
	}
	if skipped > 0 {
		fmt.Fprintf(w, "%d runs not made (a scripted run in a mode the task has no script for)\n", skipped)
	}
	_, err := fmt.Fprintf(w, "%d of %d runs passed\n", len(r.Runs)-skipped-r.failed(), len(r.Runs)-skipped)
	return err
}

// JUnit XML: one testsuite per model and mode, one testcase per run.
type junitSuites struct {
	XMLName xml.Name     `xml:"testsuites"`
	Suites  []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Skipped  int         `xml:"skipped,attr"`
	Time     string      `xml:"time,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitFailure `xml:"failure,omitempty"`
	Skipped   *junitSkipped `xml:"skipped,omitempty"`
}

type junitFailure struct {
	Message string `xml:"message,attr"`
	Text    string `xml:",chardata"`
}

type junitSkipped struct {
	Message string `xml:"message,attr"`
}

// writeJUnit writes the report as JUnit XML to path.
func writeJUnit(path string, r *evalReport) error {
	var out junitSuites
	for _, s := range r.Summary {
		js := junitSuite{Name: s.Model + "/" + s.Mode}
		var total float64
		for _, run := range r.Runs {
			if run.Model != s.Model || run.Mode != s.Mode {
				continue
			}
			c := junitCase{Name: fmt.Sprintf("%s#%d", run.Task, run.Run), Classname: js.Name, Time: fmt.Sprintf("%.3f", run.LatencyMs/1000)}
			total += run.LatencyMs / 1000
			switch {
			case run.Skipped != "":
				c.Skipped = &junitSkipped{Message: run.Skipped}
				js.Skipped++
			case !run.OK:
				c.Failure = &junitFailure{Message: run.Failures[0], Text: strings.Join(run.Failures, "\n")}
				js.Failures++
			}
			js.Tests++
			js.Cases = append(js.Cases, c)
		}
		js.Time = fmt.Sprintf("%.3f", total)
		out.Suites = append(out.Suites, js)
	}
	b, err := xml.MarshalIndent(out, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append([]byte(xml.Header), append(b, '\n')...), 0o644)
}

// evalConfig is what "dispatcher eval" was asked.
type evalConfig struct {
	models           string
	runs, concurrent int
	asJSON           bool
	junit            string
	local            localConfig
}

// runEvalCommand reads the suite at path, starts what its tasks need (a
// local fleet with the example tools for new missions, unless -nats-url
// names one; the fleet's recordings for recorded tasks), runs it and
// prints the report. Failed runs make it an error (exit status 1).
func runEvalCommand(ctx context.Context, path string, cfg evalConfig, e env, log zerolog.Logger, stdout io.Writer) error {
	s, err := readSuite(path)
	if err != nil {
		return err
	}
	if cfg.models != "" {
		s.Models = strings.Split(cfg.models, ",")
	}
	if cfg.runs > 0 {
		s.Runs = cfg.runs
	}
	if cfg.concurrent > 0 {
		s.Concurrency = cfg.concurrent
	}
	if n := len(s.Tasks) * len(s.Models) * len(s.Modes) * s.Runs; n > maxEvalRuns {
		return fmt.Errorf("%s: %d runs, more than the %d an eval makes", path, n, maxEvalRuns)
	}
	models, err := llmconfig.RegistryFromEnv(e.environ, llmconfig.Options{Getenv: e.lookup.Getenv})
	if err != nil {
		return fmt.Errorf("models: %w", err)
	}
	for _, name := range s.Models {
		if _, ok := models[name]; !ok && name != evalModelScripted {
			return fmt.Errorf("model %q is not configured (set %s%s=provider:model, or use %q for the tasks' scripts)",
				name, llmconfig.EnvPrefix, strings.ToUpper(name), evalModelScripted)
		}
	}
	ev := &evalEnv{replay: agentrun.ReplayOptions{Models: models}, timeout: cfg.local.timeout}
	needFleet, needRecordings := false, false
	for _, t := range s.Tasks {
		needFleet = needFleet || t.mission != nil
		needRecordings = needRecordings || t.Recorded != ""
	}
	if needRecordings && cfg.local.nats.URL == "" {
		return errors.New("recorded tasks read their missions from the fleet: set -nats-url or PTC_NATS_URL (or export them with 'dispatcher mission export')")
	}
	if needFleet || needRecordings {
		cfg.local.slots = max(cfg.local.slots, s.Concurrency)
		lf, err := openLocalFleet(cfg.local, log)
		if err != nil {
			return err
		}
		defer lf.close()
		if ev.client, err = fleet.NewClient(ctx, lf.nc, fleet.ClientConfig{}); err != nil {
			return err
		}
		if needFleet {
			stop, err := startLocalWorkers(ctx, cfg.local, lf.connect, models, log)
			defer stop()
			if err != nil {
				return err
			}
		}
		for _, t := range s.Tasks {
			if t.Recorded == "" {
				continue
			}
			rctx, cancel := context.WithTimeout(ctx, cfg.local.timeout)
			t.rec, err = fetchExport(rctx, ev.client, t.Recorded)
			cancel()
			if err != nil {
				return fmt.Errorf("task %s: %w", t.Name, err)
			}
		}
	}
	report := runEval(ctx, s, path, ev)
	if cfg.junit != "" {
		if err := writeJUnit(cfg.junit, report); err != nil {
			return err
		}
	}
	if cfg.asJSON {
		b, err := marshalJSON(report, "  ")
		if err != nil {
			return err
		}
		if _, err := stdout.Write(b); err != nil {
			return err
		}
	} else if err := printEval(stdout, report); err != nil {
		return err
	}
	if n := report.failed(); n > 0 {
		return fmt.Errorf("%w: %d of %d", errEvalFailed, n, len(report.Runs))
	}
	return nil
}
