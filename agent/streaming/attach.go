package streaming

import (
	"context"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/skiffhq/skiff/agent/kubelet"
	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/internal/clock"
	"github.com/skiffhq/skiff/internal/tunnel"
)

// attach streams the container's output from now on (its log file,
// where the runtime writes stdout and stderr) until the container stops
// or the session ends. Containers run without an open stdin, so input
// is not taken (kubectl warns about that itself from the pod spec).
func (h *Handler) attach(ctx context.Context, s *session, where []string, t kubelet.Target, req tunnel.ExecRequest) api.Status {
	if !req.Stdout && !req.Stderr {
		return ExitStatus(0, nil)
	}
	f, err := os.Open(t.LogPath)
	if err != nil {
		return failure(http.StatusInternalServerError, "attach: open the container's output: %v", err)
	}
	defer f.Close()
	if _, err := f.Seek(0, io.SeekEnd); err != nil {
		return failure(http.StatusInternalServerError, "attach: %v", err)
	}
	every := h.AttachPoll
	if every <= 0 {
		every = 100 * time.Millisecond
	}
	tick := clock.Or(h.Clock).NewTicker(every)
	defer tick.Stop()
	out := chanWriter{s, tunnel.ChanStdout}
	buf := make([]byte, 32<<10)
	for n := 0; ; n++ {
		for {
			k, err := f.Read(buf)
			if k > 0 {
				if _, werr := out.Write(buf[:k]); werr != nil {
					return ExitStatus(0, nil)
				}
			}
			if err != nil {
				break
			}
		}
		// Every tenth poll: has the container instance gone?
		if n%10 == 9 {
			cur, err := h.Targets.Target(where[0], where[1], where[2])
			if err != nil || cur.ContainerID != t.ContainerID {
				return ExitStatus(0, nil)
			}
		}
		select {
		case <-ctx.Done():
			return ExitStatus(0, nil)
		case <-tick.C():
		}
	}
}

func failure(code int, format string, args ...any) api.Status {
	return api.NewStatusError(code, api.StatusReasonInternalError, format, args...).Status
}
