package server

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/internal/promtext"
	"github.com/skiffhq/skiff/internal/tunnel"
	"github.com/skiffhq/skiff/server/streams"
)

// serveTunnel takes an agent's tunnel: POST /api/v1/skiff/tunnel over
// HTTP/2, whose streamed bodies carry it on the agent's API connection,
// or GET with Upgrade: skiff-tunnel/1 on a connection of its own (agents
// behind an HTTP/1 proxy, and those of older releases). Only a node may
// open one, and only as itself: the node name comes from its credential,
// never from the request, so a node cannot stand in for another.
func (s *server) serveTunnel(w http.ResponseWriter, r *http.Request) {
	id := identityFrom(r.Context())
	if id.Node == "" {
		writeStatus(w, forbidden(id.String()+" may not open a node tunnel; only agents do, with their node credential"))
		return
	}
	if r.Method == http.MethodPost {
		if r.ProtoMajor < 2 {
			// Answer at once and close: to keep the connection, the
			// server would first read the body, which streams for as
			// long as the agent waits.
			w.Header().Set("Connection", "close")
			writeStatus(w, api.NewBadRequest("a streamed tunnel needs HTTP/2; over HTTP/1 use GET with Connection: Upgrade and Upgrade: %s", tunnel.Protocol))
			return
		}
		s.log.Info("tunnel open", "node", id.Node, "remote", clientIP(r), "streamed", true)
		if err := s.tunnels.ServeStream(w, r, id.Node); err != nil {
			s.log.Warn("tunnel", "node", id.Node, "err", err)
		}
		return
	}
	if !tunnel.IsUpgrade(r) {
		writeStatus(w, api.NewBadRequest("a tunnel needs Connection: Upgrade and Upgrade: %s", tunnel.Protocol))
		return
	}
	if err := s.tunnels.Accept(w, id.Node); err != nil {
		s.log.Warn("tunnel", "node", id.Node, "err", err)
		return
	}
	s.log.Info("tunnel open", "node", id.Node, "remote", clientIP(r))
}

// addTunnelMetrics publishes skiff_agent_tunnels, the agents with a
// tunnel open now. Sessions are counted by countSession.
func (s *server) addTunnelMetrics() {
	s.metrics.addWriter(func(w *promtext.Writer) {
		w.Gauge("skiff_agent_tunnels", "Agents with a tunnel open to this server.", "", float64(s.tunnels.Nodes()))
	})
}

// countSession counts one exec, attach or port-forward session in
// skiff_stream_sessions_total{subresource=…}.
func (s *server) countSession(sub string) {
	if s.metrics != nil {
		s.metrics.sessions.Inc(promtext.Labels("subresource", sub))
	}
}

// serveStream is the apiserver's Streams hook: exec, attach and
// port-forward for a pod, relayed through its node's tunnel. Every exec
// and attach is recorded in the server log with who asked, the pod, the
// container and the command.
func (s *server) serveStream(w http.ResponseWriter, r *http.Request, sub string, pod *api.Pod, container string) {
	node := pod.Spec.NodeName
	if !s.tunnels.Connected(node) {
		writeStatus(w, api.NewStatusError(http.StatusServiceUnavailable, api.StatusReasonServiceUnavailable,
			"the agent of node %s has no tunnel open to this server; is it running and able to reach the server?", node))
		return
	}
	log := s.log.With("component", "streams")
	podPath := url.PathEscape(pod.Namespace) + "/" + url.PathEscape(pod.Name)
	if sub == "portforward" {
		if err := streams.CheckPortForward(r); err != nil {
			writeStatus(w, api.NewBadRequest("%v", err))
			return
		}
		s.countSession(sub)
		s.log.LogAttrs(r.Context(), slog.LevelInfo, "port-forward",
			slog.String("identity", identityFrom(r.Context()).String()), slog.String("namespace", pod.Namespace), slog.String("pod", pod.Name))
		streams.ServePortForward(w, r, func(ctx context.Context, port int) (io.ReadWriteCloser, error) {
			return tunnel.OpenStream(ctx, s.tunnelRT, node, tunnel.PortForwardPrefix+podPath+"?port="+strconv.Itoa(port))
		}, log)
		return
	}
	q := r.URL.Query()
	req := tunnel.ExecRequest{Command: q["command"], Stdin: queryBool(q.Get("stdin")), Stdout: queryBool(q.Get("stdout")), Stderr: queryBool(q.Get("stderr")), TTY: queryBool(q.Get("tty"))}
	if sub == "exec" && len(req.Command) == 0 {
		writeStatus(w, api.NewBadRequest("you must specify at least one command for the container"))
		return
	}
	if !req.Stdin && !req.Stdout && !req.Stderr {
		writeStatus(w, api.NewBadRequest("you must specify at least one of stdin, stdout, stderr"))
		return
	}
	if !streams.IsWebSocket(r) || !streams.OffersChannels(r) {
		writeStatus(w, api.NewBadRequest("%s needs a WebSocket upgrade with the subprotocol %s or %s (kubectl 1.30 or later)", sub, streams.ProtocolV5, streams.ProtocolV4))
		return
	}
	s.countSession(sub)
	s.log.LogAttrs(r.Context(), slog.LevelInfo, sub,
		slog.String("identity", identityFrom(r.Context()).String()), slog.String("namespace", pod.Namespace), slog.String("pod", pod.Name),
		slog.String("container", container), slog.Any("command", req.Command), slog.Bool("tty", req.TTY), slog.Bool("stdin", req.Stdin))
	prefix := tunnel.ExecPrefix
	if sub == "attach" {
		prefix = tunnel.AttachPrefix
	}
	agent, err := tunnel.OpenStream(r.Context(), s.tunnelRT, node, prefix+podPath+"/"+url.PathEscape(container)+"?"+req.Query())
	if err != nil {
		writeStatus(w, agentStatus(node, err))
		return
	}
	streams.ServeChannels(w, r, agent, log)
}

// agentStatus turns an agent's refusal, or a tunnel failure, into the
// Status the client sees.
func agentStatus(node string, err error) *api.StatusError {
	var ae *tunnel.AgentError
	if errors.As(err, &ae) {
		switch ae.Code {
		case http.StatusNotFound:
			return api.NewStatusError(http.StatusNotFound, api.StatusReasonNotFound, "%s", ae.Message)
		case http.StatusBadRequest:
			return api.NewBadRequest("%s", ae.Message)
		}
		return api.NewStatusError(http.StatusBadGateway, api.StatusReasonInternalError, "the agent of node %s answered %d: %s", node, ae.Code, ae.Message)
	}
	return api.NewStatusError(http.StatusServiceUnavailable, api.StatusReasonServiceUnavailable, "cannot reach the agent of node %s: %v", node, err)
}

// queryBool reports whether a query value is a true boolean ("true", "1").
func queryBool(v string) bool {
	b, err := strconv.ParseBool(strings.TrimSpace(v))
	return err == nil && b
}
