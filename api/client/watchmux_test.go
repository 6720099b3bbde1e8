package client

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/internal/clock"
	"github.com/skiffhq/skiff/server/apiserver"
	"github.com/skiffhq/skiff/storage"
)

// muxServer is a real API server (no authorization) on a real store
// behind TLS, counting the WatchesPath streams opened.
type muxServer struct {
	store  *storage.Store
	clk    *clock.Fake // the server's and the store's
	api    *apiserver.Server
	c      *Client
	opened atomic.Int64
	noMux  atomic.Bool // answer WatchesPath 404, as an older server
	close  func()      // cuts every connection
}

func newMuxServer(t *testing.T, opts ...func(*storage.Options)) *muxServer {
	return newMuxServerFeeds(t, nil, opts...)
}

func newMuxServerFeeds(t *testing.T, feeds map[string]apiserver.Feed, opts ...func(*storage.Options)) *muxServer {
	t.Helper()
	ctx := context.Background()
	fc := clock.NewFake(time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC))
	so := storage.Options{Path: filepath.Join(t.TempDir(), "state.db"), Clock: fc, CompactInterval: -1, CheckpointInterval: -1}
	for _, o := range opts {
		o(&so)
	}
	st, err := storage.Open(ctx, so)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := apiserver.New(apiserver.Config{Store: st, Clock: fc, Feeds: feeds})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Bootstrap(ctx); err != nil {
		t.Fatal(err)
	}
	ms := &muxServer{store: st, clk: fc, api: srv}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == WatchesPath {
			if ms.noMux.Load() {
				srv.ServeResource(w, r) // what an older server does: 404
				return
			}
			ms.opened.Add(1)
			srv.ServeWatches(w, r)
			return
		}
		srv.ServeResource(w, r)
	})
	c, ts := newTestClient(t, h)
	ms.c, ms.close = c, ts.CloseClientConnections
	t.Cleanup(func() { ts.Close(); st.Close() })
	return ms
}

// create stores obj (a JSON object of namespaced resource res, in
// default) through the API server's handler in this process, not
// through the client: a test that cuts the client's connection writes
// while the mux is away, and a write on the cut connection could fail.
// It returns the object's resourceVersion.
func (ms *muxServer) create(t *testing.T, res, obj string) string {
	t.Helper()
	rec := httptest.NewRecorder()
	ms.api.ServeResource(rec, httptest.NewRequest("POST", "/api/v1/namespaces/default/"+res, strings.NewReader(obj)))
	var out struct {
		Metadata struct{ ResourceVersion string } `json:"metadata"`
	}
	if rec.Code != http.StatusCreated || json.Unmarshal(rec.Body.Bytes(), &out) != nil {
		t.Fatalf("create %s: %d %s", res, rec.Code, rec.Body)
	}
	return out.Metadata.ResourceVersion
}

const muxPod = `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"%s","namespace":"default"},"spec":{"nodeName":"%s","containers":[{"name":"c","image":"busybox"}]}}`
const muxService = `{"apiVersion":"v1","kind":"Service","metadata":{"name":"%s","namespace":"default"},"spec":{"ports":[{"port":80}]}}`

// nextName returns the name of w's next event, failing the test after a
// (real) minute: the events are due at once.
func nextName(t *testing.T, w *Watcher) (string, string) {
	t.Helper()
	type result struct {
		ev  api.WatchEvent
		err error
	}
	ch := make(chan result, 1)
	go func() { ev, err := w.Next(); ch <- result{ev, err} }()
	select {
	case r := <-ch:
		if r.err != nil {
			t.Fatalf("Next() = %v", r.err)
		}
		return r.ev.Object.(api.Object).GetObjectMeta().Name, r.ev.Type
	case <-time.After(time.Minute):
		t.Fatal("no event within a minute")
	}
	return "", ""
}

func startMux(t *testing.T, c *Client) (*WatchMux, *clock.Fake) {
	t.Helper()
	clk := clock.NewFake(time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC))
	m := NewWatchMux(c, clk)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { m.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return m, clk
}

