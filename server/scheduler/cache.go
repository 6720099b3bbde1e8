package scheduler

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/skiffhq/skiff/api"
)

// podState says where the Cache has a pod.
type podState uint8

const (
	podBound    podState = iota + 1 // confirmed by the watch
	podAssumed                      // decided, bind in flight
	podAwaiting                     // bind committed, watch confirmation pending
)

func (s podState) String() string {
	switch s {
	case podBound:
		return "bound"
	case podAssumed:
		return "assumed"
	case podAwaiting:
		return "awaiting confirmation"
	}
	return "unknown"
}

type cachedPod struct {
	info     *PodInfo
	node     string
	state    podState
	deadline time.Time // podAwaiting: expires then
}

// ErrAlreadyCached means AssumePod found the pod already in the Cache.
var ErrAlreadyCached = errors.New("scheduler: pod already in cache")

// Cache holds every node and every pod bound or assumed on one. It is not
// safe for concurrent use: the scheduling loop owns it. Pods move through
// assumed (AssumePod) → awaiting (FinishBinding) → bound (AddPod, when the
// watch shows the binding); ForgetPod undoes an assumption whose bind
// failed, and Expire drops assumptions never confirmed within the TTL.
type Cache struct {
	ttl   time.Duration
	nodes map[string]*NodeInfo
	pods  map[string]*cachedPod
	// imageNodes counts the nodes that hold each image (for image
	// locality's spread factor).
	imageNodes map[string]int
	imageGen   uint64 // changes with imageNodes
	// owners counts, per controller owner UID, the owner's pods on each
	// node (for OwnerSpread without visiting every node).
	owners  map[string]map[*NodeInfo]int32
	list    []*NodeInfo // nodes with a Node object, by name
	dirty   bool        // list must be rebuilt
	listGen uint64      // counts list rebuilds
	gens    uint64      // last node generation handed out
	classes *classCache
	// spread keeps topology spread counts (spread.go).
	spread map[spreadKey]*spreadIndex
}

// NewCache returns an empty Cache whose assumed pods expire ttl after
// their bind finished.
func NewCache(ttl time.Duration) *Cache {
	return &Cache{
		ttl:        ttl,
		nodes:      make(map[string]*NodeInfo),
		pods:       make(map[string]*cachedPod),
		imageNodes: make(map[string]int),
		imageGen:   1,
		owners:     make(map[string]map[*NodeInfo]int32),
		classes:    newClassCache(),
		spread:     make(map[spreadKey]*spreadIndex),
	}
}

// touch gives ni a new generation: its static state changed, so class
// entries computed on it are stale.
func (c *Cache) touch(ni *NodeInfo) {
	c.gens++
	ni.gen = c.gens
	if ni.usage == 0 {
		ni.usage = c.gens
	}
}

// SetStale marks the node's heartbeats as stopped (or resumed).
func (c *Cache) SetStale(ni *NodeInfo, stale bool) {
	if ni.Stale != stale {
		ni.Stale = stale
		c.touch(ni)
	}
}

// SetNode adds or updates a node.
func (c *Cache) SetNode(n *api.Node) {
	ni, ok := c.nodes[n.Name]
	if !ok {
		ni = newNodeInfo(n.Name)
		c.nodes[n.Name] = ni
	}
	if ni.Node == nil {
		c.dirty = true
		clear(c.spread) // a new domain, or pods that now count
	}
	c.countImages(ni, -1)
	old := ni.Labels
	ni.setNode(n)
	c.spreadLabels(old, ni.Labels)
	c.countImages(ni, 1)
	c.touch(ni)
}

func (c *Cache) countImages(ni *NodeInfo, d int) {
	if len(ni.Images) > 0 {
		c.imageGen++
	}
	for name := range ni.Images {
		if c.imageNodes[name] += d; c.imageNodes[name] <= 0 {
			delete(c.imageNodes, name)
		}
	}
}

// RemoveNode removes a node. Pods still on it are kept (they still count
// should the node come back) until they are deleted.
func (c *Cache) RemoveNode(name string) {
	ni, ok := c.nodes[name]
	if !ok {
		return
	}
	c.countImages(ni, -1)
	ni.Node, ni.Images = nil, nil
	c.dirty = true
	clear(c.spread)
	if len(ni.Pods) == 0 {
		delete(c.nodes, name)
	}
}

// Node returns the named node, or nil.
func (c *Cache) Node(name string) *NodeInfo {
	if ni := c.nodes[name]; ni != nil && ni.Node != nil {
		return ni
	}
	return nil
}

// NodeNames returns the names of the nodes with a Node object.
func (c *Cache) NodeNames() []string {
	var out []string
	for _, ni := range c.Snapshot().Nodes {
		out = append(out, ni.Name)
	}
	return out
}

func (c *Cache) nodeFor(name string) *NodeInfo {
	ni, ok := c.nodes[name]
	if !ok {
		ni = newNodeInfo(name)
		c.nodes[name] = ni
	}
	return ni
}

func (c *Cache) place(cp *cachedPod) {
	c.pods[cp.info.Key] = cp
	ni := c.nodeFor(cp.node)
	ni.addPod(cp.info)
	c.spreadPlaced(cp.info, ni, 1)
	c.gens++
	ni.usage = c.gens
	if uid := cp.info.OwnerUID; uid != "" {
		on := c.owners[uid]
		if on == nil {
			on = make(map[*NodeInfo]int32)
			c.owners[uid] = on
		}
		on[ni]++
	}
}

