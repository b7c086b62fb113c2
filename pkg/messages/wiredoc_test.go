package messages

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// wireDocTypes are the types docs/wire.md documents, by table name.
var wireDocTypes = map[string]reflect.Type{
	"Mission": reflect.TypeFor[Mission](), "Limits": reflect.TypeFor[Limits](), "AgentSpec": reflect.TypeFor[AgentSpec](),
	"RetryPolicy": reflect.TypeFor[RetryPolicy](), "PromptLimit": reflect.TypeFor[PromptLimit](),
	"ToolSchema": reflect.TypeFor[ToolSchema](), "CompiledSpec": reflect.TypeFor[CompiledSpec](),
	"Step": reflect.TypeFor[stepWire](), "Fail": reflect.TypeFor[Fail](), "Usage": reflect.TypeFor[Usage](),
	"Turn": reflect.TypeFor[Turn](), "ToolCall": reflect.TypeFor[ToolCall](), "PromptMessage": reflect.TypeFor[PromptMessage](),
	"ToolRequest": reflect.TypeFor[ToolRequest](), "ToolResponse": reflect.TypeFor[ToolResponse](),
	"ToolError": reflect.TypeFor[ToolError](), "Event": reflect.TypeFor[Event](), "Cancel": reflect.TypeFor[Cancel](),
	"Status": reflect.TypeFor[Status](), "Replayed": reflect.TypeFor[Replayed](),
	"ObjectRef": reflect.TypeFor[ObjectRef](), "MissionRecord": reflect.TypeFor[MissionRecord](),
	"PlanStep":       reflect.TypeFor[PlanStep](),
	"Approval":       reflect.TypeFor[Approval](),
	"ApprovalPolicy": reflect.TypeFor[ApprovalPolicy](), "ApprovalRule": reflect.TypeFor[ApprovalRule](),
	"ApprovalCond": reflect.TypeFor[ApprovalCond](), "SpawnSpec": reflect.TypeFor[SpawnSpec](),
	"ScriptEntry": reflect.TypeFor[ScriptEntry](),
}

