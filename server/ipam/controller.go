package ipam

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"slices"
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

// ReasonCIDRNotAvailable is the Warning event recorded on a Node that
// cannot have a pod CIDR because the cluster CIDR is used up (the node
// IPAM controller's reason in Kubernetes).
const ReasonCIDRNotAvailable = "CIDRNotAvailable"

// EventRecorder records an event about an object; *events.Recorder
// implements it.
type EventRecorder interface {
	Eventf(ctx context.Context, obj api.Object, typ, reason, format string, args ...any)
}

// Config wires a Controller. Store and ClusterCIDR are required.
type Config struct {
	Store       *storage.Store
	ClusterCIDR string
	Clock       clock.Clock   // default clock.Real
	Logger      *slog.Logger  // default: discard
	Recorder    EventRecorder // default: none recorded
}

// Controller writes pod CIDRs into Nodes. Create it with NewController and
// call Run once.
type Controller struct {
	st    *storage.Store
	alloc *Allocator
	clock clock.Clock
	log   *slog.Logger
	rec   EventRecorder
	// waiting are the nodes without a pod CIDR while none was free, in
	// the order they came; a released subnet goes to the first. A node
	// waits once: its later events touch neither the store nor the log
	// (at 10 000 nodes on the default /16, each of 9 744 nodes' status
	// writes cost a store read and a warning).
	waiting *waitQueue
	// notes feeds the goroutine that records the waiting nodes' events,
	// so a thousand nodes joining a used-up range do not hold the watch
	// loop on a thousand event writes; when it is full, events are
	// dropped (as client-go's broadcaster drops them).
	notes chan *api.Node
}

// noteBuffer is how many events may wait to be recorded.
const noteBuffer = 128

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
	return &Controller{st: cfg.Store, alloc: a, clock: clock.Or(cfg.Clock), log: log, rec: cfg.Recorder, waiting: newWaitQueue(), notes: make(chan *api.Node, noteBuffer)}, nil
}

// Run reconciles every Node at start, then follows changes until ctx
// ends. A failed list or an ended watch (compaction, a slow watcher)
// makes it start over from a fresh list, after a back-off. It returns
// ctx's error once ctx ends.
func (c *Controller) Run(ctx context.Context) error {
	if c.rec != nil {
		go c.recordNotes(ctx, c.alloc.Cluster(), c.alloc.size())
	}
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
	c.waiting = newWaitQueue()
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
		c.assign(ctx, n)
	}
	w, err := c.st.Watch(ctx, "nodes", storage.WatchOptions{Revision: rev, Buffer: storage.InformerWatchBuffer})
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
		hadWaiting := c.waiting.len() > 0
		c.waiting.remove(n.Name)
		p, held := c.alloc.Get(n.Name)
		if !held {
			return
		}
		c.log.Info("node IPAM: released pod CIDR", "node", n.Name, "cidr", p.String())
		c.alloc.Release(n.Name)
		// The first waiting node that still exists takes it.
		for c.alloc.Free() > 0 && c.waiting.len() > 0 {
			name := c.waiting.pop()
			c.assign(ctx, &api.Node{ObjectMeta: api.ObjectMeta{Name: name}})
		}
		if hadWaiting && c.waiting.len() == 0 {
			c.log.Info("node IPAM: no node waits for a pod CIDR any more")
		}
		return
	}
	if n.Spec.PodCIDR == "" {
		if !c.waiting.has(n.Name) {
			c.assign(ctx, n)
		}
		return
	}
	c.waiting.remove(n.Name)
	if p, ok := c.alloc.Get(n.Name); ok && p.String() == n.Spec.PodCIDR {
		return
	}
	if err := c.alloc.Occupy(n.Name, n.Spec.PodCIDR); err != nil {
		c.log.Warn("node IPAM: node carries a conflicting pod CIDR", "node", n.Name, "err", err)
	}
}

// assign gives node a subnet and writes it into its spec, unless the
// stored Node already has one (then that one is adopted). With no
// subnet free the node waits, without a store read.
func (c *Controller) assign(ctx context.Context, node *api.Node) {
	name := node.Name
	if _, held := c.alloc.Get(name); !held && c.alloc.Free() == 0 {
		c.wait(ctx, node)
		return
	}
	_, err := c.st.GuaranteedUpdate(ctx, "nodes", "", name, func(cur api.Object) (api.Object, error) {
		n, ok := cur.(*api.Node)
		if !ok {
			return nil, fmt.Errorf("node %s: unexpected object %T", name, cur)
		}
		node = n
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
	case errors.Is(err, ErrFull):
		c.wait(ctx, node)
	case err != nil:
		c.log.Warn("node IPAM: cannot assign a pod CIDR", "node", name, "err", err)
	default:
		p, _ := c.alloc.Get(name)
		c.log.Info("node IPAM: assigned pod CIDR", "node", name, "cidr", p.String())
	}
}

// wait queues node for the next released subnet: a Warning event on
// the node says why it has none, and the log says so once while the
// cluster CIDR stays used up.
func (c *Controller) wait(ctx context.Context, node *api.Node) {
	if !c.waiting.add(node.Name) {
		return
	}
	if c.waiting.len() == 1 {
		c.log.Warn("node IPAM: the cluster CIDR is used up; nodes without a pod CIDR wait for one to be released (a larger --cluster-cidr gives them one)",
			"clusterCIDR", c.alloc.Cluster().String(), "subnets", c.alloc.size(), "node", node.Name)
	}
	if c.rec != nil {
		select {
		case c.notes <- node:
		default:
		}
	}
}

// recordNotes records a CIDRNotAvailable event for each node sent on
// c.notes until ctx ends.
func (c *Controller) recordNotes(ctx context.Context, cluster netip.Prefix, n uint32) {
	for {
		select {
		case <-ctx.Done():
			return
		case node := <-c.notes:
			c.rec.Eventf(ctx, node, api.EventTypeWarning, ReasonCIDRNotAvailable,
				"Node %s has no pod CIDR: all %d /%d subnets of the cluster CIDR %s are taken", node.Name, n, SubnetBits, cluster)
		}
	}
}

// waitQueue is a FIFO of node names without duplicates; removal is lazy.
type waitQueue struct {
	names []string
	in    map[string]bool
}

func newWaitQueue() *waitQueue { return &waitQueue{in: map[string]bool{}} }

func (q *waitQueue) len() int             { return len(q.in) }
func (q *waitQueue) has(name string) bool { return q.in[name] }
func (q *waitQueue) remove(name string)   { delete(q.in, name) }

// add appends name; false when it already waits.
func (q *waitQueue) add(name string) bool {
	if q.in[name] {
		return false
	}
	q.in[name] = true
	if len(q.names) > 2*len(q.in)+64 { // drop the removed names
		q.names = slices.DeleteFunc(q.names, func(n string) bool { return !q.in[n] })
	}
	q.names = append(q.names, name)
	return true
}

// pop takes the first name still waiting; "" when none.
func (q *waitQueue) pop() string {
	for len(q.names) > 0 {
		name := q.names[0]
		q.names[0] = ""
		q.names = q.names[1:]
		if q.in[name] {
			delete(q.in, name)
			return name
		}
	}
	return ""
}
