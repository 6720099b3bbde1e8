package server

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/api/client"
	"github.com/skiffhq/skiff/internal/tunnel"
	"github.com/skiffhq/skiff/server/apiserver"
)

// openWatches sends GET WatchesPath with specs and token; it returns the
// code, and for a 200 the first line of the stream, else the body.
func (h *harness) openWatches(token string, specs ...string) (int, string) {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", h.info.URL+apiserver.WatchesPath+"?"+url.Values{"watch": specs}.Encode(), nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := h.client.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	sc.Scan()
	return resp.StatusCode, sc.Text()
}

// TestWatchesAuthorizeEachWatchRealTLS: a node's shared stream may carry
// only what the node may watch on its own: its own pods, Services and
// EndpointSlices. One refused watch refuses the stream, before anything
// is sent; anonymous callers get 401.
func TestWatchesAuthorizeEachWatchRealTLS(t *testing.T) {
	h := startHarness(t, "", nil)
	admin := h.adminToken()
	_, cred := h.join(h.joinToken(), "a", "")
	h.mustDo("POST", "/api/v1/nodes", admin, fmt.Sprintf(nodeJSON, "a"), http.StatusCreated)
	h.mustDo("POST", "/api/v1/namespaces/default/secrets", admin, fmt.Sprintf(secretJSON, "topsecret"), http.StatusCreated)
	for _, p := range []struct{ name, node string }{{"mine", "a"}, {"theirs", "b"}} {
		h.mustDo("POST", "/api/v1/namespaces/default/pods", admin,
			fmt.Sprintf(`{"metadata":{"name":%q},"spec":{"nodeName":%q,"containers":[{"name":"c","image":"busybox"}]}}`, p.name, p.node), http.StatusCreated)
	}
	own := "/api/v1/pods?fieldSelector=" + url.QueryEscape("spec.nodeName=a")
	services := "/api/v1/services?resourceVersion=0"
	slices := "/apis/discovery.k8s.io/v1/endpointslices?resourceVersion=0"

	// The node's own three: a stream whose first line is its own pod
	// (listed, as no revision was given).
	code, line := h.openWatches(cred, own, services, slices)
	var first struct {
		Watch  int
		Type   string
		Object struct{ Metadata struct{ Name string } }
	}
	if code != http.StatusOK || json.Unmarshal([]byte(line), &first) != nil || first.Watch != 0 || first.Object.Metadata.Name != "mine" {
		t.Fatalf("node a, its own watches = %d %s; want 200 and its pod mine first", code, line)
	}

	refused := []struct {
		name  string
		specs []string
	}{
		{"another node's pods", []string{"/api/v1/pods?fieldSelector=" + url.QueryEscape("spec.nodeName=b")}},
		{"every pod", []string{"/api/v1/pods"}},
		{"secrets", []string{"/api/v1/namespaces/default/secrets"}},
		{"secrets behind its own pods", []string{own, "/api/v1/secrets"}},
		{"another node's pods behind services", []string{services, "/api/v1/namespaces/default/pods?fieldSelector=" + url.QueryEscape("spec.nodeName=b")}},
		{"the token list through a path", []string{"/api/v1/skiff/tokens"}},
	}
	for _, tt := range refused {
		code, body := h.openWatches(cred, tt.specs...)
		if code != http.StatusForbidden && code != http.StatusBadRequest {
			t.Errorf("node a, %s = %d %s; want 403 (or 400), nothing streamed", tt.name, code, body)
		}
		if strings.Contains(body, "topsecret") || strings.Contains(body, "theirs") {
			t.Errorf("node a, %s: the answer names what it may not see: %s", tt.name, body)
		}
	}
	if code, body := h.openWatches("", services); code != http.StatusUnauthorized {
		t.Errorf("anonymous = %d %s; want 401", code, body)
	}
	if code, body := h.openWatches("not-a-token", services); code != http.StatusUnauthorized {
		t.Errorf("a bad token = %d %s; want 401", code, body)
	}
	// The admin may watch anything, several at once.
	if code, line := h.openWatches(admin, "/api/v1/namespaces/default/secrets", "/api/v1/pods"); code != http.StatusOK || !strings.Contains(line, `"watch":0`) {
		t.Errorf("admin = %d %s; want 200 and watch 0's secret", code, line)
	}
}

// openSharedTunnel carries token's tunnel on a shared stream, beside a
// Service watch, as an agent does, and serves handler on its exchanges.
func openSharedTunnel(t *testing.T, h *harness, token string, handler http.Handler) {
	t.Helper()
	ca, err := os.ReadFile(h.info.CAPath)
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(client.Config{Server: h.info.URL, CAData: ca, Token: token})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.CloseIdleConnections)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	mux := client.NewWatchMux(c, nil)
	go mux.Run(ctx)
	services, _ := api.LookupResource("services")
	if _, err := mux.Watch(ctx, services, client.NamespaceAll, client.WatchOptions{ResourceVersion: "0"}); err != nil {
		t.Fatal(err)
	}
	control, err := mux.OpenFeed(ctx, tunnel.Path, nil)
	if err != nil {
		t.Fatal(err)
	}
	go serveOpens(ctx, c, control, handler)
}

// TestTunnelOnSharedStreamRealTLS: a node's tunnel opens ride its shared
// stream and reach its agent; only a node credential may read them, and
// only its own node's: b reading its opens does not take a's.
func TestTunnelOnSharedStreamRealTLS(t *testing.T) {
	h := startHarness(t, "", nil)
	admin := h.adminToken()
	_, credA := h.join(h.joinToken(), "a", "")
	_, credB := h.join(h.joinToken(), "b", "")
	h.mustDo("POST", "/api/v1/nodes", admin, fmt.Sprintf(nodeJSON, "a"), http.StatusCreated)
	h.mustDo("POST", "/api/v1/namespaces/default/pods", admin, fmt.Sprintf(podOnJSON, "pa", "a", "sa"), http.StatusCreated)

	if code, body := h.openWatches(admin, tunnel.Path); code != http.StatusForbidden {
		t.Errorf("the admin reading tunnel opens = %d %s; want 403", code, body)
	}
	if code, body := h.openWatches("", tunnel.Path); code != http.StatusUnauthorized {
		t.Errorf("anonymous reading tunnel opens = %d %s; want 401", code, body)
	}
	openSharedTunnel(t, h, credB, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "log of b\n") }))
	openSharedTunnel(t, h, credA, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "log of a\n") }))
	deadline := time.Now().Add(10 * time.Second)
	for n := 0; n < 5; {
		code, body := h.do("GET", "/api/v1/namespaces/default/pods/pa/log", admin, "")
		switch {
		case code == http.StatusOK && string(body) == "log of a\n":
			n++
			continue
		case code == http.StatusOK:
			t.Fatalf("log of pa = %q; want a's, through a's tunnel", body)
		case time.Now().After(deadline):
			t.Fatalf("log of pa through a's shared stream = %d %s", code, body)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, m := h.do("GET", "/metrics", admin, ""); !strings.Contains(string(m), "skiff_agent_tunnels 2\n") || !strings.Contains(string(m), `skiff_watch_streams{kind="shared"} 2`) {
		t.Errorf("metrics lack skiff_agent_tunnels 2 and two shared streams")
	}
}
