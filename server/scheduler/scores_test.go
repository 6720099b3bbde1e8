package scheduler

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/skiffhq/skiff/api"
	st "github.com/skiffhq/skiff/server/scheduler/schedtest"
)

func TestScoresRaw(t *testing.T) {
	env := &scoreEnv{scoring: LeastAllocated, totalNodes: 2, imageNodes: map[string]int{"registry.local/big:1": 1}}
	most := &scoreEnv{scoring: MostAllocated, totalNodes: 2}
	half := st.Node("n", "4", "8Gi")
	tests := []struct {
		name  string
		score func(*PodInfo, *NodeInfo, *scoreEnv) int64
		env   *scoreEnv
		pod   *api.Pod
		node  *api.Node
		on    []*api.Pod
		want  int64
	}{
		{"least allocated empty node", scoreResources, env, st.Pod("p", "2", "4Gi"), half, nil, 50},
		{"least allocated busy node", scoreResources, env, st.Pod("p", "1", "2Gi"), half, []*api.Pod{st.Pod("o", "2", "4Gi")}, 25},
		{"most allocated busy node", scoreResources, most, st.Pod("p", "1", "2Gi"), half, []*api.Pod{st.Pod("o", "2", "4Gi")}, 75},
		{"best effort counts defaults", scoreResources, env, st.Pod("p", "", ""), st.Node("n", "1", "2Gi"), nil, (90 + 91) / 2},
		{"balanced equal", scoreBalanced, env, st.Pod("p", "2", "4Gi"), half, nil, 100},
		{"balanced skewed", scoreBalanced, env, st.Pod("p", "4", "0"), half, nil, 50},
		{"preferred affinity", scorePreferredAffinity, env,
			st.Pod("p", "", "", st.Preferred(10, "zone", "In", "a"), st.Preferred(5, "disk", "Exists")),
			st.Node("n", "1", "1Gi", st.Labels("zone", "a")), nil, 10},
		{"prefer no schedule counted", scorePreferNoSchedule, env, st.Pod("p", "", "", st.Tolerate("b", "Exists", "", "")),
			st.Node("n", "1", "1Gi", st.Taint("a", "", "PreferNoSchedule"), st.Taint("b", "", "PreferNoSchedule"), st.Taint("c", "", "NoSchedule")), nil, 1},
		{"owner spread", scoreOwnerSpread, env, st.Pod("p", "", "", st.Owner("rs1")), half,
			[]*api.Pod{st.Pod("o1", "", "", st.Owner("rs1")), st.Pod("o2", "", "", st.Owner("rs1")), st.Pod("o3", "", "", st.Owner("rs2"))}, 2},
		{"image present on half the nodes", scoreImages, env, st.Pod("p", "", "", st.Image("registry.local/big:1")),
			st.Node("n", "1", "1Gi", st.Images(1000<<20, "registry.local/big:1")), nil, (500<<20 - imageMinBytes) * 100 / (imageMaxBytes - imageMinBytes)},
		{"small image earns nothing", scoreImages, env, st.Pod("p", "", "", st.Image("registry.local/big:1")),
			st.Node("n", "1", "1Gi", st.Images(10<<20, "registry.local/big:1")), nil, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, p := range tc.on {
				p.Spec.NodeName = tc.node.Name
			}
			snap := NewSnapshot([]*api.Node{tc.node}, tc.on)
			if got := tc.score(NewPodInfo(tc.pod), snap.Nodes[0], tc.env); got != tc.want {
				t.Errorf("score(%s) = %d; want %d", tc.pod.Name, got, tc.want)
			}
		})
	}
}

func TestNormalize(t *testing.T) {
	tests := []struct {
		name string
		fn   func([]int64)
		in   []int64
		want []int64
	}{
		{"up", normalizeUp, []int64{0, 5, 10}, []int64{0, 50, 100}},
		{"up all zero", normalizeUp, []int64{0, 0}, []int64{0, 0}},
		{"down", normalizeDown, []int64{0, 1, 4}, []int64{100, 75, 0}},
		{"down all zero", normalizeDown, []int64{0, 0}, []int64{100, 100}},
	}
	for _, tc := range tests {
		got := slices.Clone(tc.in)
		tc.fn(got)
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s(%v) = %v; want %v", tc.name, tc.in, got, tc.want)
		}
	}
}

// pickByColumns is pick as the column-wise definition reads: normalise
// each scorer's column with normalizeUp/normalizeDown, weigh, sum, then
// break ties by reservoir sampling seeded from the pod.
func pickByColumns(pi *PodInfo, all []found) *NodeInfo {
	total := make([]int64, len(all))
	col := make([]int64, len(all))
	for p := range Scorers {
		for i := range all {
			col[i] = all[i].raw[p]
		}
		switch Scorers[p].Normalize {
		case NormalizeUp:
			normalizeUp(col)
		case NormalizeDown:
			normalizeDown(col)
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

// TestPickMatchesColumnNormalization checks pick's one-pass arithmetic
// against the column-wise definition, ties included.
func TestPickMatchesColumnNormalization(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var sc scratch
	for trial := range 2000 {
		all := make([]found, 1+rng.IntN(40))
		scale := []int64{1, 1, 700}[trial%3] // large rates are divided, small ones looked up
		for i := range all {
			all[i].ni = &NodeInfo{Name: fmt.Sprint("n", i)}
			for p := range all[i].raw {
				all[i].raw[p] = int64(rng.IntN(4)) * int64(1+rng.IntN(3)) * scale // small values: many ties and zero columns
			}
		}
		pi := NewPodInfo(st.Pod(fmt.Sprint("p", trial), "1", "1Gi"))
		if got, want := sc.pick(pi, all), pickByColumns(pi, all); got != want {
			t.Fatalf("trial %d: pick = %s; column-wise = %s", trial, got.Name, want.Name)
		}
	}
}
