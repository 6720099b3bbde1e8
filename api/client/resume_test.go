package client

import (
	"context"
	"net/http"
	"strconv"
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
