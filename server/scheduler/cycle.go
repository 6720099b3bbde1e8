package scheduler

import (
	"hash/fnv"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
)

// Node-count thresholds for percentageOfNodesToScore, as kube-scheduler.
const (
	minFeasibleNodes           = 100
	minFeasibleNodesPercentage = 5
)

// Algorithm decides where a pod goes. It is a pure function of a
// Snapshot and the pod; it is safe for concurrent use as long as the
// Snapshot does not change.
type Algorithm struct {
	// Scoring is the resource scoring strategy; "" is LeastAllocated.
	Scoring Scoring
	// Percentage of the nodes to find feasible before stopping
	// (percentageOfNodesToScore); 0 picks kube-scheduler's adaptive
	// value (50% minus 1% per 125 nodes, at least 5%), 100 checks all.
	// At least 100 feasible nodes are always sought. The search walks
	// the nodes (sorted by name) from where the previous pod's search
	// ended, keeps the first that many feasible nodes in that order and
	// scores only those; on clusters under 100 nodes every node is
	// checked.
	Percentage int
	// Workers filter and score in parallel; 0 means GOMAXPROCS.
	Workers int
}

// Decision is the outcome of Schedule.
type Decision struct {
	// Node is the chosen node.
	Node string
	// Evaluated nodes were filtered; Feasible of them passed.
	Evaluated, Feasible int
	// Next is where the next cycle should start looking, so successive
	// pods spread their search over the cluster: just past the last node
	// kept when enough were found, else where this search started.
	Next int
}

// numToFind returns how many feasible nodes to look for among n.
func (a *Algorithm) numToFind(n int) int {
	if n < minFeasibleNodes || a.Percentage >= 100 {
		return n
	}
	pct := a.Percentage
	if pct <= 0 {
		pct = max(50-n/125, minFeasibleNodesPercentage)
	}
	return min(max(n*pct/100, minFeasibleNodes), n)
}

// found is one feasible node with its raw scores.
type found struct {
	pos int // position in the search order
	ni  *NodeInfo
	raw [numScorers]int64
}

// search is the state of one parallel filter-and-score pass.
type search struct {
	pi     *PodInfo
	nodes  []*NodeInfo
	start  int
	want   int
	env    scoreEnv
	cls    *class       // the pod's equivalence class; nil: no cache
	imgGen uint64       // Snapshot.imageGen
	next   atomic.Int64 // next position to claim
	nfound atomic.Int64
}

// worker's results.
type workerOut struct {
	found   []found
	reasons map[Reason]int
	// candidates are positions rejected only for reasons preemption can
	// resolve.
	candidates []int
}

func (s *search) run(chunk int, out *workerOut) {
	if s.cls != nil {
		s.runCached(chunk, out)
		return
	}
	n := len(s.nodes)
	var rs []Reason
	for s.nfound.Load() < int64(s.want) {
		lo := int(s.next.Add(int64(chunk))) - chunk
		if lo >= n {
			return
		}
		got := 0
		for pos := lo; pos < min(lo+chunk, n); pos++ {
			ni := s.nodes[(s.start+pos)%n]
			rs = feasible(s.pi, ni, rs[:0])
			if len(rs) == 0 && len(s.env.spread) > 0 {
				rs = spreadFits(s.env.spread, ni, rs)
			}
			if len(rs) == 0 {
				f := found{pos: pos, ni: ni}
				for i := range Scorers {
					f.raw[i] = Scorers[i].Raw(s.pi, ni, &s.env)
				}
				out.found = append(out.found, f)
				got++
				continue
			}
			if out.reasons == nil {
				out.reasons = make(map[Reason]int)
			}
			resolvable := true
			for _, r := range rs {
				out.reasons[r]++
				resolvable = resolvable && r.resolvable()
			}
			if resolvable {
				out.candidates = append(out.candidates, pos)
			}
		}
		s.nfound.Add(int64(got))
	}
}

