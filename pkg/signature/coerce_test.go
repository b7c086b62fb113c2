package signature

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestCoerceInputs(t *testing.T) {
	sig := MustParse("(query :string, limit :int?, ratio :float?, exact :bool?, status :keyword?, opts {depth :int, tags [:int]}?) -> :any")
	for _, tc := range []struct {
		name     string
		args     map[string]any
		mode     Mode
		want     map[string]any
		warnings []string
		err      string
	}{
		{
			name: "nothing to do",
			args: map[string]any{"query": "q", "limit": int64(3)},
			want: map[string]any{"query": "q", "limit": int64(3)},
		},
		{
			name:     "string to integer",
			args:     map[string]any{"query": "q", "limit": "10"},
			want:     map[string]any{"query": "q", "limit": int64(10)},
			warnings: []string{`limit: coerced string "10" to integer`},
		},
		{
			name:     "padded string and negative",
			args:     map[string]any{"query": "q", "limit": " -42 "},
			want:     map[string]any{"query": "q", "limit": int64(-42)},
			warnings: []string{`limit: coerced string " -42 " to integer`},
		},
		{
			name:     "integral float to integer",
			args:     map[string]any{"query": "q", "limit": 10.0},
			want:     map[string]any{"query": "q", "limit": int64(10)},
			warnings: []string{`limit: coerced float 10.0 to integer`},
		},
		{
			name:     "string to float, int to float, string to bool",
			args:     map[string]any{"query": "q", "ratio": "3.14", "exact": "true"},
			want:     map[string]any{"query": "q", "ratio": 3.14, "exact": true},
			warnings: []string{`ratio: coerced string "3.14" to float`, `exact: coerced string "true" to boolean`},
		},
		{
			name:     "int to float",
			args:     map[string]any{"query": "q", "ratio": int64(2), "exact": "false"},
			want:     map[string]any{"query": "q", "ratio": 2.0, "exact": false},
			warnings: []string{`ratio: coerced integer 2 to float`, `exact: coerced string "false" to boolean`},
		},
		{
			name: "json numbers silently",
			args: map[string]any{"query": "q", "limit": json.Number("5"), "ratio": json.Number("0.5")},
			want: map[string]any{"query": "q", "limit": int64(5), "ratio": 0.5},
		},
		{
			name: "keyword-ish string stays a string",
			args: map[string]any{"query": "q", "status": "active"},
			want: map[string]any{"query": "q", "status": "active"},
		},
		{
			name:     "nested map and list",
			args:     map[string]any{"query": "q", "opts": map[string]any{"depth": "2", "tags": []any{int64(1), "2"}}},
			want:     map[string]any{"query": "q", "opts": map[string]any{"depth": int64(2), "tags": []any{int64(1), int64(2)}}},
			warnings: []string{`opts.depth: coerced string "2" to integer`, `opts.tags[1]: coerced string "2" to integer`},
		},
		{
			name: "uncoercible values are reported by validation",
			args: map[string]any{"query": int64(1), "limit": "ten", "ratio": "NaN", "exact": "yes", "opts": map[string]any{"depth": 1.5, "tags": []any{}}},
			want: map[string]any{"query": int64(1), "limit": "ten", "ratio": "NaN", "exact": "yes", "opts": map[string]any{"depth": 1.5, "tags": []any{}}},
			err: "- query: expected string, got integer 1\n" +
				"- limit: expected integer, got string \"ten\"\n" +
				"- ratio: expected float, got string \"NaN\"\n" +
				"- exact: expected boolean, got string \"yes\"\n" +
				"- opts.depth: expected integer, got float 1.5",
		},
		{
			name:     "missing required input",
			args:     map[string]any{"limit": "1"},
			want:     map[string]any{"limit": int64(1)},
			warnings: []string{`limit: coerced string "1" to integer`},
			err:      "- query: required input missing",
		},
		{
			name: "strict rejects extra inputs",
			args: map[string]any{"query": "q", "extra": 1},
			mode: Strict,
			want: map[string]any{"query": "q", "extra": 1},
			err:  "- extra: unexpected field",
		},
		{
			name: "disabled returns args as given",
			args: map[string]any{"limit": "1"},
			mode: Disabled,
			want: map[string]any{"limit": "1"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := deepCopy(tc.args)
			got, warnings, err := sig.CoerceInputs(tc.args, tc.mode)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("args = %#v\nwant %#v", got, tc.want)
			}
			if !reflect.DeepEqual(warnings, tc.warnings) {
				t.Errorf("warnings = %q\nwant %q", warnings, tc.warnings)
			}
			wantErr := tc.err
			if wantErr == "" {
				wantErr = "<nil>"
			}
			if errString(err) != wantErr {
				t.Errorf("err:\n%v\nwant:\n%s", err, wantErr)
			}
			if err != nil && !errors.Is(err, ErrInvalid) {
				t.Error("err does not match ErrInvalid")
			}
			if !reflect.DeepEqual(tc.args, before) {
				t.Errorf("args were modified: %#v", tc.args)
			}
		})
	}
}

