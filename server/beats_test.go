package server

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/api/client"
	"github.com/skiffhq/skiff/internal/clock"
	"github.com/skiffhq/skiff/server/apiserver"
)

// beatStream is a shared stream opened by hand, its request body the
// heartbeats written to it.
type beatStream struct {
	stop func() // ends the stream
	code int
	body string // the answer, when not 200
	w    *io.PipeWriter
	sc   *bufio.Scanner
}

// openBeats opens a shared stream with specs by method with token.
func (h *harness) openBeats(t *testing.T, method, token string, specs ...string) *beatStream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	pr, pw := io.Pipe()
	t.Cleanup(func() { pw.Close() })
	var body io.Reader = pr
	if method == http.MethodGet {
		body = nil
	}
	req, _ := http.NewRequestWithContext(ctx, method, h.info.URL+apiserver.WatchesPath+"?"+url.Values{"watch": specs}.Encode(), body)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	tr := h.client.Transport.(*http.Transport).Clone()
	tr.ForceAttemptHTTP2 = true // the beats need HTTP/2, as agents speak
	t.Cleanup(tr.CloseIdleConnections)
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	stop := func() { cancel(); resp.Body.Close() } // a reset stream, its body left open
	bs := &beatStream{stop: stop, code: resp.StatusCode, w: pw, sc: bufio.NewScanner(resp.Body)}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		bs.body = string(b)
	}
	return bs
}

// beat writes line and returns the beat feed's next answer (watch i of
// the stream; other lines are skipped).
func (bs *beatStream) beat(t *testing.T, i int, line string) (seq uint64, code int) {
	t.Helper()
	if _, err := io.WriteString(bs.w, line); err != nil {
		t.Fatal(err)
	}
	for bs.sc.Scan() {
		var ev struct {
			Watch  int    `json:"watch"`
			Type   string `json:"type"`
			Object struct {
				Beat uint64 `json:"beat"`
				Code int    `json:"code"`
			} `json:"object"`
		}
		if err := json.Unmarshal(bs.sc.Bytes(), &ev); err != nil {
			t.Fatalf("line %q: %v", bs.sc.Bytes(), err)
		}
		if ev.Watch == i && ev.Type == apiserver.FeedEvent {
			return ev.Object.Beat, ev.Object.Code
		}
	}
	t.Fatalf("the stream ended before the answer to %q: %v", line, bs.sc.Err())
	return 0, 0
}

// clientFor is an API client of the harness's server with token.
func (h *harness) clientFor(t *testing.T, token string) *client.Client {
	t.Helper()
	ca, err := os.ReadFile(h.info.CAPath)
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(client.Config{Server: h.info.URL, CAData: ca, Token: token})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.CloseIdleConnections)
	return c
}

func beatsOf(node string) string { return BeatsPath + "?node=" + node }

