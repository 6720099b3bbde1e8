package tunnel

import (
	"io"
	"time"

	"github.com/hashicorp/yamux"
)

// Path is the server URL an agent dials to open its tunnel.
const Path = "/api/v1/skiff/tunnel"

// Protocol is the Upgrade token of the tunnel itself; StreamProtocol is
// the one of an exec, attach or port-forward stream inside it.
const (
	Protocol       = "skiff-tunnel/1"
	StreamProtocol = "skiff-stream/1"
)

// Agent paths the server requests over a tunnel stream.
const (
	LogsPrefix        = "/containerLogs/" // {namespace}/{pod}/{container}
	ExecPrefix        = "/exec/"          // {namespace}/{pod}/{container}
	AttachPrefix      = "/attach/"        // {namespace}/{pod}/{container}
	PortForwardPrefix = "/portForward/"   // {namespace}/{pod}?port=N
	MetricsPath       = "/metrics"        // the agent's Prometheus figures
)

// streamWindow is each stream's receive window: enough to keep a
// port-forward busy over a link with some latency, small enough that
// 100 idle exec sessions cost little.
const streamWindow = 1 << 20

// muxConfig is the yamux configuration of the agent's end.
func muxConfig() *yamux.Config {
	c := yamux.DefaultConfig()
	c.KeepAliveInterval = 20 * time.Second
	c.ConnectionWriteTimeout = 15 * time.Second
	c.MaxStreamWindowSize = streamWindow
	c.StreamOpenTimeout = 30 * time.Second
	c.LogOutput = io.Discard
	return c
}

// serverMuxConfig is the server's: the agent's, without a keep-alive
// loop of its own, which was a goroutine and a timer per agent. The
// agent's pings (every 20 s, answered) keep NAT mappings open and find a
// dead server; a dead agent's session ends by TCP keep-alive, by a
// write's or a stream open's timeout, or when the agent dials again and
// replaces it.
func serverMuxConfig() *yamux.Config {
	c := muxConfig()
	c.EnableKeepAlive = false
	return c
}
