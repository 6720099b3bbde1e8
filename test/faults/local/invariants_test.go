package local

import (
	"strings"
	"testing"
)

// TestProblemsOrphanShim: a shim is an orphan unless it serves a live
// pod (its ID is one of the pod's containers').
func TestProblemsOrphanShim(t *testing.T) {
	s := &State{
		Want:    map[string]string{"uid-1": "default/a"},
		Running: map[string]map[string]int{"uid-1": {"main": 1}},
		Veths:   1,
		Shims:   []string{"uid-1-main-0", "uid-2-main-0", "uid-1x-main-0"},
	}
	got := strings.Join(s.Problems(false), "\n")
	for _, want := range []string{"orphan shim uid-2-main-0", "orphan shim uid-1x-main-0"} {
		if !strings.Contains(got, want) {
			t.Errorf("Problems = %q; want %q", got, want)
		}
	}
	if strings.Contains(got, "uid-1-main-0") {
		t.Errorf("Problems = %q; the live pod's shim is not an orphan", got)
	}
}
