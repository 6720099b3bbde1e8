package server

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/api/client"
	"github.com/skiffhq/skiff/internal/tunnel"
)

// TestTunnelOnlyAsItselfRealTLS checks who may open a tunnel and that a
// node's tunnel carries only requests for that node's pods, whatever the
// node puts in its request.
func TestTunnelOnlyAsItselfRealTLS(t *testing.T) {
	h := startHarness(t, "", nil)
	admin := h.adminToken()
	_, credA := h.join(h.joinToken(), "a", "")
	_, credB := h.join(h.joinToken(), "b", "")
	for _, n := range []string{"a", "b"} {
		h.mustDo("POST", "/api/v1/nodes", admin, fmt.Sprintf(nodeJSON, n), http.StatusCreated)
	}
	h.mustDo("POST", "/api/v1/namespaces/default/pods", admin, fmt.Sprintf(podOnJSON, "pa", "a", "sa"), http.StatusCreated)
	h.mustDo("POST", "/api/v1/namespaces/default/pods", admin, fmt.Sprintf(podOnJSON, "pb", "b", "sb"), http.StatusCreated)
	ca, err := os.ReadFile(h.info.CAPath)
	if err != nil {
		t.Fatal(err)
	}
	dial := func(token, path string) error {
		sess, err := tunnel.Dial(context.Background(), tunnel.DialConfig{Server: h.info.URL + path, CAData: ca, Token: token})
		if err == nil {
			sess.Close()
		}
		return err
	}
	for _, tc := range []struct {
		name, token string
		want        int
	}{
		{"no credential", "", http.StatusUnauthorized},
		{"wrong credential", credB + "x", http.StatusUnauthorized},
		{"admin", admin, http.StatusForbidden},
	} {
		var refused *tunnel.RefusedError
		if err := dial(tc.token, ""); !errors.As(err, &refused) || refused.Code != tc.want {
			t.Errorf("tunnel as %s: %v; want refused with %d", tc.name, err, tc.want)
		}
	}
	if code, _ := h.do("GET", tunnel.Path, credA, ""); code != http.StatusBadRequest {
		t.Errorf("tunnel request without Upgrade = %d; want 400", code)
	}

	// Node a opens its tunnel, and claims to be b in every way it can
	// besides its credential.
	sess, err := tunnel.Dial(context.Background(), tunnel.DialConfig{Server: h.info.URL, CAData: ca, Token: credA})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var seen []string
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.URL.Path)
		mu.Unlock()
		fmt.Fprint(w, "log of a\n")
	})}
	go srv.Serve(sess)
	defer sess.Close()

	deadline := time.Now().Add(10 * time.Second)
	for {
		code, body := h.do("GET", "/api/v1/namespaces/default/pods/pa/log", admin, "")
		if code == http.StatusOK && string(body) == "log of a\n" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("log of pa through a's tunnel = %d %s", code, body)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if code, body := h.do("GET", "/api/v1/namespaces/default/pods/pb/log", admin, ""); code == http.StatusOK {
		t.Fatalf("log of pb (node b) = 200 %q; a's tunnel must not serve b's pods", body)
	}
	code, body := h.do("GET", "/api/v1/namespaces/default/pods/pb/exec?command=true&stdout=true", admin, "")
	if st := statusOf(t, body); code != http.StatusServiceUnavailable || !strings.Contains(st.Message, "node b has no tunnel") {
		t.Errorf("exec in pb without b's tunnel = %d %q; want 503 naming node b", code, st.Message)
	}
	if _, m := h.do("GET", "/metrics", admin, ""); !strings.Contains(string(m), "skiff_agent_tunnels 1\n") {
		t.Errorf("metrics lack skiff_agent_tunnels 1:\n%s", m)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, p := range seen {
		if !strings.HasPrefix(p, tunnel.LogsPrefix+"default/pa/") {
			t.Errorf("a's tunnel received %s", p)
		}
	}
}

// TestStreamAuthorizationRealTLS: a node may not exec into, attach to or
// port-forward to any pod, its own included; a plain GET without the
// WebSocket protocol is told what to use.
func TestStreamAuthorizationRealTLS(t *testing.T) {
	h := startHarness(t, "", nil)
	admin := h.adminToken()
	_, credA := h.join(h.joinToken(), "a", "")
	h.mustDo("POST", "/api/v1/nodes", admin, fmt.Sprintf(nodeJSON, "a"), http.StatusCreated)
	h.mustDo("POST", "/api/v1/namespaces/default/pods", admin, fmt.Sprintf(podOnJSON, "pa", "a", "sa"), http.StatusCreated)
	for _, sub := range []string{"exec?command=sh&stdin=true", "attach?stdout=true", "portforward?ports=80"} {
		for _, m := range []string{"GET", "POST"} {
			code, body := h.do(m, "/api/v1/namespaces/default/pods/pa/"+sub, credA, "")
			if st := statusOf(t, body); code != http.StatusForbidden || !strings.Contains(st.Message, "pods/"+strings.Split(sub, "?")[0]) {
				t.Errorf("%s pods/pa/%s as node a = %d %q; want 403 naming the subresource", m, sub, code, st.Message)
			}
		}
		if code, _ := h.do("GET", "/api/v1/namespaces/default/pods/pa/"+sub, "", ""); code != http.StatusUnauthorized {
			t.Errorf("GET pods/pa/%s anonymously = %d; want 401", sub, code)
		}
	}
	code, body := h.do("GET", "/api/v1/namespaces/default/pods/nope/exec?command=sh&stdout=true", admin, "")
	if code != http.StatusNotFound {
		t.Errorf("exec in a missing pod = %d %s; want 404", code, body)
	}
}

func TestWebSocketBearerSubprotocol(t *testing.T) {
	for _, tc := range []struct {
		name  string
		hdr   map[string][]string
		token string
	}{
		{"header wins", map[string][]string{"Authorization": {"Bearer abc"}, "Upgrade": {"websocket"}, "Sec-Websocket-Protocol": {wsBearerPrefix + "eHl6"}}, "abc"},
		{"subprotocol", map[string][]string{"Upgrade": {"websocket"}, "Sec-Websocket-Protocol": {"v5.channel.k8s.io, " + wsBearerPrefix + "eHl6"}}, "xyz"},
		{"padded", map[string][]string{"Upgrade": {"websocket"}, "Sec-Websocket-Protocol": {wsBearerPrefix + "eHk="}}, "xy"},
		{"not base64", map[string][]string{"Upgrade": {"websocket"}, "Sec-Websocket-Protocol": {wsBearerPrefix + "!!"}}, ""},
		{"not a websocket", map[string][]string{"Sec-Websocket-Protocol": {wsBearerPrefix + "eHl6"}}, ""},
	} {
		r, _ := http.NewRequest("GET", "/", nil)
		for k, v := range tc.hdr {
			r.Header[http.CanonicalHeaderKey(k)] = v
		}
		if got := bearerToken(r); got != tc.token {
			t.Errorf("bearerToken(%s) = %q; want %q", tc.name, got, tc.token)
		}
	}
}

// openStreamedTunnel opens token's tunnel on its API connection (a
// client of its own) and serves handler on every exchange the server
// asks for, as the agent does, until the test ends.
func openStreamedTunnel(t *testing.T, h *harness, token string, handler http.Handler) (*client.Client, error) {
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
	control, err := c.OpenStream(ctx, tunnel.Path)
	if err != nil {
		return c, err
	}
	go serveOpens(ctx, c, control, handler)
	return c, nil
}

// serveOpens reads a tunnel's open lines from control and serves
// handler on an exchange for each, as an agent does, until control ends.
func serveOpens(ctx context.Context, c *client.Client, control io.ReadCloser, handler http.Handler) {
	ln := tunnel.NewListener()
	go (&http.Server{Handler: handler}).Serve(ln)
	defer ln.Close()
	defer control.Close()
	tunnel.ReadOpens(control, func(id string) {
		go func() {
			if x, err := c.OpenDuplex(ctx, tunnel.Path+"/"+id); err == nil {
				ln.Deliver(x)
			}
		}()
	})
}

// TestTunnelOnAPIConnectionRealTLS: the tunnel carried on a node's API
// connection is the node's alone, serves the node's pods, holds no
// in-flight slot, and is refused to a non-node; over HTTP/1 the answer
// comes at once and names what to use instead.
func TestTunnelOnAPIConnectionRealTLS(t *testing.T) {
	h := startHarnessWith(t, "", nil, func(c *Config) { c.MaxRequestsInFlight = 1 })
	admin := h.adminToken()
	_, credA := h.join(h.joinToken(), "a", "")
	h.mustDo("POST", "/api/v1/nodes", admin, fmt.Sprintf(nodeJSON, "a"), http.StatusCreated)
	h.mustDo("POST", "/api/v1/namespaces/default/pods", admin, fmt.Sprintf(podOnJSON, "pa", "a", "sa"), http.StatusCreated)

	var se *api.StatusError
	if _, err := openStreamedTunnel(t, h, admin, http.NotFoundHandler()); !errors.As(err, &se) || se.Status.Code != http.StatusForbidden || errors.Is(err, errors.ErrUnsupported) {
		t.Fatalf("streamed tunnel as the admin = %v; want 403", err)
	}
	if _, err := openStreamedTunnel(t, h, "", http.NotFoundHandler()); !errors.As(err, &se) || se.Status.Code != http.StatusUnauthorized {
		t.Fatalf("streamed tunnel anonymously = %v; want 401", err)
	}
	// Two tunnels of a, the second replacing the first, on a server
	// with one in-flight slot: neither holds it.
	for range 2 {
		if _, err := openStreamedTunnel(t, h, credA, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprint(w, "log of a\n")
		})); err != nil {
			t.Fatal(err)
		}
	}
	waitLog := time.Now().Add(10 * time.Second)
	for {
		code, body := h.do("GET", "/api/v1/namespaces/default/pods/pa/log", admin, "")
		if code == http.StatusOK && string(body) == "log of a\n" {
			break
		}
		if time.Now().After(waitLog) {
			t.Fatalf("log of pa through a's streamed tunnel = %d %s", code, body)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, m := h.do("GET", "/metrics", admin, ""); !strings.Contains(string(m), "skiff_agent_tunnels 1\n") {
		t.Errorf("metrics lack skiff_agent_tunnels 1:\n%s", m)
	}

	// Exchanges: only a node, with a well-formed id its tunnel is
	// waiting for; a's ids are not b's.
	_, credB := h.join(h.joinToken(), "b", "")
	cb, _ := openStreamedTunnel(t, h, credB, http.NotFoundHandler())
	xid := strings.Repeat("ab", 16)
	for _, tc := range []struct {
		name string
		c    *client.Client
		path string
		want int32
	}{
		{"as b, an id no tunnel waits for", cb, tunnel.Path + "/" + xid, http.StatusNotFound},
		{"as b, a bad id", cb, tunnel.Path + "/" + "XYZ", http.StatusBadRequest},
	} {
		if _, err := tc.c.OpenDuplex(context.Background(), tc.path); !errors.As(err, &se) || se.Status.Code != tc.want {
			t.Errorf("exchange %s = %v; want %d", tc.name, err, tc.want)
		}
	}
	ca, _ := os.ReadFile(h.info.CAPath)
	ac, err := client.New(client.Config{Server: h.info.URL, CAData: ca, Token: admin})
	if err != nil {
		t.Fatal(err)
	}
	defer ac.CloseIdleConnections()
	if _, err := ac.OpenDuplex(context.Background(), tunnel.Path+"/"+xid); !errors.As(err, &se) || se.Status.Code != http.StatusForbidden {
		t.Errorf("exchange as the admin = %v; want 403", err)
	}

	// Over HTTP/1, with a body that never ends.
	conn, err := h.rawConn()
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n", tunnel.Path, credA)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer to a streamed tunnel over HTTP/1: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), "needs HTTP/2") {
		t.Fatalf("streamed tunnel over HTTP/1 = %d %s; want 400 naming HTTP/2", resp.StatusCode, b)
	}
}
