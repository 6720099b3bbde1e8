package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/coder/websocket"
	"github.com/moby/spdystream"
)

// portForwardProtocol is SPDY carrying portforward.k8s.io streams,
// tunnelled in a WebSocket (what kubectl 1.31+ uses).
const portForwardProtocol = "SPDY/3.1+portforward.k8s.io"

// ForwardedPort maps a local listener to a port of the pod.
type ForwardedPort struct {
	Listener net.Listener
	Remote   int
}

// PortForward forwards every connection accepted on each ports[i].Listener
// to ports[i].Remote on the pod's loopback, through one WebSocket
// tunnelling SPDY, until ctx ends or the connection to the server
// breaks. It closes the listeners. errs, when set, receives per-
// connection failures (a refused port) without ending the forward.
func (c *Client) PortForward(ctx context.Context, ns, pod string, ports []ForwardedPort, errs func(error)) error {
	if len(ports) == 0 {
		return errors.New("port-forward: no ports")
	}
	q := url.Values{}
	for _, p := range ports {
		q.Add("ports", strconv.Itoa(p.Remote))
	}
	ws, err := c.dialStream(ctx, ns, pod, "portforward", q, portForwardProtocol)
	if err != nil {
		for _, p := range ports {
			p.Listener.Close()
		}
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	conn := websocket.NetConn(ctx, ws, websocket.MessageBinary)
	sc, err := spdystream.NewConnection(conn, false)
	if err != nil {
		conn.Close()
		return fmt.Errorf("port-forward: %w", err)
	}
	go sc.Serve(spdystream.NoOpStreamHandler)
	defer sc.Close()
	if errs == nil {
		errs = func(error) {}
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	var requestID atomic.Int64
	for _, p := range ports {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-ctx.Done()
			p.Listener.Close()
		}()
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				local, err := p.Listener.Accept()
				if err != nil {
					return
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					defer local.Close()
					if err := forwardOne(sc, local, p.Remote, requestID.Add(1)); err != nil {
						errs(err)
					}
				}()
			}
		}()
	}
	select {
	case <-ctx.Done():
	case <-sc.CloseChan():
		cancel()
		if ctx.Err() == nil {
			return errors.New("port-forward: the server closed the connection")
		}
	}
	return nil
}

// forwardOne carries one local connection over a pair of SPDY streams.
func forwardOne(sc *spdystream.Connection, local net.Conn, port int, id int64) error {
	h := http.Header{}
	h.Set("streamType", "error")
	h.Set("port", strconv.Itoa(port))
	h.Set("requestID", strconv.FormatInt(id, 10))
	errStream, err := sc.CreateStream(h, nil, false)
	if err != nil {
		return fmt.Errorf("port-forward %d: %w", port, err)
	}
	defer errStream.Reset()
	if err := errStream.Close(); err != nil { // nothing to send on it
		return fmt.Errorf("port-forward %d: %w", port, err)
	}
	h.Set("streamType", "data")
	data, err := sc.CreateStream(h, nil, false)
	if err != nil {
		return fmt.Errorf("port-forward %d: %w", port, err)
	}
	defer data.Reset()
	remoteErr := make(chan string, 1)
	go func() {
		b, _ := io.ReadAll(errStream)
		remoteErr <- string(b)
	}()
	go func() {
		_, _ = io.Copy(data, local)
		_ = data.Close()
	}()
	_, _ = io.Copy(local, data)
	if tc, ok := local.(*net.TCPConn); ok {
		_ = tc.CloseWrite()
	}
	if msg := <-remoteErr; msg != "" {
		return fmt.Errorf("port-forward %d: %s", port, msg)
	}
	return nil
}
