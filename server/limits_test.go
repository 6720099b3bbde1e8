package server

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/skiffhq/skiff/internal/testenv"
)

// rawConn opens a TLS connection (HTTP/1.1) to h, trusting its CA.
func (h *harness) rawConn() (*tls.Conn, error) {
	tr := h.client.Transport.(*http.Transport)
	cfg := tr.TLSClientConfig.Clone()
	cfg.ServerName = "127.0.0.1"
	cfg.NextProtos = []string{"http/1.1"}
	return tls.Dial("tcp", h.info.Addr.String(), cfg)
}

// sendHeadersOnly writes a request that declares a body and sends none.
func sendHeadersOnly(c *tls.Conn, token string) error {
	_, err := fmt.Fprintf(c, "POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n", token)
	return err
}

// TestSlowBodyIsCutOffRealTLS is defect 4 of issue 16 (first part): a
// request that declares a body and never sends it held its connection
// indefinitely.
func TestSlowBodyIsCutOffRealTLS(t *testing.T) {
	h := startHarnessWith(t, "", nil, func(c *Config) { c.BodyReadTimeout = 300 * time.Millisecond })
	for _, token := range []string{h.adminToken(), "not-a-token"} {
		c, err := h.rawConn()
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if err := sendHeadersOnly(c, token); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			if resp.StatusCode < 400 {
				t.Errorf("slow body: answer %d; want an error", resp.StatusCode)
			}
			// The connection is not reusable: the server closes it.
			if _, err := c.Read(make([]byte, 1)); err == nil {
				t.Error("slow body: the connection stayed open after the answer")
			}
		}
		if took := time.Since(start); took > 5*time.Second {
			t.Errorf("slow body: the server held the connection %v; want about 300ms", took)
		}
	}

	// Over HTTP/2 (kubectl's protocol) too: the stream fails fast.
	pr, pw := io.Pipe()
	defer pw.Close()
	req, _ := http.NewRequest("POST", h.info.URL+"/api/v1/namespaces/default/configmaps", pr)
	req.Header.Set("Authorization", "Bearer "+h.adminToken())
	req.Header.Set("Content-Type", "application/json")
	start := time.Now()
	resp, err := h.client.Do(req)
	if err == nil {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode < 400 {
			t.Errorf("slow body over %s: answer %d %s; want an error", resp.Proto, resp.StatusCode, b)
		}
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("slow body over HTTP/2: took %v; want about 300ms", took)
	}

	// A normal request with a body still works, and so does a watch.
	h.mustDo("POST", "/api/v1/namespaces/default/configmaps", h.adminToken(), `{"metadata":{"name":"ok"}}`, http.StatusCreated)
}

// TestConnectionCapPerClientRealTLS is defect 4 (second part): one
// address may not open unbounded connections.
func TestConnectionCapPerClientRealTLS(t *testing.T) {
	h := startHarnessWith(t, "", nil, func(c *Config) { c.MaxConnsPerClient = 3; c.limitLoopbackConns = true })
	var open []*tls.Conn
	defer func() {
		for _, c := range open {
			c.Close()
		}
	}()
	for i := range 3 {
		c, err := h.rawConn()
		if err != nil {
			t.Fatalf("connection %d of 3: %v", i+1, err)
		}
		open = append(open, c)
	}
	if c, err := h.rawConn(); err == nil {
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		_, rerr := fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
		if rerr == nil {
			_, rerr = http.ReadResponse(bufio.NewReader(c), nil)
		}
		c.Close()
		if rerr == nil {
			t.Fatal("a fourth connection from the same address was served; want it closed")
		}
	}
}

