package logs

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skiffhq/skiff/internal/clock"
)

func TestTailOffset(t *testing.T) {
	tests := []struct {
		content string
		n       int64
		want    string
	}{
		{"a\nb\nc\n", 2, "b\nc\n"},
		{"a\nb\nc\n", 0, ""},
		{"a\nb\nc\n", 5, "a\nb\nc\n"},
		{"a\nb\nc", 1, "c"},
		{"a\nb\nc", 2, "b\nc"},
		{"", 3, ""},
		{strings.Repeat("x", 20000) + "\n" + strings.Repeat("y", 9000) + "\n", 1, strings.Repeat("y", 9000) + "\n"},
	}
	for _, tt := range tests {
		path := filepath.Join(t.TempDir(), "l")
		os.WriteFile(path, []byte(tt.content), 0o644)
		f, _ := os.Open(path)
		off, err := tailOffset(f, tt.n)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		if got := tt.content[off:]; got != tt.want {
			t.Errorf("tail %d of %.20q = %.20q, want %.20q", tt.n, tt.content, got, tt.want)
		}
	}
}

// TestTailOffsetPast4GiB tails a sparse log of 5 GiB: offsets beyond
// 2^32 must survive on 32-bit platforms (make test-arm runs this as
// armv7, where an int offset would wrap).
func TestTailOffsetPast4GiB(t *testing.T) {
	const at = int64(5) << 30
	f, err := os.Create(filepath.Join(t.TempDir(), "big.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt([]byte("x\ny\n"), at); err != nil {
		t.Fatal(err)
	}
	off, err := tailOffset(f, 1)
	if err != nil || off != at+2 {
		t.Fatalf("tailOffset(5 GiB file, 1) = %d, %v; want %d", off, err, at+2)
	}
	var b strings.Builder
	h := &Handler{}
	if err := h.stream(context.Background(), &b, f, options{tailLines: 1, limitBytes: 1}); err != nil && !errors.Is(err, errLimit) {
		t.Fatal(err)
	}
	if b.String() != "y" {
		t.Errorf("stream(tailLines=1, limitBytes=1) of the 5 GiB file = %q; want %q", b.String(), "y")
	}
}

// pipeWriter is a ResponseWriter whose body can be read while the
// handler is still writing.
type pipeWriter struct {
	h  http.Header
	pw *io.PipeWriter
}

func (p *pipeWriter) Header() http.Header         { return p.h }
func (p *pipeWriter) Write(b []byte) (int, error) { return p.pw.Write(b) }
func (p *pipeWriter) WriteHeader(int)             {}
func (p *pipeWriter) Flush()                      {}

func TestFollowSeesAppendsAndTruncation(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.log")
	os.WriteFile(path, []byte("first\n"), 0o644)
	clk := clock.NewFake(time.Unix(0, 0))
	h := &Handler{Path: func(string, string, string, bool) (string, error) { return path, nil }, Clock: clk, AllowUnverified: true}
	pr, pw := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	req := httptest.NewRequest(http.MethodGet, "/containerLogs/ns/p/c?follow=true", nil).WithContext(ctx)
	done := make(chan struct{})
	go func() {
		h.ServeHTTP(&pipeWriter{h: http.Header{}, pw: pw}, req)
		pw.Close()
		close(done)
	}()
	read := func(want string) {
		t.Helper()
		buf := make([]byte, len(want))
		if _, err := io.ReadFull(pr, buf); err != nil || string(buf) != want {
			t.Fatalf("read %q, %v; want %q", buf, err, want)
		}
	}
	read("first\n")
	clk.BlockUntil(1) // the initial copy is done and the poll ticker set
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString("second\n")
	clk.Advance(250 * time.Millisecond)
	read("second\n")
	// copytruncate rotation: the file shrinks, the stream starts over.
	os.Truncate(path, 0)
	f.WriteString("new\n")
	f.Close()
	clk.Advance(250 * time.Millisecond)
	read("new\n")
	cancel()
	clk.Advance(250 * time.Millisecond)
	go io.Copy(io.Discard, pr)
	<-done
}

func TestHandlerRejects(t *testing.T) {
	h := &Handler{Path: func(string, string, string, bool) (string, error) { return "/nonexistent/x.log", nil }}
	for _, tt := range []struct {
		target string
		code   int
	}{
		{"/containerLogs/ns/p/c", http.StatusForbidden}, // no verified client certificate
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, tt.target, nil))
		if rec.Code != tt.code {
			t.Errorf("%s: %d, want %d", tt.target, rec.Code, tt.code)
		}
	}
	h.AllowUnverified = true
	for _, tt := range []struct {
		target string
		code   int
	}{
		{"/containerLogs/ns/p", http.StatusNotFound},
		{"/other", http.StatusNotFound},
		{"/containerLogs/ns/p/c?tailLines=-1", http.StatusBadRequest},
		{"/containerLogs/ns/p/c?follow=maybe", http.StatusBadRequest},
		{"/containerLogs/ns/p/c", http.StatusNotFound},
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, tt.target, nil))
		if rec.Code != tt.code {
			t.Errorf("%s: %d, want %d", tt.target, rec.Code, tt.code)
		}
	}
}
