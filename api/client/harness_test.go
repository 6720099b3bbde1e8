package client

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/skiffhq/skiff/api"
)

const testToken = "s3cret-token-value"

// newTestServer starts a TLS server running h and returns it with a
// Config that trusts exactly its certificate and carries testToken.
func newTestServer(t *testing.T, h http.Handler) (*httptest.Server, Config) {
	t.Helper()
	ts := httptest.NewTLSServer(h)
	t.Cleanup(ts.Close)
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ts.Certificate().Raw})
	return ts, Config{Server: ts.URL, CAData: caPEM, Token: testToken}
}

// newTestClient is newTestServer plus New.
func newTestClient(t *testing.T, h http.Handler) (*Client, *httptest.Server) {
	t.Helper()
	ts, cfg := newTestServer(t, h)
	c, err := New(cfg)
	if err != nil {
		t.Fatalf("New(%v) = %v", cfg, err)
	}
	return c, ts
}

// otherCAPEM returns a freshly generated self-signed CA certificate that
// signed nothing the test servers present.
func otherCAPEM(t *testing.T) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(42),
		Subject:               pkix.Name{CommonName: "not the cluster CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// recorded is one request a recorder saw.
type recorded struct {
	Method, URI, Auth, ContentType string
	Body                           []byte
}

// recorder is an http.Handler that records requests and answers each with
// reply (status code and body).
type recorder struct {
	mu    sync.Mutex
	reqs  []recorded
	code  int
	reply string
}

func (rec *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body) // a short body is what the test then sees
	rec.mu.Lock()
	rec.reqs = append(rec.reqs, recorded{r.Method, r.URL.RequestURI(), r.Header.Get("Authorization"), r.Header.Get("Content-Type"), body})
	code, reply := rec.code, rec.reply
	rec.mu.Unlock()
	if code == 0 {
		code = http.StatusOK
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write([]byte(reply))
}

func (rec *recorder) set(code int, reply string) {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	rec.code, rec.reply = code, reply
}

func (rec *recorder) all() []recorded {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return append([]recorded(nil), rec.reqs...)
}

func (rec *recorder) last(t *testing.T) recorded {
	t.Helper()
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.reqs) == 0 {
		t.Fatal("server saw no request")
	}
	return rec.reqs[len(rec.reqs)-1]
}

// writeStatus answers with a failure Status, as the server does.
func writeStatus(w http.ResponseWriter, se *api.StatusError) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(int(se.Status.Code))
	_ = json.NewEncoder(w).Encode(se.Status)
}

func mustResource(t testing.TB, name string) api.ResourceInfo {
	t.Helper()
	r, ok := api.LookupResource(name)
	if !ok {
		t.Fatalf("LookupResource(%q) = false", name)
	}
	return r
}

func ptr[T any](v T) *T { return &v }
