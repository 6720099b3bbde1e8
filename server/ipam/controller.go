package ipam

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/internal/backoff"
	"github.com/skiffhq/skiff/internal/clock"
	"github.com/skiffhq/skiff/storage"
)

// Back-off bounds of the controller's relists after a failed list or a
// watch that ended: from resyncRetry up to maxResyncRetry, starting over
// after a watch that lasted maxResyncRetry.
const (
	resyncRetry    = time.Second
	maxResyncRetry = 30 * time.Second
)

// Config wires a Controller. Store and ClusterCIDR are required.
type Config struct {
	Store       *storage.Store
	ClusterCIDR string
	Clock       clock.Clock  // default clock.Real
	Logger      *slog.Logger // default: discard
}

// Controller writes pod CIDRs into Nodes. Create it with NewController and
// call Run once.
type Controller struct {
	st    *storage.Store
	alloc *Allocator
	clock clock.Clock
	log   *slog.Logger
}

// NewController checks cfg and returns a Controller.
func NewController(cfg Config) (*Controller, error) {
	if cfg.Store == nil {
		return nil, errors.New("ipam: Store is required")
	}
	a, err := NewAllocator(cfg.ClusterCIDR)
	if err != nil {
		return nil, fmt.Errorf("ipam: %w", err)
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return &Controller{st: cfg.Store, alloc: a, clock: clock.Or(cfg.Clock), log: log}, nil
}

// Run reconciles every Node at start, then follows changes until ctx
// ends. A failed list or an ended watch (compaction, a slow watcher)
// makes it start over from a fresh list, after a back-off. It returns
// ctx's error once ctx ends.
func (c *Controller) Run(ctx context.Context) error {
	bo := backoff.Backoff{Min: resyncRetry, Max: maxResyncRetry, Clock: c.clock}
	for {
		started := c.clock.Now()
		err := c.runOnce(ctx)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if c.clock.Now().Sub(started) >= maxResyncRetry {
			bo.Reset()
		}
		c.log.Warn("node IPAM: relisting", "err", err, "failures", bo.Failures()+1)
		if !bo.BackOff(ctx, err) {
			return ctx.Err()
		}
	}
}

// runOnce lists, reconciles and watches until the watch ends.
func (c *Controller) runOnce(ctx context.Context) error {
	objs, rev, err := c.st.List(ctx, "nodes", storage.ListOptions{})
	if err != nil {
		return fmt.Errorf("list nodes: %w", err)
	}
	a, err := NewAllocator(c.alloc.Cluster().String())
	if err != nil {
		return err
	}
	c.alloc = a
	var missing []*api.Node
	for _, o := range objs {
		n, ok := o.(*api.Node)
		if !ok {
			continue
		}
		if n.Spec.PodCIDR == "" {
			missing = append(missing, n)
			continue
		}
		if err := c.alloc.Occupy(n.Name, n.Spec.PodCIDR); err != nil {
			c.log.Warn("node IPAM: node keeps a pod CIDR skiff did not give it", "node", n.Name, "err", err)
		}
	}
	for _, n := range missing {
		c.assign(ctx, n.Name)
	}
	w, err := c.st.Watch(ctx, "nodes", storage.WatchOptions{Revision: rev})
	if err != nil {
		return fmt.Errorf("watch nodes: %w", err)
	}
	defer w.Stop()
	for ev := range w.Events() {
		o, err := ev.Object()
		if err != nil {
			c.log.Warn("node IPAM: undecodable node event", "err", err)
			continue
		}
		n, ok := o.(*api.Node)
		if !ok {
			continue
		}
		c.handle(ctx, ev.Type, n)
	}
	if err := w.Err(); err != nil {
		return err
	}
	return errors.New("watch ended")
}

// handle applies one watch event.
func (c *Controller) handle(ctx context.Context, typ storage.EventType, n *api.Node) {
	if typ == storage.Deleted {
		if p, ok := c.alloc.Get(n.Name); ok {
			c.log.Info("node IPAM: released pod CIDR", "node", n.Name, "cidr", p.String())
		}
		c.alloc.Release(n.Name)
		return
	}
	if n.Spec.PodCIDR == "" {
		c.assign(ctx, n.Name)
		return
	}
	if p, ok := c.alloc.Get(n.Name); ok && p.String() == n.Spec.PodCIDR {
		return
	}
	if err := c.alloc.Occupy(n.Name, n.Spec.PodCIDR); err != nil {
		c.log.Warn("node IPAM: node carries a conflicting pod CIDR", "node", n.Name, "err", err)
	}
}

// assign gives node a subnet and writes it into its spec, unless the
// stored Node already has one (then that one is adopted).
func (c *Controller) assign(ctx context.Context, name string) {
	_, err := c.st.GuaranteedUpdate(ctx, "nodes", "", name, func(cur api.Object) (api.Object, error) {
		n, ok := cur.(*api.Node)
		if !ok {
			return nil, fmt.Errorf("node %s: unexpected object %T", name, cur)
		}
		if n.Spec.PodCIDR != "" {
			if err := c.alloc.Occupy(name, n.Spec.PodCIDR); err != nil {
				return nil, err
			}
			return n, nil
		}
		p, err := c.alloc.Allocate(name)
		if err != nil {
			return nil, err
		}
		n.Spec.PodCIDR = p.String()
		n.Spec.PodCIDRs = []string{p.String()}
		return n, nil
	})
	switch {
	case errors.Is(err, storage.ErrNotFound):
		c.alloc.Release(name) // deleted meanwhile; the watch says so too
	case err != nil:
		c.log.Warn("node IPAM: cannot assign a pod CIDR", "node", name, "err", err)
	default:
		p, _ := c.alloc.Get(name)
		c.log.Info("node IPAM: assigned pod CIDR", "node", name, "cidr", p.String())
	}
}
