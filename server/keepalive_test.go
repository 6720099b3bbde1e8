package server

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/skiffhq/skiff/api/client"
)

// TestWatchKeepAliveRidesOnTheAgentsCalls: an agent's pod watch shares
// its HTTP/2 connection with the agent's heartbeats; while those are
// answered, the watch's heartbeat writes nothing (the server counts it
// skipped in /metrics), and once the agent is silent the next heartbeat
// writes a BOOKMARK again. A node's credential, its own watch and beats,
// over real TLS.
func TestWatchKeepAliveRidesOnTheAgentsCalls(t *testing.T) {
	h := startHarness(t, "", nil)
	admin := h.adminToken()
	_, cred := h.join(h.joinToken(), "edge-1", "")
	h.mustDo(http.MethodPost, "/api/v1/nodes", admin, `{"apiVersion":"v1","kind":"Node","metadata":{"name":"edge-1"}}`, http.StatusCreated)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c, resp, armed := h.openWatch(ctx, cred, "/api/v1/pods?watch=1&allowWatchBookmarks=true&fieldSelector=spec.nodeName%3Dedge-1&resourceVersion=1")
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	beat := func() {
		t.Helper()
		r, err := c.Do(ctx, http.MethodPost, "/api/v1/skiff/nodes/edge-1/heartbeat", nil)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, r.Body) //nolint:errcheck // drained for reuse
		r.Body.Close()
	}
	skipped := regexp.MustCompile(`(?m)^skiff_watch_keepalives_total\{result="(sent|skipped)"\} (\d+)$`)
	counts := func() (sent, skip int) {
		t.Helper()
		body := string(h.mustDo(http.MethodGet, "/metrics", admin, "", http.StatusOK))
		for _, m := range skipped.FindAllStringSubmatch(body, -1) {
			n, _ := strconv.Atoi(m[2])
			if m[1] == "sent" {
				sent = n
			} else {
				skip = n
			}
		}
		return sent, skip
	}
	waitCounts := func(sent, skip int) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			gs, gk := counts()
			if gs == sent && gk == skip {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("watch keep-alives sent %d, skipped %d; want %d and %d", gs, gk, sent, skip)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}

	// The watch's ticker is armed once its stream is open.
	h.clk.BlockUntil(armed)
	for i := 1; i <= 3; i++ {
		beat()
		h.clk.Advance(10 * time.Second)
		waitCounts(0, i)
	}
	select {
	case l := <-lines:
		t.Fatalf("the watch wrote %s while its connection answered the agent's beats", l)
	default:
	}
	// Silent: the next heartbeat writes.
	h.clk.Advance(10 * time.Second)
	select {
	case l := <-lines:
		if !strings.HasPrefix(l, `{"type":"BOOKMARK"`) {
			t.Fatalf("after a silent heartbeat the watch wrote %s; want a BOOKMARK", l)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no BOOKMARK within 10 s of a heartbeat on a silent connection")
	}
	waitCounts(1, 3)
}

// TestWatchKeepAliveForOthersEveryHeartbeat: a watch on a connection that
// carries an admin's (a browser's, kubectl's) other requests keeps every
// keep-alive: those clients may time a silent stream out per stream (the
// dashboard after 35 s).
func TestWatchKeepAliveForOthersEveryHeartbeat(t *testing.T) {
	h := startHarness(t, "", nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c, resp, armed := h.openWatch(ctx, h.adminToken(), "/api/v1/pods?watch=1&allowWatchBookmarks=true&resourceVersion=1")
	sc := bufio.NewScanner(resp.Body)
	h.clk.BlockUntil(armed)
	for i := 0; i < 2; i++ {
		r, err := c.Do(ctx, http.MethodGet, "/api/v1/namespaces", nil)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, r.Body) //nolint:errcheck // drained for reuse
		r.Body.Close()
		h.clk.Advance(10 * time.Second)
		if !sc.Scan() || !strings.HasPrefix(sc.Text(), `{"type":"BOOKMARK"`) {
			t.Fatalf("heartbeat %d on an admin's busy connection: %q; want a BOOKMARK", i, sc.Text())
		}
	}
}

// openWatch opens a watch at path with token's HTTP/2 client (closed with
// the test), and returns the client for more calls on the same
// connection, the stream, and how many waiters the fake clock has once
// the stream's heartbeat ticker is armed.
func (h *harness) openWatch(ctx context.Context, token, path string) (*client.Client, *http.Response, int) {
	h.t.Helper()
	caPEM, err := os.ReadFile(h.info.CAPath)
	if err != nil {
		h.t.Fatal(err)
	}
	c, err := client.New(client.Config{Server: h.info.URL, CAData: caPEM, Token: token})
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(c.CloseIdleConnections)
	armed := h.clk.Waiters() + 1
	resp, err := c.Do(ctx, http.MethodGet, path, nil)
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { resp.Body.Close() })
	return c, resp, armed
}
