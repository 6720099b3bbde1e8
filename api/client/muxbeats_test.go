package client

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/server/apiserver"
)

// beatsFeed is the server's beats feed as a fake: it answers each line
// of the stream's body 204, unless silent, and records what it read.
type beatsFeed struct {
	silent atomic.Bool

	mu    sync.Mutex
	nodes []string // the node of each stream started
	seqs  []string // every heartbeat read, in order
}

func (f *beatsFeed) StartFeed(r *http.Request, q url.Values) (apiserver.FeedReader, error) {
	if r.Method != http.MethodPost {
		return nil, api.NewBadRequest("beats need a POST")
	}
	f.mu.Lock()
	f.nodes = append(f.nodes, q.Get("node"))
	f.mu.Unlock()
	rd := &beatsReader{wake: make(chan struct{}, 1)}
	go func() {
		sc := bufio.NewScanner(r.Body)
		for sc.Scan() {
			f.mu.Lock()
			f.seqs = append(f.seqs, sc.Text())
			f.mu.Unlock()
			if f.silent.Load() {
				continue
			}
			rd.mu.Lock()
			rd.lines = append(rd.lines, []byte(fmt.Sprintf(`{"beat":%s,"code":204}`, sc.Text())))
			rd.mu.Unlock()
			select {
			case rd.wake <- struct{}{}:
			default:
			}
		}
	}()
	return rd, nil
}

func (f *beatsFeed) read() (nodes, seqs []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.nodes), slices.Clone(f.seqs)
}

type beatsReader struct {
	wake  chan struct{}
	mu    sync.Mutex
	lines [][]byte
}

