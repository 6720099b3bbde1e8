package server

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/skiffhq/skiff/internal/clock"
)

// TestInFlightPodStatusSlots: the agents' pod status writes have slots of
// their own. With those full another one waits for a slot rather than
// taking a shared one, so other requests are still served; the slot a
// finished write frees serves it; one that waits podStatusQueueWait is
// refused with a 429.
func TestInFlightPodStatusSlots(t *testing.T) {
	clk := clock.NewFake(time.Now())
	f := newInFlightHarness(8, clk, "1")
	serve, block := f.serve, f.block
	if n := podStatusSlots(8); n != 2 {
		t.Fatalf("podStatusSlots(8) = %d; want a quarter of the limit, 2", n)
	}
	block(http.MethodPut, "/api/v1/namespaces/default/pods/a/status?block=1", 1)
	block(http.MethodPatch, "/api/v1/namespaces/default/pods/b/status?block=1", 1)

	waited := make(chan int, 1)
	go func() { waited <- serve(http.MethodPut, "/api/v1/namespaces/default/pods/c/status") }()
	clk.BlockUntil(1)
	select {
	case code := <-waited:
		t.Fatalf("a status write beyond its slots answered %d at once; want it to wait", code)
	default:
	}
	// The shared slots are all free: other requests, and the same pod's
	// own writes that are not status writes, are served meanwhile.
	for _, path := range []string{"/api/v1/namespaces/default/pods", "/api/v1/namespaces/default/pods/c"} {
		if code := serve(http.MethodGet, path); code != http.StatusNoContent {
			t.Errorf("GET %s with the status slots full = %d; want 204", path, code)
		}
	}
	if code := serve(http.MethodPut, "/api/v1/namespaces/default/pods/c"); code != http.StatusNoContent {
		t.Errorf("a pod update (not its status) with the status slots full = %d; want 204", code)
	}
	f.release("1")
	if code := <-waited; code != http.StatusNoContent {
		t.Fatalf("the waiting status write = %d once a slot freed; want 204", code)
	}

	block(http.MethodPut, "/api/v1/namespaces/default/pods/d/status?block=1", 1)
	late := make(chan int, 1)
	go func() { late <- serve(http.MethodPut, "/api/v1/namespaces/default/pods/e/status") }()
	clk.BlockUntil(1)
	clk.Advance(podStatusQueueWait)
	if code := <-late; code != http.StatusTooManyRequests {
		t.Errorf("a status write that waited %v = %d; want 429", podStatusQueueWait, code)
	}
	f.finish()
}

// inFlightHarness serves requests through limitInFlight with a handler
// that holds each request whose ?block= names one of its lanes until that
// lane releases it.
type inFlightHarness struct {
	h       http.Handler
	entered chan struct{}
	lanes   map[string]chan struct{}
	wg      sync.WaitGroup
}

func newInFlightHarness(limit int, clk clock.Clock, lanes ...string) *inFlightHarness {
	f := &inFlightHarness{entered: make(chan struct{}, 16), lanes: make(map[string]chan struct{})}
	for _, l := range lanes {
		f.lanes[l] = make(chan struct{})
	}
	f.h = limitInFlight(limit, clk)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if lane, ok := f.lanes[r.URL.Query().Get("block")]; ok {
			f.entered <- struct{}{}
			<-lane
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	return f
}

// serve answers one request and returns its status code.
func (f *inFlightHarness) serve(method, path string) int {
	rec := httptest.NewRecorder()
	f.h.ServeHTTP(rec, httptest.NewRequest(method, path, nil))
	return rec.Code
}

// block starts n requests that hold their slots, returning once each
// has entered the handler.
func (f *inFlightHarness) block(method, path string, n int) {
	for range n {
		f.wg.Add(1)
		go func() { defer f.wg.Done(); f.serve(method, path) }()
		<-f.entered
	}
}

// release lets one held request of lane finish.
func (f *inFlightHarness) release(lane string) { f.lanes[lane] <- struct{}{} }

// finish releases every held request and waits for them.
func (f *inFlightHarness) finish() {
	for _, lane := range f.lanes {
		close(lane)
	}
	f.wg.Wait()
}

func TestIsPodStatusWrite(t *testing.T) {
	for _, tc := range []struct {
		method, path string
		want         bool
	}{
		{http.MethodPut, "/api/v1/namespaces/default/pods/web-1/status", true},
		{http.MethodPatch, "/api/v1/namespaces/kube-system/pods/web-1/status", true},
		{http.MethodGet, "/api/v1/namespaces/default/pods/web-1/status", false},
		{http.MethodPost, "/api/v1/namespaces/default/pods/web-1/status", false},
		{http.MethodPut, "/api/v1/namespaces/default/pods/web-1", false},
		{http.MethodPut, "/api/v1/namespaces/default/pods/web-1/status/x", false},
		{http.MethodPut, "/api/v1/namespaces/default/pods//status", false},
		{http.MethodPut, "/api/v1/namespaces//pods/web-1/status", false},
		{http.MethodPut, "/api/v1/nodes/edge-1/status", false},
		{http.MethodPut, "/api/v1/namespaces/default/services/web/status", false},
		{http.MethodPut, "/apis/apps/v1/namespaces/default/deployments/web/status", false},
	} {
		if got := isPodStatusWrite(httptest.NewRequest(tc.method, tc.path, nil)); got != tc.want {
			t.Errorf("isPodStatusWrite(%s %s) = %v; want %v", tc.method, tc.path, got, tc.want)
		}
	}
}

// TestInFlightPodStatusQueueBounded: past podStatusMaxWaiting writes
// served or waiting, another is refused at once rather than queued.
func TestInFlightPodStatusQueueBounded(t *testing.T) {
	defer func(n int64) { podStatusMaxWaiting = n }(podStatusMaxWaiting)
	podStatusMaxWaiting = 3
	clk := clock.NewFake(time.Now())
	release := make(chan struct{})
	entered := make(chan struct{}, 4)
	h := limitInFlight(8, clk)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		entered <- struct{}{}
		<-release
		w.WriteHeader(http.StatusNoContent)
	}))
	codes := make(chan int, 4)
	serve := func(name string) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodPut, "/api/v1/namespaces/default/pods/"+name+"/status", nil))
		codes <- rec.Code
	}
	go serve("a")
	go serve("b")
	<-entered
	<-entered
	go serve("c") // the third waits for a slot
	clk.BlockUntil(1)
	serve("d") // the fourth is past the bound
	if code := <-codes; code != http.StatusTooManyRequests {
		t.Fatalf("a status write past %d served or waiting = %d; want 429 at once", podStatusMaxWaiting, code)
	}
	close(release)
	for range 3 {
		if code := <-codes; code != http.StatusNoContent {
			t.Errorf("a queued status write = %d; want 204", code)
		}
	}
}
