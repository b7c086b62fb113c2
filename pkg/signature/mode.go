package signature

import "strconv"

// Mode is a validation mode. The zero value is Enabled, the default.
//
//   - Enabled: validate inputs and outputs; problems fail the call or the run.
//     Extra map fields are allowed.
//   - WarnOnly: validate the same way, but the caller reports problems as
//     warnings and carries on (Fatal is false).
//   - Disabled: skip validation; Validate returns nil and CoerceInputs
//     returns the args unchanged.
//   - Strict: Enabled, and map values may not carry fields their type does not
//     declare ("extra.field: unexpected field"). The agent additionally
//     requires every tool to have a signature in this mode; that rule is
//     enforced by the agent, not here.
type Mode uint8

// The validation modes.
const (
	// Enabled validates and fails on problems; the default.
	Enabled Mode = iota
	// WarnOnly validates and reports problems as warnings.
	WarnOnly
	// Disabled skips validation.
	Disabled
	// Strict is Enabled plus rejection of undeclared map fields.
	Strict
)

// ParseMode parses a mode name: "enabled", "warn_only", "disabled" or
// "strict" (a leading ":" is accepted, as in keyword syntax). The empty
// string is Enabled. Any other name is an *Error of KindMode.
func ParseMode(s string) (Mode, error) {
	if len(s) > 0 && s[0] == ':' {
		s = s[1:]
	}
	switch s {
	case "", "enabled":
		return Enabled, nil
	case "warn_only":
		return WarnOnly, nil
	case "disabled":
		return Disabled, nil
	case "strict":
		return Strict, nil
	}
	return Enabled, &Error{Kind: KindMode, Msg: "unknown validation mode " + strconv.Quote(s) + " (want enabled, warn_only, disabled or strict)"}
}

// String returns the mode's name: "enabled", "warn_only", "disabled" or
// "strict".
func (m Mode) String() string {
	switch m {
	case Enabled:
		return "enabled"
	case WarnOnly:
		return "warn_only"
	case Disabled:
		return "disabled"
	case Strict:
		return "strict"
	}
	return "mode(" + strconv.Itoa(int(m)) + ")"
}

// Fatal reports whether validation problems should fail the call in this
// mode: true for Enabled and Strict.
func (m Mode) Fatal() bool { return m == Enabled || m == Strict }

// MarshalText encodes the mode as its name; an out-of-range mode is an error.
func (m Mode) MarshalText() ([]byte, error) {
	if m > Strict {
		return nil, &Error{Kind: KindMode, Msg: "unknown validation mode " + m.String()}
	}
	return []byte(m.String()), nil
}

// UnmarshalText decodes a mode name as ParseMode does.
func (m *Mode) UnmarshalText(b []byte) error {
	v, err := ParseMode(string(b))
	if err != nil {
		return err
	}
	*m = v
	return nil
}