func (r *beatsReader) Next() ([][]byte, string, <-chan struct{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	lines := r.lines
	r.lines = nil
	return lines, "", r.wake
}

// beatWhenCarried beats until a stream carries the beats, for up to a
// (real) minute: the stream opens over a real connection.
func beatWhenCarried(t *testing.T, m *WatchMux) int {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		code, err := m.Beat(context.Background())
		if err == nil {
			return code
		}
		if !errors.Is(err, ErrNoStreamBeats) || time.Now().After(deadline) {
			t.Fatalf("Beat() = %v", err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestWatchMuxCarriesBeats: with beats enabled, the stream is a POST
// whose body carries the node's heartbeats, each answered on the stream,
// beside the watches, which go on as before.
func TestWatchMuxCarriesBeats(t *testing.T) {
	feed := &beatsFeed{}
	ms := newMuxServerOn(t, true, map[string]apiserver.Feed{BeatsPath: feed})
	m, _ := startMux(t, ms.c)
	m.EnableBeats("edge-1")
	services, _ := api.LookupResource("services")
	answered(t, ms)
	rv := ms.create(t, "services", fmt.Sprintf(muxService, "first"))
	w, err := m.Watch(context.Background(), services, NamespaceAll, WatchOptions{ResourceVersion: rv})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for range 3 {
		if code := beatWhenCarried(t, m); code != http.StatusNoContent {
			t.Fatalf("beat answered %d", code)
		}
	}
	nodes, seqs := feed.read()
	if !slices.Equal(nodes, []string{"edge-1"}) || !slices.Equal(seqs, []string{"1", "2", "3"}) {
		t.Fatalf("the server read beats %v of nodes %v; want 1 2 3 of edge-1", seqs, nodes)
	}
	ms.create(t, "services", fmt.Sprintf(muxService, "web"))
	if name, _ := nextName(t, w); name != "web" {
		t.Fatalf("watch beside the beats: %s; want web", name)
	}
}

// TestWatchMuxBeatsFallBackOnAnOlderServer: a server that answers the
// POST 405 gets the stream as a GET, without beats, and Beat says so;
// the watches are carried as before.
func TestWatchMuxBeatsFallBackOnAnOlderServer(t *testing.T) {
	ms := newMuxServerOn(t, true, map[string]apiserver.Feed{BeatsPath: &beatsFeed{}})
	ms.noPost.Store(true)
	m, _ := startMux(t, ms.c)
	m.EnableBeats("edge-1")
	services, _ := api.LookupResource("services")
	answered(t, ms)
	rv := ms.create(t, "services", fmt.Sprintf(muxService, "first"))
	w, err := m.Watch(context.Background(), services, NamespaceAll, WatchOptions{ResourceVersion: rv})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	ms.create(t, "services", fmt.Sprintf(muxService, "web"))
	if name, _ := nextName(t, w); name != "web" {
		t.Fatalf("watch after the POST was refused: %s; want web", name)
	}
	if _, err := m.Beat(context.Background()); !errors.Is(err, ErrNoStreamBeats) {
		t.Fatalf("Beat() facing an older server = %v; want ErrNoStreamBeats", err)
	}
	if _, shared, _ := ms.api.WatchStreams(); shared != 1 || !m.Shared() {
		t.Fatalf("%d shared streams (mux shared %v); want the watches on one", shared, m.Shared())
	}
}

// TestWatchMuxBeatUnanswered: a heartbeat the server does not answer
// within the client timeout fails, and the stream is opened again.
func TestWatchMuxBeatUnanswered(t *testing.T) {
	feed := &beatsFeed{}
	ms := newMuxServerOn(t, true, map[string]apiserver.Feed{BeatsPath: feed})
	m, clk := startMux(t, ms.c)
	m.EnableBeats("edge-1")
	services, _ := api.LookupResource("services")
	answered(t, ms)
	rv := ms.create(t, "services", fmt.Sprintf(muxService, "first"))
	w, err := m.Watch(context.Background(), services, NamespaceAll, WatchOptions{ResourceVersion: rv})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	beatWhenCarried(t, m)
	feed.silent.Store(true)
	opened := ms.opened.Load()
	errc := make(chan error, 1)
	go func() {
		_, err := m.Beat(context.Background())
		errc <- err
	}()
	clk.BlockUntil(1) // the beat's wait for its answer
	clk.Advance(ms.c.timeout)
	select {
	case err := <-errc:
		if !errors.Is(err, ErrNoStreamBeats) {
			t.Fatalf("an unanswered Beat() = %v; want ErrNoStreamBeats", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("an unanswered beat did not give up at the client timeout")
	}
	deadline := time.Now().Add(time.Minute)
	for ms.opened.Load() == opened {
		if time.Now().After(deadline) {
			t.Fatal("the stream of the unanswered beat was not opened again")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// answered makes the client hear its server once (as an agent's lists
// and registration do before it opens its stream): the streams carry
// beats once the server answered over HTTP/2.
func answered(t *testing.T, ms *muxServer) {
	t.Helper()
	services, _ := api.LookupResource("services")
	if _, _, err := ms.c.List(context.Background(), services, NamespaceAll, ListOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestWatchMuxNoBeatsOverHTTP1: over HTTP/1 (a proxy that speaks no
// HTTP/2) the stream is a GET without beats, which go as requests: an
// HTTP/1 server reads a request's body before it answers, and a POST of
// beats would hang.
func TestWatchMuxNoBeatsOverHTTP1(t *testing.T) {
	ms := newMuxServerOn(t, false, map[string]apiserver.Feed{BeatsPath: &beatsFeed{}})
	m, _ := startMux(t, ms.c)
	m.EnableBeats("edge-1")
	services, _ := api.LookupResource("services")
	answered(t, ms)
	rv := ms.create(t, "services", fmt.Sprintf(muxService, "first"))
	w, err := m.Watch(context.Background(), services, NamespaceAll, WatchOptions{ResourceVersion: rv})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	ms.create(t, "services", fmt.Sprintf(muxService, "web"))
	if name, _ := nextName(t, w); name != "web" {
		t.Fatalf("watch over HTTP/1: %s; want web", name)
	}
	if _, err := m.Beat(context.Background()); !errors.Is(err, ErrNoStreamBeats) {
		t.Fatalf("Beat() over HTTP/1 = %v; want ErrNoStreamBeats", err)
	}
}
