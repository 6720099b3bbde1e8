package server

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/skiffhq/skiff/internal/clock"
	"github.com/skiffhq/skiff/storage"
)

// watchEvent is one decoded line of a watch stream.
type watchEvent struct {
	Type   string `json:"type"`
	Object struct {
		Kind     string `json:"kind"`
		Code     int    `json:"code"`
		Reason   string `json:"reason"`
		Metadata struct {
			Name            string `json:"name"`
			ResourceVersion string `json:"resourceVersion"`
		} `json:"metadata"`
	} `json:"object"`
}

func (e watchEvent) rv() int64 {
	n, _ := strconv.ParseInt(e.Object.Metadata.ResourceVersion, 10, 64)
	return n
}

// watchStream reads a watch response line by line in the background.
type watchStream struct {
	t      testing.TB
	events chan watchEvent
	done   chan error // the reader's end: nil at EOF, else the error
	cancel context.CancelFunc
}

// openWatch starts a watch on path (which carries ?watch=true...) and
// returns once the server answered 200, that is once the store's watcher
// is registered.
func openWatch(h *harness, token, path string) *watchStream {
	h.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, h.info.URL+path, nil)
	if err != nil {
		cancel()
		h.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	// A client without a timeout: the stream is meant to stay open.
	client := &http.Client{Transport: h.client.Transport}
	resp, err := client.Do(req)
	if err != nil {
		cancel()
		h.t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		cancel()
		h.t.Fatalf("GET %s = %d; want 200", path, resp.StatusCode)
	}
	ws := &watchStream{t: h.t, events: make(chan watchEvent, 1024), done: make(chan error, 1), cancel: cancel}
	go func() {
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			if len(sc.Bytes()) == 0 {
				continue // keep-alive newline
			}
			var ev watchEvent
			if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
				ws.done <- fmt.Errorf("bad watch line %q: %w", sc.Text(), err)
				close(ws.events)
				return
			}
			ws.events <- ev
		}
		ws.done <- sc.Err()
		close(ws.events)
	}()
	h.t.Cleanup(cancel)
	return ws
}

// next returns the next event, failing the test if the stream ends or
// nothing arrives within 10 s (real I/O).
func (ws *watchStream) next() watchEvent {
	ws.t.Helper()
	select {
	case ev, ok := <-ws.events:
		if !ok {
			ws.t.Fatalf("watch stream ended early: %v", <-ws.done)
		}
		return ev
	case <-time.After(10 * time.Second):
		ws.t.Fatal("no watch event within 10s")
	}
	return watchEvent{}
}

// waitEnd waits for the stream to end, failing on any event before it.
func (ws *watchStream) waitEnd() {
	ws.t.Helper()
	for {
		select {
		case ev, ok := <-ws.events:
			if !ok {
				return
			}
			ws.t.Fatalf("event %s %s after the server stopped; want the stream to end", ev.Type, ev.Object.Metadata.Name)
		case <-time.After(15 * time.Second):
			ws.t.Fatal("watch stream did not end within 15s of the server stopping")
		}
	}
}

// drain discards events until the stream ends, failing the test if it
// has not ended within 15 s.
func (ws *watchStream) drain() {
	ws.t.Helper()
	timeout := time.After(15 * time.Second)
	for {
		select {
		case _, ok := <-ws.events:
			if !ok {
				return
			}
		case <-timeout:
			ws.t.Fatal("watch stream did not end within 15s of the server stopping")
		}
	}
}

// change is an expected watch event.
type change struct {
	typ, name string
	rv        int64 // 0: not checked (a delete answers with the object as it was)
}

// writeCM performs one configmap write with the admin token and returns
// the change its watch event must show.
func writeCM(h *harness, token, method, name, value string) change {
	h.t.Helper()
	base := "/api/v1/namespaces/default/configmaps"
	body := fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":%q},"data":{"v":%q}}`, name, value)
	switch method {
	case http.MethodPost:
		return change{"ADDED", name, rvOf(h.t, h.mustDo(method, base, token, body, http.StatusCreated))}
	case http.MethodPut:
		return change{"MODIFIED", name, rvOf(h.t, h.mustDo(method, base+"/"+name, token, body, http.StatusOK))}
	case http.MethodDelete:
		h.mustDo(method, base+"/"+name, token, "", http.StatusOK)
		return change{"DELETED", name, 0}
	}
	h.t.Fatalf("writeCM: method %s", method)
	return change{}
}

