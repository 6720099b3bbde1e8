package main

import (
	"context"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skiffhq/skiff/api/client"
	"github.com/skiffhq/skiff/internal/clock"
)

// relistServer answers the first watch with a 410 ERROR event, so the CLI
// must list again and watch from the new version.
type relistServer struct {
	t0        time.Time
	mu        sync.Mutex
	lists     int
	watchRVs  []string
	listItems [][]string // the pod names of each successive list
}

func (s *relistServer) pod(name string) string {
	return fmt.Sprintf(`{"metadata":{"name":%q,"namespace":"default","resourceVersion":"1","creationTimestamp":%q},"spec":{"containers":[{"name":"app","image":"busybox"}]},"status":{"phase":"Pending"}}`,
		name, s.t0.Format(time.RFC3339))
}

func (s *relistServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/api/v1/namespaces/default/pods" {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	q := r.URL.Query()
	s.mu.Lock()
	if q.Get("watch") != "true" {
		i := min(s.lists, len(s.listItems)-1)
		s.lists++
		s.mu.Unlock()
		var items []string
		for _, n := range s.listItems[i] {
			items = append(items, s.pod(n))
		}
		fmt.Fprintf(w, `{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"%d"},"items":[%s]}`, 5+4*i, strings.Join(items, ","))
		return
	}
	rv := q.Get("resourceVersion")
	s.watchRVs = append(s.watchRVs, rv)
	s.mu.Unlock()
	if rv == "5" {
		fmt.Fprintln(w, `{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","status":"Failure","message":"too old resource version: 5","reason":"Expired","code":410}}`)
		return
	}
	fmt.Fprintf(w, `{"type":"ADDED","object":%s}`+"\n", s.pod("after-relist"))
	w.(http.Flusher).Flush()
	<-r.Context().Done()
}

func TestGetWatchRelistsOnGone(t *testing.T) {
	t.Parallel()
	t0 := time.Now().UTC().Truncate(time.Second)
	srv := &relistServer{t0: t0, listItems: [][]string{{"a"}, {"a", "b"}}}
	ts := httptest.NewTLSServer(srv)
	defer ts.Close()
	cfgPath := filepath.Join(t.TempDir(), "config.yaml")
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ts.Certificate().Raw})
	if err := client.WriteConfig(cfgPath, client.Config{Server: ts.URL, CAData: caPEM, Token: "t"}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errb syncBuffer
	env := &cliEnv{stdout: &out, stderr: &errb, stdin: strings.NewReader(""), getenv: func(string) string { return "" }, clock: clock.NewFake(t0.Add(time.Minute))}
	done := make(chan int, 1)
	go func() { done <- run(ctx, env, []string{"get", "pods", "-w", "--client-config", cfgPath}) }()
	waitFor(t, "the event after the relist", func() bool { return strings.Contains(out.String(), "after-relist") })
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("get -w exited %d (stderr %q); want 0", code, errb.String())
	}
	want := `NAME   READY   STATUS    RESTARTS   AGE
a      0/1     Pending   0          60s
a      0/1     Pending   0          60s
b      0/1     Pending   0          60s
after-relist   0/1     Pending   0          60s
`
	if got := out.String(); got != want {
		t.Errorf("get pods -w printed\n%s\nwant (the relisted rows, then the new one)\n%s", got, want)
	}
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if got := strings.Join(srv.watchRVs, ","); got != "5,9" {
		t.Errorf("watches started at versions %s; want 5,9 (the first list's, then the relist's)", got)
	}
}
