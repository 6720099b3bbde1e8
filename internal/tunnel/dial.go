package tunnel

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/hashicorp/yamux"
)

// DialConfig says how an agent reaches the server.
type DialConfig struct {
	// Server is the server's https:// URL.
	Server string
	// CAData is the PEM of the cluster CA: the only root the server's
	// certificate may chain to.
	CAData []byte
	// Token is the node credential.
	Token string
	// DialContext opens the TCP connection; nil means a net.Dialer.
	// Tests use it to dial from inside a network namespace.
	DialContext func(ctx context.Context, network, addr string) (net.Conn, error)
	// Timeout bounds the TCP and TLS handshakes and the upgrade; 0
	// means 15 s.
	Timeout time.Duration
}

// RefusedError is the server's non-101 answer to a tunnel request.
type RefusedError struct {
	Code    int
	Message string
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("tunnel refused: %d %s: %s", e.Code, http.StatusText(e.Code), e.Message)
}

// Dial opens the agent's tunnel: TLS to cfg.Server, the upgrade request
// with the node credential, then a yamux session in which the agent
// accepts the streams the server opens. Close the session to end it.
func Dial(ctx context.Context, cfg DialConfig) (*yamux.Session, error) {
	u, err := url.Parse(cfg.Server)
	if err != nil || u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("tunnel: server %q must be an https:// URL", cfg.Server)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(cfg.CAData) {
		return nil, errors.New("tunnel: no CA certificate in CAData")
	}
	timeout := cfg.Timeout
	if timeout <= 0 {
		timeout = 15 * time.Second
	}
	host := u.Host
	if u.Port() == "" {
		host = net.JoinHostPort(u.Hostname(), "443")
	}
	dial := cfg.DialContext
	if dial == nil {
		dial = (&net.Dialer{KeepAlive: 30 * time.Second}).DialContext
	}
	hctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	raw, err := dial(hctx, "tcp", host)
	if err != nil {
		return nil, fmt.Errorf("tunnel: dial %s: %w", host, err)
	}
	conn := tls.Client(raw, &tls.Config{RootCAs: pool, ServerName: u.Hostname(), MinVersion: tls.VersionTLS12, NextProtos: []string{"http/1.1"}})
	sess, err := upgrade(hctx, conn, u, cfg.Token)
	if err != nil {
		conn.Close()
		return nil, err
	}
	return sess, nil
}

func upgrade(ctx context.Context, conn *tls.Conn, u *url.URL, token string) (*yamux.Session, error) {
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	if err := conn.HandshakeContext(ctx); err != nil {
		return nil, fmt.Errorf("tunnel: tls: %w", err)
	}
	req, err := http.NewRequest(http.MethodGet, (&url.URL{Scheme: "https", Host: u.Host, Path: strings.TrimSuffix(u.Path, "/") + Path}).String(), nil)
	if err != nil {
		return nil, fmt.Errorf("tunnel: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", Protocol)
	if err := req.Write(conn); err != nil {
		return nil, fmt.Errorf("tunnel: send upgrade: %w", err)
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, req)
	if err != nil {
		return nil, fmt.Errorf("tunnel: read upgrade answer: %w", err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols || !strings.EqualFold(resp.Header.Get("Upgrade"), Protocol) {
		defer resp.Body.Close()
		return nil, &RefusedError{Code: resp.StatusCode, Message: statusMessage(resp.Body)}
	}
	if !stop() {
		return nil, fmt.Errorf("tunnel: upgrade: %w", ctx.Err())
	}
	conn.SetDeadline(time.Time{})
	var rwc io.ReadWriteCloser = conn
	if br.Buffered() > 0 {
		rwc = &bufferedConn{Reader: br, Conn: conn}
	}
	sess, err := yamux.Server(rwc, muxConfig())
	if err != nil {
		return nil, fmt.Errorf("tunnel: %w", err)
	}
	return sess, nil
}

// statusMessage is the message of a v1 Status body, or the body's text.
func statusMessage(r io.Reader) string {
	b, _ := io.ReadAll(io.LimitReader(r, 4096))
	var st struct {
		Message string `json:"message"`
	}
	if json.Unmarshal(b, &st) == nil && st.Message != "" {
		return st.Message
	}
	return strings.TrimSpace(string(b))
}

// bufferedConn reads what a bufio.Reader already holds before the
// connection.
type bufferedConn struct {
	*bufio.Reader
	net.Conn
}

func (c *bufferedConn) Read(p []byte) (int, error) { return c.Reader.Read(p) }

// CloseWrite ends the sending half where the connection can; else it
// closes it (a yamux stream's Close ends its sending half).
func (c *bufferedConn) CloseWrite() error {
	if cw, ok := c.Conn.(closeWriter); ok {
		return cw.CloseWrite()
	}
	return c.Conn.Close()
}
