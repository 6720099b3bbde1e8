package fleet

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestKeepStall: a stalled restart keeps the simulator's goroutines and,
// when the server's pprof address is known, the server's goroutines and
// heap as that server answered them; a profile the server fails to give
// is named in the progress, not kept.
func TestKeepStall(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/goroutine", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("debug") != "1" {
			http.Error(w, "want debug=1", http.StatusBadRequest)
			return
		}
		io.WriteString(w, "goroutine profile: total 3\n")
	})
	mux.HandleFunc("/debug/pprof/heap", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no heap here", http.StatusInternalServerError)
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()

	var progress bytes.Buffer
	dir := t.TempDir()
	r := &run{cfg: Config{Dir: dir, ServerPprof: strings.TrimPrefix(srv.URL, "http://"), Progress: &progress}}
	kept := r.keepStall(context.Background(), "restart-2", "stalled")
	want := []string{filepath.Join(dir, "restart-2-simulator-goroutines.txt"), filepath.Join(dir, "restart-2-server-goroutines.txt")}
	if strings.Join(kept, " ") != strings.Join(want, " ") {
		t.Fatalf("kept %q; want %q", kept, want)
	}
	own, err := os.ReadFile(want[0])
	if err != nil || !strings.Contains(string(own), "TestKeepStall") {
		t.Errorf("the simulator's goroutines (%v) do not name the test's own goroutine:\n%.500s", err, own)
	}
	if b, err := os.ReadFile(want[1]); err != nil || string(b) != "goroutine profile: total 3\n" {
		t.Errorf("the server's goroutines = %q, %v; want what it served", b, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "restart-2-server-heap.pb.gz")); !os.IsNotExist(err) {
		t.Errorf("a heap the server refused was written (stat: %v)", err)
	}
	if !strings.Contains(progress.String(), "500 Internal Server Error") {
		t.Errorf("progress %q does not say the heap was refused", progress.String())
	}

	// Without the server's address only the simulator's own are kept.
	r.cfg.ServerPprof = ""
	if kept := r.keepStall(context.Background(), "restart-3", "stalled"); len(kept) != 1 || filepath.Base(kept[0]) != "restart-3-simulator-goroutines.txt" {
		t.Errorf("without the server's address kept %q; want only the simulator's goroutines", kept)
	}
}

// TestOwnContext: an agent's own context keeps the fleet context's
// values, ends with the cause the fleet's ended with, and ending it alone
// leaves the fleet's running.
func TestOwnContext(t *testing.T) {
	type key struct{}
	parent, cancel := context.WithCancelCause(context.WithValue(context.Background(), key{}, "fleet"))
	ctx, stop := ownContext(parent)
	if ctx.Value(key{}) != "fleet" {
		t.Fatalf("value %v; want the fleet context's", ctx.Value(key{}))
	}
	if ctx.Err() != nil {
		t.Fatalf("a new agent's context ended: %v", ctx.Err())
	}
	why := errors.New("the run ended")
	cancel(why)
	<-ctx.Done()
	if context.Cause(ctx) != why {
		t.Errorf("cause %v; want the fleet's %v", context.Cause(ctx), why)
	}
	stop()

	parent2, cancel2 := context.WithCancel(context.Background())
	defer cancel2()
	ctx2, stop2 := ownContext(parent2)
	stop2()
	if ctx2.Err() == nil || parent2.Err() != nil {
		t.Errorf("after stop: agent's %v, fleet's %v; want the agent's ended alone", ctx2.Err(), parent2.Err())
	}
}
