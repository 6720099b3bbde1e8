package client

import (
	"context"
	"crypto/tls"
	"encoding/pem"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"
)

// A client's reconnect resumes its TLS session: the server sees the
// second connection resumed.
func TestReconnectResumesTLSSession(t *testing.T) {
	c, _ := newTestClient(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(strconv.FormatBool(r.TLS != nil && r.TLS.DidResume)))
	}))
	get := func() string {
		t.Helper()
		resp, err := c.Do(context.Background(), http.MethodGet, "/", nil)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b := make([]byte, 8)
		n, _ := resp.Body.Read(b)
		return string(b[:n])
	}
	if got := get(); got != "false" {
		t.Fatalf("first connection resumed = %s; want false", got)
	}
	c.CloseIdleConnections()
	if got := get(); got != "true" {
		t.Errorf("the reconnect resumed = %s; want true (a session cache)", got)
	}
}

// failOnce closes the next connection it accepts after reading its first
// bytes (the client's hello) when fail is set.
type failOnce struct {
	net.Listener
	fail atomic.Bool
}

func (l *failOnce) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil && l.fail.CompareAndSwap(true, false) {
		c.Read(make([]byte, 512)) //nolint:errcheck // the hello, discarded
		c.Close()
	}
	return c, err
}

// A handshake that fails once (a restarted server too busy to answer in
// time) does not cost the client its session: the next reconnect still
// resumes.
func TestSessionSurvivesOneFailedHandshake(t *testing.T) {
	ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(strconv.FormatBool(r.TLS != nil && r.TLS.DidResume)))
	}))
	fl := &failOnce{Listener: ts.Listener}
	ts.Listener = fl
	ts.StartTLS()
	defer ts.Close()
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ts.Certificate().Raw})
	c, err := New(Config{Server: ts.URL, CAData: caPEM, Token: testToken})
	if err != nil {
		t.Fatal(err)
	}
	get := func() (string, error) {
		resp, err := c.Do(context.Background(), http.MethodGet, "/", nil)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return string(b), err
	}
	if got, err := get(); err != nil || got != "false" {
		t.Fatalf("first request: %q, %v; want a full handshake", got, err)
	}
	c.CloseIdleConnections()
	fl.fail.Store(true)
	if _, err := get(); err == nil {
		t.Fatal("the request whose handshake the server cut succeeded")
	}
	c.CloseIdleConnections()
	if got, err := get(); err != nil || got != "true" {
		t.Errorf("after one failed handshake: resumed %q, %v; want the session kept (true)", got, err)
	}
}

func TestSessionCacheDropsASessionThatFailsTwice(t *testing.T) {
	c := newSessionCache(4)
	s := &tls.ClientSessionState{}
	c.Put("k", s)
	c.Put("k", nil)
	if got, ok := c.Get("k"); !ok || got != s {
		t.Fatal("the session was dropped after one failure")
	}
	c.Put("k", nil)
	if _, ok := c.Get("k"); ok {
		t.Error("the session was kept after two failures in a row")
	}
	// A session that works again starts over.
	c.Put("k", s)
	c.Put("k", nil)
	if _, ok := c.Get("k"); !ok {
		t.Error("a new session was dropped after its first failure")
	}
}
