package missionfile

import (
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ptcfleet/ptc/pkg/messages"
)

// docTable returns the rows of the markdown table under heading in
// docs/missions.md, keyed by the first cell without backquotes.
func docTable(t *testing.T, heading string) map[string][]string {
	rows, _ := docTableOrdered(t, heading)
	return rows
}

// docTableOrdered is docTable with the first cells in order.
func docTableOrdered(t *testing.T, heading string) (map[string][]string, []string) {
	t.Helper()
	raw, err := os.ReadFile("../../docs/missions.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(raw), "\n"+heading+"\n")
	if !ok {
		t.Fatalf("docs/missions.md has no %q section", heading)
	}
	if i := strings.Index(section, "\n#"); i >= 0 {
		section = section[:i]
	}
	rows := map[string][]string{}
	var order []string
	for _, line := range strings.Split(section, "\n") {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), " | ")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		name := strings.Trim(cells[0], "`")
		rows[name] = cells
		order = append(order, name)
	}
	return rows, order
}

var limitsType = reflect.TypeFor[messages.Limits]()

// Every table of the field reference lists exactly the fields the decoder
// accepts, in order, with the type it decodes.
func TestDocsFields(t *testing.T) {
	tables := []struct {
		heading string
		typ     reflect.Type
	}{
		{"### Top level", reflect.TypeFor[File]()},
		{"### agent", reflect.TypeFor[messages.AgentSpec]()},
		{"### compiled", reflect.TypeFor[messages.CompiledSpec]()},
		{"### agent.llm_retry", reflect.TypeFor[messages.RetryPolicy]()},
		{"### agent.prompt_limit", reflect.TypeFor[messages.PromptLimit]()},
		{"### agent.tool_catalog entries", reflect.TypeFor[messages.ToolSchema]()},
		{"### agent.spawn_agent", reflect.TypeFor[messages.SpawnSpec]()},
	}
	for _, tb := range tables {
		rows, order := docTableOrdered(t, tb.heading)
		var want []string
		for _, f := range fieldsOf(tb.typ) {
			if tb.typ.Field(f.index[0]).Type == limitsType {
				continue // the limits have a table of their own (TestDocsLimits)
			}
			want = append(want, f.name)
			row, ok := rows[f.name]
			if !ok {
				continue
			}
			if typ := TypeName(tb.typ.FieldByIndex(f.index).Type); len(row) != 4 || row[1] != typ {
				t.Errorf("%s: %s has type %q in the docs, the decoder takes %s", tb.heading, f.name, row[1:2], typ)
			}
		}
		if strings.Join(order, ",") != strings.Join(want, ",") {
			t.Errorf("%s lists\n  %v\nthe decoder takes\n  %v", tb.heading, order, want)
		}
	}
}

// The example at the top of docs/missions.md is a valid mission.
func TestDocsExample(t *testing.T) {
	raw, err := os.ReadFile("../../docs/missions.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, _ := strings.Cut(string(raw), "```yaml\n")
	example, _, ok := strings.Cut(rest, "```")
	if !ok {
		t.Fatal("no yaml example")
	}
	f, err := Parse([]byte(example))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Build(); err != nil {
		t.Fatal(err)
	}
}

// The limits table names every limit (messages.Limits) and states the
// defaults the code applies (messages.DefaultLimits).
func TestDocsLimits(t *testing.T) {
	rows := docTable(t, "## Limits")
	// the limits whose default is derived from another or is none; a
	// zero default otherwise means unlimited
	want := map[string]string{
		"max_steps":   "`200000000` per second of `program_timeout`",
		"retry_turns": "none",
	}
	var walk func(prefix string, v reflect.Value)
	walk = func(prefix string, v reflect.Value) {
		for _, f := range fieldsOf(v.Type()) {
			name, fv := prefix+f.name, v.FieldByIndex(f.index)
			switch {
			case fv.Kind() == reflect.Struct:
				walk(name+".", fv)
			case want[name] != "":
			case fv.Type() == reflect.TypeFor[time.Duration]():
				want[name] = "`" + shortDuration(time.Duration(fv.Int())) + "`"
			case fv.IsZero():
				want[name] = "unlimited"
			default:
				want[name] = fmt.Sprintf("`%v`", fv.Interface())
			}
		}
	}
	walk("", reflect.ValueOf(messages.DefaultLimits()))
	for name, def := range want {
		row, ok := rows[name]
		if !ok {
			t.Errorf("limits table: no row for %s", name)
			continue
		}
		if len(row) != 4 || row[2] != def {
			t.Errorf("limits table: %s default is %q, want %q", name, row[2:3], def)
		}
	}
	for name := range rows {
		if _, ok := want[name]; !ok {
			t.Errorf("limits table row %s is not a limit", name)
		}
	}
}

// shortDuration prints d as a mission file would write it: "5m", "30s".
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
