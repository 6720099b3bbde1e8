package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/skiffhq/skiff/api"
)

// OpenDuplex sends "POST path" on the client's HTTP/2 connection with a
// request body that streams, and returns both bodies as one connection:
// what is written goes to the server as the request body, what is read
// is the response body. Closing it ends the exchange. The server must
// answer 2xx (a refusal is an *api.StatusError) within the client
// timeout; after that the exchange lasts as long as ctx and the
// connection do.
//
// It fails at once with an error wrapping errors.ErrUnsupported when
// the connection is HTTP/1 (a proxy on the way that speaks no HTTP/2:
// a full-duplex exchange needs it), and so it does when the server
// answers 404 or 405 (a server without the endpoint); the caller then
// falls back to what it did before.
func (c *Client) OpenDuplex(ctx context.Context, path string) (io.ReadWriteCloser, error) {
	if c.h1.Load() {
		return nil, fmt.Errorf("POST %s: the server is reached over HTTP/1: %w", path, errors.ErrUnsupported)
	}
	ctx, cancel := context.WithCancel(ctx)
	pr, pw := io.Pipe()
	req, err := c.newHTTPRequest(ctx, http.MethodPost, path, pr, "application/octet-stream")
	if err != nil {
		cancel()
		return nil, err
	}
	// The answer's headers must come within the timeout; the exchange
	// itself has none.
	headers := time.AfterFunc(c.timeout, cancel)
	resp, err := c.roundTrip(req)
	timedOut := !headers.Stop()
	if err != nil {
		cancel()
		pw.Close()
		var se *api.StatusError
		if errors.As(err, &se) && (se.Status.Code == http.StatusNotFound || se.Status.Code == http.StatusMethodNotAllowed) {
			return nil, fmt.Errorf("POST %s: %w: %w", path, err, errors.ErrUnsupported)
		}
		// Refused, or never answered, over HTTP/1 (an HTTP/1 server
		// reads a request body before it answers, unless told not to).
		if c.h1.Load() {
			return nil, fmt.Errorf("POST %s: the server is reached over HTTP/1: %w: %w", path, err, errors.ErrUnsupported)
		}
		if timedOut {
			return nil, fmt.Errorf("POST %s: no answer in %v: %w", path, c.timeout, err)
		}
		return nil, err
	}
	if resp.ProtoMajor < 2 {
		resp.Body.Close()
		cancel()
		pw.Close()
		return nil, fmt.Errorf("POST %s: answered over HTTP/1: %w", path, errors.ErrUnsupported)
	}
	return &duplex{body: resp.Body, pw: pw, cancel: cancel}, nil
}

// duplex is the two bodies of a streamed exchange.
type duplex struct {
	body   io.ReadCloser
	pw     *io.PipeWriter
	cancel context.CancelFunc
	once   sync.Once
}

func (d *duplex) Read(p []byte) (int, error)  { return d.body.Read(p) }
func (d *duplex) Write(p []byte) (int, error) { return d.pw.Write(p) }

// Close ends the request body, cancels the exchange (a reset stream) and
// closes the response body.
func (d *duplex) Close() error {
	d.once.Do(func() {
		d.pw.Close()
		d.cancel()
		d.body.Close()
	})
	return nil
}
