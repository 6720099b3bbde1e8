package logs

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/skiffhq/skiff/internal/clock"
)

// ServerCommonName is the subject the server's client certificate carries;
// the agent serves logs only to it.
const ServerCommonName = "skiff-apiserver"

// ErrNoLog means the container has no such log (unknown pod or container,
// or no previous run).
var ErrNoLog = errors.New("no such log")

// PathFunc finds the log file of a pod's container: the current run, or
// the one before it when previous. It wraps ErrNoLog when there is none.
type PathFunc func(namespace, pod, container string, previous bool) (string, error)

// Handler serves GET /containerLogs/{namespace}/{pod}/{container} with the
// query parameters of the Kubernetes log API: follow, tailLines,
// limitBytes, previous. It trusts the TLS layer to have checked the
// client (see TLSConfig) and checks the client's name itself.
type Handler struct {
	Path   PathFunc
	Clock  clock.Clock
	Logger *slog.Logger
	// PollInterval is how often a followed file is checked for new
	// bytes; 0 means 250 ms.
	PollInterval time.Duration
	// AllowUnverified skips the client-certificate check: for requests
	// that arrive through the agent's tunnel (agent/streaming), which the
	// agent dialled to the server it pinned, and for tests of the handler
	// alone.
	AllowUnverified bool
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	if !h.AllowUnverified && !fromServer(r) {
		http.Error(w, "forbidden: only the skiff server may read logs here", http.StatusForbidden)
		return
	}
	parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/containerLogs/"), "/")
	if !strings.HasPrefix(r.URL.Path, "/containerLogs/") || len(parts) != 3 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
		http.Error(w, "not found: want /containerLogs/{namespace}/{pod}/{container}", http.StatusNotFound)
		return
	}
	q := r.URL.Query()
	opts, err := parseOptions(q)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	path, err := h.Path(parts[0], parts[1], parts[2], opts.previous)
	if err != nil {
		code := http.StatusInternalServerError
		if errors.Is(err, ErrNoLog) {
			code = http.StatusNotFound
		}
		http.Error(w, err.Error(), code)
		return
	}
	f, err := os.Open(path)
	if err != nil {
		code := http.StatusInternalServerError
		if errors.Is(err, os.ErrNotExist) {
			code = http.StatusNotFound
		}
		http.Error(w, "open log: "+err.Error(), code)
		return
	}
	defer f.Close()
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	if err := h.stream(r.Context(), w, f, opts); err != nil && r.Context().Err() == nil {
		h.log().Debug("log stream ended", "path", path, "err", err)
	}
}

func (h *Handler) log() *slog.Logger {
	if h.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return h.Logger
}

// fromServer reports whether the verified client certificate is the
// server's.
func fromServer(r *http.Request) bool {
	if r.TLS == nil || len(r.TLS.VerifiedChains) == 0 || len(r.TLS.VerifiedChains[0]) == 0 {
		return false
	}
	return r.TLS.VerifiedChains[0][0].Subject.CommonName == ServerCommonName
}

type options struct {
	follow     bool
	previous   bool
	tailLines  int64 // -1: all
	limitBytes int64 // 0: no limit
}

func parseOptions(q map[string][]string) (options, error) {
	get := func(k string) string {
		if v := q[k]; len(v) > 0 {
			return v[0]
		}
		return ""
	}
	o := options{tailLines: -1}
	var err error
	if o.follow, err = parseBool("follow", get("follow")); err != nil {
		return o, err
	}
	if o.previous, err = parseBool("previous", get("previous")); err != nil {
		return o, err
	}
	if v := get("tailLines"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return o, fmt.Errorf("tailLines must be a non-negative integer, not %q", v)
		}
		o.tailLines = n
	}
	if v := get("limitBytes"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			return o, fmt.Errorf("limitBytes must be a positive integer, not %q", v)
		}
		o.limitBytes = n
	}
	return o, nil
}

