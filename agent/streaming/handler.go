package streaming

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/skiffhq/skiff/agent/kubelet"
	"github.com/skiffhq/skiff/agent/runtime"
	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/internal/clock"
	"github.com/skiffhq/skiff/internal/tunnel"
)

// Targets finds where a stream goes (kubelet.Kubelet implements it).
type Targets interface {
	Target(ns, pod, container string) (kubelet.Target, error)
}

// Execer runs interactive commands in containers (the containerd
// runtime implements it).
type Execer interface {
	ExecStream(ctx context.Context, id string, o runtime.ExecOptions) (int, error)
}

// NetNSDialer opens a TCP connection to port on the loopback of the
// network namespace at path ("" for the host's).
type NetNSDialer func(ctx context.Context, path string, port int) (net.Conn, error)

// Handler serves the tunnel's requests. Set every field but Logger and
// Clock.
type Handler struct {
	// Logs serves /containerLogs/… (agent/logs.Handler with
	// AllowUnverified: the tunnel authenticated the server).
	Logs http.Handler
	// Metrics serves the agent's /metrics (nil: 404).
	Metrics http.Handler
	Targets Targets
	Exec    Execer
	// Dial opens port-forward connections; nil means DialNetNS.
	Dial   NetNSDialer
	Clock  clock.Clock
	Logger *slog.Logger
	// AttachPoll is how often attach checks the log for output; 0
	// means 100 ms.
	AttachPoll time.Duration
}

func (h *Handler) log() *slog.Logger {
	if h.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return h.Logger
}

// ServeHTTP routes a tunnel request.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
	switch {
	case strings.HasPrefix(p, tunnel.LogsPrefix):
		h.Logs.ServeHTTP(w, r)
	case strings.HasPrefix(p, tunnel.ExecPrefix):
		h.serveExec(w, r, strings.TrimPrefix(p, tunnel.ExecPrefix), false)
	case strings.HasPrefix(p, tunnel.AttachPrefix):
		h.serveExec(w, r, strings.TrimPrefix(p, tunnel.AttachPrefix), true)
	case strings.HasPrefix(p, tunnel.PortForwardPrefix):
		h.servePortForward(w, r, strings.TrimPrefix(p, tunnel.PortForwardPrefix))
	case p == tunnel.MetricsPath && h.Metrics != nil:
		h.Metrics.ServeHTTP(w, r)
	default:
		http.Error(w, "not found", http.StatusNotFound)
	}
}

// targetError answers a failed Target lookup.
func targetError(w http.ResponseWriter, err error) {
	code := http.StatusInternalServerError
	switch {
	case errors.Is(err, kubelet.ErrNotFound):
		code = http.StatusNotFound
	case errors.Is(err, kubelet.ErrNotRunning):
		code = http.StatusBadRequest
	}
	http.Error(w, err.Error(), code)
}

// splitPath splits "ns/pod[/container]" into want parts.
func splitPath(p string, want int) ([]string, bool) {
	parts := strings.Split(p, "/")
	if len(parts) != want {
		return nil, false
	}
	for _, s := range parts {
		if s == "" {
			return nil, false
		}
	}
	return parts, true
}

// session is one exec or attach stream: frames in, frames out.
type session struct {
	conn net.Conn
	wmu  sync.Mutex
}

func (s *session) send(ch byte, p []byte) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	return tunnel.WriteFrame(s.conn, ch, p)
}

// chanWriter writes to one channel of a session.
type chanWriter struct {
	s  *session
	ch byte
}

func (c chanWriter) Write(p []byte) (int, error) {
	for off := 0; off < len(p); off += tunnel.MaxFramePayload {
		end := min(off+tunnel.MaxFramePayload, len(p))
		if err := c.s.send(c.ch, p[off:end]); err != nil {
			return off, err
		}
	}
	return len(p), nil
}

