// Package version is the project's version as built: what the binaries'
// -version prints, what the model clients send in their User-Agent and
// what the MCP server and client say they are.
package version

import "runtime/debug"

// Module is the project's module path.
const Module = "github.com/ptcfleet/ptc"

// String returns the project's version as built: its module version
// ("v1.2.3") when the build knows one (the module built as a dependency,
// or installed from a proxy at a version), otherwise "devel", followed by
// the VCS revision when the build recorded one ("devel+0123456789ab", and
// "+dirty" for a modified checkout).
func String() string {
	bi, _ := debug.ReadBuildInfo()
	return fromBuildInfo(bi)
}

// fromBuildInfo is String for the build information bi (nil: none).
func fromBuildInfo(bi *debug.BuildInfo) string {
	if bi == nil {
		return "devel"
	}
	if bi.Main.Path == Module && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	for _, d := range bi.Deps {
		if d.Path == Module && d.Version != "" && d.Version != "(devel)" {
			return d.Version
		}
	}
	v := "devel"
	if bi.Main.Path != Module {
		return v // another main module's revision is not ours
	}
	var rev string
	var dirty bool
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev != "" {
		v += "+" + rev[:min(len(rev), 12)]
		if dirty {
			v += "+dirty"
		}
	}
	return v
}
