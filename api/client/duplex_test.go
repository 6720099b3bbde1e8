package client

import (
	"context"
	"encoding/pem"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/skiffhq/skiff/api"
)

// duplexHandler echoes a POST /duplex body, upper-cased, as it streams,
// and answers other paths with their test codes.
func duplexHandler(t *testing.T) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/duplex":
			if r.ProtoMajor < 2 {
				// As the server answers: at once, reading no body.
				w.Header().Set("Connection", "close")
				writeStatus(w, api.NewBadRequest("a streamed tunnel needs HTTP/2"))
				return
			}
			if r.Header.Get("Authorization") != "Bearer "+testToken {
				writeStatus(w, api.NewStatusError(http.StatusUnauthorized, api.StatusReasonUnauthorized, "who are you"))
				return
			}
			w.WriteHeader(http.StatusOK)
			rc := http.NewResponseController(w)
			rc.Flush()
			buf := make([]byte, 64)
			for {
				n, err := r.Body.Read(buf)
				if n > 0 {
					w.Write([]byte(strings.ToUpper(string(buf[:n]))))
					rc.Flush()
				}
				if err != nil {
					return
				}
			}
		case "/forbidden":
			writeStatus(w, api.NewStatusError(http.StatusForbidden, api.StatusReasonForbidden, "not you"))
		case "/gone":
			http.NotFound(w, r)
		default:
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		}
	})
}

// TestOpenDuplexStreamsBothWays: each line written is answered before
// the next is sent, on the client's one HTTP/2 connection; a server
// without the endpoint, or an HTTP/1 one, is ErrUnsupported, while a
// refusal is not.
func TestOpenDuplexStreamsBothWays(t *testing.T) {
	ts, conns := h2Server(t, "", duplexHandler(t))
	c, err := New(Config{Server: ts.URL, CAData: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ts.Certificate().Raw}), Token: testToken})
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseIdleConnections()
	d, err := c.OpenDuplex(context.Background(), "/duplex")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"hello", "again"} {
		if _, err := io.WriteString(d, line); err != nil {
			t.Fatal(err)
		}
		got := make([]byte, len(line))
		if _, err := io.ReadFull(d, got); err != nil || string(got) != strings.ToUpper(line) {
			t.Fatalf("echo of %q = %q, %v", line, got, err)
		}
	}
	// The request body ends, the answer goes on to its end.
	io.WriteString(d, "last")
	if cw, ok := d.(interface{ CloseWrite() error }); !ok || cw.CloseWrite() != nil {
		t.Fatal("no CloseWrite")
	}
	if rest, err := io.ReadAll(d); err != nil || string(rest) != "LAST" {
		t.Fatalf("after CloseWrite: %q, %v; want LAST and the end", rest, err)
	}
	d.Close()
	// A POST without a body, its answer streamed.
	st, err := c.OpenStream(context.Background(), "/duplex")
	if err != nil {
		t.Fatal(err)
	}
	if b, err := io.ReadAll(st); err != nil || len(b) != 0 {
		t.Fatalf("OpenStream: %q, %v", b, err)
	}
	st.Close()
	d, err = c.OpenDuplex(context.Background(), "/duplex")
	if err != nil {
		t.Fatal(err)
	}
	// Other requests share the connection while the exchange is open.
	if err := getAll(c, 3); err == nil || !strings.Contains(err.Error(), "method not allowed") {
		t.Fatalf("GET /ping = %v; want the test's 405", err)
	}
	d.Close()
	if n := conns.Load(); n != 1 {
		t.Fatalf("%d connections; want one for the exchange and the requests", n)
	}
	if _, err := d.Write([]byte("x")); err == nil {
		t.Fatal("write after Close succeeded")
	}

	for _, tc := range []struct {
		path        string
		unsupported bool
		code        int32
	}{{"/gone", true, 404}, {"/other", true, 405}, {"/forbidden", false, 403}} {
		_, err := c.OpenDuplex(context.Background(), tc.path)
		var se *api.StatusError
		if !errors.As(err, &se) || se.Status.Code != tc.code || errors.Is(err, errors.ErrUnsupported) != tc.unsupported {
			t.Errorf("OpenDuplex(%s) = %v; want a %d, unsupported %v", tc.path, err, tc.code, tc.unsupported)
		}
	}

	// Over HTTP/1 there is no full duplex.
	h1 := httptest.NewTLSServer(duplexHandler(t))
	defer h1.Close()
	c1, err := New(Config{Server: h1.URL, CAData: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: h1.Certificate().Raw}), Token: testToken})
	if err != nil {
		t.Fatal(err)
	}
	defer c1.CloseIdleConnections()
	for range 2 { // answered over HTTP/1, then known to be
		if _, err := c1.OpenDuplex(context.Background(), "/duplex"); !errors.Is(err, errors.ErrUnsupported) {
			t.Fatalf("OpenDuplex over HTTP/1 = %v; want ErrUnsupported", err)
		}
	}
}
