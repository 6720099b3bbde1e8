package network

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/api/client"
	"github.com/skiffhq/skiff/internal/backoff"
	"github.com/skiffhq/skiff/internal/clock"
	"github.com/skiffhq/skiff/internal/peerfeed"
)

// NodeSink takes the cluster's Nodes as the pod network sees them: a
// Peer each. *Manager is one.
type NodeSink interface {
	SetPeers(peers []peerfeed.Peer) error
}

// NodeWatcher feeds a NodeSink from the API: it lists every Node, then
// watches them, and hands the whole set to the sink after every change
// (level-triggered). A watch that ends or fails is resumed from the last
// version it saw, after a back-off (Retry up to RetryMax, reset by any
// progress), as client-go's reflector does: a server restart costs each
// agent a watch, not a list of every Node. It lists again only when the
// version is gone (410), or when the sink failed (so the sink is given
// the whole set again).
type NodeWatcher struct {
	Client client.ListWatcher // *client.Client
	Sink   NodeSink
	Clock  clock.Clock  // default clock.Real
	Logger *slog.Logger // default slog.Default
	// Retry and RetryMax bound the back-off; defaults 1 s and 30 s.
	Retry, RetryMax time.Duration

	nodes map[string]peerfeed.Peer
}

// errSink marks a watch ended by the sink's error.
var errSink = errors.New("node sink failed")

// Run watches until ctx ends, then returns ctx's error.
func (w *NodeWatcher) Run(ctx context.Context) error {
	log := w.Logger
	if log == nil {
		log = slog.Default()
	}
	res, ok := api.LookupResource("nodes")
	if !ok {
		return errors.New("nodes resource unknown")
	}
	bo := backoff.Backoff{Min: cmp.Or(w.Retry, time.Second), Max: cmp.Or(w.RetryMax, 30*time.Second), Clock: clock.Or(w.Clock)}
	rv := "" // "": list first
	list := func(ctx context.Context) (string, error) { return w.list(ctx, res) }
	watch := func(ctx context.Context, rv string) (string, int, error) { return w.watch(ctx, res, rv) }
	for {
		var listed, progressed bool
		var err error
		rv, listed, progressed, err = client.ListThenWatch(ctx, rv, list, watch)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if progressed {
			bo.Reset()
		}
		switch {
		case client.IsGone(err):
			rv = ""
			if !listed {
				log.Info("pod network: node watch expired; listing again")
				continue // at once, unless a fresh list was just too old
			}
		case errors.Is(err, errSink):
			rv = ""
		}
		log.Warn("pod network: node watch restarts", "err", err, "failures", bo.Failures()+1, "resume", rv != "")
		if !bo.BackOff(ctx, err) {
			return ctx.Err()
		}
	}
}

// list reads every Node and hands them to the sink; it returns the
// list's version.
func (w *NodeWatcher) list(ctx context.Context, res api.ResourceInfo) (string, error) {
	objs, rv, err := w.Client.List(ctx, res, "", client.ListOptions{})
	if err != nil {
		return "", fmt.Errorf("list nodes: %w", err)
	}
	w.nodes = make(map[string]peerfeed.Peer, len(objs))
	for _, o := range objs {
		if n, ok := o.(*api.Node); ok {
			w.nodes[n.Name] = peerfeed.Of(n)
		}
	}
	if err := w.Sink.SetPeers(values(w.nodes)); err != nil {
		return "", fmt.Errorf("%w: %w", errSink, err)
	}
	return rv, nil
}

// watch follows changes from rv until the watch ends; it returns the
// last version seen (where to resume), how many events came, and why it
// ended (never nil).
func (w *NodeWatcher) watch(ctx context.Context, res api.ResourceInfo, rv string) (string, int, error) {
	wt, err := w.Client.Watch(ctx, res, "", client.WatchOptions{ResourceVersion: rv})
	if err != nil {
		return rv, 0, fmt.Errorf("watch nodes: %w", err)
	}
	defer wt.Close()
	for n := 0; ; n++ {
		ev, err := wt.Next()
		if err != nil {
			return wt.ResourceVersion(), n, fmt.Errorf("watch nodes: %w", err)
		}
		nd, ok := ev.Object.(*api.Node)
		if !ok {
			continue
		}
		if ev.Type == api.Deleted {
			delete(w.nodes, nd.Name)
		} else {
			w.nodes[nd.Name] = peerfeed.Of(nd)
		}
		if err := w.Sink.SetPeers(values(w.nodes)); err != nil {
			return wt.ResourceVersion(), n + 1, fmt.Errorf("%w: %w", errSink, err)
		}
	}
}

func values(m map[string]peerfeed.Peer) []peerfeed.Peer {
	out := make([]peerfeed.Peer, 0, len(m))
	for _, n := range m {
		out = append(out, n)
	}
	return out
}
