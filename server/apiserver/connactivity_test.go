package apiserver

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/storage"
)

// TestWatchKeepAliveSkippedOnABusyConnection: a watch stream whose
// connection answered other requests since its last heartbeat writes no
// keep-alive (the client heard from the connection), but still sends its
// progress every bookmarkTicks heartbeats; once the connection goes quiet,
// every heartbeat writes again. Each heartbeat's BOOKMARK would carry a
// newer revision (a ConfigMap is created before each), so a keep-alive
// written when it should have been skipped shows as an older revision.
func TestWatchKeepAliveSkippedOnABusyConnection(t *testing.T) {
	h := newHarness(t)
	acts := make(chan *ConnActivity, 1)
	mux := http.NewServeMux()
	mux.HandleFunc("/api/", h.srv.ServeResource)
	hs := httptest.NewUnstartedServer(mux)
	hs.Config.ConnContext = func(ctx context.Context, _ net.Conn) context.Context {
		ctx = WithConnActivity(ctx)
		select {
		case acts <- connActivityOf(ctx):
		default:
		}
		return ctx
	}
	hs.Start()
	t.Cleanup(hs.Close)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rev := h.store.Revision()
	req, _ := http.NewRequestWithContext(ctx, "GET", hs.URL+"/api/v1/namespaces/default/pods?watch=1&allowWatchBookmarks=true&resourceVersion="+strconv.FormatInt(rev, 10), nil)
	resp, err := hs.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	conn := <-acts
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	h.clock.BlockUntil(1)

	// waitCounts waits (bounded) for the stream to have handled its
	// heartbeats: sent and skipped, as counted by the Server.
	waitCounts := func(sent, skipped uint64) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			gs, gk := h.srv.WatchKeepAlives()
			if gs == sent && gk == skipped {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("keep-alives sent %d, skipped %d; want %d and %d", gs, gk, sent, skipped)
			}
			time.Sleep(time.Millisecond)
		}
	}
	bookmarkAt := func(rev int64) string {
		return `{"type":"BOOKMARK","object":{"kind":"Pod","apiVersion":"v1","metadata":{"resourceVersion":"` + strconv.FormatInt(rev, 10) + `"}}}`
	}
	configMap := func(i int) int64 {
		t.Helper()
		if code, body := h.do("POST", "/api/v1/namespaces/default/configmaps", "application/json",
			`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c`+strconv.Itoa(i)+`"}}`); code != http.StatusCreated {
			t.Fatalf("create configmap = %d %s", code, trim(body))
		}
		return h.store.Revision()
	}

	// burst creates n ConfigMaps at once and returns the revision.
	burst := func(prefix string, n int) int64 {
		t.Helper()
		objs := make([]api.Object, n)
		for i := range objs {
			objs[i] = &api.ConfigMap{ObjectMeta: api.ObjectMeta{Name: prefix + strconv.Itoa(i), Namespace: "default"}}
		}
		for i, err := range h.store.CreateBatch(context.Background(), objs) {
			if err != nil {
				t.Fatalf("create %s%d: %v", prefix, i, err)
			}
		}
		return h.store.Revision()
	}

	// Busy: the connection answers something before every heartbeat.
	var last int64
	for i := 1; i <= bookmarkTicks; i++ {
		last = configMap(i)
		conn.note()
		h.clock.Advance(defaultHeartbeat)
		if i < bookmarkTicks {
			waitCounts(0, uint64(i))
		}
	}
	waitCounts(1, bookmarkTicks-1)
	if got := <-lines; got != bookmarkAt(last) {
		t.Fatalf("after %d heartbeats on a busy connection: %s; want one BOOKMARK, of the latest revision %d", bookmarkTicks, got, last)
	}

	// Busy, but the store moved bookmarkLag revisions past the last
	// BOOKMARK (a burst): the next heartbeat sends one, so a client
	// resuming from it is still in the watch cache.
	last = burst("burst-", bookmarkLag)
	conn.note()
	h.clock.Advance(defaultHeartbeat)
	waitCounts(2, bookmarkTicks-1)
	if got := <-lines; got != bookmarkAt(last) {
		t.Fatalf("after a burst of %d changes on a busy connection: %s; want a BOOKMARK of revision %d", bookmarkLag, got, last)
	}

	// Busy, and the store moved a whole watch cache within the
	// heartbeat (a placement): the BOOKMARK would leave the cache before
	// a client could use it, so none is sent until a heartbeat after
	// the burst.
	last = burst("flood-", storage.DefaultWatchCacheSize)
	conn.note()
	h.clock.Advance(defaultHeartbeat)
	waitCounts(2, bookmarkTicks)
	conn.note()
	h.clock.Advance(defaultHeartbeat)
	waitCounts(3, bookmarkTicks)
	if got := <-lines; got != bookmarkAt(last) {
		t.Fatalf("the heartbeat after a burst of a whole watch cache: %s; want a BOOKMARK of revision %d", got, last)
	}

	// Quiet: every heartbeat writes.
	for i := 1; i <= 2; i++ {
		last = configMap(bookmarkTicks + i)
		h.clock.Advance(defaultHeartbeat)
		waitCounts(uint64(3+i), bookmarkTicks)
		if got := <-lines; got != bookmarkAt(last) {
			t.Fatalf("heartbeat %d on a quiet connection: %s; want a BOOKMARK of revision %d", i, got, last)
		}
	}
}

// TestBookmarkDue: the rule both kinds of watch stream apply at each
// heartbeat on a busy connection.
func TestBookmarkDue(t *testing.T) {
	const c = storage.DefaultWatchCacheSize
	for _, tc := range []struct {
		name                  string
		ticks                 int
		rev, marked, prevTick int64
		want                  bool
	}{
		{"quiet", 1, 100, 90, 95, false},
		{"a minute of heartbeats", bookmarkTicks, 100, 90, 95, true},
		{"lagging, calm since the last heartbeat", 1, 10 + bookmarkLag, 10, 10 + bookmarkLag, true},
		{"lagging, moderate writes", 1, 10 + bookmarkLag, 10, 11, true},
		{"a whole cache since the last heartbeat", 1, 10 + c, 10, 10, false},
		{"a whole cache, and a minute", bookmarkTicks, 10 + c, 10, 10, true},
	} {
		if got := bookmarkDue(tc.ticks, tc.rev, tc.marked, tc.prevTick); got != tc.want {
			t.Errorf("%s: bookmarkDue(%d, %d, %d, %d) = %v; want %v", tc.name, tc.ticks, tc.rev, tc.marked, tc.prevTick, got, tc.want)
		}
	}
}
