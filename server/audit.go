package server

import (
	"net/http"
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

// isRead reports the methods that only read.
func isRead(method string) bool {
	return method == http.MethodGet || method == http.MethodHead || method == http.MethodOptions
}

// audit records a finished request in the audit log: every write, and
// every request refused for its credentials (401) or permissions (403).
// A node's successful lightweight heartbeat or usage report is not a
// write (it touches no stored object) and is not logged: at 10 000
// agents they would be 1 667 lines a second, rotating the file away
// every minute.
func (s *server) audit(r *http.Request, ri *requestInfo, code int, now time.Time) {
	refused := code == http.StatusUnauthorized || code == http.StatusForbidden
	if s.auditLog == nil || isRead(r.Method) && !refused || !refused && code < 300 && isNodeReport(r) {
		return
	}
	e := auditEntry{
		Time: now.UTC().Format(time.RFC3339Nano), Identity: ri.who(), Verb: ri.attrs.Verb,
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
