package config

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skiffhq/skiff/agent/internal/agenttest"
	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/internal/clock"
)

// signalSink is a Merger that reports every call a source made, so tests
// know a scan or an event has been merged before they look.
type signalSink struct {
	*Merger
	calls chan string
	sets  atomic.Int32
}

func newSignalSink(t *testing.T, sources ...string) *signalSink {
	t.Helper()
	m, err := NewMerger(MergerConfig{Sources: sources, Buffer: 100})
	if err != nil {
		t.Fatal(err)
	}
	return &signalSink{Merger: m, calls: make(chan string, 100)}
}

func (s *signalSink) Set(ctx context.Context, source string, pods []*api.Pod) error {
	defer func() { s.sets.Add(1); s.calls <- "set" }()
	return s.Merger.Set(ctx, source, pods)
}

func (s *signalSink) Upsert(ctx context.Context, source string, pods ...*api.Pod) error {
	defer func() { s.calls <- "upsert" }()
	return s.Merger.Upsert(ctx, source, pods...)
}

func (s *signalSink) Remove(ctx context.Context, source string, pods ...*api.Pod) error {
	defer func() { s.calls <- "remove" }()
	return s.Merger.Remove(ctx, source, pods...)
}

// waitCall waits for the next sink call of kind (any kind when "").
func (s *signalSink) waitCall(t *testing.T, kind string) {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		select {
		case c := <-s.calls:
			if kind == "" || c == kind {
				return
			}
		case <-deadline:
			t.Fatalf("no %q call on the sink in 20s", kind)
		}
	}
}

// describe renders updates as "OP source name,name".
func describe(us ...PodUpdate) []string {
	var out []string
	for _, u := range us {
		var names []string
		for _, p := range u.Pods {
			names = append(names, p.Name)
		}
		out = append(out, fmt.Sprintf("%s %s %s", u.Op, u.Source, strings.Join(names, ",")))
	}
	return out
}

// nextUpdate waits for one update (real I/O may be behind it).
func nextUpdate(t *testing.T, m *Merger) PodUpdate {
	t.Helper()
	select {
	case u := <-m.Updates():
		return u
	case <-time.After(20 * time.Second):
		t.Fatal("no pod update in 20s")
		return PodUpdate{}
	}
}

// expectUpdate waits for one update and checks it reads want.
func expectUpdate(t *testing.T, m *Merger, want string) PodUpdate {
	t.Helper()
	u := nextUpdate(t, m)
	if got := describe(u)[0]; got != want {
		t.Fatalf("update = %q; want %q", got, want)
	}
	return u
}

// pumpUntil is agenttest.Pump.
func pumpUntil(t *testing.T, clk *clock.Fake, step time.Duration, what string, cond func() bool) {
	t.Helper()
	agenttest.Pump(t, clk, step, what, cond)
}

// quiet drops the sources' logs in tests.
var quiet = slog.New(slog.DiscardHandler)
