package server

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
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
	// Warm and quiet: the hot path reads no store (once the node index
	// has loaded: a round of beats without reads).
	reads := func() string {
		var out []string
		for _, l := range strings.Split(string(h.mustDo(http.MethodGet, "/metrics", admin, "", http.StatusOK)), "\n") {
			if strings.HasPrefix(l, "skiff_hotpath_store_reads_total{") {
				out = append(out, l)
			}
		}
		return strings.Join(out, ";")
	}
	before := reads()
	if before == "" {
		t.Fatal("no skiff_hotpath_store_reads_total in /metrics")
	}
	deadline := time.Now().Add(10 * time.Second)
	for { // until the index has loaded: a beat reads nothing
		h.mustDo(http.MethodPost, "/api/v1/skiff/nodes/edge-1/heartbeat", cred, "", http.StatusNoContent)
		after := reads()
		if after == before {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("heartbeats still read the store after 10s: %s", after)
		}
		before = after
		time.Sleep(10 * time.Millisecond)
	}
	for i := range 20 {
		h.mustDo(http.MethodPost, "/api/v1/skiff/nodes/edge-1/heartbeat", cred, "", http.StatusNoContent)
		h.mustDo(http.MethodPost, "/api/v1/skiff/nodes/edge-1/stats", cred, report(clk.Now().Add(time.Duration(i)*time.Second), float64(i)), http.StatusNoContent)
	}
	if after := reads(); after != before {
		t.Errorf("20 heartbeats and usage reports of a warm, quiet fleet read the store: %s → %s", before, after)
	}
	h.mustDo(http.MethodDelete, "/api/v1/nodes/edge-2", admin, "", http.StatusOK)
	h.mustDo(http.MethodPost, "/api/v1/skiff/nodes/edge-2/heartbeat", cred2, "", http.StatusNotFound)
	h.mustDo(http.MethodPost, "/api/v1/skiff/nodes/edge-2/stats", cred2, report(clk.Now(), 1), http.StatusNotFound)
	h.mustDo(http.MethodPost, "/api/v1/skiff/nodes/edge-1/stats", cred2, report(clk.Now(), 1), http.StatusForbidden)

	h.mustDo(http.MethodDelete, "/api/v1/namespaces/"+auth.SystemNamespace+"/secrets/"+auth.NodeCredentialSecretPrefix+"edge-1", admin, "", http.StatusOK)
	h.mustDo(http.MethodPost, "/api/v1/skiff/nodes/edge-1/heartbeat", cred, "", http.StatusUnauthorized)
	h.mustDo(http.MethodGet, "/api/v1/pods?fieldSelector=spec.nodeName%3Dedge-1", cred, "", http.StatusUnauthorized)
	// edge-2's credential still works (its Node is gone, not its credential).
	h.mustDo(http.MethodPost, "/api/v1/skiff/nodes/edge-2/heartbeat", cred2, "", http.StatusNotFound)
}

// nodeHook feeds a nodeIndex from a store, as hotPath does.
type nodeHook struct{ x *nodeIndex }

func (h nodeHook) Changed(resource, _, name string, deleted bool, value []byte, rev int64) {
	if resource == "nodes" {
		h.x.apply(name, deleted, value, rev)
	}
}
func (h nodeHook) Missed(int64) { h.x.reset() }

// TestNodeIndex: once loaded, the index answers from memory, and a Node
// created, marked Unknown or deleted is seen by the very next lookup
// (the store's hook runs before the writer is answered); a list read
// before a change does not undo it.
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
	x := newNodeIndex()
	st.AddChangeHook(nodeHook{x})
	if err := st.Create(ctx, node("a", "")); err != nil {
		t.Fatal(err)
	}
	if _, _, ok := x.lookup("a"); ok {
		t.Fatal("lookup answered before the index loaded")
	}
	// A list read now, loaded after later changes, must not undo them.
	stale, staleRev, err := st.ListRaw(ctx, "nodes", storage.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	resync := make(chan struct{}, 1)
	resync <- struct{}{}
	done := make(chan error, 1)
	go func() { done <- runNodeIndex(ctx, st, x, resync, clock.Real{}, discardLogger()) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if e, _, ok := x.lookup("a"); ok && e {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the index did not load within 10s")
		}
		time.Sleep(time.Millisecond)
	}
	check := func(what, name string, wantExists, wantUnknown bool) {
		t.Helper()
		e, u, ok := x.lookup(name)
		if !ok || e != wantExists || u != wantUnknown {
			t.Errorf("%s: lookup(%q) = exists %v, unknown %v, ok %v; want %v, %v, true", what, name, e, u, ok, wantExists, wantUnknown)
		}
	}
	if err := st.Create(ctx, node("b", "NodeStatusUnknown")); err != nil {
		t.Fatal(err)
	}
	check("right after b's creation", "b", true, true)
	if _, err := st.Delete(ctx, "nodes", "", "a", ""); err != nil {
		t.Fatal(err)
	}
	check("right after a's deletion", "a", false, false)
	if err := x.load(stale, staleRev); err != nil {
		t.Fatal(err)
	}
	check("after loading a list older than the deletion", "a", false, false)
	check("after loading a list older than the creation", "b", true, true)
	check("never created", "zz", false, false)
	cancel()
	if err := <-done; err != nil {
		t.Errorf("runNodeIndex returned %v at cancel", err)
	}
}

