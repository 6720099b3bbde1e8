package version

import (
	"regexp"
	"testing"
)

// semver is the grammar kubectl's version.ParseSemantic accepts.
var semver = regexp.MustCompile(`^v?(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?(\+[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?$`)

func TestGitVersionIsSemver(t *testing.T) {
	tests := []struct{ in, want string }{
		{"dev", "v1.32.0+skiff.dev"},
		{"v0.2.1", "v1.32.0+skiff.0.2.1"},
		{"0.2.1-3-gabc/dirty", "v1.32.0+skiff.0.2.1-3-gabc-dirty"},
		{"..", "v1.32.0+skiff.dev"},
		{"a..b", "v1.32.0+skiff.a.b"},
		{"", "v1.32.0+skiff.dev"},
	}
	for _, tt := range tests {
		got := GitVersion(tt.in)
		if got != tt.want || !semver.MatchString(got) {
			t.Errorf("GitVersion(%q) = %q; want %q (semver)", tt.in, got, tt.want)
		}
	}
	if g := Get(); g.Major != "1" || g.Minor != "32" || !semver.MatchString(g.GitVersion) {
		t.Errorf("Get() = %+v; want major 1, minor 32, a semver gitVersion", g)
	}
}
