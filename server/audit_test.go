package server

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// readAudit returns the audit log's entries.
func readAudit(t *testing.T, path string) ([]auditEntry, string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []auditEntry
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	for sc.Scan() {
		var e auditEntry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("audit line %q: %v", sc.Text(), err)
		}
		out = append(out, e)
	}
	return out, string(b)
}

func TestAuditLogRealTLS(t *testing.T) {
	h := startHarness(t, "", nil)
	admin := h.adminToken()
	secret := "pw-" + newUID()
	h.mustDo("POST", "/api/v1/namespaces/default/secrets", admin, fmt.Sprintf(`{"metadata":{"name":"db"},"stringData":{"pw":%q}}`, secret), http.StatusCreated)
	h.mustDo("GET", "/api/v1/namespaces/default/secrets/db", admin, "", http.StatusOK) // a read: not logged
	h.mustDo("DELETE", "/api/v1/namespaces/default/secrets/db", admin, "", http.StatusOK)
	h.mustDo("POST", "/api/v1/namespaces", admin, `{"metadata":{"name":"team"}}`, http.StatusCreated)
	viewer := h.serviceAccountWith(admin, "team", "alice", "RoleBinding", "view")
	h.mustDo("GET", "/api/v1/namespaces/team/secrets", viewer, "", http.StatusForbidden) // a refused read: logged
	h.mustDo("GET", "/api/v1/pods", "wrong-token-"+newUID(), "", http.StatusUnauthorized)
	_, cred := h.join(h.joinToken(), "n1", "")

	entries, raw := readAudit(t, filepath.Join(h.dir, "server", auditLogName))
	for _, leak := range []string{secret, admin, viewer, cred, h.joinToken()} {
		if strings.Contains(raw, leak) {
			t.Errorf("the audit log holds a secret value or a token: %.20q…", leak)
		}
	}
	find := func(verb, resource, name string, code int) *auditEntry {
		for i := range entries {
			e := &entries[i]
			if e.Verb == verb && e.Resource == resource && e.Name == name && e.Code == code {
				return e
			}
		}
		return nil
	}
	if e := find("create", "secrets", "", 201); e == nil || e.Identity != "admin" || e.Namespace != "default" || e.Source != "127.0.0.1" || e.Time == "" {
		t.Errorf("create secret entry = %+v; entries %+v", e, entries)
	}
	if find("delete", "secrets", "db", 200) == nil {
		t.Errorf("no delete entry; entries %+v", entries)
	}
	if find("get", "secrets", "db", 200) != nil {
		t.Errorf("a successful read was logged; entries %+v", entries)
	}
	if e := find("list", "secrets", "", 403); e == nil || e.Identity != `user "system:serviceaccount:team:alice"` {
		t.Errorf("refused list entry = %+v; entries %+v", e, entries)
	}
	if find("create", "serviceaccounts", "alice", 201) == nil && find("create", "serviceaccounts", "", 201) == nil {
		t.Errorf("no create serviceaccount entry")
	}
	unauth := false
	for _, e := range entries {
		unauth = unauth || e.Code == 401 && e.Path == "/api/v1/pods"
	}
	if !unauth {
		t.Errorf("no entry for the 401; entries %+v", entries)
	}
}

func TestAuditLogOffAndRotation(t *testing.T) {
	h := startHarnessWith(t, "", nil, func(c *Config) { c.AuditLog = AuditLogOff })
	h.mustDo("POST", "/api/v1/namespaces", h.adminToken(), `{"metadata":{"name":"x"}}`, http.StatusCreated)
	if _, err := os.Stat(filepath.Join(h.dir, "server", auditLogName)); !os.IsNotExist(err) {
		t.Errorf("--audit-log off: the file exists (%v)", err)
	}

	path := filepath.Join(t.TempDir(), "a.log")
	a, err := openAuditLog(path, 300, 2, discardLogger())
	if err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		a.record(auditEntry{Verb: "create", Resource: "pods", Name: fmt.Sprintf("p%d", i), Path: "/api/v1/pods", Code: 201})
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"a.log", "a.log.1", "a.log.2"} {
		fi, err := os.Stat(filepath.Join(filepath.Dir(path), name))
		if err != nil || fi.Size() > 300 || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v, size %d; want at most 300 bytes, mode 0600", name, err, fi.Size())
		}
	}
	if _, err := os.Stat(path + ".3"); !os.IsNotExist(err) {
		t.Errorf("a.log.3 exists; want at most 2 old files")
	}
	entries, _ := readAudit(t, path)
	if len(entries) == 0 || entries[len(entries)-1].Name != "p19" {
		t.Errorf("the current file ends with %+v; want the last entry", entries)
	}
}
