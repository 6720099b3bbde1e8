package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/skiffhq/skiff/api"
)

// streamHandler writes lines as a watch stream, flushing after each, then
// either ends the response or, with hold, keeps it open until the client
// goes away.
func streamHandler(lines []string, hold bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		f, _ := w.(http.Flusher)
		if f != nil {
			f.Flush() // a watch answers before its first event
		}
		for _, l := range lines {
			io.WriteString(w, l+"\n")
			if f != nil {
				f.Flush()
			}
		}
		if hold {
			<-r.Context().Done()
		}
	}
}

func TestWatchDecodesEvents(t *testing.T) {
	lines := []string{
		`{"type":"ADDED","object":{"kind":"Pod","apiVersion":"v1","metadata":{"name":"a","namespace":"default","resourceVersion":"5"},"spec":{"containers":[{"name":"c","image":"nginx"}]}}}`,
		`{"type":"BOOKMARK","object":{"kind":"Pod","apiVersion":"v1","metadata":{"resourceVersion":"8"}}}`,
		// Items in a stream may omit type meta; the client fills it in.
		`{"type":"MODIFIED","object":{"metadata":{"name":"a","namespace":"default","resourceVersion":"9"},"status":{"phase":"Running"}}}`,
		`{"type":"DELETED","object":{"metadata":{"name":"a","namespace":"default","resourceVersion":"10"}}}`,
		`{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","status":"Failure","message":"too old resource version: 3 (10)","reason":"Gone","code":410}}`,
	}
	c, _ := newTestClient(t, streamHandler(lines, false))
	w, err := c.Watch(context.Background(), mustResource(t, "pods"), "", WatchOptions{ResourceVersion: "3"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if rv := w.ResourceVersion(); rv != "3" {
		t.Errorf("ResourceVersion() before any event = %q; want 3", rv)
	}
	want := []struct {
		typ, rv string
		phase   api.PodPhase
	}{
		{api.Added, "5", ""},
		{api.Modified, "9", api.PodRunning},
		{api.Deleted, "10", ""},
	}
	for i, wantEv := range want {
		ev, err := w.Next()
		if err != nil {
			t.Fatalf("Next() #%d = %v; want a %s event", i, err, wantEv.typ)
		}
		pod, ok := ev.Object.(*api.Pod)
		if !ok {
			t.Fatalf("Next() #%d object = %T; want *api.Pod", i, ev.Object)
		}
		if ev.Type != wantEv.typ || pod.ResourceVersion != wantEv.rv || pod.Status.Phase != wantEv.phase || pod.Kind != "Pod" {
			t.Errorf("Next() #%d = %s rv %q phase %q kind %q; want %s rv %q phase %q kind Pod",
				i, ev.Type, pod.ResourceVersion, pod.Status.Phase, pod.Kind, wantEv.typ, wantEv.rv, wantEv.phase)
		}
		if got := w.ResourceVersion(); got != wantEv.rv {
			t.Errorf("ResourceVersion() after #%d = %q; want %q", i, got, wantEv.rv)
		}
	}
	_, err = w.Next()
	var se *api.StatusError
	if !errors.As(err, &se) || !IsGone(err) || se.Status.Code != 410 {
		t.Fatalf("Next() on ERROR event = %v; want a 410 Gone StatusError", err)
	}
	if _, again := w.Next(); again != err {
		t.Errorf("Next() after an error = %v; want the same error %v", again, err)
	}
}

func TestWatchBookmarkAdvancesResourceVersion(t *testing.T) {
	lines := []string{
		`{"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"40"}}}`,
		`{"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"41"}}}`,
	}
	c, _ := newTestClient(t, streamHandler(lines, false))
	w, err := c.Watch(context.Background(), mustResource(t, "nodes"), "", WatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if ev, err := w.Next(); err != io.EOF {
		t.Fatalf("Next() over bookmarks only = %v, %v; want io.EOF (bookmarks are not delivered)", ev, err)
	}
	if rv := w.ResourceVersion(); rv != "41" {
		t.Errorf("ResourceVersion() = %q; want 41 from the last bookmark", rv)
	}
}

func TestWatchErrorCases(t *testing.T) {
	tests := []struct {
		name  string
		lines []string
		check func(error) bool
	}{
		{"ERROR without reason", []string{`{"type":"ERROR","object":{"kind":"Status","code":410,"message":"compacted"}}`}, IsGone},
		{"ERROR expired", []string{`{"type":"ERROR","object":{"kind":"Status","reason":"Expired","message":"expired"}}`}, IsGone},
		{"ERROR forbidden", []string{`{"type":"ERROR","object":{"kind":"Status","code":403,"reason":"Forbidden"}}`},
			func(err error) bool { return api.ReasonOf(err) == api.StatusReasonForbidden }},
		{"unknown type", []string{`{"type":"SURPRISE","object":{}}`},
			func(err error) bool { var se *api.StatusError; return err != nil && !errors.As(err, &se) }},
		{"malformed line", []string{`{"type":"ADDED","object":`, `}`},
			func(err error) bool { return err != nil && err != io.EOF }},
		{"object of wrong shape", []string{`{"type":"ADDED","object":{"metadata":"nope"}}`},
			func(err error) bool { return err != nil && err != io.EOF }},
	}
	for _, tc := range tests {
		c, _ := newTestClient(t, streamHandler(tc.lines, false))
		w, err := c.Watch(context.Background(), mustResource(t, "pods"), "prod", WatchOptions{})
		if err != nil {
			t.Fatalf("%s: Watch = %v", tc.name, err)
		}
		_, err = w.Next()
		if !tc.check(err) {
			t.Errorf("%s: Next() = %v; not the expected error", tc.name, err)
		}
		w.Close()
	}
}

func TestWatchRefusedIsStatusError(t *testing.T) {
	c, _ := newTestClient(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeStatus(w, api.NewGone("too old resource version"))
	}))
	_, err := c.Watch(context.Background(), mustResource(t, "pods"), "", WatchOptions{ResourceVersion: "1"})
	if !IsGone(err) {
		t.Errorf("Watch answered 410 = %v; want IsGone", err)
	}
}

func TestWatchCancel(t *testing.T) {
	lines := []string{`{"type":"ADDED","object":{"metadata":{"name":"a","resourceVersion":"2"}}}`}
	c, _ := newTestClient(t, streamHandler(lines, true))
	ctx, cancel := context.WithCancel(context.Background())
	w, err := c.Watch(ctx, mustResource(t, "pods"), "", WatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Next(); err != nil {
		t.Fatalf("Next() = %v; want the ADDED event", err)
	}
	cancel()
	if _, err := w.Next(); !errors.Is(err, context.Canceled) {
		t.Errorf("Next() after cancel = %v; want context.Canceled", err)
	}
	if err := w.Close(); err != nil {
		t.Errorf("Close() = %v", err)
	}
}

func TestWatchClose(t *testing.T) {
	c, _ := newTestClient(t, streamHandler(nil, true))
	w, err := c.Watch(context.Background(), mustResource(t, "pods"), "", WatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	if _, err := w.Next(); !errors.Is(err, errWatcherClosed) {
		t.Errorf("Next() after Close = %v; want errWatcherClosed", err)
	}
}

func TestWatchReadsEventFieldsInAnyOrder(t *testing.T) {
	lines := []string{
		`{"object":{"metadata":{"name":"a","resourceVersion":"2"}},"type":"ADDED"}`,
		` {"extra":[1,{"x":"}"}],"type":"MODIFIED","object":{"metadata":{"name":"a","resourceVersion":"3"}}}`,
		`{"type":"DELETED","object":{"metadata":{"name":"a","resourceVersion":"4"}},"more":"}"}`,
	}
	c, _ := newTestClient(t, streamHandler(lines, false))
	w, err := c.Watch(context.Background(), mustResource(t, "pods"), "", WatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for i, want := range []string{api.Added, api.Modified, api.Deleted} {
		ev, err := w.Next()
		if err != nil {
			t.Fatalf("event %d: Next() = %v", i, err)
		}
		p, ok := ev.Object.(*api.Pod)
		if ev.Type != want || !ok || p.Name != "a" || p.ResourceVersion != fmt.Sprint(i+2) {
			t.Errorf("event %d = %s %#v; want %s of pod a at %d", i, ev.Type, ev.Object, want, i+2)
		}
	}
	if _, err := w.Next(); err != io.EOF {
		t.Errorf("Next() at the end = %v; want io.EOF", err)
	}
}

func TestWatchRefusesEventsWithoutAnObject(t *testing.T) {
	for _, line := range []string{`{"type":"ADDED"}`, `["ADDED",{}]`, `{"type":1,"object":{}}`, `"ADDED"`} {
		c, _ := newTestClient(t, streamHandler([]string{line}, false))
		w, err := c.Watch(context.Background(), mustResource(t, "pods"), "", WatchOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if ev, err := w.Next(); err == nil || err == io.EOF {
			t.Errorf("Next() of %s = %v, %v; want an error", line, ev, err)
		}
		w.Close()
	}
}

// FuzzWatchStream feeds arbitrary bytes to a Watcher: it returns events
// with objects or an error, and never panics.
func FuzzWatchStream(f *testing.F) {
	f.Add([]byte(`{"type":"ADDED","object":{"metadata":{"name":"a","resourceVersion":"2"}}}` + "\n"))
	f.Add([]byte(`{"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"9"}}}{"type":"ERROR","object":{"code":410}}`))
	f.Add([]byte(`{"object":{"spec":{"containers":[{"name":"c"}]}},"type":"MODIFIED","x":[{}]}`))
	pods := mustResource(f, "pods")
	f.Fuzz(func(t *testing.T, data []byte) {
		w := newWatcher(context.Background(), pods, io.NopCloser(bytes.NewReader(data)), "")
		for range 64 {
			ev, err := w.Next()
			if err != nil {
				return
			}
			if ev.Object == nil {
				t.Fatalf("event %s without an object, no error", ev.Type)
			}
		}
	})
}

// BenchmarkWatchNext reads a stream of pod events as an agent's
// assignment stream does.
func BenchmarkWatchNext(b *testing.B) {
	pod := api.Pod{ObjectMeta: api.ObjectMeta{Name: "web-7d9c5-x2x9q", Namespace: "default", ResourceVersion: "12345",
		Labels: map[string]string{"app": "web", "pod-template-hash": "7d9c5"}},
		Spec: api.PodSpec{NodeName: "node-17", Containers: []api.Container{{Name: "web", Image: "skiff.test/busybox:latest",
			Command: []string{"sh", "-c", "sleep 3600"}}}}}
	obj, err := json.Marshal(&pod)
	if err != nil {
		b.Fatal(err)
	}
	line := append(append([]byte(`{"type":"MODIFIED","object":`), obj...), "}\n"...)
	stream := bytes.Repeat(line, 256)
	pods := mustResource(b, "pods")
	b.SetBytes(int64(len(line)))
	b.ReportAllocs()
	for i := 0; i < b.N; {
		w := newWatcher(context.Background(), pods, io.NopCloser(bytes.NewReader(stream)), "")
		for ; i < b.N; i++ {
			if _, err := w.Next(); err != nil {
				if err != io.EOF {
					b.Fatal(err)
				}
				break
			}
		}
	}
}

// TestWatchDropsALargeObjectBuffer: after an event larger than
// maxKeptEventBytes the Watcher keeps neither its buffer nor its
// decoder's for the stream's life, and the next event, which the old
// decoder had read ahead, comes whole.
func TestWatchDropsALargeObjectBuffer(t *testing.T) {
	big := strings.Repeat("x", 2*maxKeptEventBytes)
	lines := []string{
		`{"type":"ADDED","object":{"metadata":{"name":"big","resourceVersion":"2","annotations":{"a":"` + big + `"}}}}`,
		`{"type":"ADDED","object":{"metadata":{"name":"small","resourceVersion":"3"}}}`,
	}
	pods := mustResource(t, "pods")
	w := newWatcher(context.Background(), pods, io.NopCloser(strings.NewReader(strings.Join(lines, "\n"))), "")
	first := w.dec.dec
	ev, err := w.Next()
	if err != nil || ev.Object.(*api.Pod).Annotations["a"] != big {
		t.Fatalf("first Next() = %v, %v; want the big pod whole", ev.Object, err)
	}
	if w.dec.dec == first {
		t.Error("the decoder whose buffer held the big event is kept")
	}
	if ev, err = w.Next(); err != nil || ev.Object.(*api.Pod).Name != "small" {
		t.Fatalf("second Next() = %v, %v; want the small pod", ev.Object, err)
	}
	if c := cap(w.obj); c > maxKeptEventBytes {
		t.Errorf("after a small event the buffer holds %d bytes; want at most %d", c, maxKeptEventBytes)
	}
}