func rvOf(t testing.TB, b []byte) int64 {
	t.Helper()
	var o struct {
		Metadata struct {
			ResourceVersion string `json:"resourceVersion"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(b, &o); err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
	n, err := strconv.ParseInt(o.Metadata.ResourceVersion, 10, 64)
	if err != nil {
		t.Fatalf("resourceVersion %q: %v", o.Metadata.ResourceVersion, err)
	}
	return n
}

// expectChanges reads len(want) events and compares them in order; every
// event's resourceVersion must be above after and above the one before.
func (ws *watchStream) expectChanges(after int64, want []change) int64 {
	ws.t.Helper()
	last := after
	for i, w := range want {
		ev := ws.next()
		got := change{ev.Type, ev.Object.Metadata.Name, ev.rv()}
		if got.typ != w.typ || got.name != w.name || (w.rv != 0 && got.rv != w.rv) || got.rv <= last {
			ws.t.Fatalf("event %d = %+v; want %+v with resourceVersion above %d", i, got, w, last)
		}
		last = got.rv
	}
	return last
}

// TestWatchResumeAcrossRestartRealSQLiteTLS stops and restarts a real
// server on one data dir and resumes a watch from the last
// resourceVersion it saw: every change after that point arrives once and
// in order (those made before the stop and those after the restart), none
// from before it is replayed, and a resourceVersion compacted away while
// the server was down ends the resumed stream with a 410 ERROR event.
func TestWatchResumeAcrossRestartRealSQLiteTLS(t *testing.T) {
	dir := t.TempDir()
	clk := clock.NewFake(time.Now())
	h := startHarness(t, dir, clk)
	token := h.adminToken()
	const watchPath = "/api/v1/namespaces/default/configmaps?watch=true&resourceVersion="

	var seen []change
	for i := range 5 {
		seen = append(seen, writeCM(h, token, http.MethodPost, fmt.Sprintf("a%d", i), "1"))
	}
	ws := openWatch(h, token, watchPath+"1")
	last := ws.expectChanges(1, seen)

	// Changes the watcher will not see before the server stops.
	unseen := []change{
		writeCM(h, token, http.MethodPost, "b0", "1"),
		writeCM(h, token, http.MethodPut, "a0", "2"),
		writeCM(h, token, http.MethodDelete, "a1", ""),
	}
	if err := h.stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}
	// The stream ends; what it delivered meanwhile is dropped.
	ws.drain()

	// Restart, change more, resume from the last revision seen.
	h = startHarness(t, dir, clk)
	after := []change{
		writeCM(h, token, http.MethodPost, "c0", "1"),
		writeCM(h, token, http.MethodPut, "b0", "2"),
	}
	if after[0].rv <= unseen[1].rv {
		t.Fatalf("first write after restart got resourceVersion %d; want above %d (revisions must not go back)", after[0].rv, unseen[1].rv)
	}
	ws = openWatch(h, token, watchPath+strconv.FormatInt(last, 10))
	last = ws.expectChanges(last, append(unseen, after...))
	// Nothing more is pending: the next event is the next write.
	sentinel := writeCM(h, token, http.MethodPost, "s0", "1")
	last = ws.expectChanges(last, []change{sentinel})

	// Restart with no change in between: resuming replays nothing.
	if err := h.stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}
	ws.waitEnd()
	h = startHarness(t, dir, clk)
	ws = openWatch(h, token, watchPath+strconv.FormatInt(last, 10))
	sentinel = writeCM(h, token, http.MethodPost, "s1", "1")
	last = ws.expectChanges(last, []change{sentinel})
	if err := h.stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}
	ws.waitEnd()

	// Compact the change log while the server is down, then resume from
	// a revision that is gone: one ERROR event with a 410 Status, then the
	// stream ends. Resuming from the newest revision still works.
	compacted := compactOffline(t, filepath.Join(dir, "server", stateDBName), clk.Now().Add(time.Hour))
	if compacted < 2 {
		t.Fatalf("offline compaction reached revision %d; want at least 2", compacted)
	}
	h = startHarness(t, dir, clk)
	ws = openWatch(h, token, watchPath+"1")
	ev := ws.next()
	if ev.Type != "ERROR" || ev.Object.Kind != "Status" || ev.Object.Code != http.StatusGone || ev.Object.Reason != "Expired" {
		t.Fatalf("watch from compacted revision 1: first event %+v; want ERROR with a 410 Expired Status", ev)
	}
	ws.waitEnd()
	ws = openWatch(h, token, watchPath+strconv.FormatInt(last, 10))
	sentinel = writeCM(h, token, http.MethodPost, "s2", "1")
	ws.expectChanges(last, []change{sentinel})
}

// compactOffline opens the stopped server's store with a clock at now,
// compacts everything but the newest revision and returns the compacted
// revision.
func compactOffline(t *testing.T, path string, now time.Time) int64 {
	t.Helper()
	st, err := storage.Open(context.Background(), storage.Options{
		Path: path, Clock: clock.NewFake(now), CompactMinRevisions: 1, CompactMinAge: time.Second,
		CompactInterval: -1, CheckpointInterval: -1,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.Compact(context.Background()); err != nil {
		t.Fatalf("Compact: %v", err)
	}
	return st.CompactedRevision()
}

// TestStartupFilesNotRewrittenRealTLS is defect 6 of issue 16: every
// start rewrote server/skiff.yaml, so a server on a full disk could not
// start. Files whose content is unchanged keep their inode.
func TestStartupFilesNotRewrittenRealTLS(t *testing.T) {
	dir := t.TempDir()
	// The same port both times, as a real server has: the URL in the
	// client configs stays the same.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	listen := ln.Addr().String()
	ln.Close()
	fixed := func(c *Config) { c.Listen = listen }
	h := startHarnessWith(t, dir, nil, fixed)
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
	names := []string{clientConfigName, kubeconfigName, adminTokenName, joinTokenName, "tls/ca.crt", "tls/server.crt", "tls/server.key"}
	inodes := map[string]uint64{}
	for _, n := range names {
		fi, err := os.Stat(filepath.Join(dir, "server", n))
		if err != nil {
			t.Fatal(err)
		}
		inodes[n] = fi.Sys().(*syscall.Stat_t).Ino
	}
	startHarnessWith(t, dir, nil, fixed)
	for _, n := range names {
		fi, err := os.Stat(filepath.Join(dir, "server", n))
		if err != nil {
			t.Fatal(err)
		}
		if ino := fi.Sys().(*syscall.Stat_t).Ino; ino != inodes[n] {
			t.Errorf("server/%s was rewritten on a restart with nothing changed", n)
		}
	}
}
