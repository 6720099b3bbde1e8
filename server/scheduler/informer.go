package scheduler

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"time"

	"github.com/skiffhq/skiff/api"

	"github.com/skiffhq/skiff/storage"
)

// inbox is an unbounded mailbox: producers never block (so a store
// watcher is never cut off because the loop is busy), the consumer takes
// everything at once.
type inbox[T any] struct {
	mu     sync.Mutex
	items  []T
	notify chan struct{}
}

func newInbox[T any]() *inbox[T] { return &inbox[T]{notify: make(chan struct{}, 1)} }

func (b *inbox[T]) put(v ...T) {
	b.mu.Lock()
	b.items = append(b.items, v...)
	b.mu.Unlock()
	select {
	case b.notify <- struct{}{}:
	default:
	}
}

// take returns every queued item, handing buf (emptied) back for reuse.
func (b *inbox[T]) take(buf []T) []T {
	b.mu.Lock()
	out := b.items
	b.items = buf[:0]
	b.mu.Unlock()
	return out
}

// msgKind says what a message to the loop carries.
type msgKind uint8

const (
	msgPod         msgKind = iota + 1 // pod added or changed
	msgPodDeleted                     // pod deleted (pod: its last state)
	msgPods                           // full pod list after a (re)list
	msgNode                           // node added or changed
	msgNodeDeleted                    // node deleted
	msgNodes                          // full node list after a (re)list
	msgBound                          // a bind finished (err says how)
	msgUsage                          // UsageNow asks for every node's figures (usage)
)

// message is one input of the scheduling loop.
type message struct {
	kind  msgKind
	pod   *PodInfo
	node  *api.Node
	pods  []*PodInfo
	nodes []*api.Node
	// bind results
	qp   *QueuedPod
	dest string
	at   time.Time
	err  error
	// UsageNow's answer, nil when the loop has not listed yet
	usage chan []NodeUsage
}

// inform feeds the loop one resource ("pods" or "nodes"): a list, then a
// watch from the list's revision, and a fresh list whenever the watch
// ends (compacted, too slow, or a read error) until ctx ends
// (storage.Store.Follow). Objects are decoded, and pods turned into
// PodInfo, here, off the loop.
func (s *Scheduler) inform(ctx context.Context, resource string) {
	s.store.Follow(ctx, resource, storage.Following{
		Listed: func(objs []api.Object, _ int64) {
			lm := listMessage(resource, objs)
			s.self.forgetListed(lm.pods)
			s.in.put(lm)
		},
		Consume: func(w *storage.Watcher) { s.consume(ctx, resource, w) },
		Failed: func(err error) {
			if errors.Is(err, storage.ErrRelist) {
				s.metrics.Relists.Add(1)
				s.log.Info("scheduler relisting", "resource", resource, "err", err)
				return
			}
			s.log.Warn("scheduler", "resource", resource, "err", err)
		},
		Clock: s.clk,
	})
}

// consume turns w's events into messages for the loop until the watch
// ends. One goroutine reads the watch into an unbounded queue, so the
// store never finds this watcher too slow while the other waits for a
// bind's outcome (selfBinds.match) or decodes.
func (s *Scheduler) consume(ctx context.Context, resource string, w *storage.Watcher) {
	q := newInbox[storage.Event]()
	read := make(chan struct{})
	go func() {
		defer close(read)
		for ev := range w.Events() {
			q.put(ev)
		}
	}()
	var evs []storage.Event
	var msgs []message
	for ended := false; !ended; {
		select {
		case <-q.notify:
		case <-read:
			ended = true // everything read is queued: take it all
		}
		evs = q.take(evs)
		for i := range evs {
			if m, ok := s.toMessage(ctx, resource, evs[i]); ok {
				msgs = append(msgs, m)
			}
			evs[i] = storage.Event{}
		}
		evs = evs[:0]
		if len(msgs) > 0 {
			s.in.put(msgs...)
			clear(msgs)
			msgs = msgs[:0]
		}
	}
}

// toMessage turns one event into a message: a bind of this
// scheduler's own from what the binder wrote, anything else decoded.
func (s *Scheduler) toMessage(ctx context.Context, resource string, ev storage.Event) (message, bool) {
	if resource == "pods" && ev.Type == storage.Modified {
		ns, name := ev.Key()
		if pi, ok := s.self.match(ctx, ns+"/"+name, ev.Revision); ok {
			s.metrics.SelfBoundEvents.Add(1)
			return message{kind: msgPod, pod: pi}, true
		}
	}
	obj, err := ev.Object()
	if err != nil {
		s.log.Warn("scheduler skipped an undecodable object", "resource", resource, "revision", ev.Revision, "err", err)
		return message{}, false
	}
	return eventMessage(ev.Type, obj), true
}

func listMessage(resource string, objs []api.Object) message {
	if resource == "nodes" {
		m := message{kind: msgNodes, nodes: make([]*api.Node, 0, len(objs))}
		for _, o := range objs {
			m.nodes = append(m.nodes, o.(*api.Node))
		}
		return m
	}
	m := message{kind: msgPods, pods: make([]*PodInfo, len(objs))}
	// A relist of many pods: compute their PodInfos on every CPU.
	workers := min(runtime.GOMAXPROCS(0), len(objs)/256+1)
	per := (len(objs) + workers - 1) / workers
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := w * per; i < min((w+1)*per, len(objs)); i++ {
				m.pods[i] = NewPodInfo(objs[i].(*api.Pod))
			}
		})
	}
	wg.Wait()
	return m
}

func eventMessage(t storage.EventType, obj api.Object) message {
	switch o := obj.(type) {
	case *api.Node:
		if t == storage.Deleted {
			return message{kind: msgNodeDeleted, node: o}
		}
		return message{kind: msgNode, node: o}
	case *api.Pod:
		if t == storage.Deleted {
			return message{kind: msgPodDeleted, pod: NewPodInfo(o)}
		}
		return message{kind: msgPod, pod: NewPodInfo(o)}
	}
	return message{}
}
