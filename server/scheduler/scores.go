package scheduler

import "github.com/skiffhq/skiff/api"

// MaxNodeScore is the highest score a plugin gives a node after
// normalisation.
const MaxNodeScore = 100

// Scoring selects how the resource score ranks nodes.
type Scoring string

// Scoring strategies.
const (
	// LeastAllocated prefers the emptiest nodes (spreads load); the default.
	LeastAllocated Scoring = "LeastAllocated"
	// MostAllocated prefers the fullest nodes that still fit (bin-packs,
	// so fleets that consolidate can power idle nodes down).
	MostAllocated Scoring = "MostAllocated"
)

// Image locality bounds, as kube-scheduler: images smaller than the
// minimum earn nothing, and the score saturates at the maximum per
// container.
const (
	imageMinBytes = 23 << 20
	imageMaxBytes = 1000 << 20
)

// scoreEnv is what raw scores read besides the pod and the node.
type scoreEnv struct {
	scoring    Scoring
	imageNodes map[string]int
	totalNodes int
	// sparseOwners: OwnerSpread is filled in after the search from the
	// Snapshot's per-owner counts (scratch.ownerSpread), not per node.
	sparseOwners bool
	// spread are the pod's topology spread constraints this cycle.
	spread []spreadState
}

// Normalization maps the raw rates of all feasible nodes onto
// 0–MaxNodeScore.
type Normalization uint8

// Normalizations.
const (
	NormalizeNone Normalization = iota // Raw already rates 0–MaxNodeScore
	NormalizeUp                        // normalizeUp: the highest raw rate gets MaxNodeScore
	NormalizeDown                      // normalizeDown: the lowest raw rate gets MaxNodeScore
)

// Scorer is one scoring plugin: Raw rates a feasible node; Normalize says
// how the rates of all feasible nodes are mapped onto 0–MaxNodeScore. The
// total is the weighted sum.
type Scorer struct {
	Name      string
	Weight    int64
	Raw       func(pi *PodInfo, ni *NodeInfo, env *scoreEnv) int64
	Normalize Normalization
	// Static scorers read what Static filters may (see Filter) and not
	// env: their raw values are cached per equivalence class.
	Static bool
}

// numScorers is len(Scorers), as a constant for fixed-size arrays.
const numScorers = 7

// Indices in Scorers of the scorers the equivalence cache treats
// specially (equiv.go).
const (
	ownerSpreadScorer   = 4
	imageLocalityScorer = 5
	spreadScorer        = 6
)

// Scorers are the scoring plugins with kube-scheduler's default weights.
var Scorers = [numScorers]Scorer{
	{"NodeResourcesFit", 1, scoreResources, NormalizeNone, false},
	{"NodeResourcesBalancedAllocation", 1, scoreBalanced, NormalizeNone, false},
	{"NodeAffinity", 2, scorePreferredAffinity, NormalizeUp, true},
	{"TaintToleration", 3, scorePreferNoSchedule, NormalizeDown, true},
	{"OwnerSpread", 2, scoreOwnerSpread, NormalizeDown, false},
	{"ImageLocality", 1, scoreImages, NormalizeNone, false},
	{"PodTopologySpread", 2, scoreSpread, NormalizeDown, false},
}

// fraction returns requested/allocatable on the 0–MaxNodeScore scale for
// the pod on the node, or -1 when it does not fit or nothing is offered.
func fraction(requested, podReq, alloc int64) int64 {
	req := requested + podReq
	if alloc <= 0 || req > alloc {
		return -1
	}
	return req * MaxNodeScore / alloc
}

// scoreResources is least- or most-allocated over cpu and memory (equal
// weights), on the pod's NonZero requests.
func scoreResources(pi *PodInfo, ni *NodeInfo, env *scoreEnv) int64 {
	var sum int64
	for _, f := range [2]int64{
		fraction(ni.NonZero.MilliCPU, pi.NonZero.MilliCPU, ni.Allocatable.MilliCPU),
		fraction(ni.NonZero.Memory, pi.NonZero.Memory, ni.Allocatable.Memory),
	} {
		switch {
		case f < 0:
			// contributes 0 either way
		case env.scoring == MostAllocated:
			sum += f
		default:
			sum += MaxNodeScore - f
		}
	}
	return sum / 2
}

