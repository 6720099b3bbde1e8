package server

import (
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/internal/tunnel"
	"github.com/skiffhq/skiff/storage"
)

// Agent facts the log proxy reads from a Node (the agent publishes them;
// see agent/node and agent/logs).
const (
	agentCertAnnotation = "skiff.io/agent-cert-sha256"
	// agentCommonName is the name in the server's client certificate;
	// agents serve logs only to it.
	agentCommonName = "skiff-apiserver"
)

// logProxy streams container logs from a pod's agent: through the
// agent's tunnel when it has one open; else, as a fallback for agents
// that predate the tunnel, it dials the node's InternalIP and published
// port, pins the agent's certificate by the hash on the Node, and
// presents the server's client certificate.
type logProxy struct {
	store    *storage.Store
	cert     *tls.Certificate
	log      *slog.Logger
	tunnels  *tunnel.Registry
	tunnelRT http.RoundTripper
}

// logQuery are the query parameters passed on to the agent.
var logQuery = []string{"follow", "tailLines", "limitBytes", "previous", "sinceSeconds", "timestamps"}

func (p *logProxy) serve(w http.ResponseWriter, r *http.Request, pod *api.Pod, container string) {
	q := url.Values{}
	for _, k := range logQuery {
		if v := r.URL.Query().Get(k); v != "" {
			q.Set(k, v)
		}
	}
	path := tunnel.LogsPrefix + url.PathEscape(pod.Namespace) + "/" + url.PathEscape(pod.Name) + "/" + url.PathEscape(container)
	if p.tunnels != nil && p.tunnels.Connected(pod.Spec.NodeName) {
		u := url.URL{Scheme: "http", Host: pod.Spec.NodeName, Path: path, RawQuery: q.Encode()}
		req, err := http.NewRequestWithContext(r.Context(), http.MethodGet, u.String(), nil)
		if err != nil {
			writeStatus(w, api.NewBadRequest("%v", err))
			return
		}
		resp, err := p.tunnelRT.RoundTrip(req)
		if err != nil {
			writeStatus(w, api.NewStatusError(http.StatusServiceUnavailable, api.StatusReasonServiceUnavailable, "cannot reach the agent of node %s through its tunnel: %v", pod.Spec.NodeName, err))
			return
		}
		relayLogs(w, resp, pod.Spec.NodeName)
		return
	}
	obj, err := p.store.Get(r.Context(), "nodes", "", pod.Spec.NodeName)
	if errors.Is(err, storage.ErrNotFound) {
		writeStatus(w, api.NewStatusError(http.StatusServiceUnavailable, api.StatusReasonServiceUnavailable, "node %s of pod %s is not registered", pod.Spec.NodeName, pod.Name))
		return
	}
	if err != nil {
		writeStatus(w, api.NewStatusError(http.StatusInternalServerError, api.StatusReasonInternalError, "read node: %v", err))
		return
	}
	node := obj.(*api.Node)
	addr, fp := agentAddress(node), node.Annotations[agentCertAnnotation]
	if addr == "" || fp == "" {
		writeStatus(w, api.NewStatusError(http.StatusServiceUnavailable, api.StatusReasonServiceUnavailable, "the agent of node %s has not published its log endpoint", node.Name))
		return
	}
	u := url.URL{Scheme: "https", Host: addr, Path: path, RawQuery: q.Encode()}
	tr := &http.Transport{
		TLSClientConfig:     pinnedTLS(fp, p.cert),
		DialContext:         (&net.Dialer{Timeout: 10 * time.Second}).DialContext,
		TLSHandshakeTimeout: 10 * time.Second,
	}
	defer tr.CloseIdleConnections()
	req, err := http.NewRequestWithContext(r.Context(), http.MethodGet, u.String(), nil)
	if err != nil {
		writeStatus(w, api.NewBadRequest("%v", err))
		return
	}
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		writeStatus(w, api.NewStatusError(http.StatusServiceUnavailable, api.StatusReasonServiceUnavailable, "cannot reach the agent of node %s: %v", node.Name, err))
		return
	}
	relayLogs(w, resp, node.Name)
}

// relayLogs copies an agent's answer to a log request to w, flushing as
// it goes, or turns its failure into a Status.
func relayLogs(w http.ResponseWriter, resp *http.Response, node string) {
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		text := strings.TrimSpace(string(msg))
		switch resp.StatusCode {
		case http.StatusNotFound:
			writeStatus(w, api.NewStatusError(http.StatusNotFound, api.StatusReasonNotFound, "%s", text))
		case http.StatusBadRequest:
			writeStatus(w, api.NewBadRequest("%s", text))
		default:
			writeStatus(w, api.NewStatusError(http.StatusServiceUnavailable, api.StatusReasonServiceUnavailable, "the agent of node %s answered %s: %s", node, resp.Status, text))
		}
		return
	}
	w.Header().Set("Content-Type", "text/plain")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	buf := make([]byte, 32<<10)
	for {
		n, err := resp.Body.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return
			}
			_ = rc.Flush()
		}
		if err != nil {
			return
		}
	}
}

// agentAddress is host:port of a node's agent: its first InternalIP (or
// Hostname) and the published port.
func agentAddress(n *api.Node) string {
	port := n.Status.DaemonEndpoints.KubeletEndpoint.Port
	if port <= 0 {
		return ""
	}
	host := ""
	for _, t := range []string{api.NodeInternalIP, api.NodeHostName} {
		for _, a := range n.Status.Addresses {
			if a.Type == t && host == "" {
				host = a.Address
			}
		}
	}
	if host == "" {
		return ""
	}
	return net.JoinHostPort(host, strconv.Itoa(int(port)))
}

// pinnedTLS trusts exactly the certificate whose sha256 is fp.
func pinnedTLS(fp string, client *tls.Certificate) *tls.Config {
	cfg := &tls.Config{
		MinVersion: tls.VersionTLS12,
		// The chain is not checked against a CA: the agent's certificate
		// is self-signed and pinned by its hash below.
		InsecureSkipVerify: true, //nolint:gosec
		VerifyConnection: func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return errors.New("agent presented no certificate")
			}
			sum := sha256.Sum256(cs.PeerCertificates[0].Raw)
			if hex.EncodeToString(sum[:]) != strings.ToLower(fp) {
				return fmt.Errorf("agent certificate does not match the node's pinned hash")
			}
			return nil
		},
	}
	if client != nil {
		cfg.Certificates = []tls.Certificate{*client}
	}
	return cfg
}