func (c *Cache) unplace(cp *cachedPod) {
	delete(c.pods, cp.info.Key)
	ni, ok := c.nodes[cp.node]
	if !ok {
		return
	}
	if _, on := ni.Pods[cp.info.Key]; on {
		c.spreadPlaced(cp.info, ni, -1)
		if uid := cp.info.OwnerUID; uid != "" {
			if on := c.owners[uid]; on != nil {
				if on[ni]--; on[ni] <= 0 {
					delete(on, ni)
				}
				if len(on) == 0 {
					delete(c.owners, uid)
				}
			}
		}
	}
	ni.removePod(cp.info)
	c.gens++
	ni.usage = c.gens
	if ni.Node == nil && len(ni.Pods) == 0 {
		delete(c.nodes, cp.node)
	}
}

// AssumePod accounts pi on node before its binding is written.
func (c *Cache) AssumePod(pi *PodInfo, node string) error {
	if _, ok := c.pods[pi.Key]; ok {
		return fmt.Errorf("assume %s: %w", pi.Key, ErrAlreadyCached)
	}
	c.place(&cachedPod{info: pi, node: node, state: podAssumed})
	return nil
}

// FinishBinding starts the expiry clock of an assumed pod whose binding
// was committed at now.
func (c *Cache) FinishBinding(key string, now time.Time) {
	if cp, ok := c.pods[key]; ok && cp.state == podAssumed {
		cp.state = podAwaiting
		cp.deadline = now.Add(c.ttl)
	}
}

// ForgetPod removes an assumed pod (its binding failed). Bound pods are
// left alone.
func (c *Cache) ForgetPod(key string) {
	if cp, ok := c.pods[key]; ok && cp.state != podBound {
		c.unplace(cp)
	}
}

// IsAssumed reports whether key is assumed and not yet confirmed.
func (c *Cache) IsAssumed(key string) bool {
	cp, ok := c.pods[key]
	return ok && cp.state != podBound
}

// PodNode returns the node the pod is on (bound or assumed).
func (c *Cache) PodNode(key string) (string, bool) {
	cp, ok := c.pods[key]
	if !ok {
		return "", false
	}
	return cp.node, true
}

// AddPod records a pod the watch shows bound to pi.Pod.Spec.NodeName,
// confirming an assumption (moving it when the node differs) or
// replacing the previous state of the pod.
func (c *Cache) AddPod(pi *PodInfo) {
	if cp, ok := c.pods[pi.Key]; ok {
		c.unplace(cp)
	}
	c.place(&cachedPod{info: pi, node: pi.Pod.Spec.NodeName, state: podBound})
}

// RemovePod removes a pod, bound or assumed. It reports whether the pod
// was in the cache.
func (c *Cache) RemovePod(key string) bool {
	cp, ok := c.pods[key]
	if ok {
		c.unplace(cp)
	}
	return ok
}

// Expire removes the pods whose binding finished more than the TTL before
// now without the watch confirming it, and returns their keys.
func (c *Cache) Expire(now time.Time) []string {
	var out []string
	for key, cp := range c.pods {
		if cp.state == podAwaiting && !now.Before(cp.deadline) {
			c.unplace(cp)
			out = append(out, key)
		}
	}
	slices.Sort(out)
	return out
}

// PodKeys returns the keys of every cached pod, sorted.
func (c *Cache) PodKeys() []string {
	out := make([]string, 0, len(c.pods))
	for k := range c.pods {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// Snapshot is the node list a scheduling cycle works on: the Cache's
// nodes that have a Node object, by name, plus image spread counts. It
// shares the Cache's NodeInfos and is valid until the Cache next changes;
// the loop owning the Cache guarantees that during a cycle.
type Snapshot struct {
	Nodes      []*NodeInfo
	imageNodes map[string]int
	imageGen   uint64
	// classes caches static results per equivalence class for this
	// node list (listGen); nil disables it.
	classes *classCache
	listGen uint64
	owners  map[string]map[*NodeInfo]int32
	// cache keeps the topology spread counts; nil counts afresh.
	cache *Cache
}

// Snapshot returns the current Snapshot.
func (c *Cache) Snapshot() Snapshot {
	if c.dirty {
		c.list = c.list[:0]
		for _, ni := range c.nodes {
			if ni.Node != nil {
				c.list = append(c.list, ni)
			}
		}
		slices.SortFunc(c.list, func(a, b *NodeInfo) int { return strings.Compare(a.Name, b.Name) })
		for i, ni := range c.list {
			ni.idx = i
		}
		c.dirty = false
		c.listGen++
	}
	return Snapshot{Nodes: c.list, imageNodes: c.imageNodes, imageGen: c.imageGen, classes: c.classes, listGen: c.listGen, owners: c.owners, cache: c}
}

// NewSnapshot builds a Snapshot of nodes and the pods bound on them, for
// tests and for replaying a decision outside the scheduler.
func NewSnapshot(nodes []*api.Node, pods []*api.Pod) Snapshot {
	c := NewCache(time.Minute)
	for _, n := range nodes {
		c.SetNode(n)
	}
	for _, p := range pods {
		if p.Spec.NodeName != "" {
			c.AddPod(NewPodInfo(p))
		}
	}
	return c.Snapshot()
}
