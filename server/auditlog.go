package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/skiffhq/skiff/internal/clock"
)

// The audit log's buffer. Requests only append their line to it, in
// memory; one goroutine writes it out every auditFlushInterval, sooner
// once half of auditBufferLimit is used, and on Close. A full buffer
// (the disk stalled for seconds under a burst) drops the entry and counts
// it (skiff_audit_entries_dropped_total, and a warning per flush that
// follows), as Kubernetes' batch audit backend does: requests, the
// fleet's heartbeats among them, never wait for the audit disk.
const (
	auditFlushInterval = 200 * time.Millisecond
	auditBufferLimit   = 1 << 20
)

// auditLog writes audit entries as JSON lines to a file rotated by size,
// through a bounded in-memory buffer (see auditBufferLimit). It is safe
// for concurrent use; a nil *auditLog logs nothing.
type auditLog struct {
	path      string
	maxBytes  int64
	maxBackup int
	limit     int
	log       *slog.Logger
	dropped   atomic.Uint64 // entries refused by a full buffer, ever

	// mu guards the buffer; it is held only to append a line or swap.
	mu      sync.Mutex
	buf     []byte
	spare   []byte
	closed  bool
	unsaid  uint64 // drops not yet warned about
	kick    chan struct{}
	stop    chan struct{}
	stopped chan struct{}

	// fmu guards the file; the flusher holds it while writing.
	fmu  sync.Mutex
	f    *os.File
	size int64
}

// openAuditLog opens (appending) the audit log at path and starts its
// flusher on clk.
func openAuditLog(path string, maxBytes int64, maxBackup int, clk clock.Clock, log *slog.Logger) (*auditLog, error) {
	return openAuditLogLimit(path, maxBytes, maxBackup, auditBufferLimit, clk, log)
}

// openAuditLogLimit is openAuditLog with a buffer of limit bytes.
func openAuditLogLimit(path string, maxBytes int64, maxBackup, limit int, clk clock.Clock, log *slog.Logger) (*auditLog, error) {
	a := &auditLog{
		path: path, maxBytes: maxBytes, maxBackup: maxBackup, limit: limit, log: log,
		kick: make(chan struct{}, 1), stop: make(chan struct{}), stopped: make(chan struct{}),
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("audit log: %w", err)
	}
	if err := a.openLocked(); err != nil {
		return nil, err
	}
	go a.flushLoop(clock.Or(clk))
	return a, nil
}

func (a *auditLog) openLocked() error {
	f, err := os.OpenFile(a.path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("audit log: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("audit log: %w", err)
	}
	a.f, a.size = f, fi.Size()
	return nil
}

// record queues e for the next flush; it never waits for the disk. When
// the buffer is full the entry is dropped and counted. After Close it
// writes e at once.
func (a *auditLog) record(e auditEntry) {
	if a == nil {
		return
	}
	b, err := json.Marshal(e)
	if err != nil {
		a.log.Error("audit log: encode entry", "err", err)
		return
	}
	b = append(b, '\n')
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		a.fmu.Lock()
		defer a.fmu.Unlock()
		a.writeLocked(b)
		return
	}
	if len(a.buf)+len(b) > a.limit {
		a.unsaid++
		a.mu.Unlock()
		a.dropped.Add(1)
		return
	}
	a.buf = append(a.buf, b...)
	half := len(a.buf) >= a.limit/2
	a.mu.Unlock()
	if half {
		select {
		case a.kick <- struct{}{}:
		default:
		}
	}
}

// Dropped returns how many entries a full buffer refused.
func (a *auditLog) Dropped() uint64 {
	if a == nil {
		return 0
	}
	return a.dropped.Load()
}

// flushLoop writes the buffer out every auditFlushInterval, when kicked,
// and a last time when Close stops it.
func (a *auditLog) flushLoop(clk clock.Clock) {
	defer close(a.stopped)
	t := clk.NewTicker(auditFlushInterval)
	defer t.Stop()
	for {
		select {
		case <-t.C():
		case <-a.kick:
		case <-a.stop:
			a.flush()
			return
		}
		a.flush()
	}
}

// flush writes what the buffer holds.
func (a *auditLog) flush() {
	a.fmu.Lock()
	defer a.fmu.Unlock()
	a.mu.Lock()
	b := a.buf
	a.buf, a.spare = a.spare[:0], nil
	unsaid := a.unsaid
	a.unsaid = 0
	a.mu.Unlock()
	if unsaid > 0 {
		a.log.Warn("audit log: buffer full, entries dropped", "dropped", unsaid)
	}
	if len(b) > 0 {
		a.writeLocked(b)
	}
	a.mu.Lock()
	if a.spare == nil && cap(b) <= a.limit {
		a.spare = b[:0]
	}
	a.mu.Unlock()
}

// writeLocked appends whole lines b to the file, rotating it before a
// line that would take it past maxBytes. a.fmu is held. A failure is
// logged and drops the lines not yet written.
func (a *auditLog) writeLocked(b []byte) {
	for len(b) > 0 {
		if a.f == nil {
			if err := a.openLocked(); err != nil {
				a.log.Error("audit log: reopen", "err", err)
				return
			}
		}
		// n: the whole lines that fit; at least one into an empty file.
		n := 0
		for n < len(b) {
			end := len(b)
			if i := bytes.IndexByte(b[n:], '\n'); i >= 0 {
				end = n + i + 1
			}
			if a.size+int64(end) > a.maxBytes && (n > 0 || a.size > 0) {
				break
			}
			n = end
		}
		if n == 0 {
			if err := a.rotateLocked(); err != nil {
				a.log.Error("audit log: rotate", "err", err)
				return
			}
			continue
		}
		w, err := a.f.Write(b[:n])
		a.size += int64(w)
		if err != nil {
			a.log.Error("audit log: write", "err", err)
			return
		}
		b = b[n:]
	}
}

// rotateLocked shifts audit.log.N-1 to .N (dropping the oldest), the
// current file to .1, and opens a new one.
func (a *auditLog) rotateLocked() error {
	if err := a.f.Close(); err != nil {
		a.log.Warn("audit log: close for rotation", "err", err)
	}
	a.f = nil
	for i := a.maxBackup; i >= 1; i-- {
		from := a.path
		if i > 1 {
			from = a.path + "." + strconv.Itoa(i-1)
		}
		if err := os.Rename(from, a.path+"."+strconv.Itoa(i)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	if a.maxBackup <= 0 {
		if err := os.Remove(a.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return a.openLocked()
}

// Close writes out what is buffered and closes the file. Entries
// recorded afterwards are written at once.
func (a *auditLog) Close() error {
	if a == nil {
		return nil
	}
	a.mu.Lock()
	already := a.closed
	a.closed = true
	a.mu.Unlock()
	if !already {
		close(a.stop)
		<-a.stopped
	}
	a.fmu.Lock()
	defer a.fmu.Unlock()
	if a.f == nil {
		return nil
	}
	err := a.f.Close()
	a.f = nil
	return err
}
