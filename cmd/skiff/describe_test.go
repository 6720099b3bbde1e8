package main

import (
	"strings"
	"testing"
)

func TestDescribeGolden(t *testing.T) {
	t.Parallel()
	h := startCLIHarness(t)
	seedCluster(h)
	h.golden("describe-pod-events", h.run("describe", "pod", "web-1"))
	h.golden("describe-pod-other-events", h.run("describe", "pods/pending"))
	h.golden("describe-node", h.run("describe", "node", "node-1"))
	h.golden("describe-deployment", h.run("describe", "deploy", "web"))
	h.golden("describe-selector", h.run("describe", "cm", "-l", "nothing=here"))
	h.golden("describe-not-found", h.run("describe", "pod", "nope"))
}

func TestDescribeEventsAreTheObjects(t *testing.T) {
	t.Parallel()
	h := startCLIHarness(t)
	seedCluster(h)
	r := h.run("describe", "pod", "web-1")
	if r.code != 0 {
		t.Fatalf("describe = %d, %q", r.code, r.stderr)
	}
	_, events, ok := strings.Cut(r.stdout, "Events:")
	if !ok {
		t.Fatalf("describe printed no Events section:\n%s", r.stdout)
	}
	// Oldest first, by last timestamp; nothing about other pods.
	order := []string{"Scheduled", "Pulled", "BackOff"}
	last := -1
	for _, reason := range order {
		i := strings.Index(events, reason)
		if i < last {
			t.Errorf("event %s is out of order in\n%s", reason, events)
		}
		last = i
	}
	if strings.Contains(events, "FailedScheduling") {
		t.Errorf("events of another pod shown:\n%s", events)
	}
}