// Schedule finds the best node for pi among snap's nodes, starting the
// search at position start. When no node fits it returns a *FitError and
// the nodes preemption may consider (rejected only for resources, pod
// count or ports), in search order.
//
// When snap comes from a Cache, the static filters' and scores' results
// are reused across pods of the same equivalence class (equiv.go); the
// decision is the same as without.
func (a *Algorithm) Schedule(snap Snapshot, pi *PodInfo, start int) (Decision, []*NodeInfo, error) {
	if snap.classes != nil && pi.class != "" && len(snap.Nodes) > 0 {
		if cls := snap.classes.take(classID{a.Scoring, pi.class}, len(snap.Nodes), snap.listGen); cls != nil {
			d, cands, err := a.schedule(snap, pi, start, cls)
			cls.mu.Unlock()
			if err == nil {
				return d, cands, err
			}
			// Nothing fits: search again for the reasons and candidates.
		}
	}
	return a.schedule(snap, pi, start, nil)
}

// scratch is a search's reusable memory.
type scratch struct {
	outs    []workerOut
	all     []found
	foundAt []int32 // node index → 1 + index in all (owner spread)
	tabs    [numScorers][]int64
}

// maxNormTable bounds the raw rates pick looks up in a table.
const maxNormTable = 1024

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

func (a *Algorithm) schedule(snap Snapshot, pi *PodInfo, start int, cls *class) (Decision, []*NodeInfo, error) {
	nodes := snap.Nodes
	n := len(nodes)
	if n == 0 {
		return Decision{}, nil, &FitError{Pod: pi.Key}
	}
	s := &search{pi: pi, nodes: nodes, start: start % n, want: a.numToFind(n), cls: cls, imgGen: snap.imageGen}
	s.env = scoreEnv{scoring: a.Scoring, imageNodes: snap.imageNodes, totalNodes: n, sparseOwners: cls != nil, spread: spreadStates(snap, pi)}
	workers := a.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	chunk := max(16, min(256, n/(workers*8)))
	workers = min(workers, (n+chunk-1)/chunk)
	sc := scratchPool.Get().(*scratch)
	defer scratchPool.Put(sc)
	if cap(sc.outs) < workers {
		sc.outs = make([]workerOut, workers)
	}
	outs := sc.outs[:workers]
	for i := range outs {
		outs[i] = workerOut{found: outs[i].found[:0], candidates: outs[i].candidates[:0]}
	}
	if workers == 1 {
		s.run(chunk, &outs[0])
	} else {
		var wg sync.WaitGroup
		for w := 1; w < workers; w++ {
			wg.Go(func() { s.run(chunk, &outs[w]) })
		}
		s.run(chunk, &outs[0])
		wg.Wait()
	}
	// Claimed chunks form a prefix of the search order and each was
	// finished, so keeping the first `want` feasible nodes by position
	// makes the result independent of goroutine timing.
	sc.all = mergeFound(sc.all[:0], outs)
	all := sc.all
	evaluated := min(int(s.next.Load()), n)
	if len(all) == 0 {
		fe := &FitError{Pod: pi.Key, NumNodes: n, Reasons: make(map[Reason]int)}
		var cand []int
		for i := range outs {
			for r, c := range outs[i].reasons {
				fe.Reasons[r] += c
			}
			cand = append(cand, outs[i].candidates...)
		}
		slices.Sort(cand)
		cands := make([]*NodeInfo, len(cand))
		for i, pos := range cand {
			cands[i] = nodes[(s.start+pos)%n]
		}
		return Decision{Evaluated: evaluated, Next: s.start}, cands, fe
	}
	if len(all) >= s.want {
		// Enough found: the search ends at the last kept node, however
		// far the workers got meanwhile.
		all = all[:s.want]
		evaluated = all[len(all)-1].pos + 1
	}
	if s.env.sparseOwners {
		sc.ownerSpread(snap, pi, all)
	}
	d := Decision{Evaluated: evaluated, Feasible: len(all), Next: (s.start + evaluated) % n}
	d.Node = sc.pick(pi, all).Name
	return d, nil, nil
}