func readWireDoc(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../../docs/wire.md")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// docTable returns the rows (cells, trimmed) of the table after marker.
func docTable(t *testing.T, doc, marker string) [][]string {
	t.Helper()
	i := strings.Index(doc, "<!-- "+marker+" -->\n")
	if i < 0 {
		t.Fatalf("docs/wire.md has no table %q", marker)
	}
	var rows [][]string
	for n, line := range strings.Split(doc[i:], "\n")[1:] {
		if !strings.HasPrefix(line, "|") {
			break
		}
		if n < 2 {
			continue // header and separator
		}
		cells := strings.Split(strings.Trim(line, "|"), " | ")
		for j := range cells {
			cells[j] = strings.TrimSpace(cells[j])
		}
		rows = append(rows, cells)
	}
	return rows
}

// docType is how the field tables write a Go type's msgpack form.
func docType(t reflect.Type) string {
	switch {
	case t == reflect.TypeFor[time.Time]():
		return "timestamp"
	case t == reflect.TypeFor[time.Duration]():
		return "int (ns)"
	}
	switch t.Kind() {
	case reflect.String:
		return "str"
	case reflect.Bool:
		return "bool"
	case reflect.Int, reflect.Int64, reflect.Uint64:
		return "int"
	case reflect.Interface:
		return "any"
	case reflect.Pointer:
		return docType(t.Elem()) + " or absent"
	case reflect.Slice:
		return "array of " + docType(t.Elem())
	case reflect.Map:
		return "map of str → " + docType(t.Elem())
	case reflect.Struct:
		return "map (" + t.Name() + ")"
	}
	return t.String()
}

// TestWireDoc checks docs/wire.md against the codec: field tables, examples,
// versions, headers, subjects and tool error codes.
func TestWireDoc(t *testing.T) {
	doc := readWireDoc(t)
	for name, typ := range wireDocTypes {
		want := map[string]string{}
		for i := 0; i < typ.NumField(); i++ {
			collectDocFields(typ.Field(i), want)
		}
		got := map[string]string{}
		for _, row := range docTable(t, doc, "fields "+name) {
			if len(row) != 3 || !strings.HasPrefix(row[0], "`") {
				t.Errorf("%s: malformed row %q", name, row)
				continue
			}
			got[strings.Trim(row[0], "`")] = row[1]
		}
		for f, typ := range want {
			if g, ok := got[f]; !ok {
				t.Errorf("%s.%s is not in docs/wire.md", name, f)
			} else if g != typ {
				t.Errorf("%s.%s is documented as %q, the codec writes %q", name, f, g, typ)
			}
		}
		for f := range got {
			if _, ok := want[f]; !ok {
				t.Errorf("docs/wire.md documents %s.%s, which the type does not have", name, f)
			}
		}
	}

	examples := regexp.MustCompile("(?s)```json wire=(\\w+)\n(.*?)\n```").FindAllStringSubmatch(doc, -1)
	seen := map[string]bool{}
	for i, ex := range examples {
		name, body := ex[1], ex[2]
		seen[name] = true
		t.Run(fmt.Sprintf("example%d_%s", i, name), func(t *testing.T) { checkWireExample(t, name, body) })
	}
	for _, name := range []string{"Mission", "Step", "ToolRequest", "ToolResponse", "Event", "Cancel", "Status"} {
		if !seen[name] {
			t.Errorf("docs/wire.md has no example of %s", name)
		}
	}

	versions := map[string]int{"Mission": MissionVersion, "Step": StepVersion, "ToolRequest, ToolResponse": ToolCallVersion,
		"Event": EventVersion, "Cancel": CancelVersion, "Status": StatusVersion}
	for _, row := range docTable(t, doc, "versions") {
		v, err := strconv.Atoi(row[1])
		if want, ok := versions[row[0]]; !ok || err != nil || v != want {
			t.Errorf("versions table: %q (the code: %v)", row, versions[row[0]])
		}
		delete(versions, row[0])
	}
	if len(versions) > 0 {
		t.Errorf("versions table lacks %v", versions)
	}

	for _, s := range []string{HeaderMissionID, HeaderCallID, HeaderTimeout, HeaderReason, HeaderTraceParent, HeaderTraceState,
		HeaderIdempotencyKey, HeaderAttempt, HeaderRetry, HeaderHeartbeatMs, HeaderHeartbeat, HeaderJournalKey, HeaderJournalBatch, HeaderParkedEvent, HeaderParkedDecided, HeaderParkedSuspension, HeaderWokenEvent, HeaderWokenSuspension, StreamJournal, JournalSubject("<id>"),
		HeaderContentType, ContentTypeJSON, ContentTypeMsgpack, StreamMissions, StreamResults, StreamEvents, StreamDead,
		BucketStatus, BucketContext, StepType, FirewallMask,
		SubmitSubject("<submitter>", "<priority>", "<id>"), SubjectQueuedPrefix + "<submitter>.<priority>.<id>.<lane>", ResultSubject("<submitter>", "<id>"), SubjectEventPrefix + "<submitter>.<id>.<n>.<kind>", SubjectEventPrefix + "<submitter>.<id>.<n>.<count>",
		CancelSubject("<submitter>", "<id>"), StopSubject("<submitter>", "<id>"), StatusKey("<submitter>", "<id>"), CancelQueue, DefaultSubmitter,
		DeadSubject("<id>"), ToolSubject("<service>", "<tool>"), PriorityHigh, PriorityNormal, PriorityLow} {
		if !strings.Contains(doc, "`"+s+"`") && !strings.Contains(doc, `"`+s+`"`) {
			t.Errorf("docs/wire.md does not name %q", s)
		}
	}
	if want := fmt.Sprintf("(2 to %d, `messages.MaxEventBatch`", MaxEventBatch); !strings.Contains(doc, want) {
		t.Errorf("docs/wire.md does not give a batch's largest count: %q", want)
	}
	for _, k := range []string{EventStarted, EventTurnStarted, EventTurnFinished, EventLLMRequest, EventProgram, EventToolCall, EventToolResult, EventFinal, EventApprovalRequested, EventApprovalDecided} {
		if !strings.Contains(doc, "`"+k+"`") {
			t.Errorf("docs/wire.md does not name event kind %q", k)
		}
	}
	var codes []string
	for _, row := range docTable(t, doc, "tool error codes") {
		codes = append(codes, strings.Trim(row[0], "`"))
	}
	sort.Strings(codes)
	want := []string{ToolErrBadRequest, ToolErrFailed, ToolErrPanic, ToolErrUnknown, ToolErrUnavailable, ToolErrTimeout, ToolErrForbidden, ToolErrInternal, ToolErrDenied}
	sort.Strings(want)
	if !reflect.DeepEqual(codes, want) {
		t.Errorf("tool error codes documented %v, the code has %v", codes, want)
	}
}

// TestWireDocNamesEveryConstant checks that every header, stream, bucket,
// event kind and tool error code declared in this package is named in
// docs/wire.md, so a new one cannot go undocumented.
func TestWireDocNamesEveryConstant(t *testing.T) {
	doc := readWireDoc(t)
	fset := token.NewFileSet()
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, spec := range g.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, name := range vs.Names {
					if i >= len(vs.Values) || !hasAnyPrefix(name.Name, "Header", "Stream", "Bucket", "ToolErr", "Event") {
						continue
					}
					lit, ok := vs.Values[i].(*ast.BasicLit)
					if !ok || lit.Kind != token.STRING {
						continue
					}
					v, _ := strconv.Unquote(lit.Value)
					n++
					if !strings.Contains(doc, "`"+v+"`") {
						t.Errorf("docs/wire.md does not name %s (%q)", name.Name, v)
					}
				}
			}
		}
	}
	if n < 30 {
		t.Fatalf("found only %d constants; the scan is broken", n)
	}
}

