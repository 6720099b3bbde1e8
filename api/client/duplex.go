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

// OpenStream sends "POST path" with no body on the client's HTTP/2
// connection and returns the answer's body, which streams for as long
// as ctx and the connection last. Errors are as OpenDuplex's.
func (c *Client) OpenStream(ctx context.Context, path string) (io.ReadCloser, error) {
	resp, cancel, err := c.openPost(ctx, path, nil)
	if err != nil {
		return nil, err
	}
	return &streamBody{ReadCloser: resp.Body, cancel: cancel}, nil
}

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
	pr, pw := io.Pipe()
	resp, cancel, err := c.openPost(ctx, path, pr)
	if err != nil {
		pw.Close()
		return nil, err
	}
	return &duplex{body: resp.Body, pw: pw, cancel: cancel}, nil
}

// openPost sends a POST of body (nil for none) over HTTP/2 and returns
// the 2xx answer, and what cancels the exchange.
func (c *Client) openPost(ctx context.Context, path string, body io.Reader) (*http.Response, context.CancelFunc, error) {
	if c.h1.Load() {
		return nil, nil, fmt.Errorf("POST %s: the server is reached over HTTP/1: %w", path, errors.ErrUnsupported)
	}
	ctx, cancel := context.WithCancel(ctx)
	ct := ""
	if body != nil {
		ct = "application/octet-stream"
	}
	req, err := c.newHTTPRequest(ctx, http.MethodPost, path, body, ct)
	if err != nil {
		cancel()
		return nil, nil, err
	}
	// The answer's headers must come within the timeout; the exchange
	// itself has none.
	headers := time.AfterFunc(c.timeout, cancel)
	resp, err := c.roundTrip(req)
	timedOut := !headers.Stop()
	if err != nil {
		cancel()
		var se *api.StatusError
		if errors.As(err, &se) && (se.Status.Code == http.StatusNotFound || se.Status.Code == http.StatusMethodNotAllowed) {
			return nil, nil, fmt.Errorf("POST %s: %w: %w", path, err, errors.ErrUnsupported)
		}
		// Refused, or never answered, over HTTP/1 (an HTTP/1 server
		// reads a request body before it answers, unless told not to).
		if c.h1.Load() {
			return nil, nil, fmt.Errorf("POST %s: the server is reached over HTTP/1: %w: %w", path, err, errors.ErrUnsupported)
		}
		if timedOut {
			return nil, nil, fmt.Errorf("POST %s: no answer in %v: %w", path, c.timeout, err)
		}
		return nil, nil, err
	}
	if resp.ProtoMajor < 2 {
		resp.Body.Close()
		cancel()
		return nil, nil, fmt.Errorf("POST %s: answered over HTTP/1: %w", path, errors.ErrUnsupported)
	}
	return resp, cancel, nil
}

// streamBody is a streamed answer whose Close also cancels its request.
type streamBody struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (b *streamBody) Close() error {
	b.cancel()
	return b.ReadCloser.Close()
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

// CloseWrite ends the request body: the server reads its end, and may go
// on answering.
func (d *duplex) CloseWrite() error { return d.pw.Close() }

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
