package apiserver

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// flushRecorder counts what a handler writes between its flushes.
type flushRecorder struct {
	http.ResponseWriter
	mu      sync.Mutex
	pending int // written since the last flush
	most    int // the most pending at a flush or a write
	flushes int
}

func (f *flushRecorder) Write(p []byte) (int, error) {
	f.mu.Lock()
	f.pending += len(p)
	f.most = max(f.most, f.pending)
	f.mu.Unlock()
	return f.ResponseWriter.Write(p)
}

func (f *flushRecorder) FlushError() error {
	f.mu.Lock()
	f.pending = 0
	f.flushes++
	f.mu.Unlock()
	return http.NewResponseController(f.ResponseWriter).Flush()
}

func (f *flushRecorder) figures() (most, flushes int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.most, f.flushes
}

// TestWatchesFlushEveryFrameCap: the shared stream hands HTTP/2 at most
// frameCap bytes between flushes (so no DATA frame larger, and the
// connection's framer keeps no larger buffer), for a feed line of
// 10 KB and for a burst of watch events alike, and what arrives is
// whole.
func TestWatchesFlushEveryFrameCap(t *testing.T) {
	h := newHarness(t)
	feed := newFakeFeed()
	big := `{"peers":"` + strings.Repeat("p", 10_000) + `"}`
	feed.add(big)
	h.srv.feeds = map[string]Feed{"/feed": feed}
	rec := &flushRecorder{}
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec.ResponseWriter = w
		h.srv.ServeWatches(rec, r)
	}))
	defer hs.Close()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rv := strconv.FormatInt(h.store.Revision(), 10)
	q := url.Values{"watch": {"/api/v1/services?resourceVersion=" + rv, "/feed"}}
	req, _ := http.NewRequestWithContext(ctx, "GET", hs.URL+WatchesPath+"?"+q.Encode(), nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	next := func() muxLine {
		t.Helper()
		if !sc.Scan() {
			t.Fatalf("the stream ended: %v", sc.Err())
		}
		var l muxLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil || l.Watch == nil {
			t.Fatalf("bad line %.200q: %v", sc.Text(), err)
		}
		return l
	}
	if l := next(); *l.Watch != 1 || string(l.Object) != big {
		t.Fatalf("first line: watch %d, %d bytes; want the feed's %d-byte line whole", *l.Watch, len(l.Object), len(big))
	}
	// A burst: the watch's events are pumped in one turn.
	for i := range 12 {
		h.do("POST", "/api/v1/namespaces/default/services", "application/json",
			`{"metadata":{"name":"svc-`+strconv.Itoa(i)+`","labels":{"pad":"`+strings.Repeat("x", 60)+`"}},"spec":{"ports":[{"port":80}]}}`)
	}
	for i := range 12 {
		if l := next(); *l.Watch != 0 || l.Type != "ADDED" {
			t.Fatalf("event %d: watch %d %s; want the services watch's ADDED", i, *l.Watch, l.Type)
		}
	}
	// A frame's 9-byte header and its data in the framer's 1,792-byte
	// size class.
	const most1792 = 1792 - 9
	most, flushes := rec.figures()
	if most > most1792 {
		t.Errorf("the stream wrote %d bytes between two flushes; want at most %d", most, most1792)
	}
	if want := len(big)/most1792 + 12; flushes < want {
		t.Errorf("%d flushes for a %d-byte line and 12 events; want at least %d", flushes, len(big), want)
	}
}
