// The race detector's instrumentation makes every frame larger, so the
// sizes this test bounds are a release build's: it is built without
// -race only, and make test runs it in a go test of its own.

//go:build !race

package server

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/skiffhq/skiff/server/apiserver"
)

// TestSharedStreamWaitsOnASmallStack: the handler of an agent's shared
// watch stream lives as long as the agent's connection, so the stack it
// waits on is paid by every connected agent. A goroutine's stack grows
// to what its deepest moment needed and the collector halves it only
// while the goroutine uses under a quarter of it, so what the handler
// waits under (every frame from the HTTP/2 server down to the wait)
// decides where its stack settles: under about 3.3 KB of frames it
// settles at 8 KiB, over that at 16 KiB (it was 4.9 KB and 16 KiB).
//
// The test opens streams on one HTTP/2 connection (the connection's own
// goroutines are paid once), lets the collector shrink every stack it
// can, and reads what the stacks of the process grew by, a stream. (The
// handler's stack grows past 8 KiB as it starts, as on a real server.)
func TestSharedStreamWaitsOnASmallStack(t *testing.T) {
	h := startHarness(t, "", nil)
	admin := h.adminToken()
	_, cred := h.join(h.joinToken(), "a", "")
	h.mustDo("POST", "/api/v1/nodes", admin, fmt.Sprintf(nodeJSON, "a"), http.StatusCreated)
	for i := range 3 {
		h.mustDo("POST", "/api/v1/namespaces/default/pods", admin,
			fmt.Sprintf(`{"metadata":{"name":"p%d"},"spec":{"nodeName":"a","containers":[{"name":"c","image":"busybox"}]}}`, i), http.StatusCreated)
	}
	ca, err := os.ReadFile(h.info.CAPath)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS13}, ForceAttemptHTTP2: true}
	t.Cleanup(tr.CloseIdleConnections)
	c := &http.Client{Transport: tr}
	specs := url.Values{"watch": {
		"/api/v1/pods?fieldSelector=" + url.QueryEscape("spec.nodeName=a"),
		"/api/v1/services?resourceVersion=0",
		"/apis/discovery.k8s.io/v1/endpointslices?resourceVersion=0",
	}}.Encode()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	open := func() {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, "GET", h.info.URL+apiserver.WatchesPath+"?"+specs, nil)
		req.Header.Set("Authorization", "Bearer "+cred)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if resp.ProtoMajor != 2 || resp.StatusCode != http.StatusOK {
			t.Fatalf("stream: %s %s; want HTTP/2 and 200", resp.Proto, resp.Status)
		}
		t.Cleanup(func() { resp.Body.Close() })
		// Read to the third BOOKMARK: the handler has sent its lists
		// and goes to wait.
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for marks := 0; marks < 3; {
			if !sc.Scan() {
				t.Fatalf("stream ended before its three bookmarks: %v", sc.Err())
			}
			if strings.Contains(sc.Text(), `"type":"BOOKMARK"`) {
				marks++
			}
		}
	}
	open() // the connection, and its goroutines, before the baseline
	const streams = 64
	before := settledStacks()
	for range streams {
		open()
	}
	grown := settledStacks() - before
	per := grown / streams
	t.Logf("stacks grew %d KiB for %d streams: %.1f KiB a stream", grown>>10, streams, float64(grown)/streams/1024)
	// A stream costs the handler's stack and, in this process, the
	// client's goroutine for the request (4 KiB), with what the stack
	// spans round up: 14.5 KiB measured; 22.5 with the handler at 16 KiB.
	if per > 18<<10 {
		t.Errorf("a shared stream costs %.1f KiB of stack in this process; want about 14.5 (the handler's 8 KiB, the client's 4 KiB): its handler's stack did not shrink to 8 KiB, so what it waits under outgrew a quarter of 16 KiB", float64(per)/1024)
	}
	if per < 8<<10 {
		t.Errorf("a shared stream costs %.1f KiB of stack: the handlers did not wait, or the test measured something else", float64(per)/1024)
	}
}

// settledStacks returns the stack memory in use once a few collections
// have shrunk every stack that can shrink (each halves a stack at most).
func settledStacks() uint64 {
	var ms runtime.MemStats
	for range 5 {
		runtime.GC()
	}
	runtime.ReadMemStats(&ms)
	return ms.StackInuse
}
