package server

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skiffhq/skiff/internal/clock"
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
	h.mustDo("POST", "/api/v1/nodes", admin, `{"apiVersion":"v1","kind":"Node","metadata":{"name":"n1"}}`, http.StatusCreated)
	h.mustDo("POST", "/api/v1/skiff/nodes/n1/heartbeat", cred, "", http.StatusNoContent)                // a beat: not logged
	h.mustDo("POST", "/api/v1/skiff/nodes/n2/heartbeat", cred, "", http.StatusForbidden)                // another node's: logged
	h.mustDo("POST", "/api/v1/skiff/nodes/n1/stats", cred, report(time.Now(), 1), http.StatusNoContent) // a usage report: not logged
	h.mustDo("POST", "/api/v1/skiff/nodes/n2/stats", cred, report(time.Now(), 1), http.StatusForbidden) // another node's: logged
	// Entries are buffered; stopping the server writes them out.
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}

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
	for _, call := range []string{"/heartbeat", "/stats"} {
		byCode := map[int]int{}
		for _, e := range entries {
			if strings.HasSuffix(e.Path, call) {
				byCode[e.Code]++
			}
		}
		if byCode[204] != 0 || byCode[403] != 1 {
			t.Errorf("%s entries by code = %v; want only the refused one (403)", call, byCode)
		}
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
	a, err := openAuditLog(path, 300, 2, clock.NewFake(time.Now()), discardLogger())
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

// TestAuditLogBuffered: requests only append to memory; the flusher
// writes on its interval (on the injected clock) and on Close.
func TestAuditLogBuffered(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.log")
	clk := clock.NewFake(time.Now())
	a, err := openAuditLog(path, 1<<20, 2, clk, discardLogger())
	if err != nil {
		t.Fatal(err)
	}
	a.record(auditEntry{Verb: "create", Resource: "pods", Name: "p1", Path: "/api/v1/pods", Code: 201})
	if b, _ := os.ReadFile(path); len(b) != 0 {
		t.Fatalf("the entry was written before a flush: %q", b)
	}
	clk.BlockUntil(1) // the flusher's ticker
	clk.Advance(auditFlushInterval)
	eventually(t, func() bool { b, _ := os.ReadFile(path); return strings.Contains(string(b), `"p1"`) })

	a.record(auditEntry{Verb: "delete", Resource: "pods", Name: "p2", Path: "/api/v1/pods/p2", Code: 200})
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	entries, _ := readAudit(t, path)
	if len(entries) != 2 || entries[1].Name != "p2" {
		t.Fatalf("after Close: %+v; want p1 and p2", entries)
	}
	// After Close an entry is written at once.
	a.record(auditEntry{Verb: "delete", Resource: "pods", Name: "p3", Path: "/api/v1/pods/p3", Code: 200})
	if entries, _ := readAudit(t, path); len(entries) != 3 {
		t.Fatalf("an entry recorded after Close is missing: %+v", entries)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestAuditLogStalledDiskDrops: while the file cannot be written (the
// flusher holds it), requests neither block nor grow memory past the
// buffer: entries beyond it are dropped and counted; the rest reach the
// file once it is written again.
func TestAuditLogStalledDiskDrops(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.log")
	a, err := openAuditLogLimit(path, 1<<20, 2, 4096, clock.NewFake(time.Now()), discardLogger())
	if err != nil {
		t.Fatal(err)
	}
	a.fmu.Lock() // a write(2) that does not return
	const writers, each = 8, 100
	var wg sync.WaitGroup
	for g := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				a.record(auditEntry{Verb: "create", Resource: "pods", Name: fmt.Sprintf("p%d-%d", g, i), Path: "/api/v1/pods", Code: 201})
			}
		}()
	}
	wg.Wait() // returns: no request waited for the stalled file
	dropped := a.Dropped()
	if dropped == 0 || dropped >= writers*each {
		t.Fatalf("dropped %d of %d entries; want some, not all (4 KiB buffer)", dropped, writers*each)
	}
	a.mu.Lock()
	if len(a.buf) > 4096 {
		t.Errorf("buffer holds %d bytes; limit 4096", len(a.buf))
	}
	a.mu.Unlock()
	a.fmu.Unlock()
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	entries, _ := readAudit(t, path)
	if uint64(len(entries))+dropped != writers*each {
		t.Errorf("%d entries written + %d dropped; want %d", len(entries), dropped, writers*each)
	}
}

// TestAuditLogConcurrentNoLoss: under concurrent load with room in the
// buffer nothing is lost, every line is whole, and rotation still keeps
// each file under its size.
func TestAuditLogConcurrentNoLoss(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a.log")
	a, err := openAuditLogLimit(path, 64<<10, 20, 1<<20, clock.NewFake(time.Now()), discardLogger())
	if err != nil {
		t.Fatal(err)
	}
	const writers, each = 8, 250
	var wg sync.WaitGroup
	for g := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				a.record(auditEntry{Verb: "create", Resource: "pods", Name: fmt.Sprintf("p%d-%d", g, i), Path: "/api/v1/pods", Code: 201})
				if i%50 == 0 {
					a.flush() // as the ticker would, racing the writers
				}
			}
		}()
	}
	wg.Wait()
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if a.Dropped() != 0 {
		t.Fatalf("dropped %d entries with room in the buffer", a.Dropped())
	}
	seen := map[string]bool{}
	for i := 20; i >= 0; i-- {
		p := path
		if i > 0 {
			p = path + "." + fmt.Sprint(i)
		}
		if _, err := os.Stat(p); err != nil {
			continue
		}
		if fi, _ := os.Stat(p); fi.Size() > 64<<10 {
			t.Errorf("%s: %d bytes; want at most 64 KiB", p, fi.Size())
		}
		entries, _ := readAudit(t, p)
		for _, e := range entries {
			seen[e.Name] = true
		}
	}
	if len(seen) != writers*each {
		t.Errorf("%d distinct entries in the files; want %d", len(seen), writers*each)
	}
}

// eventually waits (10 s at most) for cond, set by another goroutine.
func eventually(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
