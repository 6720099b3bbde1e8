package server

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime"
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

// slowRequest is a request that declared a body and sent none, on a
// connection of its own, with a reader kept for its answer.
type slowRequest struct {
	c  *tls.Conn
	br *bufio.Reader
}

// startSlowRequest opens a connection to h and sends a request's headers
// with a declared body that never comes.
func startSlowRequest(t *testing.T, h *harness, token string) *slowRequest {
	t.Helper()
	c, err := h.rawConn()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if err := sendHeadersOnly(c, token); err != nil {
		t.Fatal(err)
	}
	return &slowRequest{c: c, br: bufio.NewReader(c)}
}

// answer returns the request's answer if one arrives within d, else nil.
// It takes nothing off the connection unless an answer has begun.
func (s *slowRequest) answer(t *testing.T, d time.Duration) *http.Response {
	t.Helper()
	s.c.SetReadDeadline(time.Now().Add(d))
	defer s.c.SetReadDeadline(time.Time{})
	if _, err := s.br.Peek(1); err != nil {
		return nil
	}
	s.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(s.br, nil)
	if err != nil {
		t.Fatalf("reading a slow request's answer: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(b)) // read whole, under the deadline
	return resp
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

	slow := []*slowRequest{startSlowRequest(t, h, admin), startSlowRequest(t, h, admin)}
	// The two slow requests reach their handlers soon; from then on a
	// third request is refused. Until then each probe holds a slot for a
	// moment, and a slow request whose headers the server reads in that
	// moment is refused (at once: TestRefusalOfAnUnsentBodyIsPromptRealTLS);
	// it is sent again, as a client would after its Retry-After.
	var code int
	var resp *http.Response
	resent := 0
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
		for i, s := range slow {
			if a := s.answer(t, time.Millisecond); a != nil {
				if a.StatusCode != http.StatusTooManyRequests {
					b, _ := io.ReadAll(a.Body)
					t.Fatalf("slow request %d answered %d %s while the server had room; want it held in its handler, or 429", i+1, a.StatusCode, b)
				}
				s.c.Close()
				slow[i] = startSlowRequest(t, h, admin)
				resent++
			}
		}
		time.Sleep(10 * time.Millisecond) // waiting for the server to read the slow requests' headers
	}
	t.Logf("slow requests sent again after losing a slot to a probe: %d", resent)
	if code != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		// Say what became of the slow requests: an early answer means
		// they never held their slots.
		var fates []string
		for i, s := range slow {
			if a := s.answer(t, time.Second); a == nil {
				fates = append(fates, fmt.Sprintf("slow %d: no answer", i+1))
			} else {
				b, _ := io.ReadAll(io.LimitReader(a.Body, 512))
				fates = append(fates, fmt.Sprintf("slow %d: %d %s", i+1, a.StatusCode, b))
			}
		}
		t.Logf("where the server's connections were:\n%s", connStacks())
		t.Fatalf("third request with two in flight = %d (Retry-After %q); want 429 with Retry-After; %s", code, resp.Header.Get("Retry-After"), strings.Join(fates, "; "))
	}
	if code, _ := h.do("GET", "/healthz", "", ""); code != http.StatusOK {
		t.Errorf("healthz with the server full = %d; want 200", code)
	}
	// Finishing the slow requests frees their slots.
	for _, s := range slow {
		fmt.Fprint(s.c, strings.Repeat(" ", 100))
		if a := s.answer(t, 10*time.Second); a == nil {
			t.Error("a slow request was not answered once its body came")
		}
	}
	h.mustDo("GET", "/api/v1/namespaces", admin, "", http.StatusOK)
}

// TestRefusalOfAnUnsentBodyIsPromptRealTLS: a request refused for want of
// a slot, whose declared body never comes, is answered 429 at once and its
// connection closed. It used to get no answer at all: net/http waited,
// without a deadline, for the body it would throw away before it wrote
// the 429, and the connection and its goroutine stayed for as long as the
// client held them. A request without a valid token is answered 401 at
// once the same way, where it used to wait for the body deadline.
func TestRefusalOfAnUnsentBodyIsPromptRealTLS(t *testing.T) {
	h := startHarnessWith(t, "", nil, func(c *Config) { c.MaxRequestsInFlight = 1; c.BodyReadTimeout = time.Minute })
	admin := h.adminToken()
	// One slot, two slow requests: whichever the server reads second is
	// refused while the first holds the slot.
	slow := []*slowRequest{startSlowRequest(t, h, admin), startSlowRequest(t, h, admin)}
	start := time.Now()
	var refused *slowRequest
	var answer *http.Response
	for deadline := start.Add(testenv.Bound(20 * time.Second)); refused == nil && time.Now().Before(deadline); {
		for _, s := range slow {
			if a := s.answer(t, 50*time.Millisecond); a != nil {
				refused, answer = s, a
				break
			}
		}
	}
	if refused == nil {
		t.Fatalf("neither of two slow requests with one slot was answered in %v; want one refused at once\n%s", time.Since(start), connStacks())
	}
	b, _ := io.ReadAll(answer.Body)
	if answer.StatusCode != http.StatusTooManyRequests || answer.Header.Get("Retry-After") == "" {
		t.Fatalf("answer = %d (Retry-After %q) %s; want 429 with Retry-After", answer.StatusCode, answer.Header.Get("Retry-After"), b)
	}
	if !answer.Close {
		t.Error("the refusal keeps the connection; want Connection: close (the unsent body is not waited for)")
	}
	t.Logf("refused after %v", time.Since(start))
	refused.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if n, err := refused.br.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Errorf("the refused request's connection: read %d bytes, %v; want it closed (EOF)", n, err)
	}
	t.Logf("closed after %v", time.Since(start))
	// The other holds its slot until its body comes, then is served.
	held := slow[0]
	if held == refused {
		held = slow[1]
	}
	if a := held.answer(t, 200*time.Millisecond); a != nil {
		t.Fatalf("the slow request holding the slot was answered %d before its body came", a.StatusCode)
	}
	fmt.Fprint(held.c, strings.Repeat(" ", 100))
	if a := held.answer(t, 10*time.Second); a == nil {
		t.Fatal("the slow request holding the slot was not answered once its body came")
	}

	// A request without a valid token is refused at once too, rather
	// than after the body deadline (a minute here).
	bad := startSlowRequest(t, h, "not-a-token")
	start = time.Now()
	a := bad.answer(t, 10*time.Second)
	if a == nil || a.StatusCode != http.StatusUnauthorized || !a.Close {
		t.Fatalf("unauthenticated slow request: answer %+v after %v; want 401 with Connection: close at once", a, time.Since(start))
	}
	if n, err := bad.br.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Errorf("the unauthenticated request's connection: read %d bytes, %v; want it closed (EOF)", n, err)
	}
	t.Logf("unauthenticated: answered and closed after %v", time.Since(start))
}

// connStacks returns the stacks of the goroutines serving or handshaking
// connections (net/http's, crypto/tls's and the handshake listener's), to
// say where a request that was never answered waits.
func connStacks() string {
	buf := make([]byte, 1<<22)
	buf = buf[:runtime.Stack(buf, true)]
	var out []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "net/http.(*conn)") || strings.Contains(g, "crypto/tls") || strings.Contains(g, "handshakeListener") || strings.Contains(g, "net/http.(*Server).Serve") {
			out = append(out, g)
		}
	}
	return strings.Join(out, "\n\n")
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
