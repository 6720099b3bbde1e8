package fleet

import (
	"bytes"
	"context"
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