// TestHeartbeatLogsAtDebug: a fleet's successful heartbeats, usage
// reports and writes of its own statuses stay out of the request log at
// info level; refused ones are logged, and so is anyone else's write of
// the same status.
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
	h.mustDo(http.MethodPost, "/api/v1/skiff/nodes/edge-1/stats", cred, report(time.Now(), 1), http.StatusNoContent)
	h.mustDo(http.MethodPost, "/api/v1/skiff/nodes/edge-2/stats", cred, report(time.Now(), 1), http.StatusForbidden)
	h.mustDo(http.MethodPost, "/api/v1/nodes", admin, `{"apiVersion":"v1","kind":"Node","metadata":{"name":"edge-2"}}`, http.StatusCreated)
	for _, pod := range []string{"mine", "theirs"} {
		node := map[string]string{"mine": "edge-1", "theirs": "edge-2"}[pod]
		h.mustDo(http.MethodPost, "/api/v1/namespaces/default/pods", admin, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"`+pod+`"},"spec":{"nodeName":"`+node+`","containers":[{"name":"c","image":"busybox"}]}}`, http.StatusCreated)
	}
	const merge, running = "application/merge-patch+json", `{"status":{"phase":"Running"}}`
	h.mustDoType(http.MethodPatch, "/api/v1/nodes/edge-1/status", cred, merge, `{"status":{"nodeInfo":{"kubeletVersion":"v1"}}}`, http.StatusOK)
	h.mustDoType(http.MethodPatch, "/api/v1/namespaces/default/pods/mine/status", cred, merge, running, http.StatusOK)
	h.mustDoType(http.MethodPatch, "/api/v1/nodes/edge-2/status", cred, merge, `{"status":{"nodeInfo":{"kubeletVersion":"v1"}}}`, http.StatusForbidden)
	h.mustDoType(http.MethodPatch, "/api/v1/namespaces/default/pods/theirs/status", cred, merge, running, http.StatusForbidden)
	h.mustDoType(http.MethodPatch, "/api/v1/namespaces/default/pods/theirs/status", admin, merge, running, http.StatusOK)
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, ok := range []string{"nodes/edge-1/heartbeat", "nodes/edge-1/stats", "nodes/edge-1/status", "pods/mine/status"} {
		if strings.Contains(out, ok) {
			t.Errorf("a successful %s was logged at info:\n%s", ok, out)
		}
	}
	for _, refused := range []string{"nodes/edge-2/heartbeat", "nodes/edge-2/stats", "nodes/edge-2/status"} {
		if !strings.Contains(out, refused) {
			t.Errorf("the refused %s was not logged:\n%s", refused, out)
		}
	}
	for _, want := range []string{`path=/api/v1/namespaces/default/pods/theirs/status code=403`, `path=/api/v1/namespaces/default/pods/theirs/status code=200`} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in the log (the node's refused write, the admin's write):\n%s", want, out)
		}
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

// TestInFlightHeartbeatSlots: with every shared slot held by slow
// requests, a heartbeat is still served (it has slots of its own) while
// another request gets 429; a heartbeat beyond its own slots waits for
// one, and gets 429 only once it has waited beatQueueWait.
func TestInFlightHeartbeatSlots(t *testing.T) {
	clk := clock.NewFake(time.Now())
	f := newInFlightHarness(8, clk, "write", "beat")
	serve, block := f.serve, f.block
	block(http.MethodPatch, "/api/v1/nodes/edge-1/status?block=write", 8)
	if code := serve(http.MethodPatch, "/api/v1/nodes/edge-2/status"); code != http.StatusTooManyRequests {
		t.Errorf("a ninth status write = %d; want 429 at once", code)
	}
	if code := serve(http.MethodPost, "/api/v1/skiff/nodes/edge-2/heartbeat"); code != http.StatusNoContent {
		t.Errorf("a heartbeat with the shared slots full = %d; want 204", code)
	}
	block(http.MethodPost, "/api/v1/skiff/nodes/edge-3/heartbeat?block=beat", 2) // 8/4 heartbeat slots

	// Beyond its slots a heartbeat waits; the slot a finished one frees
	// serves it.
	waited := make(chan int, 1)
	go func() { waited <- serve(http.MethodPost, "/api/v1/skiff/nodes/edge-4/heartbeat") }()
	clk.BlockUntil(1)
	select {
	case code := <-waited:
		t.Fatalf("a heartbeat beyond its slots answered %d at once; want it to wait for a slot", code)
	default:
	}
	f.release("beat")
	if code := <-waited; code != http.StatusNoContent {
		t.Fatalf("the waiting heartbeat = %d once a slot freed; want 204", code)
	}

	// The slot it used is free again; fill it, and the next waits out
	// beatQueueWait and is refused.
	block(http.MethodPost, "/api/v1/skiff/nodes/edge-5/heartbeat?block=beat", 1)
	late := make(chan int, 1)
	go func() { late <- serve(http.MethodPost, "/api/v1/skiff/nodes/edge-6/heartbeat") }()
	clk.BlockUntil(1)
	clk.Advance(beatQueueWait)
	if code := <-late; code != http.StatusTooManyRequests {
		t.Errorf("a heartbeat that waited %v for a slot = %d; want 429", beatQueueWait, code)
	}
	// Not a heartbeat: a GET, or a longer path.
	if isHeartbeat(httptest.NewRequest(http.MethodGet, "/api/v1/skiff/nodes/a/heartbeat", nil)) ||
		isHeartbeat(httptest.NewRequest(http.MethodPost, "/api/v1/skiff/nodes/a/b/heartbeat", nil)) {
		t.Error("isHeartbeat accepted a request that is not the heartbeat call")
	}
	f.finish()
}

// TestRestartedServerPreloadsCredentials: a restarted server has every
// node's credential and Node in memory before the first request, so a fleet's
// reconnect reads none from the store (each was a read and a decode per
// node while 10,000 agents came back at once).
func TestRestartedServerPreloadsCredentials(t *testing.T) {
	dir := t.TempDir()
	clk := clock.NewFake(time.Now())
	h := startHarness(t, dir, clk)
	_, cred := h.join(h.joinToken(), "edge-1", "")
	h.mustDo(http.MethodPost, "/api/v1/nodes", h.adminToken(), `{"apiVersion":"v1","kind":"Node","metadata":{"name":"edge-1"}}`, http.StatusCreated)
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
	var log syncBuffer
	h2 := startHarnessWith(t, dir, clk, func(c *Config) { c.Logger = slog.New(slog.NewTextHandler(&log, nil)) })
	// Loaded before Ready, so before any agent could connect.
	if !strings.Contains(log.String(), `msg="node index preloaded" nodes=1`) {
		t.Errorf("the restarted server's log lacks the node index preload:\n%s", log.String())
	}
	h2.mustDo(http.MethodPost, "/api/v1/skiff/nodes/edge-1/heartbeat", cred, "", http.StatusNoContent)
	lines := map[string]string{}
	for _, l := range strings.Split(string(h2.mustDo(http.MethodGet, "/metrics", h2.adminToken(), "", http.StatusOK)), "\n") {
		for _, check := range []string{"credential", "node"} {
			if strings.HasPrefix(l, `skiff_hotpath_store_reads_total{check="`+check+`"}`) {
				lines[check] = l
			}
		}
	}
	// The node index too is loaded before the server listens, not by a
	// loop that races the fleet's first heartbeats.
	for _, check := range []string{"credential", "node"} {
		if !strings.HasSuffix(lines[check], " 0") {
			t.Errorf("after the restart: %q; want no %s read from the store", lines[check], check)
		}
	}
	// A credential not preloaded (a node joined after) still works.
	_, cred2 := h2.join(h2.joinToken(), "edge-2", "")
	h2.mustDo(http.MethodPost, "/api/v1/nodes", h2.adminToken(), `{"apiVersion":"v1","kind":"Node","metadata":{"name":"edge-2"}}`, http.StatusCreated)
	h2.mustDo(http.MethodPost, "/api/v1/skiff/nodes/edge-2/heartbeat", cred2, "", http.StatusNoContent)
	h2.mustDo(http.MethodPost, "/api/v1/skiff/nodes/edge-1/heartbeat", cred2, "", http.StatusForbidden)
}
