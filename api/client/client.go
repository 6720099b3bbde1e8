package client

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/skiffhq/skiff/api"
)

// Client talks to one skiff server at a time, of the one or several
// configured. Make it with New; it is safe for concurrent use and cheap
// to share.
type Client struct {
	bases   []string      // server URLs without a trailing slash
	cur     *atomic.Int64 // index of the server in use, shared by copies
	token   string
	timeout time.Duration
	// hc opens at most one connection per server, which HTTP/2 shares
	// among all requests: an agent's loops, waking together after a
	// server restart, would otherwise each dial (and the server pay a
	// handshake for each) before any connection is up. h1 is set, for
	// good and shared by copies, once a server answers in HTTP/1 (a
	// proxy that does not speak HTTP/2): a single HTTP/1 connection
	// would serialise every request behind a watch, so from then on
	// requests go through hcMany, which has no limit.
	hc     *http.Client
	hcMany *http.Client
	h1     *atomic.Bool
	// streams upgrades connections (exec, port-forward): HTTP/1.1 only,
	// as WebSocket needs.
	streams *http.Client
}

// New returns a Client for cfg. The server certificate must chain to
// cfg.CAData (the only trust root) and TLS is 1.2 or newer. Redirects are
// not followed, so the bearer token never leaves the configured server.
func New(cfg Config) (*Client, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	pool, err := parseCAs(cfg.CAData)
	if err != nil {
		return nil, fmt.Errorf("client config: %w", err)
	}
	timeout := cfg.Timeout
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	dial := cfg.DialContext
	if dial == nil {
		dial = (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	}
	tr := &http.Transport{
		Proxy:       http.ProxyFromEnvironment,
		DialContext: dial,
		TLSClientConfig: &tls.Config{
			RootCAs: pool, MinVersion: tls.VersionTLS12,
			// A reconnect resumes the last session (the server's
			// tickets outlive its restarts): no certificate chain to
			// send or verify, about a quarter of a handshake's CPU on
			// the agent's side and a few KiB on a slow link.
			ClientSessionCache: newSessionCache(sessionCacheSize),
		},
		ForceAttemptHTTP2: true,
		// The server compresses nothing this client asks for (only
		// discovery, for kubectl), and every header field costs the
		// server an allocation on each request: a fleet's heartbeats
		// and reports are thousands a second.
		DisableCompression:    true,
		MaxIdleConns:          100,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
		// A connection that went silent (a cut link: no RST, no FIN) is
		// pinged and dropped, so requests do not queue on it until TCP
		// gives up many minutes later.
		HTTP2: &http.HTTP2Config{
			SendPingTimeout: h2PingAfter, PingTimeout: h2PingTimeout,
			MaxEncoderHeaderTableSize: hpackEncoderTableSize,
		},
	}
	noRedirect := func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	many := tr.Clone()
	str := tr.Clone()
	str.ForceAttemptHTTP2 = false
	str.TLSClientConfig.NextProtos = []string{"http/1.1"}
	// A connection the server closed or sent GOAWAY on, or one whose
	// ping went unanswered, is dropped by the next request on it, and
	// that frees the slot for a new dial.
	tr.MaxConnsPerHost = 1
	return &Client{
		bases: Servers(cfg.Server), cur: new(atomic.Int64), token: cfg.Token, timeout: timeout,
		hc:      &http.Client{Transport: tr, CheckRedirect: noRedirect},
		hcMany:  &http.Client{Transport: many, CheckRedirect: noRedirect},
		h1:      new(atomic.Bool),
		streams: &http.Client{Transport: str, CheckRedirect: noRedirect},
	}, nil
}

// sessionCacheSize is how many servers' TLS sessions a client keeps (one
// a server of a multi-server cluster).
const sessionCacheSize = 4

// CloseIdleConnections closes the client's idle connections (a client
// used once, as the join's, need not keep its connection open).
func (c *Client) CloseIdleConnections() {
	c.hc.CloseIdleConnections()
	c.hcMany.CloseIdleConnections()
	c.streams.CloseIdleConnections()
}

// String names the server, never the token, so a Client may be logged.
func (c Client) String() string { return "client.Client{Server: " + strings.Join(c.bases, ",") + "}" }

// base is the URL of the server in use.
func (c *Client) base() string { return c.bases[int(c.cur.Load())%len(c.bases)] }

// failover moves to the next server when base, the one a request went
// to, failed it: the request is not retried (it may have taken effect),
// the caller's next attempt goes to the next server.
func (c *Client) failover(base string) {
	if len(c.bases) < 2 {
		return
	}
	i := c.cur.Load()
	if c.bases[int(i)%len(c.bases)] == base {
		c.cur.CompareAndSwap(i, (i+1)%int64(len(c.bases)))
	}
}

// Server returns the URL of the server in use.
func (c *Client) Server() string { return c.base() }

// request is one API call before it is sent. path is already escaped.
type request struct {
	method      string
	path        string
	query       url.Values
	body        []byte
	contentType string
}

// String is "METHOD /path", for error messages.
func (r request) String() string { return r.method + " " + r.path }

// newHTTPRequest builds a request for pathAndQuery (already escaped) on
// the server, with the auth and content-type headers. It sends no
// Accept: JSON is the server's answer without one, and the HTTP/2
// server grows its list of a request's header fields by doubling: a
// usage report's eight fields (four pseudo-headers, user agent,
// authorization, content type and length; a heartbeat has no type)
// take four growths where ten, with Accept and Accept-Encoding, took
// five (600 bytes against 1 240 a request).
func (c *Client) newHTTPRequest(ctx context.Context, method, pathAndQuery string, body io.Reader, contentType string) (*http.Request, error) {
	if !strings.HasPrefix(pathAndQuery, "/") {
		return nil, fmt.Errorf("request path %q must start with /", pathAndQuery)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base()+pathAndQuery, body)
	if err != nil {
		return nil, fmt.Errorf("build %s %s: %w", method, pathAndQuery, err)
	}
	req.Header.Set("User-Agent", "skiff-client")
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	return req, nil
}

func (r request) pathAndQuery() string {
	if len(r.query) == 0 {
		return r.path
	}
	return r.path + "?" + r.query.Encode()
}

// send performs r; see roundTrip for what it returns.
func (c *Client) send(ctx context.Context, r request) (*http.Response, error) {
	var body io.Reader
	if r.body != nil {
		body = bytes.NewReader(r.body)
	}
	req, err := c.newHTTPRequest(ctx, r.method, r.pathAndQuery(), body, r.contentType)
	if err != nil {
		return nil, err
	}
	return c.roundTrip(req)
}

// roundTrip sends req and returns the response when it is 2xx; any other
// answer is closed and returned as *api.StatusError. The caller closes the
// body of a successful response.
func (c *Client) roundTrip(req *http.Request) (*http.Response, error) {
	hc := c.hc
	if c.h1.Load() {
		hc = c.hcMany
	}
	resp, err := hc.Do(req)
	if err == nil && resp.ProtoMajor < 2 && hc == c.hc && !c.h1.Swap(true) {
		c.hc.CloseIdleConnections()
	}
	if err != nil {
		if req.Context().Err() == nil {
			c.failover(c.baseOf(req))
		}
		return nil, err // *url.Error names method and URL; never the token
	}
	if resp.StatusCode == http.StatusServiceUnavailable {
		c.failover(c.baseOf(req))
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		defer resp.Body.Close()
		return nil, errorFromResponse(resp)
	}
	return resp, nil
}

// baseOf returns which configured server req went to.
func (c *Client) baseOf(req *http.Request) string {
	u := req.URL.String()
	for _, b := range c.bases {
		if strings.HasPrefix(u, b+"/") || u == b {
			return b
		}
	}
	return ""
}

// do performs a non-streaming request within the client timeout and
// returns the whole body of a 2xx answer.
func (c *Client) do(ctx context.Context, r request) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	resp, err := c.send(ctx, r)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("%s: read response: %w", r, err)
	}
	return data, nil
}

