package fleet

import (
	"context"
	"net/http"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/skiffhq/skiff/agent/network"
	"github.com/skiffhq/skiff/agent/node"
	"github.com/skiffhq/skiff/agent/proxy"
	"github.com/skiffhq/skiff/agent/streaming"
	"github.com/skiffhq/skiff/api/client"
	"github.com/skiffhq/skiff/internal/backoff"
	"github.com/skiffhq/skiff/internal/peerfeed"
	"github.com/skiffhq/skiff/internal/tunnel"
)

// Seen counts what the agents' other connections (AgentConfig.Full)
// received, for the report: node sets handed to the pod network's sink
// (one per peer feed batch) and the Nodes in them, service snapshots
// applied.
type Seen struct {
	NodeSets  atomic.Int64
	NodesSeen atomic.Int64
	Snapshots atomic.Int64
}

// fullLoops are the real agent's other server connections, each with
// the agent's own code (agent.online and startTunnel): the pod network's
// peer feed (network.PeerWatcher), the service proxy's watches of Services and
// EndpointSlices (checkpointed in the agent's directory, as the real
// one's), and the tunnel the server reaches the agent through, serving
// nothing (404). Only what they feed is replaced: sinks that count.
func (a *Agent) fullLoops(c *client.Client, cred node.Credentials) []func(context.Context) error {
	nodes := &network.PeerWatcher{Client: c, Sink: nodeCounter{a.cfg.Seen}, Clock: a.cfg.Clock, Logger: a.cfg.Logger}
	services := &proxy.Watcher{Client: c, Sinks: []proxy.Sink{proxy.SinkFunc(func(*proxy.Snapshot) error {
		if a.cfg.Seen != nil {
			a.cfg.Seen.Snapshots.Add(1)
		}
		return nil
	})}, Checkpoint: filepath.Join(a.cfg.Dir, "services.json"), Clock: a.cfg.Clock, Logger: a.cfg.Logger}
	tc := &streaming.Client{
		Dial:    tunnel.DialConfig{Server: cred.Server, CAData: cred.CAData, Token: cred.Credential, DialContext: a.dial},
		Handler: http.NotFoundHandler(), Clock: a.cfg.Clock, Logger: a.cfg.Logger,
		Backoff: backoff.Backoff{Min: 500 * time.Millisecond, Max: 30 * time.Second},
	}
	return []func(context.Context) error{nodes.Run, services.Run, tc.Run}
}

// nodeCounter is the pod network's sink, counting.
type nodeCounter struct{ seen *Seen }

func (n nodeCounter) SetPeers(nodes []peerfeed.Peer) error {
	if n.seen != nil {
		n.seen.NodeSets.Add(1)
		n.seen.NodesSeen.Add(int64(len(nodes)))
	}
	return nil
}
