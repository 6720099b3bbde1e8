package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/skiffhq/skiff/server/apiserver"
)

// Audit log defaults: <data-dir>/server/audit.log, rotated at 10 MiB,
// keeping 5 old files (audit.log.1 … audit.log.5).
const (
	auditLogName          = "audit.log"
	AuditLogOff           = "off"
	DefaultAuditMaxBytes  = 10 << 20
	DefaultAuditMaxBackup = 5
)

// auditEntry is one line of the audit log. It never holds a request or
// response body, a query string or a header: no secret value and no
// token can reach it.
type auditEntry struct {
	Time        string `json:"time"`
	Identity    string `json:"identity"`
	Verb        string `json:"verb"`
	APIGroup    string `json:"apiGroup,omitempty"`
	Resource    string `json:"resource,omitempty"`
	Subresource string `json:"subresource,omitempty"`
	Namespace   string `json:"namespace,omitempty"`
	Name        string `json:"name,omitempty"`
	Path        string `json:"path"`
	Code        int    `json:"code"`
	Source      string `json:"source"`
}

// auditLog writes audit entries as JSON lines to a file rotated by size.
// It is safe for concurrent use; a nil *auditLog logs nothing.
type auditLog struct {
	path      string
	maxBytes  int64
	maxBackup int
	log       *slog.Logger

	mu   sync.Mutex
	f    *os.File
	size int64
}

// openAuditLog opens (appending) the audit log at path.
func openAuditLog(path string, maxBytes int64, maxBackup int, log *slog.Logger) (*auditLog, error) {
	a := &auditLog{path: path, maxBytes: maxBytes, maxBackup: maxBackup, log: log}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("audit log: %w", err)
	}
	if err := a.openLocked(); err != nil {
		return nil, err
	}
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

// record writes e. A failure is reported on the server log once per
// failing write and does not fail the request.
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
	defer a.mu.Unlock()
	if a.f == nil {
		if err := a.openLocked(); err != nil {
			a.log.Error("audit log: reopen", "err", err)
			return
		}
	}
	if a.size+int64(len(b)) > a.maxBytes && a.size > 0 {
		if err := a.rotateLocked(); err != nil {
			a.log.Error("audit log: rotate", "err", err)
		}
	}
	if a.f == nil {
		return
	}
	n, err := a.f.Write(b)
	a.size += int64(n)
	if err != nil {
		a.log.Error("audit log: write", "err", err)
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

// Close closes the file.
func (a *auditLog) Close() error {
	if a == nil {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.f == nil {
		return nil
	}
	err := a.f.Close()
	a.f = nil
	return err
}

// isRead reports the methods that only read.
func isRead(method string) bool {
	return method == http.MethodGet || method == http.MethodHead || method == http.MethodOptions
}

// audit records a finished request in the audit log: every write, and
// every request refused for its credentials (401) or permissions (403).
func (s *server) audit(r *http.Request, ri *requestInfo, code int, now time.Time) {
	if s.auditLog == nil || isRead(r.Method) && code != http.StatusUnauthorized && code != http.StatusForbidden {
		return
	}
	e := auditEntry{
		Time: now.UTC().Format(time.RFC3339Nano), Identity: ri.identity, Verb: ri.attrs.Verb,
		APIGroup: ri.attrs.APIGroup, Resource: ri.attrs.Resource, Subresource: ri.attrs.Subresource,
		Namespace: ri.attrs.Namespace, Name: ri.attrs.Name,
		Path: r.URL.Path, Code: code, Source: clientIP(r),
	}
	if e.Verb == "" {
		e.Verb = verbOfMethod(r.Method)
	}
	s.auditLog.record(e)
}

// verbOfMethod names the verb of a request that is not a resource
// request (join, token management).
func verbOfMethod(m string) string {
	switch m {
	case http.MethodPost:
		return apiserver.VerbCreate
	case http.MethodPut:
		return apiserver.VerbUpdate
	case http.MethodPatch:
		return apiserver.VerbPatch
	case http.MethodDelete:
		return apiserver.VerbDelete
	case http.MethodGet, http.MethodHead:
		return apiserver.VerbGet
	}
	return m
}