// mergeFound merges the workers' found nodes, each list in increasing
// position, into dst in increasing position.
func mergeFound(dst []found, outs []workerOut) []found {
	heads := make([]int, len(outs))
	for {
		best := -1
		for w := range outs {
			if heads[w] < len(outs[w].found) && (best < 0 || outs[w].found[heads[w]].pos < outs[best].found[heads[best]].pos) {
				best = w
			}
		}
		if best < 0 {
			return dst
		}
		// Take the whole run of best's nodes that precede every other
		// worker's next one.
		limit := int(^uint(0) >> 1)
		for w := range outs {
			if w != best && heads[w] < len(outs[w].found) {
				limit = min(limit, outs[w].found[heads[w]].pos)
			}
		}
		f := outs[best].found
		i := heads[best]
		j := i
		for j < len(f) && f[j].pos < limit {
			j++
		}
		dst = append(dst, f[i:j]...)
		heads[best] = j
	}
}

// ownerSpread fills the OwnerSpread raw score of all from the Cache's
// per-owner node counts: only the nodes already holding the owner's pods
// score above 0, so this visits those or the found nodes, whichever are
// fewer (a large owner, 10 000 replicas over 10 000 nodes, holds more
// nodes than a search keeps).
func (sc *scratch) ownerSpread(snap Snapshot, pi *PodInfo, all []found) {
	if pi.OwnerUID == "" {
		return
	}
	on := snap.owners[pi.OwnerUID]
	if len(on) == 0 {
		return
	}
	if len(all) <= len(on) {
		for i := range all {
			all[i].raw[ownerSpreadScorer] = int64(on[all[i].ni])
		}
		return
	}
	n := len(snap.Nodes)
	if len(sc.foundAt) < n {
		sc.foundAt = make([]int32, n)
	}
	for i := range all {
		sc.foundAt[all[i].ni.idx] = int32(i + 1)
	}
	for ni, c := range on {
		if ni.idx < n && snap.Nodes[ni.idx] == ni {
			if k := sc.foundAt[ni.idx]; k > 0 {
				all[k-1].raw[ownerSpreadScorer] = int64(c)
			}
		}
	}
	for i := range all {
		sc.foundAt[all[i].ni.idx] = 0
	}
}

// pick normalises and weighs the scores and returns the best node; ties
// are broken by reservoir sampling with a generator seeded from the pod's
// UID, so the same pod on the same cluster state lands on the same node.
func (sc *scratch) pick(pi *PodInfo, all []found) *NodeInfo {
	if len(all) == 1 {
		return all[0].ni
	}
	var hi [numScorers]int64
	for i := range all {
		for p := range Scorers {
			hi[p] = max(hi[p], all[i].raw[p])
		}
	}
	// Normalised, weighted values of the small raw rates (counts, sums
	// of weights) are looked up rather than divided for each node.
	var tab [numScorers][]int64
	var weight [numScorers]int64
	var norm [numScorers]Normalization
	for p := range Scorers {
		weight[p], norm[p] = Scorers[p].Weight, Scorers[p].Normalize
		if norm[p] == NormalizeNone || hi[p] > maxNormTable {
			continue
		}
		t := sc.tabs[p][:0]
		for v := range hi[p] + 1 {
			t = append(t, Scorers[p].Normalize.normalized(v, hi[p])*Scorers[p].Weight)
		}
		tab[p], sc.tabs[p] = t, t
	}
	var rng *rand.Rand
	var bestTotal int64
	best, ties := 0, 1
	for i := range all {
		var total int64
		for p, v := range all[i].raw {
			switch {
			case norm[p] == NormalizeNone:
				total += v * weight[p]
			case tab[p] != nil && v >= 0:
				total += tab[p][v]
			default:
				total += norm[p].normalized(v, hi[p]) * weight[p]
			}
		}
		switch {
		case i == 0:
			bestTotal = total
		case total > bestTotal:
			best, ties, bestTotal = i, 1, total
		case total == bestTotal:
			ties++
			if rng == nil {
				rng = rand.New(rand.NewPCG(seedOf(pi), 0))
			}
			if rng.IntN(ties) == 0 {
				best = i
			}
		}
	}
	return all[best].ni
}

// seedOf derives the tie-break seed from the pod's UID (its key when it
// has none).
func seedOf(pi *PodInfo) uint64 {
	h := fnv.New64a()
	id := pi.UID
	if id == "" {
		id = pi.Key
	}
	h.Write([]byte(id))
	return h.Sum64()
}
