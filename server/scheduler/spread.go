package scheduler

import (
	"maps"
	"slices"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/api/labels"
)

// Pod topology spread (PodTopologySpread): a constraint counts the pods
// its selector matches in the pod's namespace in each domain — each value
// the topologyKey label takes on the nodes. DoNotSchedule keeps a node
// only while its domain's count, with the pod, exceeds the smallest
// domain's by at most maxSkew, and drops nodes without the label;
// ScheduleAnyway scores the emptier domains higher.
//
// Counting every node's pods for every pod would cost O(pods) per cycle,
// 10^8 steps to place 10,000 replicas; instead the Cache keeps the counts
// per (namespace, selector, key) once asked, and place/unplace keep them
// current. A change of a node's labels or of the node list drops them.
//
// Unlike kube-scheduler, every node with the key counts (not only those
// the pod's node affinity admits), minDomains and the node
// inclusion policies are not supported, and preemption does not
// re-check the spread.

// maxSpreadIndexes bounds the counts kept; past it they are all dropped
// and rebuilt on demand.
const maxSpreadIndexes = 64

// spreadConstraint is a compiled constraint of a pod.
type spreadConstraint struct {
	maxSkew int32
	key     string
	hard    bool // DoNotSchedule
	sel     labels.Selector
	selID   string // the selector's canonical text
	self    int32  // 1 when the pod matches its own selector
}

func compileSpread(p *api.Pod) []spreadConstraint {
	var out []spreadConstraint
	for _, c := range p.Spec.TopologySpreadConstraints {
		sel, err := c.LabelSelector.AsSelector()
		if err != nil {
			sel = labels.Nothing()
		}
		sc := spreadConstraint{maxSkew: max(c.MaxSkew, 1), key: c.TopologyKey, hard: c.WhenUnsatisfiable != api.ScheduleAnyway, sel: sel, selID: sel.String()}
		if sel.IsNothing() {
			sc.selID = "\x00nothing"
		}
		if sel.Matches(labels.Set(p.Labels)) {
			sc.self = 1
		}
		out = append(out, sc)
	}
	return out
}

// spreadKey names one kept count.
type spreadKey struct{ ns, sel, key string }

// spreadIndex is the count of the matching pods per domain; every domain
// of the node list is present, with 0 when empty.
//
// The filter asks, for each node a search visits, its domain's count:
// rather than two string-keyed map lookups (the node's label, the
// domain's count) it reads the node's domain number (dom, by the node's
// position in the list the index was filled from) and that domain's
// count (byDom). The index is dropped whenever the node list or a node's
// labels change, so positions stay valid while it lives; nodes is that
// list, checked before dom is trusted.
type spreadIndex struct {
	ns, key string
	sel     labels.Selector
	counts  map[string]int32

	ids   map[string]int32 // domain → number
	byDom []int32          // number → count (as counts)
	dom   []int32          // node position → domain number, -1 without the key
	nodes []*NodeInfo
}

func (ix *spreadIndex) add(pi *PodInfo, ni *NodeInfo, d int32) {
	if pi.Pod.Namespace != ix.ns || pi.Pod.DeletionTimestamp != nil {
		return
	}
	v, ok := ni.Labels[ix.key]
	if !ok || ni.Node == nil || !ix.sel.Matches(labels.Set(pi.Pod.Labels)) {
		return
	}
	ix.counts[v] += d
	if id, ok := ix.ids[v]; ok {
		ix.byDom[id] += d
	}
}

// domainOf returns ni's domain number in ix, -1 when ni has no key, and
// ok false when ix does not know ni's position (the caller then looks
// the label up).
func (ix *spreadIndex) domainOf(ni *NodeInfo) (id int32, ok bool) {
	return ix.domainAt(ni.idx, ni)
}

// domainAt is domainOf for the node ni at position i of the list, read
// without loading ni.
func (ix *spreadIndex) domainAt(i int, ni *NodeInfo) (id int32, ok bool) {
	if i < len(ix.nodes) && ix.nodes[i] == ni {
		return ix.dom[i], true
	}
	return 0, false
}

// spreadState is one constraint during one cycle.
type spreadState struct {
	c      *spreadConstraint
	ix     *spreadIndex     // read-only during the cycle
	counts map[string]int32 // ix.counts
	min    int32            // the smallest domain's count
}

// spreadStates computes pi's constraints against snap.
func spreadStates(snap Snapshot, pi *PodInfo) []spreadState {
	if len(pi.spread) == 0 {
		return nil
	}
	out := make([]spreadState, len(pi.spread))
	for i := range pi.spread {
		c := &pi.spread[i]
		ix := snap.spreadIndex(pi.Pod.Namespace, c)
		counts := ix.counts
		st := spreadState{c: c, ix: ix, counts: counts}
		first := true
		for _, n := range counts {
			if first || n < st.min {
				st.min, first = n, false
			}
		}
		out[i] = st
	}
	return out
}

