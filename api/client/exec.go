package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"

	"github.com/coder/websocket"

	"github.com/skiffhq/skiff/api"
)

// Channel protocol of exec and attach (Kubernetes' v5.channel.k8s.io).
const (
	execProtocol = "v5.channel.k8s.io"
	chanStdin    = 0
	chanStdout   = 1
	chanStderr   = 2
	chanStatus   = 3
	chanResize   = 4
	chanClose    = 255
)

// TermSize is a terminal's size in characters.
type TermSize struct {
	Width, Height uint16
}

// ExecOptions is one command to run in a pod's container.
type ExecOptions struct {
	// Container names the container; "" is fine for one-container pods.
	Container string
	Command   []string
	// Stdin, when set, is sent to the command; its EOF closes the
	// command's stdin.
	Stdin io.Reader
	// Stdout and Stderr receive the output; nil leaves that stream out.
	// With TTY everything arrives on Stdout.
	Stdout, Stderr io.Writer
	TTY            bool
	// Resize delivers terminal sizes (TTY only).
	Resize <-chan TermSize
}

// ExitError is a command's non-zero exit.
type ExitError struct{ Code int }

func (e *ExitError) Error() string {
	return fmt.Sprintf("command terminated with exit code %d", e.Code)
}

// Exec runs o.Command in a container of pod ns/pod over the WebSocket
// channel protocol kubectl uses, and returns once it exits: nil for exit
// code 0, an *ExitError for another code, an *api.StatusError when the
// server refuses. ctx bounds the whole session.
func (c *Client) Exec(ctx context.Context, ns, pod string, o ExecOptions) error {
	if len(o.Command) == 0 {
		return errors.New("exec: no command")
	}
	q := url.Values{"command": o.Command}
	if o.Container != "" {
		q.Set("container", o.Container)
	}
	for k, on := range map[string]bool{"stdin": o.Stdin != nil, "stdout": o.Stdout != nil, "stderr": o.Stderr != nil && !o.TTY, "tty": o.TTY} {
		if on {
			q.Set(k, "true")
		}
	}
	return c.channels(ctx, ns, pod, "exec", q, o)
}

// Attach streams the output of a running container of pod ns/pod to
// o.Stdout until the container stops or ctx ends.
func (c *Client) Attach(ctx context.Context, ns, pod string, o ExecOptions) error {
	q := url.Values{"stdout": {"true"}}
	if o.Container != "" {
		q.Set("container", o.Container)
	}
	o.Stdin, o.Stderr = nil, nil
	return c.channels(ctx, ns, pod, "attach", q, o)
}

// dialStream opens a WebSocket to a pod subresource with subprotocol.
func (c *Client) dialStream(ctx context.Context, ns, pod, sub string, q url.Values, protocol string) (*websocket.Conn, error) {
	res, ok := api.LookupResource("pods")
	if !ok {
		return nil, fmt.Errorf("%s: %w", sub, errNoResource)
	}
	p, err := objectPath(res, ns, pod, sub)
	if err != nil {
		return nil, err
	}
	h := http.Header{}
	if c.token != "" {
		h.Set("Authorization", "Bearer "+c.token)
	}
	u := c.base() + p
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	conn, resp, err := websocket.Dial(ctx, u, &websocket.DialOptions{HTTPClient: c.streams, HTTPHeader: h, Subprotocols: []string{protocol}})
	if err != nil {
		if resp != nil && resp.StatusCode != http.StatusSwitchingProtocols {
			if serr := statusFromResponse(resp); serr != nil {
				return nil, serr
			}
		}
		return nil, fmt.Errorf("%s %s/%s: %w", sub, ns, pod, err)
	}
	if conn.Subprotocol() != protocol {
		conn.Close(websocket.StatusProtocolError, "")
		return nil, fmt.Errorf("%s: the server does not speak %s", sub, protocol)
	}
	return conn, nil
}

// statusFromResponse decodes a refused upgrade's Status, if it is one.
func statusFromResponse(resp *http.Response) *api.StatusError {
	if resp.Body == nil {
		return nil
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var st api.Status
	if json.Unmarshal(b, &st) != nil || st.Kind != "Status" {
		return api.NewStatusError(resp.StatusCode, api.StatusReasonInternalError, "%s", strings.TrimSpace(string(b)))
	}
	return &api.StatusError{Status: st}
}

func (c *Client) channels(ctx context.Context, ns, pod, sub string, q url.Values, o ExecOptions) error {
	conn, err := c.dialStream(ctx, ns, pod, sub, q, execProtocol)
	if err != nil {
		return err
	}
	defer conn.CloseNow()
	conn.SetReadLimit(4 << 20)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wmu sync.Mutex
	send := func(ch byte, p []byte) error {
		wmu.Lock()
		defer wmu.Unlock()
		return conn.Write(ctx, websocket.MessageBinary, append([]byte{ch}, p...))
	}
	if o.Stdin != nil {
		go func() {
			buf := make([]byte, 32<<10)
			for {
				n, err := o.Stdin.Read(buf)
				if n > 0 && send(chanStdin, buf[:n]) != nil {
					return
				}
				if err != nil {
					_ = send(chanClose, []byte{chanStdin})
					return
				}
			}
		}()
	}
	if o.TTY && o.Resize != nil {
		go func() {
			for {
				select {
				case sz := <-o.Resize:
					b, _ := json.Marshal(sz)
					if send(chanResize, b) != nil {
						return
					}
				case <-ctx.Done():
					return
				}
			}
		}()
	}
	var status []byte
	for {
		_, msg, err := conn.Read(ctx)
		if err != nil {
			if websocket.CloseStatus(err) == websocket.StatusNormalClosure || status != nil {
				break
			}
			return fmt.Errorf("%s %s/%s: %w", sub, ns, pod, err)
		}
		if len(msg) == 0 {
			continue
		}
		switch msg[0] {
		case chanStdout:
			if o.Stdout != nil {
				if _, err := o.Stdout.Write(msg[1:]); err != nil {
					return err
				}
			}
		case chanStderr:
			if o.Stderr != nil {
				if _, err := o.Stderr.Write(msg[1:]); err != nil {
					return err
				}
			}
		case chanStatus:
			status = append(status, msg[1:]...)
		}
	}
	return exitFromStatus(status)
}

// exitFromStatus turns the error channel's Status into Exec's result.
func exitFromStatus(b []byte) error {
	if len(b) == 0 {
		return errors.New("the session ended without an exit status")
	}
	var st api.Status
	if err := json.Unmarshal(b, &st); err != nil {
		return fmt.Errorf("exit status %q: %w", b, err)
	}
	if st.Status == "Success" {
		return nil
	}
	if st.Reason == "NonZeroExitCode" && st.Details != nil {
		for _, c := range st.Details.Causes {
			if c.Type == "ExitCode" {
				if n, err := strconv.Atoi(c.Message); err == nil {
					return &ExitError{Code: n}
				}
			}
		}
	}
	return &api.StatusError{Status: st}
}
