package streams

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/coder/websocket"
	"github.com/moby/spdystream"
)

// Port-forward protocol names.
const (
	// ProtocolPortForward is the stream protocol inside SPDY.
	ProtocolPortForward = "portforward.k8s.io"
	// ProtocolSPDYTunnel is the WebSocket subprotocol carrying SPDY.
	ProtocolSPDYTunnel = "SPDY/3.1+" + ProtocolPortForward
	spdyUpgrade        = "SPDY/3.1"
)

// Headers of a port-forward SPDY stream.
const (
	headerStreamType = "streamType"
	headerPort       = "port"
	headerRequestID  = "requestID"
	streamTypeError  = "error"
	streamTypeData   = "data"
)

// PortOpener connects to port of the target pod (through its agent).
type PortOpener func(ctx context.Context, port int) (io.ReadWriteCloser, error)

// PortForwardError is why a port-forward request cannot be upgraded.
type PortForwardError struct{ Message string }

func (e *PortForwardError) Error() string { return e.Message }

// CheckPortForward reports whether r asks for a protocol ServePortForward
// speaks, before anything is written.
func CheckPortForward(r *http.Request) error {
	if IsWebSocket(r) {
		for _, p := range offered(r) {
			if p == ProtocolSPDYTunnel {
				return nil
			}
		}
		return &PortForwardError{Message: "port-forward over WebSocket needs the subprotocol " + ProtocolSPDYTunnel}
	}
	if !strings.EqualFold(r.Header.Get("Upgrade"), spdyUpgrade) {
		return &PortForwardError{Message: "port-forward needs an upgrade to " + spdyUpgrade + " or to a WebSocket tunnelling it"}
	}
	for _, v := range r.Header.Values("X-Stream-Protocol-Version") {
		for _, p := range strings.Split(v, ",") {
			if strings.TrimSpace(p) == ProtocolPortForward {
				return nil
			}
		}
	}
	return &PortForwardError{Message: "port-forward needs the stream protocol " + ProtocolPortForward}
}

// ServePortForward upgrades r (checked by CheckPortForward) to SPDY,
// plain or in a WebSocket, and serves forwarded connections with open
// until the client goes.
func ServePortForward(w http.ResponseWriter, r *http.Request, open PortOpener, log *slog.Logger) {
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	var conn net.Conn
	if IsWebSocket(r) {
		c, err := websocket.Accept(w, r, &websocket.AcceptOptions{Subprotocols: []string{ProtocolSPDYTunnel}})
		if err != nil {
			log.Debug("port-forward: websocket upgrade", "err", err)
			return
		}
		conn = websocket.NetConn(ctx, c, websocket.MessageBinary)
	} else {
		raw, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			log.Debug("port-forward: hijack", "err", err)
			return
		}
		if _, err := io.WriteString(raw, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: "+spdyUpgrade+"\r\nX-Stream-Protocol-Version: "+ProtocolPortForward+"\r\n\r\n"); err != nil {
			raw.Close()
			return
		}
		conn = raw
	}
	defer conn.Close()
	sc, err := spdystream.NewConnection(conn, true)
	if err != nil {
		log.Debug("port-forward: spdy", "err", err)
		return
	}
	defer sc.Close()
	f := &forwarder{ctx: ctx, open: open, log: log, pairs: map[string]*streamPair{}}
	sc.Serve(f.newStream)
	f.wg.Wait()
}

// streamPair is the error and data stream of one forwarded connection.
type streamPair struct {
	port       string
	errStream  *spdystream.Stream
	dataStream *spdystream.Stream
}

type forwarder struct {
	ctx  context.Context
	open PortOpener
	log  *slog.Logger
	wg   sync.WaitGroup

	mu    sync.Mutex
	pairs map[string]*streamPair
}

// newStream runs on spdystream's frame worker: it must not block.
func (f *forwarder) newStream(st *spdystream.Stream) {
	h := st.Headers()
	typ, port, id := h.Get(headerStreamType), h.Get(headerPort), h.Get(headerRequestID)
	if err := st.SendReply(http.Header{}, false); err != nil {
		return
	}
	if typ != streamTypeError && typ != streamTypeData {
		_ = st.Reset()
		return
	}
	f.mu.Lock()
	p := f.pairs[id]
	if p == nil {
		p = &streamPair{port: port}
		f.pairs[id] = p
	}
	if typ == streamTypeError {
		p.errStream = st
	} else {
		p.dataStream = st
	}
	ready := p.errStream != nil && p.dataStream != nil
	if ready {
		delete(f.pairs, id)
	}
	f.mu.Unlock()
	if ready {
		f.wg.Add(1)
		go func() {
			defer f.wg.Done()
			f.forward(p)
		}()
	}
}

func (f *forwarder) forward(p *streamPair) {
	defer p.errStream.Close()
	defer p.dataStream.Close()
	port, err := strconv.Atoi(p.port)
	if err != nil || port < 1 || port > 65535 {
		fmt.Fprintf(p.errStream, "invalid port %q", p.port)
		return
	}
	agent, err := f.open(f.ctx, port)
	if err != nil {
		fmt.Fprintf(p.errStream, "error forwarding port %d: %v", port, err)
		return
	}
	defer agent.Close()
	// The forward ends when the pod's side does, as the kubelet's does:
	// kubectl waits for the error stream to close before it closes its
	// local connection, so waiting for the client's end too would hang a
	// client that reads until EOF.
	go func() {
		buf := make([]byte, 32<<10)
		if _, err := io.CopyBuffer(agent, p.dataStream, buf); err == nil {
			agent.Close() // the tunnel stream's Close ends only its sending half
		}
	}()
	buf := make([]byte, 128<<10)
	if _, err := io.CopyBuffer(p.dataStream, agent, buf); err != nil {
		f.log.Debug("port-forward: copy from the pod", "port", port, "err", err)
	}
}