// scoreBalanced prefers nodes whose cpu and memory would be used in equal
// proportion: 100 × (1 − the standard deviation of the two fractions).
func scoreBalanced(pi *PodInfo, ni *NodeInfo, _ *scoreEnv) int64 {
	cpu := fractionMilli(ni.NonZero.MilliCPU+pi.NonZero.MilliCPU, ni.Allocatable.MilliCPU)
	mem := fractionMilli(ni.NonZero.Memory+pi.NonZero.Memory, ni.Allocatable.Memory)
	d := cpu - mem
	if d < 0 {
		d = -d
	}
	// std of two values is |a-b|/2; fractions are in thousandths.
	return (1000 - d/2) * MaxNodeScore / 1000
}

// fractionMilli is req/alloc in thousandths, capped at 1000.
func fractionMilli(req, alloc int64) int64 {
	if alloc <= 0 || req >= alloc {
		return 1000
	}
	return req * 1000 / alloc
}

func scorePreferredAffinity(pi *PodInfo, ni *NodeInfo, _ *scoreEnv) int64 {
	var sum int64
	for i := range pi.preferred {
		if pi.preferred[i].term.matches(ni) {
			sum += pi.preferred[i].weight
		}
	}
	return sum
}

// scorePreferNoSchedule counts the PreferNoSchedule taints pi does not
// tolerate (lower is better).
func scorePreferNoSchedule(pi *PodInfo, ni *NodeInfo, _ *scoreEnv) int64 {
	var n int64
	for i := range ni.Taints {
		t := &ni.Taints[i]
		if t.Effect == api.TaintEffectPreferNoSchedule && !tolerates(pi.Pod.Spec.Tolerations, t) {
			n++
		}
	}
	return n
}

// scoreOwnerSpread counts the pods of pi's controller already on the node
// (lower is better).
func scoreOwnerSpread(pi *PodInfo, ni *NodeInfo, env *scoreEnv) int64 {
	if pi.OwnerUID == "" || env.sparseOwners {
		return 0
	}
	return int64(ni.owners[pi.OwnerUID])
}

// scoreImages rates the bytes of pi's images already on the node, each
// scaled by the share of nodes holding it (so a rare image does not pull
// every replica onto one node), between the minimum and maximum bounds.
func scoreImages(pi *PodInfo, ni *NodeInfo, env *scoreEnv) int64 {
	if len(pi.Images) == 0 || len(ni.Images) == 0 || env.totalNodes == 0 {
		return 0
	}
	var sum int64
	for _, img := range pi.Images {
		if size, ok := ni.Images[img]; ok {
			sum += size * int64(env.imageNodes[img]) / int64(env.totalNodes)
		}
	}
	hi := int64(imageMaxBytes) * int64(len(pi.Images))
	switch {
	case sum < imageMinBytes:
		return 0
	case sum > hi:
		return MaxNodeScore
	}
	return (sum - imageMinBytes) * MaxNodeScore / (hi - imageMinBytes)
}

// normalized returns raw normalised by n, hi being the highest raw rate
// among the feasible nodes (at least 0): the per-value form of
// normalizeUp and normalizeDown, which pick applies in one pass.
func (n Normalization) normalized(raw, hi int64) int64 {
	switch {
	case n == NormalizeUp && hi != 0:
		return raw * MaxNodeScore / hi
	case n == NormalizeDown && hi == 0:
		return MaxNodeScore
	case n == NormalizeDown:
		return (hi - raw) * MaxNodeScore / hi
	}
	return raw
}

// normalizeUp scales so the highest raw score becomes MaxNodeScore.
func normalizeUp(s []int64) {
	var hi int64
	for _, v := range s {
		hi = max(hi, v)
	}
	if hi == 0 {
		return
	}
	for i := range s {
		s[i] = s[i] * MaxNodeScore / hi
	}
}

// normalizeDown scales so the lowest raw score (the best) becomes
// MaxNodeScore and the highest 0.
func normalizeDown(s []int64) {
	var hi int64
	for _, v := range s {
		hi = max(hi, v)
	}
	for i := range s {
		if hi == 0 {
			s[i] = MaxNodeScore
		} else {
			s[i] = (hi - s[i]) * MaxNodeScore / hi
		}
	}
}
