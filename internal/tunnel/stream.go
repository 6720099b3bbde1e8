package tunnel

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
)

// AgentError is an agent's non-101 answer to a stream request, or its
// non-200 answer to a plain one: Code is the HTTP status, Message the
// agent's text.
type AgentError struct {
	Code    int
	Message string
}

func (e *AgentError) Error() string { return e.Message }

// OpenStream sends an upgrade request for path (with its query) to
// node's agent through rt and returns the upgraded stream. A refusal is
// an *AgentError.
func OpenStream(ctx context.Context, rt http.RoundTripper, node, pathAndQuery string) (io.ReadWriteCloser, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+node+pathAndQuery, nil)
	if err != nil {
		return nil, fmt.Errorf("tunnel: %w", err)
	}
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", StreamProtocol)
	resp, err := rt.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return nil, &AgentError{Code: resp.StatusCode, Message: strings.TrimSpace(string(b))}
	}
	rwc, ok := resp.Body.(io.ReadWriteCloser)
	if !ok {
		resp.Body.Close()
		return nil, errors.New("tunnel: upgraded body is not writable")
	}
	return rwc, nil
}

// IsStreamUpgrade reports whether r asks for a stream upgrade.
func IsStreamUpgrade(r *http.Request) bool {
	return headerHas(r.Header, "Connection", "upgrade") && strings.EqualFold(r.Header.Get("Upgrade"), StreamProtocol)
}

// AcceptStream answers a stream upgrade with 101 and returns the stream.
// Bytes the server already buffered are read first.
func AcceptStream(w http.ResponseWriter) (net.Conn, error) {
	conn, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return nil, fmt.Errorf("tunnel: hijack: %w", err)
	}
	if _, err := io.WriteString(conn, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: "+StreamProtocol+"\r\n\r\n"); err != nil {
		conn.Close()
		return nil, fmt.Errorf("tunnel: answer upgrade: %w", err)
	}
	if brw.Reader.Buffered() > 0 {
		return &bufferedConn{Reader: brw.Reader, Conn: conn}, nil
	}
	return conn, nil
}