func TestCoerceValue(t *testing.T) {
	typ, _ := ParseType("[{n :int}]")
	v, warnings := Coerce(typ, []any{map[string]any{"n": "7"}})
	if !reflect.DeepEqual(v, []any{map[string]any{"n": int64(7)}}) || strings.Join(warnings, "|") != `[0].n: coerced string "7" to integer` {
		t.Fatalf("Coerce = %#v %q", v, warnings)
	}
	v, warnings = Coerce(Int, "7")
	if v != int64(7) || len(warnings) != 1 || warnings[0] != `coerced string "7" to integer` {
		t.Fatalf("Coerce root = %#v %q", v, warnings)
	}
	if v, w := Coerce(Float, uint8(3)); v != 3.0 || len(w) != 1 {
		t.Fatalf("Coerce uint8 to float = %#v %q", v, w)
	}
	if v, w := Coerce(Int, 1e300); v != 1e300 || len(w) != 0 {
		t.Fatalf("Coerce out-of-range float = %#v %q", v, w)
	}
}

func deepCopy(v map[string]any) map[string]any {
	if v == nil {
		return nil
	}
	return deepCopyValue(v).(map[string]any)
}

func deepCopyValue(v any) any {
	switch x := v.(type) {
	case []any:
		out := make([]any, len(x))
		for i := range x {
			out[i] = deepCopyValue(x[i])
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = deepCopyValue(e)
		}
		return out
	}
	return v
}

// An argument the inputs do not declare is an error naming it and the
// closest input; "..." last in the inputs lets a tool take any extra
// argument; a signature without inputs takes anything.
func TestCoerceInputsUnknownArgument(t *testing.T) {
	sig := MustParse("(status :string?, customer_id :int?) -> [:map]")
	_, _, err := sig.CoerceInputs(map[string]any{"statuss": "paid"}, Enabled)
	if err == nil || err.Error() != "- statuss: unknown argument (did you mean status?)" {
		t.Errorf("misspelled argument: err = %v", err)
	}
	_, _, err = sig.CoerceInputs(map[string]any{"status": "paid", "zzz": 1, "colour": 2}, Enabled)
	if err == nil || err.Error() != "- colour: unknown argument (the inputs are status, customer_id)\n- zzz: unknown argument (the inputs are status, customer_id)" {
		t.Errorf("unknown arguments: err = %v", err)
	}
	if _, _, err := sig.CoerceInputs(map[string]any{"status": "paid"}, WarnOnly); err != nil {
		t.Errorf("declared argument: %v", err)
	}
	if _, _, err := sig.CoerceInputs(map[string]any{"statuss": "paid"}, Disabled); err != nil {
		t.Errorf("Disabled validates nothing: %v", err)
	}

	open := MustParse("(status :string?, ...) -> [:map]")
	if !open.ExtraInputs || open.String() != "(status :string?, ...) -> [:map]" {
		t.Fatalf("open inputs: %+v prints %q", open, open.String())
	}
	if _, _, err := open.CoerceInputs(map[string]any{"status": "paid", "trace": true}, Enabled); err != nil {
		t.Errorf(`"..." takes extra arguments: %v`, err)
	}
	if s := MustParse("(...) -> :int"); !s.ExtraInputs || s.String() != "(...) -> :int" || len(s.Inputs) != 0 {
		t.Errorf(`"(...)": %+v prints %q`, s, s.String())
	}
	if _, err := Parse("(... a :int) -> :int"); err == nil || !strings.Contains(err.Error(), `expected ")" after "..."`) {
		t.Errorf(`"..." before an input: err = %v`, err)
	}
	if _, _, err := MustParse("() -> :int").CoerceInputs(map[string]any{"x": 1}, Enabled); err != nil {
		t.Errorf("no declared inputs: %v", err)
	}
}
