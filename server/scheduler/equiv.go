package scheduler

import (
	"encoding/json"
	"sync"

	"github.com/skiffhq/skiff/api"
)

// Equivalence classes.
//
// Pods with the same scheduling requirements — nodeName, tolerations,
// nodeSelector, node affinity and QoS (best effort or not) — get the
// same answer from every filter and score marked Static on a given node:
// those read only the node's own state (labels, taints, conditions,
// unschedulable, liveness), never the pods on it. A ReplicaSet's 50
// replicas, or any other pods sharing a template, are one class. The
// Cache keeps, per class and per node, the static filters' verdict and
// the static scores' raw values, stamped with the node's generation; a
// search reuses an entry while the node's generation is unchanged and
// recomputes it otherwise, so a node update invalidates exactly that
// node's entries. The filters and scores that read the pods on a node
// (ports, resources, resource and owner-spread scores) and image
// locality (which reads cluster-wide image counts) run on every search.
//
// The outcome is identical to running every filter and score: the cached
// values are the same functions of the same inputs. Only a search that
// finds no feasible node is run again without the cache, to collect the
// rejection reasons and preemption candidates it does not keep.

// maxClasses bounds the classes kept; the least recently used goes first.
// An entry costs ~32 bytes per node (160 KB per class at 5 000 nodes).
const maxClasses = 64

// maxStaticScores bounds the scorers marked Static (the entry's array).
const maxStaticScores = 2

var (
	// numStaticFilters is how many leading Filters are Static: those
	// are cached. A Static filter after a non-Static one is not.
	numStaticFilters int
	// staticScorers are the indices of the Static Scorers.
	staticScorers []int
)

func init() {
	for numStaticFilters < len(Filters) && Filters[numStaticFilters].Static {
		numStaticFilters++
	}
	for i := range Scorers {
		if Scorers[i].Static {
			staticScorers = append(staticScorers, i)
		}
	}
	if len(staticScorers) > maxStaticScores {
		panic("scheduler: more Static scorers than maxStaticScores")
	}
	if Scorers[ownerSpreadScorer].Name != "OwnerSpread" {
		panic("scheduler: ownerSpreadScorer is not OwnerSpread's index")
	}
}

// classCache holds the classes of one Cache. Its lock guards the map;
// each class has its own lock, held by the search using it.
type classCache struct {
	mu      sync.Mutex
	classes map[string]*class
	tick    uint64
}

// class is one equivalence class's per-node results.
type class struct {
	mu      sync.Mutex
	used    uint64 // classCache.tick when last taken
	listGen uint64 // the node list entries is indexed by
	entries []classEntry
}

// classEntry is a class's result on the node at one position of the
// Snapshot's node list.
type classEntry struct {
	gen uint64 // the node's generation when computed; 0: never
	ok  bool   // every static filter passed
	raw [maxStaticScores]int64
}

func newClassCache() *classCache {
	return &classCache{classes: make(map[string]*class)}
}

// take returns the locked class for key, its entries sized for a node
// list of n nodes at generation listGen. The caller unlocks it.
func (cc *classCache) take(key string, n int, listGen uint64) *class {
	cc.mu.Lock()
	cc.tick++
	c := cc.classes[key]
	if c == nil {
		if len(cc.classes) >= maxClasses {
			cc.evictLocked()
		}
		c = &class{}
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

// evictLocked drops the least recently used class.
func (cc *classCache) evictLocked() {
	var oldest string
	var at uint64
	first := true
	for k, c := range cc.classes {
		if first || c.used < at {
			oldest, at, first = k, c.used, false
		}
	}
	delete(cc.classes, oldest)
}

// fill computes e for pi (any pod of the class) on ni.
func (e *classEntry) fill(pi *PodInfo, ni *NodeInfo) {
	var buf [4]Reason
	rs := buf[:0]
	for i := range numStaticFilters {
		if rs = Filters[i].Check(pi, ni, rs); len(rs) > 0 {
			break
		}
	}
	e.ok = len(rs) == 0
	e.raw = [maxStaticScores]int64{}
	if e.ok {
		for k, i := range staticScorers {
			e.raw[k] = Scorers[i].Raw(pi, ni, &scoreEnv{})
		}
	}
	e.gen = ni.gen
}

// classKey returns the equivalence class of p: the inputs of the Static
// filters and scores. "" means p is not cached (its requirements could
// not be encoded).
func classKey(p *api.Pod, bestEffort bool) string {
	s := &p.Spec
	var na *api.NodeAffinity
	if s.Affinity != nil {
		na = s.Affinity.NodeAffinity
	}
	if s.NodeName == "" && len(s.Tolerations) == 0 && len(s.NodeSelector) == 0 && na == nil {
		if bestEffort {
			return "plain,best-effort"
		}
		return "plain"
	}
	b, err := json.Marshal(struct {
		NodeName     string            `json:"n,omitempty"`
		BestEffort   bool              `json:"b,omitempty"`
		Tolerations  []api.Toleration  `json:"t,omitempty"`
		NodeSelector map[string]string `json:"s,omitempty"`
		Affinity     *api.NodeAffinity `json:"a,omitempty"`
	}{s.NodeName, bestEffort, s.Tolerations, s.NodeSelector, na})
	if err != nil {
		return ""
	}
	return string(b)
}
