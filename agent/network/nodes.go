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
)

// NodeSink takes the cluster's Nodes; *Manager is one.
type NodeSink interface {
	SetNodes(nodes []*api.Node) error
}

// NodeWatcher feeds a NodeSink from the API: it lists every Node, then
// watches them, and hands the whole set to the sink after every change
// (level-triggered). A failed list, an ended or gone watch, or a sink
// error makes it relist after a back-off (Retry up to RetryMax, reset by
// every list that works).
type NodeWatcher struct {
	Client *client.Client
	Sink   NodeSink
	Clock  clock.Clock  // default clock.Real
	Logger *slog.Logger // default slog.Default
	// Retry and RetryMax bound the back-off; defaults 1 s and 30 s.
	Retry, RetryMax time.Duration
}

// Run watches until ctx ends, then returns ctx's error.
func (w *NodeWatcher) Run(ctx context.Context) error {
	log := w.Logger
	if log == nil {
		log = slog.Default()
	}
	bo := backoff.Backoff{Min: cmp.Or(w.Retry, time.Second), Max: cmp.Or(w.RetryMax, 30*time.Second), Clock: clock.Or(w.Clock)}
	for {
		listed, err := w.runOnce(ctx)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if listed {
			bo.Reset()
		}
		log.Warn("pod network: node watch restarts", "err", err, "failures", bo.Failures()+1)
		if !bo.BackOff(ctx, err) {
			return ctx.Err()
		}
	}
}

// runOnce lists and watches until the watch ends; listed reports that
// the list worked (the server answers).
func (w *NodeWatcher) runOnce(ctx context.Context) (listed bool, err error) {
	res, ok := api.LookupResource("nodes")
	if !ok {
		return false, errors.New("nodes resource unknown")
	}
	objs, rv, err := w.Client.List(ctx, res, "", client.ListOptions{})
	if err != nil {
		return false, fmt.Errorf("list nodes: %w", err)
	}
	return true, w.watch(ctx, res, objs, rv)
}

// watch hands the listed Nodes to the sink, then follows changes from rv
// until the watch ends; it always returns an error.
func (w *NodeWatcher) watch(ctx context.Context, res api.ResourceInfo, objs []api.Object, rv string) error {
	nodes := map[string]*api.Node{}
	for _, o := range objs {
		if n, ok := o.(*api.Node); ok {
			nodes[n.Name] = n
		}
	}
	if err := w.Sink.SetNodes(values(nodes)); err != nil {
		return err
	}
	wt, err := w.Client.Watch(ctx, res, "", client.WatchOptions{ResourceVersion: rv})
	if err != nil {
		return fmt.Errorf("watch nodes: %w", err)
	}
	defer wt.Close()
	for {
		ev, err := wt.Next()
		if err != nil {
			return fmt.Errorf("watch nodes: %w", err)
		}
		n, ok := ev.Object.(*api.Node)
		if !ok {
			continue
		}
		if ev.Type == api.Deleted {
			delete(nodes, n.Name)
		} else {
			nodes[n.Name] = n
		}
		if err := w.Sink.SetNodes(values(nodes)); err != nil {
			return err
		}
	}
}

func values(m map[string]*api.Node) []*api.Node {
	out := make([]*api.Node, 0, len(m))
	for _, n := range m {
		out = append(out, n)
	}
	return out
}
