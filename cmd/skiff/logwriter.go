package main

import (
	"bytes"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/skiffhq/skiff/internal/clock"
)

// The server's log goes through a logWriter: the slog handler holds its
// mutex while it writes a line, and with one write(2) per request a busy
// server's handlers queued on that mutex (thousands of them in a
// 10,000-agent join storm on 2 cores), each request waiting for every
// line before it to reach the disk or journald. A logWriter only copies
// the line into memory; one goroutine writes the lines out.
const (
	logFlushInterval = 100 * time.Millisecond
	logBufferLimit   = 1 << 20
)

// logWriter buffers whole lines for out, bounded: when the buffer is full
// a line is dropped and counted, and the next flush says how many. A line
// with level=ERROR is written out at once. Close writes what is left.
type logWriter struct {
	out   io.Writer
	limit int

	mu      sync.Mutex
	buf     []byte
	dropped int
	closed  bool
	kick    chan struct{}
	stop    chan struct{}
	done    chan struct{}

	wmu sync.Mutex // serialises writes to out
}

// newLogWriter starts a logWriter for out; flushes are timed on clk.
func newLogWriter(out io.Writer, limit int, clk clock.Clock) *logWriter {
	w := &logWriter{out: out, limit: limit, kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go w.loop(clock.Or(clk))
	return w
}

// Write queues p (one or more whole lines, as slog hands them over).
func (w *logWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		w.wmu.Lock()
		defer w.wmu.Unlock()
		return w.out.Write(p)
	}
	if len(w.buf)+len(p) > w.limit {
		w.dropped++
		w.mu.Unlock()
		return len(p), nil
	}
	w.buf = append(w.buf, p...)
	now := len(w.buf) >= w.limit/2 || bytes.Contains(p, []byte("level=ERROR"))
	w.mu.Unlock()
	if now {
		select {
		case w.kick <- struct{}{}:
		default:
		}
	}
	return len(p), nil
}

func (w *logWriter) loop(clk clock.Clock) {
	defer close(w.done)
	t := clk.NewTicker(logFlushInterval)
	defer t.Stop()
	for {
		select {
		case <-t.C():
		case <-w.kick:
		case <-w.stop:
			w.flush()
			return
		}
		w.flush()
	}
}

// flush writes out what is buffered.
func (w *logWriter) flush() {
	w.wmu.Lock()
	defer w.wmu.Unlock()
	w.mu.Lock()
	b, dropped := w.buf, w.dropped
	w.buf, w.dropped = nil, 0
	w.mu.Unlock()
	if dropped > 0 {
		fmt.Fprintf(w.out, "level=WARN msg=\"log buffer full: %d lines dropped\"\n", dropped)
	}
	if len(b) > 0 {
		// A failing log write has nowhere to be reported.
		w.out.Write(b)
	}
}

// Close writes out what is buffered; later lines are written at once.
func (w *logWriter) Close() error {
	w.mu.Lock()
	already := w.closed
	w.closed = true
	w.mu.Unlock()
	if !already {
		close(w.stop)
		<-w.done
	}
	return nil
}
