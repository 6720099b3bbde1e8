package client

import (
	"context"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestClientFailsOverBetweenServers: with two servers configured, a
// request that cannot reach the first, or that it answers 503, fails as
// it is (it is not retried: it may have taken effect) and the next one
// goes to the second server; a server that answers stays in use.
func TestClientFailsOverBetweenServers(t *testing.T) {
	okHandler := func(name string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"kind":"Namespace","apiVersion":"v1","metadata":{"name":"` + name + `"}}`)) //nolint:errcheck // test server
		}
	}
	unavailable := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","code":503,"reason":"ServiceUnavailable"}`)) //nolint:errcheck // test server
	})
	a := httptest.NewTLSServer(unavailable)
	defer a.Close()
	b := httptest.NewTLSServer(okHandler("b"))
	defer b.Close()
	dead := httptest.NewTLSServer(okHandler("dead"))
	deadURL := dead.URL
	var ca []byte
	for _, s := range []*httptest.Server{a, b, dead} {
		ca = append(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.Certificate().Raw})...)
	}
	dead.Close()

	c, err := New(Config{Server: deadURL + "," + a.URL + ", " + b.URL + "/", CAData: ca})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	get := func() (string, error) {
		var ns struct {
			Metadata struct{ Name string } `json:"metadata"`
		}
		err := c.DoJSON(ctx, http.MethodGet, "/api/v1/namespaces/x", nil, &ns)
		return ns.Metadata.Name, err
	}
	steps := []struct {
		wantServer string
		wantErr    bool
		wantName   string
	}{
		{deadURL, true, ""}, // unreachable: fails, moves on
		{a.URL, true, ""},   // 503: fails, moves on
		{b.URL, false, "b"}, // answers
		{b.URL, false, "b"}, // and stays in use
	}
	for i, st := range steps {
		if got := c.Server(); got != st.wantServer {
			t.Fatalf("step %d: Server() = %s; want %s", i, got, st.wantServer)
		}
		name, err := get()
		if (err != nil) != st.wantErr || name != st.wantName {
			t.Fatalf("step %d: GET = %q, %v; want %q, error %v", i, name, err, st.wantName, st.wantErr)
		}
	}
}

func TestConfigValidateServerList(t *testing.T) {
	ca := []byte("x")
	for _, tc := range []struct {
		server string
		ok     bool
	}{
		{"https://a:1,https://b:2", true},
		{"https://a:1,http://b:2", false},
		{"https://a:1,", true},
		{",", false},
	} {
		err := Config{Server: tc.server, CAData: ca}.Validate()
		// CAData "x" is not PEM: only the server part is judged here.
		serverOK := err == nil || !strings.Contains(err.Error(), "server")
		if serverOK != tc.ok {
			t.Errorf("Validate(server %q) = %v; want server ok=%v", tc.server, err, tc.ok)
		}
	}
}
