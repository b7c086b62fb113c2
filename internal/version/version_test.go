package version

import (
	"runtime/debug"
	"testing"
)

func TestFromBuildInfo(t *testing.T) {
	rev := []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: "0123456789abcdef0123"}}
	for _, c := range []struct {
		name string
		bi   *debug.BuildInfo
		want string
	}{
		{"no build information", nil, "devel"},
		{"installed at a version", &debug.BuildInfo{Main: debug.Module{Path: Module, Version: "v1.4.0"}}, "v1.4.0"},
		{"a dependency of another module", &debug.BuildInfo{Main: debug.Module{Path: "example.com/app", Version: "(devel)"},
			Deps: []*debug.Module{{Path: "example.com/other", Version: "v9.9.9"}, {Path: Module, Version: "v1.2.3"}}, Settings: rev}, "v1.2.3"},
		{"a checkout", &debug.BuildInfo{Main: debug.Module{Path: Module, Version: "(devel)"}, Settings: rev}, "devel+0123456789ab"},
		{"a modified checkout", &debug.BuildInfo{Main: debug.Module{Path: Module, Version: "(devel)"},
			Settings: append(rev, debug.BuildSetting{Key: "vcs.modified", Value: "true"})}, "devel+0123456789ab+dirty"},
		{"a checkout without VCS stamps", &debug.BuildInfo{Main: debug.Module{Path: Module, Version: "(devel)"}}, "devel"},
		{"another module's checkout", &debug.BuildInfo{Main: debug.Module{Path: "example.com/app", Version: "(devel)"}, Settings: rev}, "devel"},
	} {
		if got := fromBuildInfo(c.bi); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}
