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

	"github.com/go-chi/chi/v5"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/internal/promtext"
	"github.com/skiffhq/skiff/internal/tunnel"
	"github.com/skiffhq/skiff/server/apiserver"
	"github.com/skiffhq/skiff/server/streams"
)

// serveTunnel takes an agent's tunnel: POST /api/v1/skiff/tunnel over
// HTTP/2, a control stream on the agent's API connection that asks the
// agent to open an exchange (serveTunnelExchange) whenever the server
// wants to reach it, or GET with Upgrade: skiff-tunnel/1, a yamux session
// on a connection of its own (agents behind an HTTP/1 proxy, and those
// of earlier releases). Only a node may open one, and only as itself:
// the node name comes from its credential, never from the request, so a
// node cannot stand in for another.
func (s *server) serveTunnel(w http.ResponseWriter, r *http.Request) {
	id := identityFrom(r.Context())
	if id.Node == "" {
		writeStatus(w, forbidden(id.String()+" may not open a node tunnel; only agents do, with their node credential"))
		return
	}
	if r.Method == http.MethodPost {
		if r.ProtoMajor < 2 {
			// Answer and close: an agent has nothing to send, but to
			// keep the connection the server would wait for the body
			// of a request that declares one.
			w.Header().Set("Connection", "close")
			writeStatus(w, api.NewBadRequest("a tunnel on the API connection needs HTTP/2; over HTTP/1 use GET with Connection: Upgrade and Upgrade: %s", tunnel.Protocol))
			return
		}
		s.log.Info("tunnel open", "node", id.Node, "remote", clientIP(r), "on_api_connection", true)
		if err := s.tunnels.ServeControl(w, r, id.Node); err != nil {
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

// tunnelFeed carries a node's tunnel opens on its agent's shared stream
// (apiserver.WatchesPath, watch=/api/v1/skiff/tunnel): the lines of the
// control stream, without a stream of their own. Only a node's
// credential reads them, and only its own node's.
type tunnelFeed struct{ s *server }

// StartFeed implements apiserver.Feed.
func (t tunnelFeed) StartFeed(r *http.Request, _ url.Values) (apiserver.FeedReader, error) {
	id := identityFrom(r.Context())
	if id.Node == "" {
		return nil, forbidden(id.String() + " may not open a node tunnel; only agents do, with their node credential")
	}
	if r.ProtoMajor < 2 {
		return nil, api.NewBadRequest("a tunnel on the API connection needs HTTP/2")
	}
	rd, err := t.s.tunnels.AttachControl(id.Node)
	if err != nil {
		return nil, api.NewStatusError(http.StatusServiceUnavailable, api.StatusReasonServiceUnavailable, "%v", err)
	}
	t.s.log.Debug("tunnel open", "node", id.Node, "remote", clientIP(r), "on_shared_stream", true)
	return rd, nil
}

// serveTunnelExchange takes one exchange of a node's tunnel (POST
// /api/v1/skiff/tunnel/{id} over HTTP/2, both bodies streamed): the
// connection to the agent the server asked for on its control stream.
// Only the node whose tunnel asked may answer; any other id, or another
// node's, is 404.
func (s *server) serveTunnelExchange(w http.ResponseWriter, r *http.Request) {
	id := identityFrom(r.Context())
	if id.Node == "" {
		writeStatus(w, forbidden(id.String()+" may not answer for a node tunnel; only agents do, with their node credential"))
		return
	}
	xid := chi.URLParam(r, "id")
	if !tunnel.ValidExchangeID(xid) {
		writeStatus(w, api.NewBadRequest("exchange id %q: want 32 lower-case hexadecimal digits", xid))
		return
	}
	if r.ProtoMajor < 2 {
		w.Header().Set("Connection", "close")
		writeStatus(w, api.NewBadRequest("a tunnel exchange needs HTTP/2"))
		return
	}
	if err := s.tunnels.ServeExchange(w, r, id.Node, xid); err != nil {
		if errors.Is(err, tunnel.ErrNoExchange) {
			writeStatus(w, api.NewStatusError(http.StatusNotFound, api.StatusReasonNotFound, "node %s's tunnel is waiting for no exchange %s", id.Node, xid))
			return
		}
		s.log.Warn("tunnel exchange", "node", id.Node, "err", err)
	}
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
