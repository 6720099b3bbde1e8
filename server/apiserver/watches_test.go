package apiserver

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/storage"
)

// muxLine is one line of a WatchesPath stream.
type muxLine struct {
	Watch           *int            `json:"watch"`
	ResourceVersion string          `json:"resourceVersion"`
	Resume          string          `json:"resume"`
	Type            string          `json:"type"`
	Object          json.RawMessage `json:"object"`
}

// openWatches starts a WatchesPath stream of the harness for specs and
// returns a function reading its next line.
func (h *harness) openWatches(ctx context.Context, specs ...string) func() muxLine {
	h.t.Helper()
	q := url.Values{"watch": specs}
	req, _ := http.NewRequestWithContext(ctx, "GET", h.http.URL+WatchesPath+"?"+q.Encode(), nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != 200 {
		h.t.Fatalf("GET %s = %d; want 200", WatchesPath, resp.StatusCode)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	return func() muxLine {
		h.t.Helper()
		if !sc.Scan() {
			h.t.Fatalf("the stream ended: %v", sc.Err())
		}
		var l muxLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil || l.Watch == nil {
			h.t.Fatalf("bad line %q: %v", sc.Text(), err)
		}
		return l
	}
}

func objectRV(t *testing.T, raw json.RawMessage) (name, rv string) {
	t.Helper()
	var o struct {
		Metadata struct{ Name, ResourceVersion string } `json:"metadata"`
	}
	if err := json.Unmarshal(raw, &o); err != nil {
		t.Fatalf("object %s: %v", raw, err)
	}
	return o.Metadata.Name, o.Metadata.ResourceVersion
}

// TestWatchesCarrySeveralWatches: one stream carries a resumed pod
// watch, a Service watch and a ConfigMap watch that lists first; each
// event names its watch and its revision, and each watch sees only what
// it selects.
func TestWatchesCarrySeveralWatches(t *testing.T) {
	h := newHarness(t)
	pods := "/api/v1/namespaces/default/pods"
	_, b := h.do("POST", pods, "application/json", podJSON)
	_, rv := objectRV(t, b)
	h.do("POST", "/api/v1/namespaces/default/configmaps", "application/json", `{"metadata":{"name":"before"}}`)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	next := h.openWatches(ctx,
		pods+"?labelSelector=app%3Dweb&resourceVersion="+rv,
		"/api/v1/services?resourceVersion="+rv,
		"/api/v1/namespaces/default/configmaps")
	// The configmaps watch lists first: its objects carry no revision,
	// the BOOKMARK after them does.
	l := next()
	if *l.Watch != 2 || l.Type != "ADDED" || l.ResourceVersion != "" {
		t.Fatalf("first line = watch %d %s rv %q; want watch 2's ADDED without a revision", *l.Watch, l.Type, l.ResourceVersion)
	}
	if name, _ := objectRV(t, l.Object); name != "before" {
		t.Fatalf("first object = %s; want the configmap before", name)
	}
	l = next()
	if *l.Watch != 2 || l.Type != "BOOKMARK" || l.ResourceVersion == "" {
		t.Fatalf("second line = watch %d %s rv %q; want watch 2's BOOKMARK with the list's revision", *l.Watch, l.Type, l.ResourceVersion)
	}

	h.do("POST", pods, "application/json", strings.Replace(podJSON, `"app":"web"`, `"app":"other"`, 1))
	h.do("PATCH", pods+"/web", "application/merge-patch+json", `{"metadata":{"annotations":{"x":"1"}}}`)
	h.do("POST", "/api/v1/namespaces/default/services", "application/json",
		`{"metadata":{"name":"svc"},"spec":{"ports":[{"port":80}]}}`)
	h.do("POST", "/api/v1/namespaces/default/configmaps", "application/json", `{"metadata":{"name":"after"}}`)
	want := []struct {
		watch     int
		typ, name string
	}{{0, "MODIFIED", "web"}, {1, "ADDED", "svc"}, {2, "ADDED", "after"}}
	got := map[int]muxLine{}
	for len(got) < len(want) {
		l := next()
		if _, dup := got[*l.Watch]; dup {
			t.Fatalf("watch %d sent %s as well; want one event each (the other-labelled pod is not selected)", *l.Watch, l.Type)
		}
		got[*l.Watch] = l
	}
	for _, w := range want {
		l := got[w.watch]
		name, objRV := objectRV(t, l.Object)
		if l.Type != w.typ || name != w.name || l.ResourceVersion == "" || l.ResourceVersion != objRV {
			t.Errorf("watch %d: %s %s rv %q (object's %q); want %s %s with the object's revision", w.watch, l.Type, name, l.ResourceVersion, objRV, w.typ, w.name)
		}
	}
	if single, shared, watches := h.srv.WatchStreams(); single != 0 || shared != 1 || watches != 3 {
		t.Errorf("WatchStreams() = %d, %d, %d; want 0 single, 1 shared carrying 3", single, shared, watches)
	}
}

// TestWatchesOneExpiredWatchEndsAlone: a watch from a compacted revision
// gets its ERROR (410) and the others go on.
func TestWatchesOneExpiredWatchEndsAlone(t *testing.T) {
	h := newHarness(t, func(o *storage.Options) { o.CompactMinRevisions = 1; o.CompactMinAge = time.Second })
	pods := "/api/v1/namespaces/default/pods"
	for i := 0; i < 5; i++ {
		h.do("POST", pods, "application/json", strings.Replace(podJSON, `"name":"web"`, `"name":"p`+string(rune('a'+i))+`"`, 1))
	}
	h.clock.Advance(time.Minute)
	if _, err := h.store.Compact(context.Background()); err != nil {
		t.Fatal(err)
	}
	rev := h.store.Revision()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	next := h.openWatches(ctx, pods+"?resourceVersion=1", "/api/v1/services?resourceVersion="+strconv.FormatInt(rev, 10))
	l := next()
	var st api.Status
	if *l.Watch != 0 || l.Type != "ERROR" || json.Unmarshal(l.Object, &st) != nil || st.Code != 410 {
		t.Fatalf("first line = watch %d %s %s; want watch 0's ERROR with 410", *l.Watch, l.Type, l.Object)
	}
	h.do("POST", "/api/v1/namespaces/default/services", "application/json", `{"metadata":{"name":"svc"},"spec":{"ports":[{"port":80}]}}`)
	h.do("POST", pods, "application/json", strings.Replace(podJSON, `"name":"web"`, `"name":"late"`, 1))
	if l := next(); *l.Watch != 1 || l.Type != "ADDED" {
		t.Fatalf("after the ERROR: watch %d %s; want watch 1's ADDED (the ended watch sends nothing more)", *l.Watch, l.Type)
	}
	// skiff_watch_errors_total and skiff_watch_stream_ends_total: the
	// expired watch, then the stream the client closed.
	if ends, errs := h.srv.WatchStreamEnds(); errs["expired"] != 1 || errs["too_slow"] != 0 || ends["client"] != 0 {
		t.Fatalf("after the ERROR: stream ends %v, watch errors %v; want one expired watch and no stream ended", ends, errs)
	}
	cancel()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ends, _ := h.srv.WatchStreamEnds()
		if ends["client"] == 1 && ends["write"] == 0 && ends["done"] == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("stream ends after the client closed it: %v; want one, client", ends)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestWatchesRefusesBadRequests: every malformed request is a 400 (or
// 405) that watches nothing.
func TestWatchesRefusesBadRequests(t *testing.T) {
	h := newHarness(t)
	tooMany := strings.Repeat("&watch=/api/v1/pods", maxWatches+1)[1:]
	tests := []struct{ name, method, query string }{
		{"no watch", "GET", ""},
		{"too many watches", "GET", tooMany},
		{"a URL with a host", "GET", "watch=" + url.QueryEscape("https://evil/api/v1/pods")},
		{"not an API path", "GET", "watch=/healthz"},
		{"unknown resource", "GET", "watch=/api/v1/widgets"},
		{"an object", "GET", "watch=/api/v1/namespaces/default/pods/web"},
		{"a subresource", "GET", "watch=/api/v1/namespaces/default/pods/web/status"},
		{"bad revision", "GET", "watch=" + url.QueryEscape("/api/v1/pods?resourceVersion=-1")},
		{"bad selector", "GET", "watch=" + url.QueryEscape("/api/v1/pods?fieldSelector=nope%3Dx")},
		{"one bad of two", "GET", "watch=/api/v1/pods&watch=/api/v1/widgets"},
		{"POST", "POST", "watch=/api/v1/pods"},
	}
	for _, tt := range tests {
		code, b := h.do(tt.method, WatchesPath+"?"+tt.query, "", "")
		want := http.StatusBadRequest
		if tt.method != "GET" {
			want = http.StatusMethodNotAllowed
		}
		if code != want {
			t.Errorf("%s: %s ?%s = %d %s; want %d", tt.name, tt.method, tt.query, code, trim(b), want)
			continue
		}
		decodeStatus(t, b)
	}
	if single, shared, watches := h.srv.WatchStreams(); single != 0 || shared != 0 || watches != 0 {
		t.Errorf("WatchStreams() = %d, %d, %d after refusals; want nothing open", single, shared, watches)
	}
}

// fakeFeed is a Feed of lines added by the test.
type fakeFeed struct {
	mu      sync.Mutex
	lines   [][]byte
	wake    chan struct{}
	started []string // the queries it was started with
	refuse  error
}

func newFakeFeed() *fakeFeed { return &fakeFeed{wake: make(chan struct{})} }

func (f *fakeFeed) add(line string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lines = append(f.lines, []byte(line))
	close(f.wake)
	f.wake = make(chan struct{})
}

func (f *fakeFeed) StartFeed(_ *http.Request, q url.Values) (FeedReader, error) {
	if f.refuse != nil {
		return nil, f.refuse
	}
	pos, _ := strconv.Atoi(q.Get("pos"))
	f.mu.Lock()
	f.started = append(f.started, q.Encode())
	f.mu.Unlock()
	return &fakeFeedReader{f: f, pos: pos}, nil
}

type fakeFeedReader struct {
	f   *fakeFeed
	pos int
}

func (r *fakeFeedReader) Next() ([][]byte, string, <-chan struct{}) {
	r.f.mu.Lock()
	defer r.f.mu.Unlock()
	lines := r.f.lines[min(r.pos, len(r.f.lines)):]
	r.pos = len(r.f.lines)
	return lines, "pos=" + strconv.Itoa(r.pos), r.f.wake
}

// TestWatchesCarryAFeed: a feed's lines ride the stream as FEED events
// with their resume query, beside a watch; a feed that refuses refuses
// the stream.
func TestWatchesCarryAFeed(t *testing.T) {
	h := newHarness(t)
	feed := newFakeFeed()
	feed.add(`{"n":1}`)
	feed.add(`{"n":2}`)
	h.srv.feeds = map[string]Feed{"/feed": feed}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	next := h.openWatches(ctx, "/api/v1/services?resourceVersion="+strconv.FormatInt(h.store.Revision(), 10), "/feed?pos=1")
	l := next()
	if *l.Watch != 1 || l.Type != FeedEvent || string(l.Object) != `{"n":2}` || l.Resume != "pos=2" {
		t.Fatalf("first line = watch %d %s %s; want feed 1's second line (it started at pos 1)", *l.Watch, l.Type, l.Object)
	}
	feed.add(`{"n":3}`)
	h.do("POST", "/api/v1/namespaces/default/services", "application/json", `{"metadata":{"name":"svc"},"spec":{"ports":[{"port":80}]}}`)
	seen := map[int]muxLine{}
	for len(seen) < 2 {
		l := next()
		seen[*l.Watch] = l
	}
	if l := seen[1]; l.Type != FeedEvent || string(l.Object) != `{"n":3}` || l.Resume != "pos=3" {
		t.Fatalf("feed after an add: %s %s; want FEED {\"n\":3}", l.Type, l.Object)
	}
	if l := seen[0]; l.Type != "ADDED" {
		t.Fatalf("watch beside the feed: %s; want ADDED", l.Type)
	}

	feed.refuse = api.NewStatusError(http.StatusForbidden, api.StatusReasonForbidden, "no")
	code, b := h.do("GET", WatchesPath+"?"+url.Values{"watch": {"/api/v1/services", "/feed"}}.Encode(), "", "")
	if code != http.StatusForbidden {
		t.Fatalf("a feed that refuses: %d %s; want 403", code, trim(b))
	}
}