func (h *Handler) serveExec(w http.ResponseWriter, r *http.Request, rest string, attach bool) {
	parts, ok := splitPath(rest, 3)
	if !ok || !tunnel.IsStreamUpgrade(r) {
		http.Error(w, "want an upgraded request for {namespace}/{pod}/{container}", http.StatusBadRequest)
		return
	}
	req := tunnel.ParseExecRequest(r.URL.Query())
	if !attach && len(req.Command) == 0 {
		http.Error(w, "you must specify at least one command for the container", http.StatusBadRequest)
		return
	}
	t, err := h.Targets.Target(parts[0], parts[1], parts[2])
	if err != nil {
		targetError(w, err)
		return
	}
	conn, err := tunnel.AcceptStream(w)
	if err != nil {
		h.log().Debug("exec: accept stream", "err", err)
		return
	}
	defer conn.Close()
	s := &session{conn: conn}
	ctx, cancel := context.WithCancel(context.WithoutCancel(r.Context()))
	defer cancel()

	stdin := newInbox(inboxMax)
	defer stdin.Close()
	if attach || !req.Stdin {
		// Nobody reads stdin: input a client sends anyway is dropped
		// rather than left to block the frame reader.
		stdin.Close()
	}
	resize := make(chan runtime.TermSize, 4)
	go h.readFrames(conn, stdin, resize, cancel)

	var st api.Status
	if attach {
		st = h.attach(ctx, s, parts, t, req)
	} else {
		o := runtime.ExecOptions{Cmd: req.Command, TTY: req.TTY}
		if req.Stdin {
			o.Stdin = stdin
		}
		if req.Stdout {
			o.Stdout = chanWriter{s, tunnel.ChanStdout}
		}
		if req.Stderr && !req.TTY {
			o.Stderr = chanWriter{s, tunnel.ChanStderr}
		}
		if req.TTY {
			o.Resize = resize
		}
		code, err := h.Exec.ExecStream(ctx, t.ContainerID, o)
		st = ExitStatus(code, err)
	}
	b, _ := json.Marshal(st)
	if err := s.send(tunnel.ChanStatus, b); err != nil {
		h.log().Debug("exec: send status", "err", err)
	}
}

// readFrames feeds stdin and resize from the server's frames until the
// stream ends, then cancels the session.
func (h *Handler) readFrames(conn net.Conn, stdin *inbox, resize chan<- runtime.TermSize, cancel context.CancelFunc) {
	defer cancel()
	// Small: stdin arrives in keystrokes and pastes, and 100 open
	// sessions each hold one.
	br := bufio.NewReaderSize(conn, 4<<10)
	var buf []byte
	stdinOpen := true
	defer func() {
		if stdinOpen {
			stdin.CloseWrite(io.ErrUnexpectedEOF)
		}
	}()
	for {
		ch, p, nb, err := tunnel.ReadFrame(br, buf)
		buf = nb
		if err != nil {
			return
		}
		switch ch {
		case tunnel.ChanStdin:
			if stdinOpen {
				if _, err := stdin.Write(p); err != nil {
					stdinOpen = false
				}
			}
		case tunnel.ChanResize:
			var sz struct{ Width, Height uint16 }
			if json.Unmarshal(p, &sz) == nil && sz.Width > 0 && sz.Height > 0 {
				select {
				case resize <- runtime.TermSize{Width: sz.Width, Height: sz.Height}:
				default: // a newer size follows
				}
			}
		case tunnel.ChanClose:
			if len(p) == 1 && p[0] == tunnel.ChanStdin && stdinOpen {
				stdinOpen = false
				stdin.CloseWrite(nil)
			}
		}
	}
}

// ExitStatus is the Status an exec ends with: Success for exit code 0,
// NonZeroExitCode with the code as an ExitCode cause (what kubectl turns
// into its own exit code), or InternalError.
func ExitStatus(code int, err error) api.Status {
	st := api.Status{TypeMeta: api.TypeMeta{Kind: "Status", APIVersion: "v1"}}
	switch {
	case err != nil:
		st.Status, st.Reason, st.Code = "Failure", api.StatusReasonInternalError, http.StatusInternalServerError
		st.Message = err.Error()
	case code == 0:
		st.Status = "Success"
	default:
		st.Status, st.Reason = "Failure", "NonZeroExitCode"
		st.Message = fmt.Sprintf("command terminated with non-zero exit code: exit status %d", code)
		st.Details = &api.StatusDetails{Causes: []api.StatusCause{{Type: "ExitCode", Message: strconv.Itoa(code)}}}
	}
	return st
}
