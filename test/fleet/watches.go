package fleet

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/skiffhq/skiff/agent/network"
	"github.com/skiffhq/skiff/agent/node"
	"github.com/skiffhq/skiff/agent/proxy"
	"github.com/skiffhq/skiff/agent/streaming"
	"github.com/skiffhq/skiff/api/client"
	"github.com/skiffhq/skiff/internal/backoff"
	"github.com/skiffhq/skiff/internal/clock"
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
// peer feed (network.PeerWatcher with PeerSets, else feedReader), the
// service proxy's watches of Services and
// EndpointSlices (checkpointed in the agent's directory, as the real
// one's), and the tunnel the server reaches the agent through, serving
// nothing (404). Only what they feed is replaced: sinks that count.
func (a *Agent) fullLoops(c *client.Client, watches client.MuxedWatches, cred node.Credentials) []func(context.Context) error {
	var nodes interface{ Run(context.Context) error } = &feedReader{api: watches, seen: a.cfg.Seen, clk: a.cfg.Clock}
	if a.cfg.PeerSets {
		nodes = &network.PeerWatcher{Client: watches, Sink: nodeCounter{a.cfg.Seen}, Clock: a.cfg.Clock, Logger: a.cfg.Logger}
	}
	services := &proxy.Watcher{Client: watches, Sinks: []proxy.Sink{proxy.SinkFunc(func(*proxy.Snapshot) error {
		if a.cfg.Seen != nil {
			a.cfg.Seen.Snapshots.Add(1)
		}
		return nil
	})}, Checkpoint: filepath.Join(a.cfg.Dir, "services.json"), Clock: a.cfg.Clock, Logger: a.cfg.Logger}
	tc := &streaming.Client{
		API:     c,
		Shared:  watches,
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

// feedReader reads the peer feed as network.PeerWatcher does (the same
// request, resumed with the last batch's revision and hash after the
// agent's back-off) but keeps no set: a set per agent is O(agents²) in
// one process (1 GB at 2,500 agents, 4 GB at 3,000 with what decoding
// holds), so a simulated fleet past a few thousand agents cannot keep
// them. The server's side — what it writes and when it sends the whole
// set rather than an empty batch — is the same, since a real agent's set
// always hashes as the server's last batch says (it asks for the whole
// set when not).
type feedReader struct {
	api  network.PeerAPI
	seen *Seen
	clk  clock.Clock
}

func (f *feedReader) Run(ctx context.Context) error {
	bo := backoff.Backoff{Min: time.Second, Max: 30 * time.Second, Clock: f.clk}
	rev, hash := int64(-1), ""
	for {
		n := 0
		err := func() error {
			var q url.Values
			if rev >= 0 {
				q = url.Values{"since": {strconv.FormatInt(rev, 10)}, "hash": {hash}}
			}
			// As PeerWatcher: on the shared stream when there is one.
			var body io.ReadCloser
			if fo, ok := f.api.(network.FeedOpener); ok {
				b, err := fo.OpenFeed(ctx, peerfeed.Path, q)
				if err != nil {
					return err
				}
				body = b
			} else {
				path := peerfeed.Path
				if q != nil {
					path += "?" + q.Encode()
				}
				resp, err := f.api.Do(ctx, http.MethodGet, path, nil)
				if err != nil {
					return err
				}
				body = resp.Body
			}
			defer body.Close()
			rd := peerfeed.NewReader(body)
			for {
				b, err := rd.Next()
				if err != nil {
					return err
				}
				n++
				rev, hash = b.Revision, b.Hash
				if f.seen != nil {
					f.seen.NodeSets.Add(1)
					f.seen.NodesSeen.Add(int64(len(b.Peers)))
				}
			}
		}()
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if n > 0 {
			bo.Reset()
		}
		if !bo.BackOff(ctx, err) {
			return ctx.Err()
		}
	}
}
