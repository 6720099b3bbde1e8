package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/skiffhq/skiff/internal/backoff"
	"github.com/skiffhq/skiff/internal/clock"
	"github.com/skiffhq/skiff/internal/promtext"
	"github.com/skiffhq/skiff/storage"
)

// The fleet's hot path: every agent authenticates and heartbeats every
// few seconds. Both checks are answered from memory, kept current by a
// watch of the store (a feed), and trusted only while the feed has seen
// every change the store counted (storage.ResourceRevision, counted
// before a writer is answered): a credential or Node deleted by any path
// is seen by the next request, which reads the store while the feed is
// a change behind.

// feedBackoff bounds how fast a failed feed watch is restarted.
var feedBackoff = backoff.Backoff{Min: 100 * time.Millisecond, Max: 10 * time.Second}

// runFeed keeps a watch of resource running until ctx ends: sync is
// called with the revision the watch starts after (it loads whatever
// state the feed needs as of then), apply with each event. A watch that
// ends (too slow, compacted, a store error) is started again after a
// capped, jittered back-off.
func runFeed(ctx context.Context, st *storage.Store, resource string, clk clock.Clock, log *slog.Logger,
	sync func(ctx context.Context) (int64, error), apply func(storage.Event)) error {
	bo := feedBackoff
	bo.Clock = clk
	for {
		err := feedOnce(ctx, st, resource, sync, apply)
		if ctx.Err() != nil {
			return nil
		}
		log.Warn("feed watch ended; restarting", "resource", resource, "err", err)
		if !bo.BackOff(ctx, err) {
			return nil
		}
	}
}

func feedOnce(ctx context.Context, st *storage.Store, resource string,
	sync func(ctx context.Context) (int64, error), apply func(storage.Event)) error {
	rev, err := sync(ctx)
	if err != nil {
		return err
	}
	w, err := st.Watch(ctx, resource, storage.WatchOptions{Revision: rev})
	if err != nil {
		return err
	}
	defer w.Stop()
	for ev := range w.Events() {
		apply(ev)
	}
	if err := w.Err(); err != nil {
		return err
	}
	return errors.New("watch ended")
}

// runCredentialFeed tells the node credential cache (auth.Tokens) of
// every Secret change.
func (s *server) runCredentialFeed(ctx context.Context) error {
	return runFeed(ctx, s.store, resourceSecrets, s.clk, s.log.With("component", "credential-feed"),
		func(context.Context) (int64, error) {
			rev := s.store.Revision()
			s.tokens.SecretsResync(rev)
			return rev, nil
		},
		func(ev storage.Event) {
			ns, name := ev.Key()
			s.tokens.SecretChanged(ns, name, ev.Revision)
		})
}

// nodeIndex is every Node's name and whether its stored Ready condition
// is the node lifecycle controller's Unknown: what a heartbeat needs.
// Safe for concurrent use.
type nodeIndex struct {
	// seen is the revision of the last Node change applied; -1 while
	// (re)syncing.
	seen atomic.Int64
	// storeReads counts lookups the index could not answer.
	storeReads atomic.Uint64
	mu         sync.RWMutex
	nodes      map[string]bool // name → Ready is Unknown
}

func newNodeIndex() *nodeIndex {
	x := &nodeIndex{nodes: map[string]bool{}}
	x.seen.Store(-1)
	return x
}

// lookup answers for node name when the index has applied every Node
// change up to cur (the store's ResourceRevision("nodes"), read first);
// ok is false otherwise, and the caller reads the store.
func (x *nodeIndex) lookup(name string, cur int64) (exists, unknown, ok bool) {
	if x.seen.Load() < cur {
		x.storeReads.Add(1)
		return false, false, false
	}
	x.mu.RLock()
	unknown, exists = x.nodes[name]
	x.mu.RUnlock()
	return exists, unknown, true
}

// rawName is the part of a stored Node the index decodes at a resync.
type rawName struct {
	Metadata struct {
		Name string `json:"name"`
	} `json:"metadata"`
}

// runNodeIndex keeps x current with the store's Nodes.
func (s *server) runNodeIndex(ctx context.Context, x *nodeIndex) error {
	return runFeed(ctx, s.store, "nodes", s.clk, s.log.With("component", "node-index"),
		func(ctx context.Context) (int64, error) {
			x.seen.Store(-1)
			raws, rev, err := s.store.ListRaw(ctx, "nodes", storage.ListOptions{})
			if err != nil {
				return 0, fmt.Errorf("list nodes: %w", err)
			}
			nodes := make(map[string]bool, len(raws))
			for _, raw := range raws {
				var n rawName
				if err := json.Unmarshal(raw, &n); err != nil {
					return 0, fmt.Errorf("decode a stored node: %w", err)
				}
				nodes[n.Metadata.Name] = bytes.Contains(raw, statusUnknownReason)
			}
			x.mu.Lock()
			x.nodes = nodes
			x.mu.Unlock()
			x.seen.Store(rev)
			return rev, nil
		},
		func(ev storage.Event) {
			_, name := ev.Key()
			x.mu.Lock()
			if ev.Type == storage.Deleted {
				delete(x.nodes, name)
			} else {
				x.nodes[name] = bytes.Contains(ev.Value, statusUnknownReason)
			}
			x.mu.Unlock()
			x.seen.Store(ev.Revision)
		})
}

// addHotPathMetrics exports how often the hot path read the store.
func (s *server) addHotPathMetrics() {
	s.metrics.addWriter(func(w *promtext.Writer) {
		w.Declare("skiff_hotpath_store_reads_total", promtext.Counter, "Node credential checks and heartbeat Node lookups that read the store rather than memory.")
		w.Sample("skiff_hotpath_store_reads_total", `check="credential"`, float64(s.tokens.StoreReads()))
		w.Sample("skiff_hotpath_store_reads_total", `check="node"`, float64(s.nodeIdx.storeReads.Load()))
	})
}
