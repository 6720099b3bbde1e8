package main

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skiffhq/skiff/internal/clock"
)

// lockedBuilder is a strings.Builder safe for the flusher and the test.
type lockedBuilder struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuilder) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuilder) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 10s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// TestLogWriter: lines are only copied on Write and written out on the
// flush interval (the injected clock), at once for an error, and on
// Close; a full buffer drops lines and says how many.
func TestLogWriter(t *testing.T) {
	var out lockedBuilder
	clk := clock.NewFake(time.Now())
	w := newLogWriter(&out, 64, clk)
	w.Write([]byte("level=INFO msg=one\n"))
	if out.String() != "" {
		t.Fatalf("written before a flush: %q", out.String())
	}
	clk.BlockUntil(1)
	clk.Advance(logFlushInterval)
	waitUntil(t, "the timed flush", func() bool { return out.String() == "level=INFO msg=one\n" })

	w.Write([]byte("level=ERROR msg=two\n")) // no clock step: errors go out at once
	waitUntil(t, "the error line", func() bool { return strings.Contains(out.String(), "msg=two") })

	// 64-byte buffer: most are dropped, none block. The output is held
	// meanwhile, so that the flusher, kicked at half full, cannot drain
	// the buffer between writes (it did on an idle box, and nothing was
	// dropped).
	out.mu.Lock()
	for range 10 {
		w.Write([]byte("level=INFO msg=three-four-five\n"))
	}
	out.mu.Unlock()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	if !strings.Contains(got, "msg=three-four-five") || !strings.Contains(got, "lines dropped") {
		t.Errorf("after Close: %q; want the buffered lines and a count of those dropped", got)
	}
	w.Write([]byte("level=INFO msg=after-close\n"))
	if !strings.HasSuffix(out.String(), "msg=after-close\n") {
		t.Errorf("a line after Close was not written at once: %q", out.String())
	}
}

// TestLogWriterConcurrent: with room in the buffer no line is lost or
// torn under concurrent writers.
func TestLogWriterConcurrent(t *testing.T) {
	var out lockedBuilder
	w := newLogWriter(&out, 1<<20, clock.NewFake(time.Now()))
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 200 {
				w.Write([]byte("level=INFO msg=line\n"))
			}
		})
	}
	wg.Wait()
	w.Close()
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 1600 {
		t.Fatalf("%d lines; want 1600", len(lines))
	}
	for _, l := range lines {
		if l != "level=INFO msg=line" {
			t.Fatalf("torn line %q", l)
		}
	}
}
