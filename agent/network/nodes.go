package network

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/api/client"
	"github.com/skiffhq/skiff/internal/clock"
)

// NodeSink takes the cluster's Nodes; *Manager is one.
type NodeSink interface {
	SetNodes(nodes []*api.Node) error
}

// NodeWatcher feeds a NodeSink from the API: it lists every Node, then
// watches them, and hands the whole set to the sink after every change
// (level-triggered). A failed list, an ended or gone watch, or a sink
// error makes it relist after Retry.
type NodeWatcher struct {
	Client *client.Client
	Sink   NodeSink
	Clock  clock.Clock  // default clock.Real
	Logger *slog.Logger // default slog.Default
	Retry  time.Duration
}

// Run watches until ctx ends.
func (w *NodeWatcher) Run(ctx context.Context) {
	clk := clock.Or(w.Clock)
	log := w.Logger
	if log == nil {
		log = slog.Default()
	}
	retry := w.Retry
	if retry <= 0 {
		retry = 2 * time.Second
	}
	for ctx.Err() == nil {
		err := w.runOnce(ctx)
		if ctx.Err() != nil {
			return
		}
		log.Warn("pod network: node watch restarts", "err", err)
		if !clock.Sleep(ctx, clk, retry) {
			return
		}
	}
}

func (w *NodeWatcher) runOnce(ctx context.Context) error {
	res, ok := api.LookupResource("nodes")
	if !ok {
		return errors.New("nodes resource unknown")
	}
	objs, rv, err := w.Client.List(ctx, res, "", client.ListOptions{})
	if err != nil {
		return fmt.Errorf("list nodes: %w", err)
	}
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
