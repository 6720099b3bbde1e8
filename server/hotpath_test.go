package server

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/internal/clock"
	"github.com/skiffhq/skiff/server/auth"
	"github.com/skiffhq/skiff/storage"
)

// TestHotPathRevocationAcrossCache: a node credential deleted through
// the API (not through auth.Tokens) is refused on the node's very next
// request, however warm the cache and however little time passed; a
// deleted Node's next heartbeat is a 404.
func TestHotPathRevocationAcrossCache(t *testing.T) {
	clk := clock.NewFake(time.Now())
	h := startHarness(t, "", clk)
	admin := h.adminToken()
	_, cred := h.join(h.joinToken(), "edge-1", "")
	_, cred2 := h.join(h.joinToken(), "edge-2", "")
	for _, n := range []string{"edge-1", "edge-2"} {
		h.mustDo(http.MethodPost, "/api/v1/nodes", admin, `{"apiVersion":"v1","kind":"Node","metadata":{"name":"`+n+`"}}`, http.StatusCreated)
	}
	for range 5 { // warm: from memory once the feeds caught up
		h.mustDo(http.MethodPost, "/api/v1/skiff/nodes/edge-1/heartbeat", cred, "", http.StatusNoContent)
		h.mustDo(http.MethodPost, "/api/v1/skiff/nodes/edge-2/heartbeat", cred2, "", http.StatusNoContent)
	}
	h.mustDo(http.MethodDelete, "/api/v1/nodes/edge-2", admin, "", http.StatusOK)
	h.mustDo(http.MethodPost, "/api/v1/skiff/nodes/edge-2/heartbeat", cred2, "", http.StatusNotFound)

	h.mustDo(http.MethodDelete, "/api/v1/namespaces/"+auth.SystemNamespace+"/secrets/"+auth.NodeCredentialSecretPrefix+"edge-1", admin, "", http.StatusOK)
	h.mustDo(http.MethodPost, "/api/v1/skiff/nodes/edge-1/heartbeat", cred, "", http.StatusUnauthorized)
	h.mustDo(http.MethodGet, "/api/v1/pods?fieldSelector=spec.nodeName%3Dedge-1", cred, "", http.StatusUnauthorized)
	// edge-2's credential still works (its Node is gone, not its credential).
	h.mustDo(http.MethodPost, "/api/v1/skiff/nodes/edge-2/heartbeat", cred2, "", http.StatusNotFound)
}

// TestNodeIndex: the index answers from memory only while it has applied
// every Node change the store counted: a Node created or deleted is seen
// by the next lookup (ok=false sends the caller to the store until the
// feed catches up), and the controller's Unknown shows.
func TestNodeIndex(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st, err := storage.Open(ctx, storage.Options{Path: filepath.Join(t.TempDir(), "state.db"), CompactInterval: -1, CheckpointInterval: -1, ReserveBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	node := func(name, reason string) *api.Node {
		n := &api.Node{ObjectMeta: api.ObjectMeta{Name: name}}
		n.Kind, n.APIVersion = "Node", "v1"
		if reason != "" {
			n.Status.Conditions = []api.NodeCondition{{Type: api.NodeReady, Status: api.ConditionUnknown, Reason: reason}}
		}
		return n
	}
	if err := st.Create(ctx, node("a", "")); err != nil {
		t.Fatal(err)
	}
	s := &server{store: st, clk: clock.Real{}, log: discardLogger()}
	x := newNodeIndex()
	cur := func() int64 { return st.ResourceRevision("nodes") }
	if _, _, ok := x.lookup("a", cur()); ok {
		t.Fatal("lookup answered before the index synced")
	}
	done := make(chan error, 1)
	go func() { done <- s.runNodeIndex(ctx, x) }()
	await := func(what string, f func() bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for !f() {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within 10s", what)
			}
			time.Sleep(time.Millisecond)
		}
	}
	await("synced", func() bool { e, _, ok := x.lookup("a", cur()); return ok && e })

	if err := st.Create(ctx, node("b", "NodeStatusUnknown")); err != nil {
		t.Fatal(err)
	}
	// At once: either the feed already applied it, or the caller is
	// told to read the store. Never "b does not exist".
	if e, _, ok := x.lookup("b", cur()); ok && !e {
		t.Fatal("b reported missing right after its creation")
	}
	await("b", func() bool { e, u, ok := x.lookup("b", cur()); return ok && e && u })
	if _, err := st.Delete(ctx, "nodes", "", "a", ""); err != nil {
		t.Fatal(err)
	}
	if e, _, ok := x.lookup("a", cur()); ok && e {
		t.Fatal("a reported present right after its deletion")
	}
	await("a deleted", func() bool { e, _, ok := x.lookup("a", cur()); return ok && !e })
	cancel()
	if err := <-done; err != nil {
		t.Errorf("runNodeIndex returned %v at cancel", err)
	}
}

// TestHeartbeatLogsAtDebug: a fleet's successful heartbeats stay out of
// the request log at info level; a refused one is logged.
func TestHeartbeatLogsAtDebug(t *testing.T) {
	var buf syncBuffer
	h := startHarnessWith(t, "", nil, func(c *Config) {
		c.Logger = slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo}))
	})
	admin := h.adminToken()
	_, cred := h.join(h.joinToken(), "edge-1", "")
	h.mustDo(http.MethodPost, "/api/v1/nodes", admin, `{"apiVersion":"v1","kind":"Node","metadata":{"name":"edge-1"}}`, http.StatusCreated)
	h.mustDo(http.MethodPost, "/api/v1/skiff/nodes/edge-1/heartbeat", cred, "", http.StatusNoContent)
	h.mustDo(http.MethodPost, "/api/v1/skiff/nodes/edge-2/heartbeat", cred, "", http.StatusForbidden)
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	if strings.Contains(out, "nodes/edge-1/heartbeat") {
		t.Errorf("a successful heartbeat was logged at info:\n%s", out)
	}
	if !strings.Contains(out, "nodes/edge-2/heartbeat") {
		t.Errorf("the refused heartbeat was not logged:\n%s", out)
	}
	if !strings.Contains(out, "path=/api/v1/nodes") {
		t.Errorf("the Node create was not logged:\n%s", out)
	}
}

// syncBuffer is a bytes.Buffer safe for concurrent writers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
