package config

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"

	"github.com/skiffhq/skiff/api"
)

// Sink receives the state of one source. The Merger implements it; the
// API and file sources write to it. Every method may block until the
// resulting PodUpdates are taken from the Merger's channel, or ctx ends.
// Pods passed in are copied: the caller keeps ownership.
type Sink interface {
	// Set replaces the whole state of source with pods.
	Set(ctx context.Context, source string, pods []*api.Pod) error
	// Upsert adds pods to source, or replaces those it has (by UID).
	Upsert(ctx context.Context, source string, pods ...*api.Pod) error
	// Remove takes pods (by UID) out of source.
	Remove(ctx context.Context, source string, pods ...*api.Pod) error
}

// Checkpointer keeps the API source's pods for the next start. Save must
// not keep or modify pods after it returns; agent/checkpoint.Store
// implements it.
type Checkpointer interface {
	Save(pods []*api.Pod)
}

// DefaultUpdateBuffer is the capacity of the Merger's channel.
const DefaultUpdateBuffer = 50

// MergerConfig configures a Merger.
type MergerConfig struct {
	// Sources are the sources whose first state SeenAllSources waits for,
	// usually SourceAPI and SourceFile. SourceCheckpoint is never one:
	// restored pods belong to SourceAPI.
	Sources []string
	// Buffer is the capacity of the update channel. Default
	// DefaultUpdateBuffer.
	Buffer int
	// Checkpoint, if not nil, is given the API source's pods after each
	// change to them (not after a Restore, which changes nothing there).
	Checkpoint Checkpointer
}

// Validate reports what is wrong with c.
func (c MergerConfig) Validate() error {
	if len(c.Sources) == 0 {
		return errors.New("merger config: at least one source is required")
	}
	seen := map[string]bool{}
	for _, s := range c.Sources {
		switch {
		case s == "":
			return errors.New("merger config: empty source name")
		case s == SourceCheckpoint:
			return fmt.Errorf("merger config: %q is not a source to wait for (its pods belong to %q)", s, SourceAPI)
		case seen[s]:
			return fmt.Errorf("merger config: source %q given twice", s)
		}
		seen[s] = true
	}
	if c.Buffer < 0 {
		return fmt.Errorf("merger config: negative buffer %d", c.Buffer)
	}
	return nil
}

// Merger merges the states of the agent's sources into one channel of
// PodUpdates, like the kubelet's PodConfig: it keeps each source's pods by
// UID and emits ADD for new pods, UPDATE when a pod's spec or metadata
// changed, DELETE when its deletionTimestamp is set (or its grace period
// changes), REMOVE when it left its source, RECONCILE when only its
// status changed, and RESTORE for pods restored from the checkpoint.
// Updates leave in the order their changes were merged. It is safe for
// concurrent use.
type Merger struct {
	updates    chan PodUpdate
	checkpoint Checkpointer

	// mu serializes merges, so that updates leave in merge order; it is
	// held while sending.
	mu   sync.Mutex
	pods map[string]map[string]*api.Pod // source → UID → pod

	seenMu     sync.Mutex
	seen       map[string]bool // configured source → delivered a state
	seenAll    chan struct{}   // closed once every source is seen
	seenClosed bool
}

var _ Sink = (*Merger)(nil)

// NewMerger returns a Merger for cfg.
func NewMerger(cfg MergerConfig) (*Merger, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	buf := cfg.Buffer
	if buf == 0 {
		buf = DefaultUpdateBuffer
	}
	m := &Merger{
		updates:    make(chan PodUpdate, buf),
		checkpoint: cfg.Checkpoint,
		pods:       map[string]map[string]*api.Pod{},
		seen:       map[string]bool{},
		seenAll:    make(chan struct{}),
	}
	for _, s := range cfg.Sources {
		m.seen[s] = false
		m.pods[s] = map[string]*api.Pod{}
	}
	if _, ok := m.pods[SourceAPI]; !ok {
		m.pods[SourceAPI] = map[string]*api.Pod{} // Restore's home
	}
	return m, nil
}

// Updates is the channel of merged updates. The sync loop is its only
// reader; it owns the pods it receives.
func (m *Merger) Updates() <-chan PodUpdate { return m.updates }

// SeenAllSources reports whether every configured source has delivered
// its first whole state (Set). Until then the agent must not delete
// runtime pods it does not know of: their source may not have spoken.
func (m *Merger) SeenAllSources() bool {
	m.seenMu.Lock()
	defer m.seenMu.Unlock()
	return m.seenClosed
}

// SeenAll returns a channel closed once SeenAllSources is true.
func (m *Merger) SeenAll() <-chan struct{} { return m.seenAll }

func (m *Merger) markSeen(source string) {
	m.seenMu.Lock()
	defer m.seenMu.Unlock()
	m.seen[source] = true
	if m.seenClosed {
		return
	}
	for _, ok := range m.seen {
		if !ok {
			return
		}
	}
	m.seenClosed = true
	close(m.seenAll)
}

// Pods returns copies of the pods source holds now, sorted by namespace
// and name.
func (m *Merger) Pods(source string) []*api.Pod {
	m.mu.Lock()
	defer m.mu.Unlock()
	return sortedCopies(m.pods[source])
}

func sortedCopies(set map[string]*api.Pod) []*api.Pod {
	out := make([]*api.Pod, 0, len(set))
	for _, p := range set {
		out = append(out, CopyPod(p))
	}
	sortPods(out)
	return out
}