// TestMaxRequestsInFlightRealTLS is defect 4 (third part): requests in
// flight are capped, with 429 and Retry-After beyond the cap; watches do
// not count.
func TestMaxRequestsInFlightRealTLS(t *testing.T) {
	h := startHarnessWith(t, "", nil, func(c *Config) { c.MaxRequestsInFlight = 2; c.BodyReadTimeout = time.Minute })
	admin := h.adminToken()
	// A watch first: it must not take a slot.
	req, _ := http.NewRequest("GET", h.info.URL+"/api/v1/namespaces?watch=true", nil)
	req.Header.Set("Authorization", "Bearer "+admin)
	watch, err := h.client.Do(req)
	if err != nil || watch.StatusCode != http.StatusOK {
		t.Fatalf("watch = %v %v; want 200", watch, err)
	}
	defer watch.Body.Close()

	var slow []*tls.Conn
	for range 2 {
		c, err := h.rawConn()
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if err := sendHeadersOnly(c, admin); err != nil {
			t.Fatal(err)
		}
		slow = append(slow, c)
	}
	// The two slow requests reach their handlers soon; from then on a
	// third request is refused.
	var code int
	var resp *http.Response
	// The bound only ends a failing wait: under qemu-user on a loaded box
	// the server took over 10 s to read the slow requests' headers.
	for deadline := time.Now().Add(testenv.Bound(30 * time.Second)); time.Now().Before(deadline); {
		req, _ := http.NewRequest("GET", h.info.URL+"/api/v1/namespaces", nil)
		req.Header.Set("Authorization", "Bearer "+admin)
		resp, err = h.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if code = resp.StatusCode; code == http.StatusTooManyRequests {
			break
		}
		time.Sleep(10 * time.Millisecond) // waiting for the server to read the slow requests' headers
	}
	if code != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		// Say what became of the slow requests: an early answer means
		// they never held their slots.
		var fates []string
		for i, c := range slow {
			c.SetReadDeadline(time.Now().Add(time.Second))
			if r, err := http.ReadResponse(bufio.NewReader(c), nil); err != nil {
				fates = append(fates, fmt.Sprintf("slow %d: no answer (%v)", i+1, err))
			} else {
				b, _ := io.ReadAll(io.LimitReader(r.Body, 512))
				fates = append(fates, fmt.Sprintf("slow %d: %d %s", i+1, r.StatusCode, b))
			}
		}
		t.Fatalf("third request with two in flight = %d (Retry-After %q); want 429 with Retry-After; %s", code, resp.Header.Get("Retry-After"), strings.Join(fates, "; "))
	}
	if code, _ := h.do("GET", "/healthz", "", ""); code != http.StatusOK {
		t.Errorf("healthz with the server full = %d; want 200", code)
	}
	// Finishing the slow requests frees their slots.
	for _, c := range slow {
		fmt.Fprint(c, strings.Repeat(" ", 100))
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		if resp, err := http.ReadResponse(bufio.NewReader(c), nil); err == nil {
			resp.Body.Close()
		}
	}
	h.mustDo("GET", "/api/v1/namespaces", admin, "", http.StatusOK)
}

// TestConnectionCapExemptsLoopback: the machine's own processes (and the
// load tests' simulated fleet) are not capped.
func TestConnectionCapExemptsLoopback(t *testing.T) {
	h := startHarnessWith(t, "", nil, func(c *Config) { c.MaxConnsPerClient = 2 })
	for i := range 4 {
		c, err := h.rawConn()
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
		if _, err := http.ReadResponse(bufio.NewReader(c), nil); err != nil {
			t.Fatalf("loopback connection %d of 4 with a cap of 2: %v", i+1, err)
		}
	}
}

// TestPeerFeedTakesNoSlotRealTLS: the peer feed is a stream, like a
// watch: two of them open, with one slot, leave it free.
func TestPeerFeedTakesNoSlotRealTLS(t *testing.T) {
	h := startHarnessWith(t, "", nil, func(c *Config) { c.MaxRequestsInFlight = 1 })
	admin := h.adminToken()
	for range 2 {
		openPeerFeed(t, h, admin, "")
	}
	h.mustDo("GET", "/api/v1/namespaces", admin, "", http.StatusOK)
}