func hasAnyPrefix(s string, prefixes ...string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

func collectDocFields(f reflect.StructField, into map[string]string) {
	if !f.IsExported() {
		return
	}
	tag := f.Tag.Get("msgpack")
	if _, documented := wireDocTypes[f.Type.Name()]; f.Anonymous && tag == "" && documented {
		// an embedded documented type has a table of its own
		into[f.Type.Name()] = "inline (" + f.Type.Name() + ")"
		return
	}
	if f.Anonymous && tag == "" {
		et := f.Type
		for et.Kind() == reflect.Pointer {
			et = et.Elem()
		}
		for i := 0; i < et.NumField(); i++ {
			collectDocFields(et.Field(i), into)
		}
		return
	}
	name, opts, _ := strings.Cut(tag, ",")
	typ := docType(f.Type)
	if strings.Contains(opts, "omitempty") {
		typ += ", omitted when empty"
	}
	into[name] = typ
}

// checkWireExample decodes a documented example like a receiver would,
// validates it and encodes it back: the result must be the example.
func checkWireExample(t *testing.T, name, body string) {
	typ, ok := wireDocTypes[name]
	if !ok {
		t.Fatalf("example of unknown type %s", name)
	}
	var plain any
	dec := json.NewDecoder(strings.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(&plain); err != nil {
		t.Fatalf("example is not JSON: %v", err)
	}
	if unknown := unknownKeys(plain, typ, ""); len(unknown) > 0 {
		t.Errorf("example has keys the type lacks: %v", unknown)
	}
	ptr := reflect.New(typ)
	if name == "Step" {
		ptr.Interface().(*stepWire).Step = &Step{}
	}
	if err := DecodeJSON([]byte(body), ptr.Interface()); err != nil {
		t.Fatalf("example does not decode: %v", err)
	}
	v := ptr.Interface()
	if name == "Step" {
		// Through the result decoder, which checks the type marker.
		raw, err := Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		s, err := UnmarshalStep(raw)
		if err != nil {
			t.Fatalf("example is not a valid Step: %v", err)
		}
		v = &stepWire{Type: StepType, Step: s}
	} else if val, ok := v.(interface{ Validate() error }); ok {
		if err := val.Validate(); err != nil {
			t.Errorf("example does not validate: %v", err)
		}
	}
	back, err := EncodeJSON(v)
	if err != nil {
		t.Fatal(err)
	}
	var want, got any
	_ = json.Unmarshal([]byte(body), &want)
	_ = json.Unmarshal(back, &got)
	if !reflect.DeepEqual(want, got) {
		t.Errorf("example does not encode back to itself:\n doc  %s\n code %s", compactJSON(body), back)
	}
}

func compactJSON(s string) string {
	var v any
	_ = json.Unmarshal([]byte(s), &v)
	b, _ := json.Marshal(v)
	return string(b)
}

// unknownKeys lists the keys of plain (JSON) data that name no field of t.
func unknownKeys(v any, t reflect.Type, path string) []string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	var out []string
	switch {
	case t.Kind() == reflect.Struct && t != reflect.TypeFor[time.Time]():
		m, _ := v.(map[string]any)
		fields := wireFields(t)
		for k, e := range m {
			ft, ok := fields[k]
			if !ok {
				out = append(out, joinPath(path, k))
				continue
			}
			out = append(out, unknownKeys(e, ft, joinPath(path, k))...)
		}
	case t.Kind() == reflect.Slice:
		l, _ := v.([]any)
		for i, e := range l {
			out = append(out, unknownKeys(e, t.Elem(), fmt.Sprintf("%s[%d]", path, i))...)
		}
	case t.Kind() == reflect.Map && t.Elem().Kind() != reflect.Interface:
		m, _ := v.(map[string]any)
		for k, e := range m {
			out = append(out, unknownKeys(e, t.Elem(), joinPath(path, k))...)
		}
	}
	return out
}