func sortPods(pods []*api.Pod) {
	sort.Slice(pods, func(i, j int) bool {
		a, b := pods[i], pods[j]
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		if a.Name != b.Name {
			return a.Name < b.Name
		}
		return a.UID < b.UID
	})
}

// changes collects the pods of one merge by operation.
type changes struct {
	remove, add, update, del, reconcile []*api.Pod
}

// classifyLocked stores next in set and records the operation its
// arrival means.
func (c *changes) classifyLocked(set map[string]*api.Pod, next *api.Pod) {
	old, ok := set[next.UID]
	set[next.UID] = next
	switch {
	case !ok:
		c.add = append(c.add, next)
	case podsDifferSemantically(old, next):
		if next.DeletionTimestamp != nil {
			c.del = append(c.del, next)
		} else {
			c.update = append(c.update, next)
		}
	case !jsonEqual(old.Status, next.Status):
		c.reconcile = append(c.reconcile, next)
	}
}

func (c *changes) empty() bool {
	return len(c.remove)+len(c.add)+len(c.update)+len(c.del)+len(c.reconcile) == 0
}

// errUnknownSource is returned for a source the Merger was not configured
// with.
var errUnknownSource = errors.New("unknown pod source")

func (m *Merger) setLocked(source string) (map[string]*api.Pod, error) {
	set, ok := m.pods[source]
	if !ok || source == SourceCheckpoint {
		return nil, fmt.Errorf("%w %q", errUnknownSource, source)
	}
	return set, nil
}

// Set replaces the state of source with pods and marks source seen. Pods
// without a UID are ignored.
func (m *Merger) Set(ctx context.Context, source string, pods []*api.Pod) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	set, err := m.setLocked(source)
	if err != nil {
		return err
	}
	var c changes
	next := make(map[string]*api.Pod, len(pods))
	for _, p := range pods {
		if p == nil || p.UID == "" {
			continue
		}
		cp := CopyPod(p)
		next[p.UID] = cp
		c.classifyLocked(set, cp)
	}
	for uid, p := range set {
		if _, ok := next[uid]; !ok {
			c.remove = append(c.remove, p)
			delete(set, uid)
		}
	}
	m.markSeen(source)
	return m.emitLocked(ctx, source, &c)
}

// Upsert adds pods to source or replaces the ones it holds.
func (m *Merger) Upsert(ctx context.Context, source string, pods ...*api.Pod) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	set, err := m.setLocked(source)
	if err != nil {
		return err
	}
	var c changes
	for _, p := range pods {
		if p == nil || p.UID == "" {
			continue
		}
		c.classifyLocked(set, CopyPod(p))
	}
	return m.emitLocked(ctx, source, &c)
}

// Remove takes pods out of source; those it held are sent as REMOVE.
func (m *Merger) Remove(ctx context.Context, source string, pods ...*api.Pod) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	set, err := m.setLocked(source)
	if err != nil {
		return err
	}
	var c changes
	for _, p := range pods {
		if p == nil {
			continue
		}
		if old, ok := set[p.UID]; ok {
			c.remove = append(c.remove, old)
			delete(set, p.UID)
		}
	}
	return m.emitLocked(ctx, source, &c)
}

// Restore adds pods from the local checkpoint to the API source and sends
// them as one RESTORE update from SourceCheckpoint. It does nothing once
// the API source has delivered a state (the server is then the truth),
// and skips pods the API source already holds. When the API source later
// delivers its first state, restored pods it still has produce no update
// (or UPDATE/RECONCILE if they changed) and the others REMOVE.
func (m *Merger) Restore(ctx context.Context, pods []*api.Pod) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.seenMu.Lock()
	apiSeen := m.seen[SourceAPI]
	m.seenMu.Unlock()
	if apiSeen {
		return nil
	}
	set := m.pods[SourceAPI]
	var restored []*api.Pod
	for _, p := range pods {
		if p == nil || p.UID == "" {
			continue
		}
		if _, ok := set[p.UID]; ok {
			continue
		}
		cp := CopyPod(p)
		set[p.UID] = cp
		restored = append(restored, cp)
	}
	if len(restored) == 0 {
		return nil
	}
	return m.send(ctx, PodUpdate{Op: RESTORE, Source: SourceCheckpoint, Pods: copyPods(restored)})
}

// emitLocked checkpoints the API source if it changed, then sends c's
// updates: REMOVE, ADD, UPDATE, DELETE, RECONCILE.
func (m *Merger) emitLocked(ctx context.Context, source string, c *changes) error {
	if c.empty() {
		return nil
	}
	if source == SourceAPI && m.checkpoint != nil {
		// Save keeps nothing it is given, so the stored pods may be lent.
		set := m.pods[SourceAPI]
		pods := make([]*api.Pod, 0, len(set))
		for _, p := range set {
			pods = append(pods, p)
		}
		sortPods(pods)
		m.checkpoint.Save(pods)
	}
	for _, u := range []struct {
		op   Op
		pods []*api.Pod
	}{{REMOVE, c.remove}, {ADD, c.add}, {UPDATE, c.update}, {DELETE, c.del}, {RECONCILE, c.reconcile}} {
		if len(u.pods) == 0 {
			continue
		}
		sortPods(u.pods)
		if err := m.send(ctx, PodUpdate{Op: u.op, Source: source, Pods: copyPods(u.pods)}); err != nil {
			return err
		}
	}
	return nil
}

func (m *Merger) send(ctx context.Context, u PodUpdate) error {
	select {
	case m.updates <- u:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("send %s update from %s: %w", u.Op, u.Source, ctx.Err())
	}
}