func parseBool(name, v string) (bool, error) {
	if v == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, fmt.Errorf("%s must be true or false, not %q", name, v)
	}
	return b, nil
}

// stream copies f to w from the tail position, then, when following,
// polls for growth. A file that shrinks (rotated by copytruncate) is read
// again from its start.
func (h *Handler) stream(ctx context.Context, w io.Writer, f *os.File, o options) error {
	start, err := tailOffset(f, o.tailLines)
	if err != nil {
		return err
	}
	if _, err := f.Seek(start, io.SeekStart); err != nil {
		return err
	}
	flusher, _ := w.(http.Flusher)
	var out io.Writer = w
	var limited *limitWriter
	if o.limitBytes > 0 {
		limited = &limitWriter{w: w, left: o.limitBytes}
		out = limited
	}
	pos := start
	buf := make([]byte, 32<<10)
	copyNew := func() error {
		for {
			n, err := f.Read(buf)
			if n > 0 {
				if _, werr := out.Write(buf[:n]); werr != nil {
					return werr
				}
				pos += int64(n)
			}
			if err == io.EOF {
				return nil
			}
			if err != nil {
				return err
			}
		}
	}
	if err := copyNew(); err != nil {
		return err
	}
	if flusher != nil {
		flusher.Flush()
	}
	if !o.follow {
		return nil
	}
	every := h.PollInterval
	if every <= 0 {
		every = 250 * time.Millisecond
	}
	t := clock.Or(h.Clock).NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C():
		}
		if st, err := f.Stat(); err == nil && st.Size() < pos {
			// Truncated under us: start over.
			if _, err := f.Seek(0, io.SeekStart); err != nil {
				return err
			}
			pos = 0
		}
		if err := copyNew(); err != nil {
			return err
		}
		if flusher != nil {
			flusher.Flush()
		}
	}
}

// limitWriter fails once left bytes have been written.
type limitWriter struct {
	w    io.Writer
	left int64
}

var errLimit = errors.New("limitBytes reached")

func (l *limitWriter) Write(p []byte) (int, error) {
	if l.left <= 0 {
		return 0, errLimit
	}
	if int64(len(p)) > l.left {
		n, err := l.w.Write(p[:l.left])
		l.left -= int64(n)
		if err == nil {
			err = errLimit
		}
		return n, err
	}
	n, err := l.w.Write(p)
	l.left -= int64(n)
	return n, err
}

// tailOffset is where the last n lines of f begin (0 for n < 0).
func tailOffset(f *os.File, n int64) (int64, error) {
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	size := st.Size()
	if n < 0 {
		return 0, nil
	}
	if n == 0 {
		return size, nil
	}
	const chunk = 8 << 10
	end := size
	// A final newline ends the last line rather than starting another.
	lines := int64(0)
	buf := make([]byte, chunk)
	skipFinal := true
	for end > 0 {
		start := max(end-chunk, 0)
		b := buf[:end-start]
		if _, err := f.ReadAt(b, start); err != nil && err != io.EOF {
			return 0, err
		}
		for i := len(b) - 1; i >= 0; i-- {
			if b[i] != '\n' {
				skipFinal = false
				continue
			}
			if skipFinal && start+int64(i) == size-1 {
				skipFinal = false
				continue
			}
			lines++
			if lines == n {
				return start + int64(i) + 1, nil
			}
		}
		end = start
	}
	return 0, nil
}

// TLSConfig is the agent log server's TLS: its own certificate, and
// client certificates required and verified against the cluster CA.
func TLSConfig(cert tls.Certificate, clusterCA []byte) (*tls.Config, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(clusterCA) {
		return nil, errors.New("logs: the cluster CA is not a PEM certificate")
	}
	return &tls.Config{
		Certificates: []tls.Certificate{cert},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    pool,
		MinVersion:   tls.VersionTLS12,
	}, nil
}
