package agent

import (
	"sync"

	"github.com/skiffhq/skiff/agent/network"
	"github.com/skiffhq/skiff/internal/peerfeed"
)

// readyNotifier hands the cluster's Nodes to the pod network and, when
// that changes whether the network is ready (the node's podCIDR arrived,
// so the node can turn Ready), calls changed at once, so the Node's
// status is written then rather than at the next heartbeat (issue 15:
// a fresh node was NotReady for a whole heartbeat, ~10 s).
type readyNotifier struct {
	sink    network.NodeSink
	ready   func() error
	changed func()

	mu    sync.Mutex
	known bool // was holds a value
	was   bool
}

var _ network.NodeSink = (*readyNotifier)(nil)

// SetPeers implements network.NodeSink.
func (r *readyNotifier) SetPeers(peers []peerfeed.Peer) error {
	err := r.sink.SetPeers(peers)
	now := r.ready() == nil
	r.mu.Lock()
	changed := !r.known || now != r.was
	r.known, r.was = true, now
	r.mu.Unlock()
	if changed {
		r.changed()
	}
	return err
}
