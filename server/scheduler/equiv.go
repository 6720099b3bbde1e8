package scheduler

import (
	"encoding/json"
	"strconv"
	"strings"
	"sync"

	"github.com/skiffhq/skiff/api"
)

// Equivalence classes.
//
// Pods with the same scheduling inputs — nodeName, tolerations,
// nodeSelector, node affinity, QoS (best effort or not), images,
// requests and host ports — get the same answer from every filter and
// score on a given node state. A ReplicaSet's replicas, or any pods
// sharing a template, are one class. The Cache keeps, per class and per
// node, every filter's verdict and every raw score, stamped with the
// generations of what they read:
//
//   - the node's own state (labels, taints, conditions, unschedulable,
//     liveness, allocatable: NodeInfo.gen, changed by SetNode and
//     SetStale) for the Static filters and scores;
//   - the pods on the node (requested resources, pod count, host ports:
//     NodeInfo.usage, changed by every pod placed or removed) for the
//     ports and resources filters and the resource scores;
//   - the cluster's image counts (Snapshot.imageGen) for ImageLocality.
//
// A search reuses what is still current and recomputes the rest, so a
// bind invalidates the resource results of one node and a node update
// those of that node. OwnerSpread reads the pod's owner, not its class:
// it is filled in after the search from the Cache's per-owner counts,
// visiting only the nodes that hold the owner's pods.
//
// The outcome is identical to running every filter and score (the
// cached values are the same functions of the same inputs;
// TestEquivalenceCacheMatchesFullSearch checks it under churn). Only a
// search that finds no feasible node is run again without the cache, to
// collect the rejection reasons and preemption candidates it does not
// keep.

// maxClasses bounds the classes kept; the least recently used goes
// first. An entry costs 88 bytes per node (440 KB per class at 5 000
// nodes, 28 MB for maxClasses).
const maxClasses = 64

var (
	// numStaticFilters is how many leading Filters are Static. A Static
	// filter after a non-Static one is treated as non-Static.
	numStaticFilters int
	// staticScorers[i] says Scorers[i] is Static.
	staticScorers [numScorers]bool
)

func init() {
	for numStaticFilters < len(Filters) && Filters[numStaticFilters].Static {
		numStaticFilters++
	}
	for i := range Scorers {
		staticScorers[i] = Scorers[i].Static
	}
	if Scorers[ownerSpreadScorer].Name != "OwnerSpread" || Scorers[imageLocalityScorer].Name != "ImageLocality" || Scorers[spreadScorer].Name != "PodTopologySpread" {
		panic("scheduler: ownerSpreadScorer, imageLocalityScorer or spreadScorer is not that scorer's index")
	}
}

// classCache holds the classes of one Cache. Its lock guards the maps;
// each class has its own lock, held by the search using it.
type classCache struct {
	mu      sync.Mutex
	classes map[classID]*class
	// seen holds keys met once: a class gets entries on its second pod,
	// so one-off pods (a DaemonSet's, pinned to their node) cost nothing.
	seen map[classID]struct{}
	tick uint64
}

// classID names a class's entries: results depend on the scoring
// strategy as well as on the pod.
type classID struct {
	scoring Scoring
	key     string
}

// class is one equivalence class's per-node results.
type class struct {
	mu      sync.Mutex
	used    uint64 // classCache.tick when last taken
	listGen uint64 // the node list entries is indexed by
	entries []classEntry
}

// classEntry is a class's results on the node at one position of the
// Snapshot's node list.
type classEntry struct {
	gen    uint64 // NodeInfo.gen when ok and the Static scores were computed; 0: never
	usage  uint64 // NodeInfo.usage when fit and the resource scores were
	imgGen uint64 // Snapshot.imageGen when the image score was
	ok     bool   // every Static filter passed
	fit    bool   // the other filters passed too
	raw    [numScorers]int64
}

func newClassCache() *classCache {
	return &classCache{classes: make(map[classID]*class), seen: make(map[classID]struct{})}
}

// take returns the locked class for key, its entries sized for a node
// list of n nodes at generation listGen, or nil the first time key is
// seen. The caller unlocks it.
func (cc *classCache) take(key classID, n int, listGen uint64) *class {
	cc.mu.Lock()
	cc.tick++
	c := cc.classes[key]
	if c == nil {
		if _, ok := cc.seen[key]; !ok {
			if len(cc.seen) >= 16*maxClasses {
				clear(cc.seen)
			}
			cc.seen[key] = struct{}{}
			cc.mu.Unlock()
			return nil
		}
		delete(cc.seen, key)
		c = &class{}
		if len(cc.classes) >= maxClasses {
			c.entries = cc.evictLocked().entries // reuse its memory
		}
		cc.classes[key] = c
	}
	c.used = cc.tick
	cc.mu.Unlock()
	c.mu.Lock()
	if c.listGen != listGen || len(c.entries) != n {
		if cap(c.entries) >= n {
			c.entries = c.entries[:n]
			clear(c.entries)
		} else {
			c.entries = make([]classEntry, n)
		}
		c.listGen = listGen
	}
	return c
}

// evictLocked drops and returns the least recently used class. A search
// may still hold it: its lock is taken before its memory is reused.
func (cc *classCache) evictLocked() *class {
	var oldest classID
	var old *class
	for k, c := range cc.classes {
		if old == nil || c.used < old.used {
			oldest, old = k, c
		}
	}
	delete(cc.classes, oldest)
	old.mu.Lock()
	entries := old.entries
	old.entries = nil
	old.mu.Unlock()
	return &class{entries: entries}
}

