package streaming

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/skiffhq/skiff/internal/tunnel"
)

// servePortForward connects the upgraded stream to a port on the pod's
// loopback, inside its network namespace.
func (h *Handler) servePortForward(w http.ResponseWriter, r *http.Request, rest string) {
	parts, ok := splitPath(rest, 2)
	if !ok || !tunnel.IsStreamUpgrade(r) {
		http.Error(w, "want an upgraded request for {namespace}/{pod}?port=N", http.StatusBadRequest)
		return
	}
	port, err := strconv.Atoi(r.URL.Query().Get("port"))
	if err != nil || port < 1 || port > 65535 {
		http.Error(w, "port must be a number in 1-65535", http.StatusBadRequest)
		return
	}
	t, err := h.Targets.Target(parts[0], parts[1], "")
	if err != nil {
		targetError(w, err)
		return
	}
	dial := h.Dial
	if dial == nil {
		dial = DialNetNS
	}
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	pod, err := dial(ctx, t.NetNSPath, port)
	cancel()
	if err != nil {
		http.Error(w, "failed to connect to localhost:"+strconv.Itoa(port)+" in pod "+parts[1]+": "+err.Error(), http.StatusBadGateway)
		return
	}
	defer pod.Close()
	conn, err := tunnel.AcceptStream(w)
	if err != nil {
		h.log().Debug("port-forward: accept stream", "err", err)
		return
	}
	defer conn.Close()
	tunnel.Pipe(conn, pod)
}
