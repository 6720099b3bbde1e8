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
	// At least 100 feasible nodes are always sought.
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
	// pods spread their search over the cluster.
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
func (a *Algorithm) Schedule(snap Snapshot, pi *PodInfo, start int) (Decision, []*NodeInfo, error) {
	nodes := snap.Nodes
	n := len(nodes)
	if n == 0 {
		return Decision{}, nil, &FitError{Pod: pi.Key}
	}
	s := &search{pi: pi, nodes: nodes, start: start % n, want: a.numToFind(n)}
	s.env = scoreEnv{scoring: a.Scoring, imageNodes: snap.imageNodes, totalNodes: n}
	workers := a.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	chunk := max(16, min(256, n/(workers*8)))
	workers = min(workers, (n+chunk-1)/chunk)
	outs := make([]workerOut, workers)
	for i := range outs {
		outs[i].found = make([]found, 0, min(n, s.want/workers+chunk))
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
	all := outs[0].found
	for i := 1; i < len(outs); i++ {
		all = append(all, outs[i].found...)
	}
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
	slices.SortFunc(all, func(x, y found) int { return x.pos - y.pos })
	if len(all) > s.want {
		all = all[:s.want]
		evaluated = all[len(all)-1].pos + 1
	}
	d := Decision{Evaluated: evaluated, Feasible: len(all), Next: (s.start + evaluated) % n}
	d.Node = pick(pi, all).Name
	return d, nil, nil
}

// pick normalises and weighs the scores and returns the best node; ties
// are broken by reservoir sampling with a generator seeded from the pod's
// UID, so the same pod on the same cluster state lands on the same node.
func pick(pi *PodInfo, all []found) *NodeInfo {
	if len(all) == 1 {
		return all[0].ni
	}
	total := make([]int64, len(all))
	col := make([]int64, len(all))
	for p := range Scorers {
		for i := range all {
			col[i] = all[i].raw[p]
		}
		if Scorers[p].Normalize != nil {
			Scorers[p].Normalize(col)
		}
		for i := range all {
			total[i] += col[i] * Scorers[p].Weight
		}
	}
	var rng *rand.Rand
	best, ties := 0, 1
	for i := 1; i < len(all); i++ {
		switch {
		case total[i] > total[best]:
			best, ties = i, 1
		case total[i] == total[best]:
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