// spreadIndex returns the counts for c in namespace ns: the Cache's
// kept ones, made now if missing.
func (snap Snapshot) spreadIndex(ns string, c *spreadConstraint) *spreadIndex {
	if snap.cache == nil {
		ix := &spreadIndex{ns: ns, key: c.key, sel: c.sel, counts: map[string]int32{}}
		fillSpread(ix, snap.Nodes)
		return ix
	}
	return snap.cache.spreadIndex(ns, c)
}

// spreadIndex returns the kept counts for c in ns, counting them now if
// they are not kept.
func (c *Cache) spreadIndex(ns string, sc *spreadConstraint) *spreadIndex {
	k := spreadKey{ns: ns, sel: sc.selID, key: sc.key}
	if ix, ok := c.spread[k]; ok {
		return ix
	}
	if len(c.spread) >= maxSpreadIndexes {
		clear(c.spread)
	}
	ix := &spreadIndex{ns: ns, key: sc.key, sel: sc.sel, counts: map[string]int32{}}
	fillSpread(ix, c.Snapshot().Nodes)
	c.spread[k] = ix
	return ix
}

// fillSpread counts the pods on nodes into ix and numbers its domains.
func fillSpread(ix *spreadIndex, nodes []*NodeInfo) {
	// A copy: the Cache rebuilds its list in place.
	ix.ids, ix.nodes, ix.dom = map[string]int32{}, slices.Clone(nodes), make([]int32, len(nodes))
	for i, ni := range nodes {
		ix.dom[i] = -1
		if ni.idx != i {
			ix.nodes = nil // not a Snapshot's list: positions unknown
		}
		v, ok := ni.Labels[ix.key]
		if !ok {
			continue
		}
		id, seen := ix.ids[v]
		if !seen {
			id = int32(len(ix.byDom))
			ix.ids[v] = id
			ix.byDom = append(ix.byDom, 0)
		}
		ix.dom[i] = id
		ix.counts[v] += 0
		for _, pi := range ni.Pods {
			ix.add(pi, ni, 1)
		}
	}
	if ix.nodes == nil {
		ix.dom = nil
	}
}

// spreadPlaced keeps the counts current as pi is placed on (d = 1) or
// removed from (d = -1) ni.
func (c *Cache) spreadPlaced(pi *PodInfo, ni *NodeInfo, d int32) {
	for _, ix := range c.spread {
		ix.add(pi, ni, d)
	}
}

// spreadLabels drops the kept counts when a node's labels change.
func (c *Cache) spreadLabels(old, now labels.Set) {
	if len(c.spread) > 0 && !maps.Equal(old, now) {
		clear(c.spread)
	}
}

// spreadFits reports whether ni satisfies every DoNotSchedule constraint,
// appending the reason to out when not.
func spreadFits(states []spreadState, ni *NodeInfo, out []Reason) []Reason {
	for i := range states {
		st := &states[i]
		if !st.c.hard {
			continue
		}
		var n int32
		if id, known := st.ix.domainOf(ni); known {
			if id < 0 {
				return append(out, Reason{Code: ReasonSpreadLabel})
			}
			n = st.ix.byDom[id]
		} else {
			v, ok := ni.Labels[st.c.key]
			if !ok {
				return append(out, Reason{Code: ReasonSpreadLabel})
			}
			n = st.counts[v]
		}
		if st.skewed(n) {
			return append(out, Reason{Code: ReasonSpread})
		}
	}
	return out
}

// spreadRejectsAt is the search's pre-filter: whether ni, at position i
// of the node list, fails a DoNotSchedule constraint by its domain's count
// alone. It reads the index's arrays by position and never ni itself, so
// a search skips the nodes of the full domains (with four zones and
// maxSkew 1, one to three zones at a time through a placement) without
// loading them or their cached results. false when unsure: spreadFits
// decides.
func spreadRejectsAt(states []spreadState, i int, ni *NodeInfo) bool {
	for k := range states {
		st := &states[k]
		if !st.c.hard {
			continue
		}
		if id, known := st.ix.domainAt(i, ni); known && (id < 0 || st.skewed(st.ix.byDom[id])) {
			return true
		}
	}
	return false
}

// skewed reports whether a domain holding n matching pods would exceed
// maxSkew with the pod.
func (st *spreadState) skewed(n int32) bool { return n+st.c.self-st.min > st.c.maxSkew }

// scoreSpread is the ScheduleAnyway constraints' raw score: the matching
// pods already in the node's domains (fewer is better).
func scoreSpread(_ *PodInfo, ni *NodeInfo, env *scoreEnv) int64 {
	var n int64
	for i := range env.spread {
		st := &env.spread[i]
		if st.c.hard {
			continue
		}
		if v, ok := ni.Labels[st.c.key]; ok {
			n += int64(st.counts[v])
		}
	}
	return n
}