// runCached is run taking each node's results from the pod's class,
// recomputing those whose generations moved. It collects no rejection
// reasons: Schedule searches again without the cache when nothing fits.
func (s *search) runCached(chunk int, out *workerOut) {
	n := len(s.nodes)
	entries := s.cls.entries
	spread := len(s.env.spread) > 0
	var rs []Reason // scratch for the filters
	for s.nfound.Load() < int64(s.want) {
		lo := int(s.next.Add(int64(chunk))) - chunk
		if lo >= n {
			return
		}
		got := 0
		for pos := lo; pos < min(lo+chunk, n); pos++ {
			i := (s.start + pos) % n
			ni := s.nodes[i]
			if spread && spreadRejectsAt(s.env.spread, i, ni) {
				continue
			}
			e := &entries[i]
			if e.gen != ni.gen || ni.gen == 0 {
				rs = e.fillStatic(s.pi, ni, rs[:0])
			}
			if !e.ok {
				continue
			}
			if e.usage != ni.usage || ni.usage == 0 {
				rs = e.fillUsage(s.pi, ni, &s.env, rs[:0])
			}
			if !e.fit {
				continue
			}
			if e.imgGen != s.imgGen {
				e.raw[imageLocalityScorer], e.imgGen = scoreImages(s.pi, ni, &s.env), s.imgGen
			}
			f := found{pos: pos, ni: ni, raw: e.raw}
			if len(s.env.spread) > 0 {
				// Topology spread reads every node's pods: never cached.
				if rs = spreadFits(s.env.spread, ni, rs[:0]); len(rs) > 0 {
					continue
				}
				f.raw[spreadScorer] = scoreSpread(s.pi, ni, &s.env)
			}
			out.found = append(out.found, f)
			got++
		}
		s.nfound.Add(int64(got))
	}
}

// noEnv is the scoreEnv of Static scorers, which read none.
var noEnv scoreEnv

// fillStatic computes the Static filters and scores of pi's class on ni
// and marks the rest stale. rs is scratch space, returned for reuse.
func (e *classEntry) fillStatic(pi *PodInfo, ni *NodeInfo, rs []Reason) []Reason {
	for i := range numStaticFilters {
		if rs = Filters[i].Check(pi, ni, rs); len(rs) > 0 {
			break
		}
	}
	*e = classEntry{gen: ni.gen, ok: len(rs) == 0}
	if e.ok {
		for i := range Scorers {
			if staticScorers[i] {
				e.raw[i] = Scorers[i].Raw(pi, ni, &noEnv)
			}
		}
	}
	return rs
}

// fillUsage computes the other filters and the scores that read the pods
// on ni (all but the Static ones, OwnerSpread and ImageLocality). rs is
// scratch space, returned for reuse.
func (e *classEntry) fillUsage(pi *PodInfo, ni *NodeInfo, env *scoreEnv, rs []Reason) []Reason {
	rs = feasibleFrom(numStaticFilters, pi, ni, rs)
	e.usage = ni.usage
	e.fit = len(rs) == 0
	if e.fit {
		for i := range Scorers {
			if !staticScorers[i] && i != ownerSpreadScorer && i != imageLocalityScorer && i != spreadScorer {
				e.raw[i] = Scorers[i].Raw(pi, ni, env)
			}
		}
	}
	return rs
}

// classKey returns the equivalence class of pi's pod: every input of the
// filters and scores but its owner (see the comment at the top). ""
// means the pod is not cached (its requirements could not be encoded).
func classKey(pi *PodInfo) string {
	s := &pi.Pod.Spec
	var na *api.NodeAffinity
	if s.Affinity != nil {
		na = s.Affinity.NodeAffinity
	}
	var b []byte
	if s.NodeName == "" && len(s.Tolerations) == 0 && len(s.NodeSelector) == 0 && na == nil {
		b = append(b, "plain"...)
	} else {
		var err error
		b, err = json.Marshal(struct {
			NodeName     string            `json:"n,omitempty"`
			Tolerations  []api.Toleration  `json:"t,omitempty"`
			NodeSelector map[string]string `json:"s,omitempty"`
			Affinity     *api.NodeAffinity `json:"a,omitempty"`
		}{s.NodeName, s.Tolerations, s.NodeSelector, na})
		if err != nil {
			return ""
		}
	}
	// Image references contain neither '|' nor ','.
	b = append(b, '|')
	b = append(b, strings.Join(pi.Images, ",")...)
	b = append(b, '|')
	for _, v := range [...]int64{pi.Requests.MilliCPU, pi.Requests.Memory, pi.Requests.EphemeralStorage, pi.NonZero.MilliCPU, pi.NonZero.Memory} {
		b = strconv.AppendInt(b, v, 10)
		b = append(b, ',')
	}
	if pi.BestEffort {
		b = append(b, 'b')
	}
	for _, p := range pi.HostPorts {
		b = append(b, '|')
		b = append(b, p.Protocol...)
		b = append(b, '/')
		b = append(b, p.IP...)
		b = append(b, ':')
		b = strconv.AppendInt(b, int64(p.Port), 10)
	}
	return string(b)
}