// Do sends an arbitrary request to path (which starts with "/" and may
// carry a query) for endpoints the typed methods do not cover, such as
// join tokens. body, if not nil, is sent as application/json. A 2xx
// response is returned open: the caller must close its body. Any other
// answer is returned as *api.StatusError with the body closed. Do applies
// no timeout of its own; ctx bounds the whole exchange.
func (c *Client) Do(ctx context.Context, method, path string, body io.Reader) (*http.Response, error) {
	ct := ""
	if body != nil {
		ct = "application/json"
	}
	req, err := c.newHTTPRequest(ctx, method, path, body, ct)
	if err != nil {
		return nil, err
	}
	return c.roundTrip(req)
}

// DoJSON sends in (when not nil) as JSON to path and decodes a 2xx answer
// into out (when not nil), within the client timeout. Errors are as for Do.
func (c *Client) DoJSON(ctx context.Context, method, path string, in, out any) error {
	r := request{method: method, path: path}
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("%s: encode request: %w", r, err)
		}
		r.body, r.contentType = b, "application/json"
	}
	data, err := c.do(ctx, r)
	if err != nil {
		return err
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("%s: decode response: %w", r, err)
	}
	return nil
}

// maxErrorBody bounds how much of an error response is read.
const maxErrorBody = 1 << 20