// TestWatchMuxCarriesWatchesOnOneStream: a node's pod watch and a
// Service watch share one stream, each gets what it selects, and a
// break of the connection is resumed from each watch's revision: what
// happened meanwhile arrives once, and the watches never hear of it.
func TestWatchMuxCarriesWatchesOnOneStream(t *testing.T) {
	ms := newMuxServer(t)
	m, clk := startMux(t, ms.c)
	rv := ms.create(t, "pods", fmt.Sprintf(muxPod, "first", "a"))
	ctx := context.Background()
	pods, _ := api.LookupResource("pods")
	services, _ := api.LookupResource("services")
	pw, err := m.Watch(ctx, pods, NamespaceAll, WatchOptions{ListOptions: ListOptions{FieldSelector: "spec.nodeName=a"}, ResourceVersion: rv})
	if err != nil {
		t.Fatal(err)
	}
	defer pw.Close()
	sw, err := m.Watch(ctx, services, NamespaceAll, WatchOptions{ResourceVersion: rv})
	if err != nil {
		t.Fatal(err)
	}
	defer sw.Close()
	ms.create(t, "pods", fmt.Sprintf(muxPod, "other", "b"))
	ms.create(t, "pods", fmt.Sprintf(muxPod, "mine", "a"))
	ms.create(t, "services", fmt.Sprintf(muxService, "svc"))
	if name, typ := nextName(t, pw); name != "mine" || typ != api.Added {
		t.Fatalf("pod watch: %s %s; want ADDED mine (not node b's pod)", typ, name)
	}
	if name, _ := nextName(t, sw); name != "svc" {
		t.Fatalf("service watch: %s; want svc", name)
	}
	if _, shared, watches := ms.api.WatchStreams(); shared != 1 || watches != 2 {
		t.Fatalf("server: %d shared streams carrying %d watches; want 1 carrying 2", shared, watches)
	}
	opened := ms.opened.Load()
	if opened > 2 {
		t.Errorf("the stream was opened %d times for two watches; want at most 2", opened)
	}

	// Cut the connection; write while the mux backs off.
	ms.close()
	clk.BlockUntil(1) // the backoff's timer
	ms.create(t, "pods", fmt.Sprintf(muxPod, "during", "a"))
	ms.create(t, "services", fmt.Sprintf(muxService, "svc2"))
	clk.Advance(time.Minute)
	if name, _ := nextName(t, pw); name != "during" {
		t.Fatalf("pod watch after the break: %s; want during", name)
	}
	if name, _ := nextName(t, sw); name != "svc2" {
		t.Fatalf("service watch after the break: %s; want svc2", name)
	}
	ms.create(t, "pods", fmt.Sprintf(muxPod, "after", "a"))
	if name, _ := nextName(t, pw); name != "after" {
		t.Fatalf("pod watch: %s; want after (nothing twice)", name)
	}
	if got := ms.opened.Load(); got != opened+1 {
		t.Errorf("the stream was opened %d times after one break; want %d", got, opened+1)
	}
}

