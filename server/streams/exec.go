package streams

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"

	"github.com/coder/websocket"

	"github.com/skiffhq/skiff/internal/tunnel"
)

// Channel protocols kubectl offers for exec and attach, best first.
const (
	ProtocolV5 = "v5.channel.k8s.io"
	ProtocolV4 = "v4.channel.k8s.io"
)

// maxMessage bounds one WebSocket message from a client (a stdin chunk,
// a resize).
const maxMessage = 1 << 20

// IsWebSocket reports whether r asks for a WebSocket upgrade.
func IsWebSocket(r *http.Request) bool {
	return strings.EqualFold(r.Header.Get("Upgrade"), "websocket")
}

// OffersChannels reports whether r offers a channel protocol this
// package speaks.
func OffersChannels(r *http.Request) bool {
	for _, p := range offered(r) {
		if p == ProtocolV5 || p == ProtocolV4 {
			return true
		}
	}
	return false
}

func offered(r *http.Request) []string {
	var out []string
	for _, v := range r.Header.Values("Sec-WebSocket-Protocol") {
		for _, p := range strings.Split(v, ",") {
			out = append(out, strings.TrimSpace(p))
		}
	}
	return out
}

// ServeChannels upgrades r to a WebSocket speaking v5 (or v4) and relays
// it to agent, an exec or attach stream already open, until the agent
// sends its Status and ends the stream or the client goes. It closes
// agent.
func ServeChannels(w http.ResponseWriter, r *http.Request, agent io.ReadWriteCloser, log *slog.Logger) {
	defer agent.Close()
	c, err := websocket.Accept(w, r, &websocket.AcceptOptions{Subprotocols: []string{ProtocolV5, ProtocolV4}})
	if err != nil {
		log.Debug("exec: websocket upgrade", "err", err)
		return
	}
	defer c.CloseNow()
	c.SetReadLimit(maxMessage)
	v5 := c.Subprotocol() == ProtocolV5
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()

	// Client to agent: stdin, resize and (v5) close messages.
	go func() {
		defer cancel()
		defer agent.Close()
		for {
			_, msg, err := c.Read(ctx)
			if err != nil {
				return
			}
			if len(msg) == 0 {
				continue
			}
			ch, p := msg[0], msg[1:]
			switch {
			case ch == tunnel.ChanStdin, ch == tunnel.ChanResize:
			case ch == tunnel.ChanClose && v5 && len(p) == 1:
			default:
				continue // nothing else flows from the client
			}
			if err := tunnel.WriteFrame(agent, ch, p); err != nil {
				return
			}
		}
	}()

	// Agent to client: output and, last, the Status.
	// Buffers start small and grow to the largest frame seen: an idle
	// interactive session holds little.
	br := bufio.NewReaderSize(agent, 4<<10)
	var buf, out []byte
	for {
		ch, p, nb, err := tunnel.ReadFrame(br, buf)
		buf = nb
		if err != nil {
			break
		}
		out = append(append(out[:0], ch), p...)
		if err := c.Write(ctx, websocket.MessageBinary, out); err != nil {
			return
		}
	}
	// Close waits (at most 5 s) for the client's answering close frame,
	// which the reader above consumes.
	if err := c.Close(websocket.StatusNormalClosure, ""); err != nil {
		log.Debug("exec: websocket close", "err", err)
	}
}
