package server

import (
	"bytes"
	"context"
	"encoding/json"
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
// few seconds. Both checks are answered from memory: node credentials
// from auth.Tokens' cache, Node existence (and the controller's
// Ready=Unknown) from the node index. The store tells both of every
// change synchronously (storage.ChangeHook: before a writer is answered,
// or as another server's change is followed), so a credential or Node
// deleted by any path is seen by the next request, and nothing is read
// from the store while nothing changes.

// hotPath is the store's ChangeHook for the hot path's caches.
type hotPath struct {
	s      *server
	resync chan struct{} // asks runNodeIndex to list the Nodes again
}

func newHotPath(s *server) *hotPath {
	h := &hotPath{s: s, resync: make(chan struct{}, 1)}
	h.resync <- struct{}{} // the first list
	return h
}

// Changed implements storage.ChangeHook.
func (h *hotPath) Changed(resource, namespace, name string, deleted bool, value []byte, rev int64) {
	switch resource {
	case resourceSecrets:
		h.s.tokens.SecretChanged(namespace, name)
	case "nodes":
		h.s.nodeIdx.apply(name, deleted, value, rev)
	}
}

// Missed implements storage.ChangeHook: everything is rebuilt.
func (h *hotPath) Missed(int64) {
	h.s.tokens.SecretsResync()
	h.s.nodeIdx.reset()
	select {
	case h.resync <- struct{}{}:
	default:
	}
}

// nodeIndexBackoff bounds how fast a failed Node list is retried.
var nodeIndexBackoff = backoff.Backoff{Min: 100 * time.Millisecond, Max: 10 * time.Second}

// preloadNodeIndex lists the Nodes into the index once, before the
// server listens, as Tokens.Warm preloads the credentials: a restarted
// server otherwise answers its fleet's first heartbeats from the store,
// one read each, while the list competes with the reconnecting fleet for
// a core and a reader. It returns how many Nodes it loaded. On an error
// runNodeIndex lists again once it runs.
func (h *hotPath) preloadNodeIndex(ctx context.Context) (int, error) {
	select {
	case <-h.resync: // this list is the first
	default:
	}
	n, err := listNodeIndex(ctx, h.s.store, h.s.nodeIdx)
	if err != nil {
		select {
		case h.resync <- struct{}{}:
		default:
		}
	}
	return n, err
}

// listNodeIndex lists every Node into x and returns how many it loaded.
func listNodeIndex(ctx context.Context, st *storage.Store, x *nodeIndex) (int, error) {
	raws, rev, err := st.ListRaw(ctx, "nodes", storage.ListOptions{})
	if err != nil {
		return 0, err
	}
	return len(raws), x.load(raws, rev)
}

// runNodeIndex lists the Nodes into the index at start and after the
// store reports missed changes, until ctx ends.
func (h *hotPath) runNodeIndex(ctx context.Context) error {
	return runNodeIndex(ctx, h.s.store, h.s.nodeIdx, h.resync, h.s.clk, h.s.log.With("component", "node-index"))
}

func runNodeIndex(ctx context.Context, st *storage.Store, x *nodeIndex, resync <-chan struct{}, clk clock.Clock, log *slog.Logger) error {
	bo := nodeIndexBackoff
	bo.Clock = clk
	for {
		select {
		case <-resync:
		case <-ctx.Done():
			return nil
		}
		for {
			_, err := listNodeIndex(ctx, st, x)
			if err == nil {
				bo.Reset()
				break
			}
			log.Warn("listing nodes for the heartbeat index failed; retrying", "err", err)
			if !bo.BackOff(ctx, err) {
				return nil
			}
		}
	}
}

// nodeIndex is every Node's name and whether its stored Ready condition
// is the node lifecycle controller's Unknown: what a heartbeat needs.
// Safe for concurrent use.
type nodeIndex struct {
	// storeReads counts lookups the index could not answer.
	storeReads atomic.Uint64

	mu     sync.RWMutex
	synced bool // a list has been loaded since the last reset
	nodes  map[string]nodeState
}

// nodeState is what the index knows of one Node, as of revision rev. A
// deletion stays (exists false) until the next load, so a list read
// before it cannot bring the Node back.
type nodeState struct {
	rev             int64
	exists, unknown bool
}

func newNodeIndex() *nodeIndex { return &nodeIndex{nodes: map[string]nodeState{}} }

// lookup answers for node name; ok is false until the index has loaded
// a list, and the caller reads the store.
func (x *nodeIndex) lookup(name string) (exists, unknown, ok bool) {
	x.mu.RLock()
	st, synced := x.nodes[name], x.synced
	x.mu.RUnlock()
	if !synced {
		x.storeReads.Add(1)
		return false, false, false
	}
	return st.exists, st.unknown, true
}

// apply records a change of Node name at rev (the store's hook).
func (x *nodeIndex) apply(name string, deleted bool, value []byte, rev int64) {
	st := nodeState{rev: rev, exists: !deleted, unknown: !deleted && bytes.Contains(value, statusUnknownReason)}
	x.mu.Lock()
	x.nodes[name] = st
	x.mu.Unlock()
}

// reset forgets everything until the next load.
func (x *nodeIndex) reset() {
	x.mu.Lock()
	x.synced = false
	clear(x.nodes)
	x.mu.Unlock()
}

// rawName is the part of a stored Node the index decodes from a list.
type rawName struct {
	Metadata struct {
		Name string `json:"name"`
	} `json:"metadata"`
}

// load merges a list of every Node read at revision rev: what the hook
// applied after rev stays, everything older is replaced by the list.
func (x *nodeIndex) load(raws [][]byte, rev int64) error {
	listed := make(map[string]nodeState, len(raws))
	for _, raw := range raws {
		var n rawName
		if err := json.Unmarshal(raw, &n); err != nil {
			return fmt.Errorf("decode a stored node: %w", err)
		}
		listed[n.Metadata.Name] = nodeState{rev: rev, exists: true, unknown: bytes.Contains(raw, statusUnknownReason)}
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	for name, st := range x.nodes {
		if st.rev > rev {
			listed[name] = st // changed after the list was read
		}
	}
	x.nodes, x.synced = listed, true
	return nil
}

// addHotPathMetrics exports how often the hot path read the store.
func (s *server) addHotPathMetrics() {
	s.metrics.addWriter(func(w *promtext.Writer) {
		w.Declare("skiff_hotpath_store_reads_total", promtext.Counter, "Node credential checks and heartbeat Node lookups that read the store rather than memory.")
		w.Sample("skiff_hotpath_store_reads_total", `check="credential"`, float64(s.tokens.StoreReads()))
		w.Sample("skiff_hotpath_store_reads_total", `check="node"`, float64(s.nodeIdx.storeReads.Load()))
	})
}