// maxErrorMessage bounds the message made from a non-Status error body.
const maxErrorMessage = 512

// errorFromResponse reads a non-2xx response into a *api.StatusError.
func errorFromResponse(resp *http.Response) error {
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	if err != nil && len(body) == 0 {
		return api.NewStatusError(resp.StatusCode, reasonForCode(resp.StatusCode),
			"the server answered %s (reading its body failed: %v)", resp.Status, err)
	}
	return statusErrorFromBody(resp.StatusCode, body)
}

// statusErrorFromBody turns an error answer into a StatusError: a Status
// body is used as it is, with its code and reason filled from the HTTP
// code when missing; any other body becomes the message, trimmed.
func statusErrorFromBody(code int, body []byte) *api.StatusError {
	var st api.Status
	if err := json.Unmarshal(body, &st); err == nil && st.Kind == "Status" {
		return statusError(st, code)
	}
	msg := strings.TrimSpace(string(body))
	if len(msg) > maxErrorMessage {
		cut := maxErrorMessage
		for cut > 0 && !utf8.RuneStart(msg[cut]) {
			cut--
		}
		msg = msg[:cut] + "…"
	}
	if msg == "" {
		msg = fmt.Sprintf("the server answered %d %s", code, http.StatusText(code))
	}
	return api.NewStatusError(code, reasonForCode(code), "%s", msg)
}

// statusError completes st (code, reason, message) and wraps it.
func statusError(st api.Status, code int) *api.StatusError {
	if st.Code == 0 {
		st.Code = int32(code)
	}
	if st.Reason == "" {
		st.Reason = reasonForCode(int(st.Code))
	}
	if st.Status == "" {
		st.Status = "Failure"
	}
	if st.Message == "" {
		st.Message = fmt.Sprintf("the server answered %d %s", st.Code, http.StatusText(int(st.Code)))
	}
	return &api.StatusError{Status: st}
}

// reasonForCode is the StatusReason Kubernetes uses for an HTTP code, or
// "" when there is none.
func reasonForCode(code int) api.StatusReason {
	switch code {
	case http.StatusBadRequest:
		return api.StatusReasonBadRequest
	case http.StatusUnauthorized:
		return api.StatusReasonUnauthorized
	case http.StatusForbidden:
		return api.StatusReasonForbidden
	case http.StatusNotFound:
		return api.StatusReasonNotFound
	case http.StatusMethodNotAllowed:
		return api.StatusReasonMethodNotAllowed
	case http.StatusNotAcceptable:
		return api.StatusReasonNotAcceptable
	case http.StatusConflict:
		return api.StatusReasonConflict
	case http.StatusGone:
		return api.StatusReasonGone
	case http.StatusRequestEntityTooLarge:
		return api.StatusReasonRequestEntityTooLarge
	case http.StatusUnsupportedMediaType:
		return api.StatusReasonUnsupportedMediaType
	case http.StatusUnprocessableEntity:
		return api.StatusReasonInvalid
	case http.StatusTooManyRequests:
		return api.StatusReasonTooManyRequests
	case http.StatusInternalServerError:
		return api.StatusReasonInternalError
	case http.StatusServiceUnavailable:
		return api.StatusReasonServiceUnavailable
	case http.StatusGatewayTimeout:
		return api.StatusReasonTimeout
	}
	return ""
}

// IsGone reports whether err says a watch or list resourceVersion is too
// old (HTTP 410, reason Gone or Expired): the caller must relist.
func IsGone(err error) bool {
	var se *api.StatusError
	if !errors.As(err, &se) {
		return false
	}
	return se.Status.Code == http.StatusGone ||
		se.Status.Reason == api.StatusReasonGone || se.Status.Reason == api.StatusReasonExpired
}