// TestBeatsOnSharedStreamRealTLS: a heartbeat written to a node's shared
// stream is answered on it as the heartbeat call would be (204, 205
// while the controller's Unknown stands, 404 for no Node) and recorded
// as the call's is. Only a node's own credential beats for it (an admin
// for any); a GET cannot carry beats, a stream carries one beats feed,
// and a line that is not a heartbeat ends the reading, answered 400.
func TestBeatsOnSharedStreamRealTLS(t *testing.T) {
	clk := clock.NewFake(time.Now())
	h := startHarness(t, "", clk)
	admin := h.adminToken()
	_, cred := h.join(h.joinToken(), "edge-1", "")
	_, cred2 := h.join(h.joinToken(), "edge-2", "")
	h.mustDo(http.MethodPost, "/api/v1/nodes", admin, fmt.Sprintf(nodeJSON, "edge-1"), http.StatusCreated)
	pods := "/api/v1/pods?fieldSelector=" + url.QueryEscape("spec.nodeName=edge-1")

	refused := []struct {
		name, method, token string
		specs               []string
		want                int
	}{
		{"anonymous", http.MethodPost, "", []string{pods, beatsOf("edge-1")}, http.StatusUnauthorized},
		{"another node's credential", http.MethodPost, cred2, []string{beatsOf("edge-1")}, http.StatusForbidden},
		{"a GET", http.MethodGet, cred, []string{pods, beatsOf("edge-1")}, http.StatusBadRequest},
		{"beats twice", http.MethodPost, cred, []string{beatsOf("edge-1"), beatsOf("edge-1")}, http.StatusBadRequest},
		{"a bad node name", http.MethodPost, admin, []string{beatsOf("Bad_Name")}, http.StatusBadRequest},
		{"a PUT (no such route)", http.MethodPut, cred, []string{beatsOf("edge-1")}, http.StatusNotFound},
	}
	for _, tt := range refused {
		if bs := h.openBeats(t, tt.method, tt.token, tt.specs...); bs.code != tt.want {
			t.Errorf("%s: %d %s; want %d", tt.name, bs.code, bs.body, tt.want)
		}
	}

	lastBeat := func() time.Time {
		t.Helper()
		var u NodeUsage
		if err := json.Unmarshal(h.mustDo(http.MethodGet, "/api/v1/skiff/nodes/edge-1/usage", admin, "", http.StatusOK), &u); err != nil {
			t.Fatal(err)
		}
		if u.LastHeartbeat == nil {
			return time.Time{}
		}
		return *u.LastHeartbeat
	}
	bs := h.openBeats(t, http.MethodPost, cred, pods, beatsOf("edge-1"))
	if bs.code != http.StatusOK {
		t.Fatalf("edge-1's stream with its beats = %d %s", bs.code, bs.body)
	}
	clk.Advance(7 * time.Second)
	if seq, code := bs.beat(t, 1, "1\n"); seq != 1 || code != http.StatusNoContent {
		t.Fatalf("beat 1 answered %d %d; want 1 204", seq, code)
	}
	if at := lastBeat(); !at.Equal(clk.Now()) {
		t.Fatalf("last heartbeat of edge-1 = %v; want %v", at, clk.Now())
	}
	// Two in one write, each answered.
	if seq, code := bs.beat(t, 1, "2\n3\n"); seq != 2 || code != http.StatusNoContent {
		t.Fatalf("beat 2 answered %d %d", seq, code)
	}
	if seq, code := bs.beat(t, 1, ""); seq != 3 || code != http.StatusNoContent {
		t.Fatalf("beat 3 answered %d %d", seq, code)
	}
	unknown := `{"status":{"conditions":[{"type":"Ready","status":"Unknown","reason":"NodeStatusUnknown"}]}}`
	h.mustDoType(http.MethodPatch, "/api/v1/nodes/edge-1/status", admin, "application/strategic-merge-patch+json", unknown, http.StatusOK)
	if _, code := bs.beat(t, 1, "4\n"); code != http.StatusResetContent {
		t.Fatalf("a beat while Ready is the controller's Unknown answered %d; want 205", code)
	}
	h.mustDo(http.MethodDelete, "/api/v1/nodes/edge-1", admin, "", http.StatusOK)
	if _, code := bs.beat(t, 1, "5\n"); code != http.StatusNotFound {
		t.Fatalf("a beat for a deleted Node answered %d; want 404", code)
	}
	if seq, code := bs.beat(t, 1, "beat\n"); seq != 0 || code != http.StatusBadRequest {
		t.Fatalf("a line that is no heartbeat answered %d %d; want 0 400", seq, code)
	}

	// A line longer than any heartbeat, without its end: 400.
	bs = h.openBeats(t, http.MethodPost, admin, beatsOf("edge-2"))
	if bs.code != http.StatusOK {
		t.Fatalf("the admin beating for edge-2 = %d %s", bs.code, bs.body)
	}
	if _, code := bs.beat(t, 0, strings.Repeat("9", maxBeatLine+1)); code != http.StatusBadRequest {
		t.Fatalf("an endless line answered %d; want 400", code)
	}

	// A stream's reader of beats ends with it, its body still open.
	bs = h.openBeats(t, http.MethodPost, cred2, beatsOf("edge-2"))
	if _, code := bs.beat(t, 0, "1\n"); code != http.StatusNotFound {
		t.Fatalf("edge-2's beat answered %d; want 404 (no Node)", code)
	}
	if n := beatReaders(); n != 1 {
		t.Fatalf("%d beat readers with one stream open; want 1", n)
	}
	bs.stop()
	deadline := time.Now().Add(10 * time.Second)
	for beatReaders() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d beat readers 10 s after their streams ended", beatReaders())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// beatReaders counts the goroutines reading a stream's beats.
func beatReaders() int {
	buf := make([]byte, 1<<22)
	return strings.Count(string(buf[:runtime.Stack(buf, true)]), "server.(*beatReader).read(")
}

// TestWatchMuxBeatsRealTLS: an agent's WatchMux carries its heartbeats on
// its shared stream to the real server, which counts them.
func TestWatchMuxBeatsRealTLS(t *testing.T) {
	h := startHarness(t, "", nil)
	admin := h.adminToken()
	_, cred := h.join(h.joinToken(), "edge-1", "")
	h.mustDo(http.MethodPost, "/api/v1/nodes", admin, fmt.Sprintf(nodeJSON, "edge-1"), http.StatusCreated)
	c := h.clientFor(t, cred)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	pods, _ := api.LookupResource("pods")
	// An agent lists before it watches: its streams carry beats once
	// the server answered over HTTP/2.
	if _, _, err := c.List(ctx, pods, client.NamespaceAll, client.ListOptions{FieldSelector: "spec.nodeName=edge-1"}); err != nil {
		t.Fatal(err)
	}
	mux := client.NewWatchMux(c, nil)
	mux.EnableBeats("edge-1")
	go mux.Run(ctx)
	if _, err := mux.Watch(ctx, pods, client.NamespaceAll, client.WatchOptions{ListOptions: client.ListOptions{FieldSelector: "spec.nodeName=edge-1"}}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for n := 0; n < 3; {
		code, err := mux.Beat(ctx)
		switch {
		case err == nil && code == http.StatusNoContent:
			n++
			continue
		case err == nil:
			t.Fatalf("beat answered %d", code)
		case !errors.Is(err, client.ErrNoStreamBeats):
			t.Fatal(err)
		case time.Now().After(deadline):
			t.Fatalf("no stream carried beats in 10 s: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if m := string(h.mustDo(http.MethodGet, "/metrics", admin, "", http.StatusOK)); !strings.Contains(m, "skiff_stream_heartbeats_total 3\n") {
		t.Errorf("metrics lack skiff_stream_heartbeats_total 3")
	}
}
