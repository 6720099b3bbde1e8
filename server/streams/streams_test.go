package streams

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/moby/spdystream"

	"github.com/skiffhq/skiff/internal/tunnel"
)

var quiet = slog.New(slog.DiscardHandler)

// fakeAgent answers an exec stream: it echoes stdin upper-cased on
// stdout until stdin closes, reports every resize on stderr, then sends
// a Success status. It records the channels it saw.
func fakeAgent(t *testing.T, conn net.Conn, seen chan<- byte) {
	defer conn.Close()
	br := bufio.NewReader(conn)
	var buf []byte
	for {
		ch, p, nb, err := tunnel.ReadFrame(br, buf)
		buf = nb
		if err != nil {
			return
		}
		seen <- ch
		switch ch {
		case tunnel.ChanStdin:
			tunnel.WriteFrame(conn, tunnel.ChanStdout, []byte(strings.ToUpper(string(p))))
		case tunnel.ChanResize:
			tunnel.WriteFrame(conn, tunnel.ChanStderr, p)
		case tunnel.ChanClose:
			b, _ := json.Marshal(map[string]string{"kind": "Status", "status": "Success"})
			tunnel.WriteFrame(conn, tunnel.ChanStatus, b)
			return
		}
	}
}

func TestServeChannels(t *testing.T) {
	for _, proto := range []string{ProtocolV5, ProtocolV4} {
		t.Run(proto, func(t *testing.T) {
			seen := make(chan byte, 16)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				a, b := net.Pipe()
				go fakeAgent(t, b, seen)
				ServeChannels(w, r, a, quiet)
			}))
			defer srv.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http"), &websocket.DialOptions{Subprotocols: []string{proto}})
			if err != nil {
				t.Fatal(err)
			}
			defer c.CloseNow()
			if c.Subprotocol() != proto {
				t.Fatalf("negotiated %q; want %q", c.Subprotocol(), proto)
			}
			send := func(ch byte, p string) {
				if err := c.Write(ctx, websocket.MessageBinary, append([]byte{ch}, p...)); err != nil {
					t.Fatal(err)
				}
			}
			read := func() (byte, string) {
				_, m, err := c.Read(ctx)
				if err != nil {
					t.Fatalf("read: %v", err)
				}
				return m[0], string(m[1:])
			}
			send(tunnel.ChanStdin, "hello")
			if ch, p := read(); ch != tunnel.ChanStdout || p != "HELLO" {
				t.Fatalf("echo = %d %q; want stdout HELLO", ch, p)
			}
			send(tunnel.ChanResize, `{"Width":80,"Height":24}`)
			if ch, p := read(); ch != tunnel.ChanStderr || p != `{"Width":80,"Height":24}` {
				t.Fatalf("resize = %d %q", ch, p)
			}
			send(9, "not a channel a client writes") // dropped
			send(tunnel.ChanClose, string([]byte{tunnel.ChanStdin}))
			if proto == ProtocolV4 {
				// v4 has no close signal: the server does not pass it on.
				select {
				case ch := <-seen:
					if ch != tunnel.ChanStdin && ch != tunnel.ChanResize {
						t.Fatalf("the agent saw channel %d from a v4 client", ch)
					}
				default:
				}
				return
			}
			if ch, p := read(); ch != tunnel.ChanStatus || !strings.Contains(p, "Success") {
				t.Fatalf("status = %d %q", ch, p)
			}
			if _, _, err := c.Read(ctx); websocket.CloseStatus(err) != websocket.StatusNormalClosure {
				t.Fatalf("after the status: %v; want a normal close", err)
			}
		})
	}
}

// spdyClient upgrades to plain SPDY at url, as kubectl without
// WebSockets does.
func spdyClient(t *testing.T, url string) *spdystream.Connection {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPost, url+"/portforward", nil)
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", "SPDY/3.1")
	req.Header.Set("X-Stream-Protocol-Version", ProtocolPortForward)
	if err := req.Write(conn); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), req)
	if err != nil || resp.StatusCode != http.StatusSwitchingProtocols || resp.Header.Get("X-Stream-Protocol-Version") != ProtocolPortForward {
		t.Fatalf("upgrade: %v %+v", err, resp)
	}
	sc, err := spdystream.NewConnection(conn, false)
	if err != nil {
		t.Fatal(err)
	}
	go sc.Serve(spdystream.NoOpStreamHandler)
	t.Cleanup(func() { sc.Close() })
	return sc
}

func openPair(t *testing.T, sc *spdystream.Connection, port, id string) (errS, data *spdystream.Stream) {
	t.Helper()
	h := http.Header{}
	h.Set(headerStreamType, streamTypeError)
	h.Set(headerPort, port)
	h.Set(headerRequestID, id)
	errS, err := sc.CreateStream(h, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	errS.Close()
	h.Set(headerStreamType, streamTypeData)
	data, err = sc.CreateStream(h, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	return errS, data
}

func TestServePortForwardPlainSPDY(t *testing.T) {
	open := func(ctx context.Context, port int) (io.ReadWriteCloser, error) {
		if port != 8080 {
			return nil, errors.New("connection refused")
		}
		a, b := net.Pipe()
		go func() {
			defer b.Close()
			line, _ := bufio.NewReader(b).ReadString('\n')
			io.WriteString(b, "pod:"+line)
		}()
		return a, nil
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := CheckPortForward(r); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		ServePortForward(w, r, open, quiet)
	}))
	defer srv.Close()
	sc := spdyClient(t, srv.URL)
	for i := range 3 {
		errS, data := openPair(t, sc, "8080", strconv.Itoa(i))
		io.WriteString(data, "hi\n")
		got, _ := io.ReadAll(data)
		if string(got) != "pod:hi\n" {
			t.Fatalf("connection %d got %q", i, got)
		}
		if msg, _ := io.ReadAll(errS); len(msg) != 0 {
			t.Fatalf("error stream: %q", msg)
		}
	}
	errS, _ := openPair(t, sc, "9999", "x")
	if msg, _ := io.ReadAll(errS); !strings.Contains(string(msg), "connection refused") {
		t.Fatalf("refused port: error stream %q", msg)
	}
	errS, _ = openPair(t, sc, "http", "y")
	if msg, _ := io.ReadAll(errS); !strings.Contains(string(msg), "invalid port") {
		t.Fatalf("bad port: error stream %q", msg)
	}
}

func TestCheckPortForward(t *testing.T) {
	for _, tc := range []struct {
		name string
		hdr  map[string]string
		ok   bool
	}{
		{"websocket tunnel", map[string]string{"Upgrade": "websocket", "Sec-WebSocket-Protocol": ProtocolSPDYTunnel}, true},
		{"websocket without it", map[string]string{"Upgrade": "websocket", "Sec-WebSocket-Protocol": "v5.channel.k8s.io"}, false},
		{"spdy", map[string]string{"Upgrade": "SPDY/3.1", "X-Stream-Protocol-Version": "portforward.k8s.io"}, true},
		{"spdy, other protocol", map[string]string{"Upgrade": "SPDY/3.1", "X-Stream-Protocol-Version": "v4.channel.k8s.io"}, false},
		{"no upgrade", nil, false},
	} {
		r := httptest.NewRequest("GET", "/", nil)
		for k, v := range tc.hdr {
			r.Header.Set(k, v)
		}
		if err := CheckPortForward(r); (err == nil) != tc.ok {
			t.Errorf("CheckPortForward(%s) = %v; want ok %v", tc.name, err, tc.ok)
		}
	}
}
