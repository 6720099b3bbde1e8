package server

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// slowReadConn delays every read, as a slow link does: a client on it
// sends its first requests before it has read the server's SETTINGS.
type slowReadConn struct {
	net.Conn
	delay time.Duration
}

func (c slowReadConn) Read(p []byte) (int, error) {
	time.Sleep(c.delay)
	return c.Conn.Read(p)
}

// TestHPACKBeforeSettings: a client that sends several requests at once
// on a new connection, before it has read the server's SETTINGS, uses
// HTTP/2's default 4 KiB header table; the server must decode them all.
// With a smaller decoder table (net/http applies it from the start) the
// server ended such connections with COMPRESSION_ERROR.
func TestHPACKBeforeSettings(t *testing.T) {
	h := startHarness(t, "", nil)
	admin := h.adminToken()
	base := h.client.Transport.(*http.Transport)
	tr := &http.Transport{
		TLSClientConfig:   base.TLSClientConfig.Clone(),
		ForceAttemptHTTP2: true,
		MaxConnsPerHost:   1, // every request on the one connection
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return slowReadConn{Conn: c, delay: 40 * time.Millisecond}, nil
		},
	}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	const n = 16
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			// Distinct paths and a distinct header value: each request
			// adds new entries, well past 1 KiB in all.
			req, _ := http.NewRequest("GET", fmt.Sprintf("%s/api/v1/namespaces/hpack-%02d/configmaps?labelSelector=app%%3Dhpack-%02d", h.info.URL, i, i), nil)
			req.Header.Set("Authorization", "Bearer "+admin)
			req.Header.Set("X-Request-Note", strings.Repeat(fmt.Sprintf("%02d", i), 60))
			resp, err := client.Do(req)
			if err != nil {
				errs[i] = err
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			switch {
			case resp.ProtoMajor != 2:
				errs[i] = fmt.Errorf("answered over %s; want HTTP/2", resp.Proto)
			case resp.StatusCode != http.StatusOK:
				errs[i] = fmt.Errorf("status %d; want 200", resp.StatusCode)
			}
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("request %d: %v", i, err)
		}
	}
}

// TestMaxReadFrameSize: the server announces HTTP/2's least frame size
// in its SETTINGS (maxReadFrameSize): no client can leave a larger read
// buffer on a connection, and a client streaming a request body (an
// agent's side of a tunnel exchange) holds 16 KiB for it, not 512 KiB.
func TestMaxReadFrameSize(t *testing.T) {
	h := startHarness(t, "", nil)
	base := h.client.Transport.(*http.Transport)
	cfg := base.TLSClientConfig.Clone()
	cfg.NextProtos = []string{"h2"}
	conn, err := tls.Dial("tcp", strings.TrimPrefix(h.info.URL, "https://"), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(30 * time.Second))
	// The client preface and an empty SETTINGS frame.
	if _, err := io.WriteString(conn, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00"); err != nil {
		t.Fatal(err)
	}
	var head [9]byte
	if _, err := io.ReadFull(conn, head[:]); err != nil {
		t.Fatal(err)
	}
	n := int(head[0])<<16 | int(head[1])<<8 | int(head[2])
	if head[3] != 0x4 || n%6 != 0 {
		t.Fatalf("the server's first frame: type %d, %d bytes; want SETTINGS", head[3], n)
	}
	payload := make([]byte, n)
	if _, err := io.ReadFull(conn, payload); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i += 6 {
		id := int(payload[i])<<8 | int(payload[i+1])
		v := int(payload[i+2])<<24 | int(payload[i+3])<<16 | int(payload[i+4])<<8 | int(payload[i+5])
		if id == 0x5 { // SETTINGS_MAX_FRAME_SIZE
			if v != maxReadFrameSize {
				t.Fatalf("SETTINGS_MAX_FRAME_SIZE %d; want %d", v, maxReadFrameSize)
			}
			return
		}
	}
	t.Fatalf("the server's SETTINGS name no SETTINGS_MAX_FRAME_SIZE (HTTP/2's default is 16 KiB; net/http announces 1 MiB)")
}
