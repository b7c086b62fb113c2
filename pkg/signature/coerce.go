package signature

import (
	"encoding/json"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// CoerceInputs validates the args of a tool call against the signature's
// inputs, first fixing the mistakes a model commonly makes, and returns the
// args to use, one warning line per coercion and the validation error (nil or
// a ValidationErrors).
//
// Coercions, applied at any depth (inside typed maps and lists):
//   - :int from a string holding an integer ("42" → 42) or from an integral
//     float (42.0 → 42);
//   - :float from a string holding a finite number ("3.14" → 3.14) or from an
//     integer (3 → 3.0);
//   - :bool from "true" or "false";
//   - json.Number to int64 or float64, silently (it is only a representation);
//   - an enum value by the rule of its kind (a string "2" to 2 when the
//     enum lists 2);
//   - a union's value, when no alternative takes it as given, by the
//     first alternative that takes it coerced.
//
// Strings stay strings for :string and :keyword. Each coercion adds a warning
// such as `limit: coerced string "10" to integer`; integers are returned as
// int64 and floats as float64. A value that cannot be coerced is left alone
// and reported by validation. A missing required input is
// "name: required input missing"; an argument the inputs do not declare is
// "name: unknown argument (did you mean x?)" unless the signature declares
// no inputs or ends them with "..." (ExtraInputs); in mode Strict it is an
// unexpected field. In mode Disabled the args are returned as given, with no warnings
// and no error.
//
// args is never modified: when something is coerced the result is a copy
// (copied only along the changed paths). CoerceInputs is safe for concurrent
// use.
func (s *Signature) CoerceInputs(args map[string]any, mode Mode) (map[string]any, []string, error) {
	if mode == Disabled {
		return args, nil, nil
	}
	co := coercer{}
	out, copied := args, false
	for _, p := range s.Inputs {
		v, ok := args[p.Name]
		if !ok {
			continue
		}
		co.path = append(co.path[:0], seg{name: p.Name})
		nv, changed := co.coerce(orAny(p.Type), v)
		if changed {
			if !copied {
				out, copied = cloneMap(args), true
			}
			out[p.Name] = nv
		}
	}
	c := checker{strict: mode == Strict, inputs: true}
	c.checkFields(s.inputsMap(), plainMap(out))
	if mode != Strict { // Strict reports them as unexpected fields
		c.errs = append(c.errs, s.unknownArgs(out)...)
	}
	return out, co.warnings, c.errs.Err()
}

// unknownArgs reports the arguments of a tool call that the signature's
// inputs do not declare, each with the closest input as a suggestion,
// sorted by name. A signature that declares no inputs, or ends them with
// "..." (ExtraInputs), takes any argument.
func (s *Signature) unknownArgs(args map[string]any) ValidationErrors {
	if s.ExtraInputs || len(s.Inputs) == 0 || len(args) == 0 {
		return nil
	}
	var unknown []string
	for k := range args {
		if _, ok := s.Input(k); !ok {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	slices.Sort(unknown)
	names := s.inputNames()
	errs := make(ValidationErrors, 0, len(unknown))
	for _, k := range unknown {
		msg := "unknown argument"
		if c := Closest(k, names); c != "" {
			msg += " (did you mean " + c + "?)"
		} else {
			msg += " (the inputs are " + strings.Join(names, ", ") + ")"
		}
		errs = append(errs, &ValidationError{Path: k, Msg: msg})
	}
	return errs
}

// Coerce applies the coercions of CoerceInputs to a single value of type t and
// returns the new value and the warnings (paths are relative to v). It does
// not validate; call Validate on the result.
func Coerce(t Type, v any) (any, []string) {
	co := coercer{}
	nv, _ := co.coerce(orAny(t), v)
	return nv, co.warnings
}

func cloneMap(m map[string]any) map[string]any {
	c := make(map[string]any, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

type coercer struct {
	path     []seg
	warnings []string
}

func (co *coercer) warn(v any, to string) {
	msg := "coerced " + describe(v, firewalledPath(co.path)) + " to " + to
	if p := pathString(co.path); p != "" {
		msg = p + ": " + msg
	}
	co.warnings = append(co.warnings, msg)
}

// coerce returns v converted towards t and whether it changed.
func (co *coercer) coerce(t Type, v any) (any, bool) {
	switch t := t.(type) {
	case Optional:
		if v == nil {
			return v, false
		}
		return co.coerce(orAny(t.Elem), v)
	case Prim:
		return co.coercePrim(t, v)
	case Refined:
		return co.coerce(orAny(t.Base), v)
	case Enum:
		if enumHas(t, v) {
			return v, false
		}
		for _, p := range enumPrims(t) {
			scratch := coercer{path: co.path}
			if nv, changed := scratch.coercePrim(p, v); changed && enumHas(t, nv) {
				co.warnings = append(co.warnings, scratch.warnings...)
				return nv, true
			}
		}
		return v, false
	case Union:
		for _, a := range t.Alts {
			if Validate(a, v, Enabled) == nil {
				return v, false
			}
		}
		for _, a := range t.Alts {
			scratch := coercer{path: co.path}
			if nv, changed := scratch.coerce(a, v); changed && Validate(a, nv, Enabled) == nil {
				co.warnings = append(co.warnings, scratch.warnings...)
				return nv, true
			}
		}
		return v, false
	case List:
		xs, ok := v.([]any)
		if !ok {
			return v, false
		}
		var out []any
		for i, x := range xs {
			co.path = append(co.path, seg{index: i, isIdx: true})
			nx, changed := co.coerce(orAny(t.Elem), x)
			co.path = co.path[:len(co.path)-1]
			if changed {
				if out == nil {
					out = make([]any, len(xs))
					copy(out, xs)
				}
				out[i] = nx
			}
		}
		if out == nil {
			return v, false
		}
		return out, true
	case Map:
		m, ok := v.(map[string]any)
		if !ok {
			return v, false
		}
		var out map[string]any
		for _, f := range t.Fields {
			x, ok := m[f.Name]
			if !ok {
				continue
			}
			co.path = append(co.path, seg{name: f.Name})
			nx, changed := co.coerce(orAny(f.Type), x)
			co.path = co.path[:len(co.path)-1]
			if changed {
				if out == nil {
					out = cloneMap(m)
				}
				out[f.Name] = nx
			}
		}
		if out == nil {
			return v, false
		}
		return out, true
	}
	return v, false
}

func (co *coercer) coercePrim(p Prim, v any) (any, bool) {
	switch p {
	case Int:
		switch x := v.(type) {
		case string:
			if n, err := strconv.ParseInt(strings.TrimSpace(x), 10, 64); err == nil {
				co.warn(v, "integer")
				return n, true
			}
		case float64:
			if n, ok := integral(x); ok {
				co.warn(v, "integer")
				return n, true
			}
		case float32:
			if n, ok := integral(float64(x)); ok {
				co.warn(v, "integer")
				return n, true
			}
		case json.Number:
			if n, err := x.Int64(); err == nil {
				return n, true
			}
		}
	case Float:
		switch x := v.(type) {
		case string:
			if f, err := strconv.ParseFloat(strings.TrimSpace(x), 64); err == nil && !math.IsInf(f, 0) && !math.IsNaN(f) {
				co.warn(v, "float")
				return f, true
			}
		case json.Number:
			if f, err := x.Float64(); err == nil && !math.IsInf(f, 0) {
				return f, true
			}
		case float64, bool, nil:
		default:
			if f, ok := intToFloat(v); ok {
				co.warn(v, "float")
				return f, true
			}
		}
	case Bool:
		if x, ok := v.(string); ok {
			switch strings.TrimSpace(x) {
			case "true":
				co.warn(v, "boolean")
				return true, true
			case "false":
				co.warn(v, "boolean")
				return false, true
			}
		}
	}
	return v, false
}

// integral converts a float holding an integer in int64 range.
func integral(f float64) (int64, bool) {
	if f != math.Trunc(f) || f < -(1<<63) || f >= 1<<63 {
		return 0, false
	}
	return int64(f), true
}

func intToFloat(v any) (float64, bool) {
	rv := reflect.ValueOf(v)
	switch k := rv.Kind(); {
	case k >= reflect.Int && k <= reflect.Int64:
		return float64(rv.Int()), true
	case k >= reflect.Uint && k <= reflect.Uintptr:
		return float64(rv.Uint()), true
	}
	return 0, false
}