// TestWatchMuxEndsOnlyTheWatchTheServerEnds: a revision compacted away
// ends its own watch with 410; the other watch goes on, and a watch
// that ends on the client's side (context, Close) ends alone too.
func TestWatchMuxEndsOnlyTheWatchTheServerEnds(t *testing.T) {
	ms := newMuxServer(t, func(o *storage.Options) { o.CompactMinRevisions = 1; o.CompactMinAge = time.Second })
	m, _ := startMux(t, ms.c)
	for i := range 5 {
		ms.create(t, "pods", fmt.Sprintf(muxPod, fmt.Sprint("p", i), "a"))
	}
	ms.clk.Advance(time.Minute)
	if _, err := ms.store.Compact(context.Background()); err != nil {
		t.Fatal(err)
	}
	rv := fmt.Sprint(ms.store.Revision())
	pods, _ := api.LookupResource("pods")
	services, _ := api.LookupResource("services")
	ctx := context.Background()
	sw, _ := m.Watch(ctx, services, NamespaceAll, WatchOptions{ResourceVersion: rv})
	defer sw.Close()
	old, _ := m.Watch(ctx, pods, NamespaceAll, WatchOptions{ResourceVersion: "1"})
	if _, err := old.Next(); !IsGone(err) {
		t.Fatalf("watch from a compacted revision: Next() = %v; want 410", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	gone, _ := m.Watch(cctx, pods, NamespaceAll, WatchOptions{ResourceVersion: rv})
	cancel()
	if _, err := gone.Next(); !errors.Is(err, context.Canceled) {
		t.Fatalf("watch whose context ended: Next() = %v; want context.Canceled", err)
	}
	ms.create(t, "services", fmt.Sprintf(muxService, "svc"))
	if name, _ := nextName(t, sw); name != "svc" {
		t.Fatalf("service watch after the others ended: %s; want svc", name)
	}
}

// TestWatchMuxFallsBackToOwnStreams: facing a server without the
// endpoint, the live watches end with an error and the next ones get
// streams of their own.
func TestWatchMuxFallsBackToOwnStreams(t *testing.T) {
	ms := newMuxServer(t)
	ms.noMux.Store(true)
	m, _ := startMux(t, ms.c)
	rv := ms.create(t, "services", fmt.Sprintf(muxService, "first"))
	services, _ := api.LookupResource("services")
	w, _ := m.Watch(context.Background(), services, NamespaceAll, WatchOptions{ResourceVersion: rv})
	if _, err := w.Next(); !errors.Is(err, errMuxDirect) {
		t.Fatalf("Next() facing an older server = %v; want errMuxDirect", err)
	}
	w, err := m.Watch(context.Background(), services, NamespaceAll, WatchOptions{ResourceVersion: rv})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	ms.create(t, "services", fmt.Sprintf(muxService, "second"))
	if name, _ := nextName(t, w); name != "second" {
		t.Fatalf("watch on its own stream: %s; want second", name)
	}
	if single, shared, _ := ms.api.WatchStreams(); single != 1 || shared != 0 {
		t.Fatalf("server: %d single and %d shared streams; want the watch on its own", single, shared)
	}
}

// FuzzReadMuxEvent: no line of a stream panics the reader, and what it
// accepts has a watch index.
func FuzzReadMuxEvent(f *testing.F) {
	f.Add(`{"watch":0,"resourceVersion":"4","type":"ADDED","object":{"kind":"Pod"}}`)
	f.Add(`{"watch":1,"type":"ERROR","object":{"kind":"Status","code":410}}`)
	f.Add(`{"watch":-1}`)
	f.Add(`{"watch":1e9,"type":3}`)
	f.Add(`[]`)
	f.Fuzz(func(t *testing.T, line string) {
		d := jsontext.NewDecoder(strings.NewReader(line), watchJSON...)
		i, _, _, _, err := readMuxEvent(d, nil)
		if err == nil && (i < -1 || i > 255) {
			t.Fatalf("readMuxEvent(%q) accepted watch %d", line, i)
		}
	})
}

// countFeed is a Feed whose lines are {"n":1}, {"n":2}, ...: a stream
// starts after ?after=N, and resumes after the last it handed out.
type countFeed struct {
	mu      sync.Mutex
	n       int
	wake    chan struct{}
	started []string
}

func (f *countFeed) add() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n++
	close(f.wake)
	f.wake = make(chan struct{})
}

func (f *countFeed) StartFeed(_ *http.Request, q url.Values) (apiserver.FeedReader, error) {
	after, _ := strconv.Atoi(q.Get("after"))
	f.mu.Lock()
	f.started = append(f.started, q.Encode())
	f.mu.Unlock()
	return &countReader{f: f, at: after}, nil
}

type countReader struct {
	f  *countFeed
	at int
}

func (r *countReader) Next() ([][]byte, string, <-chan struct{}) {
	r.f.mu.Lock()
	defer r.f.mu.Unlock()
	var lines [][]byte
	for ; r.at < r.f.n; r.at++ {
		lines = append(lines, []byte(fmt.Sprintf(`{"n":%d}`, r.at+1)))
	}
	return lines, "after=" + strconv.Itoa(r.at), r.f.wake
}

// TestWatchMuxCarriesAFeed: a feed's lines are read as from its own
// GET, beside a watch, and a cut stream resumes the feed where the
// server said: the line written during the cut arrives once.
func TestWatchMuxCarriesAFeed(t *testing.T) {
	feed := &countFeed{wake: make(chan struct{})}
	feed.add()
	ms := newMuxServerFeeds(t, map[string]apiserver.Feed{"/feed": feed})
	m, clk := startMux(t, ms.c)
	services, _ := api.LookupResource("services")
	w, _ := m.Watch(context.Background(), services, NamespaceAll, WatchOptions{ResourceVersion: fmt.Sprint(ms.store.Revision())})
	defer w.Close()
	body, err := m.OpenFeed(context.Background(), "/feed", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer body.Close()
	lines := bufio.NewScanner(body)
	next := func() string {
		t.Helper()
		if !lines.Scan() {
			t.Fatalf("feed ended: %v", lines.Err())
		}
		return lines.Text()
	}
	if l := next(); l != `{"n":1}` {
		t.Fatalf("first line %s; want {\"n\":1}", l)
	}
	feed.add()
	if l := next(); l != `{"n":2}` {
		t.Fatalf("second line %s; want {\"n\":2}", l)
	}
	ms.close()
	clk.BlockUntil(1)
	feed.add()
	clk.Advance(time.Minute)
	if l := next(); l != `{"n":3}` {
		t.Fatalf("after the cut: %s; want {\"n\":3} (once)", l)
	}
	feed.mu.Lock()
	started := feed.started
	feed.mu.Unlock()
	if last := started[len(started)-1]; last != "after=2" {
		t.Fatalf("the feed resumed with %q (all: %q); want after=2", last, started)
	}
	ms.create(t, "services", fmt.Sprintf(muxService, "svc"))
	if name, _ := nextName(t, w); name != "svc" {
		t.Fatalf("the watch beside the feed: %s; want svc", name)
	}
}

// TestWatchMuxCarriedSince: a watch on the mux says when the stream that
// carries it was accepted, on the mux's clock; not carried while the mux
// waits to open it again after a break; and the time of the new stream
// after. A watch on a stream of its own is carried from Watch's return.
func TestWatchMuxCarriedSince(t *testing.T) {
	ms := newMuxServer(t)
	m, clk := startMux(t, ms.c)
	rv := ms.create(t, "pods", fmt.Sprintf(muxPod, "first", "a"))
	pods, _ := api.LookupResource("pods")
	opts := WatchOptions{ListOptions: ListOptions{FieldSelector: "spec.nodeName=a"}, ResourceVersion: rv}
	w, err := m.Watch(context.Background(), pods, NamespaceAll, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	ms.create(t, "pods", fmt.Sprintf(muxPod, "mine", "a"))
	nextName(t, w) // the stream carries it now
	first, ok := w.CarriedSince()
	if !ok || !first.Equal(clk.Now()) {
		t.Fatalf("CarriedSince() = %v, %v; want the mux clock's %v, true", first, ok, clk.Now())
	}

	ms.close()
	clk.BlockUntil(1) // the backoff's timer: no stream now
	if at, ok := w.CarriedSince(); ok {
		t.Fatalf("CarriedSince() during the backoff = %v, true; want false", at)
	}
	clk.Advance(time.Minute)
	ms.create(t, "pods", fmt.Sprintf(muxPod, "after", "a"))
	nextName(t, w)
	if at, ok := w.CarriedSince(); !ok || !at.After(first) {
		t.Fatalf("CarriedSince() after the break = %v, %v; want after %v, true", at, ok, first)
	}

	own, err := ms.c.Watch(context.Background(), pods, NamespaceAll, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer own.Close()
	if at, ok := own.CarriedSince(); !ok || !at.IsZero() {
		t.Errorf("a watch on its own stream: CarriedSince() = %v, %v; want the zero time, true", at, ok)
	}
}
