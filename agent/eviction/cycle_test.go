package eviction

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/skiffhq/skiff/api"
)

func TestThresholdsMetAndMinReclaim(t *testing.T) {
	th := Threshold{Signal: SignalMemoryAvailable, Value: Value{Quantity: 100 * mi}, MinReclaim: Value{Quantity: 50 * mi}, Hard: true}
	obs := func(avail int64) observations {
		return observations{SignalMemoryAvailable: {available: avail, capacity: gi, time: t0}}
	}
	tests := []struct {
		avail      int64
		minReclaim bool
		want       bool
	}{
		{99 * mi, false, true},
		{100 * mi, false, false},
		{120 * mi, false, false},
		{120 * mi, true, true}, // met before: needs 150Mi to resolve
		{150 * mi, true, false},
	}
	for _, tc := range tests {
		got := len(thresholdsMet([]Threshold{th}, obs(tc.avail), tc.minReclaim)) == 1
		if got != tc.want {
			t.Errorf("thresholdsMet(available %dMi, minReclaim %v) = %v; want %v", tc.avail/mi, tc.minReclaim, got, tc.want)
		}
	}
	if got := thresholdsMet([]Threshold{th}, observations{}, false); len(got) != 0 {
		t.Errorf("thresholdsMet(no observation) = %v; want none", got)
	}
	if got := needToReclaim(th, obs(60*mi)); got != 90*mi {
		t.Errorf("needToReclaim(60Mi available) = %dMi; want 90Mi", got/mi)
	}
}

func TestMergeFirstObservedGraceAndConditions(t *testing.T) {
	hard := Threshold{Signal: SignalMemoryAvailable, Value: Value{Quantity: 100 * mi}, Hard: true}
	soft := Threshold{Signal: SignalNodeFsAvailable, Value: Value{Quantity: gi}, GracePeriod: time.Minute}
	if got := mergeThresholds([]Threshold{hard}, []Threshold{hard, soft}); len(got) != 2 {
		t.Errorf("mergeThresholds = %v; want the union of 2", got)
	}
	first := thresholdsFirstObservedAt([]Threshold{hard, soft}, thresholdsObservedAt{soft: t0}, t0.Add(10*time.Second))
	if !first[soft].Equal(t0) || !first[hard].Equal(t0.Add(10*time.Second)) {
		t.Errorf("first observed = %v; want soft kept at t0, hard at now", first)
	}
	if got := thresholdsMetGracePeriod(first, t0.Add(59*time.Second)); !slices.Equal(got, []Threshold{hard}) {
		t.Errorf("grace at 59s = %v; want only the hard one", got)
	}
	if got := thresholdsMetGracePeriod(first, t0.Add(time.Minute)); len(got) != 2 {
		t.Errorf("grace at 60s = %v; want both", got)
	}
	if got := nodeConditions([]Threshold{soft, hard, {Signal: SignalPIDAvailable}}); !slices.Equal(got, []string{api.NodeMemoryPressure, api.NodeDiskPressure, api.NodePIDPressure}) {
		t.Errorf("nodeConditions = %v", got)
	}
	last := nodeConditionsLastObservedAt([]string{api.NodeDiskPressure}, map[string]time.Time{api.NodeMemoryPressure: t0}, t0.Add(20*time.Second))
	if got := nodeConditionsObservedSince(last, 30*time.Second, t0.Add(29*time.Second)); len(got) != 2 {
		t.Errorf("observed since at 29s = %v; want both", got)
	}
	if got := nodeConditionsObservedSince(last, 30*time.Second, t0.Add(30*time.Second)); !slices.Equal(got, []string{api.NodeDiskPressure}) {
		t.Errorf("observed since at 30s = %v; want only DiskPressure", got)
	}
	o := observations{SignalMemoryAvailable: {time: t0}}
	if got := thresholdsUpdatedStats([]Threshold{hard}, o, o); len(got) != 0 {
		t.Errorf("thresholdsUpdatedStats(same reading) = %v; want none", got)
	}
	if got := thresholdsUpdatedStats([]Threshold{hard}, observations{SignalMemoryAvailable: {time: t0.Add(1)}}, o); len(got) != 1 {
		t.Errorf("thresholdsUpdatedStats(fresh reading) = %v; want one", got)
	}
}

func TestHardMemoryEvictsAtOnceAndReportsPressure(t *testing.T) {
	h := newHarness(t, nil)
	h.addPod("guaranteed", 300*mi, "512Mi")
	h.addPod("besteffort", 200*mi, "")
	if got := h.sync(); len(got) != 0 || len(h.conditions()) != 0 {
		t.Fatalf("no pressure: evicted %v, conditions %v; want nothing", got, h.conditions())
	}
	h.setAvailable(50 * mi)
	if got := h.sync(); !slices.Equal(got, []string{"besteffort"}) {
		t.Fatalf("evicted %v; want [besteffort] (over its request)", got)
	}
	k := h.pods.killed()[0]
	if k.grace != 0 || k.reason != ReasonEvicted {
		t.Errorf("kill = %+v; want grace 0, reason Evicted", k)
	}
	for _, part := range []string{"low on resource: memory", "Threshold quantity: 100Mi", "available: 50Mi", "was using 200Mi", "request is 0"} {
		if !strings.Contains(k.message, part) {
			t.Errorf("message %q lacks %q", k.message, part)
		}
	}
	if got := h.conditions(); !slices.Equal(got, []string{api.NodeMemoryPressure}) {
		t.Errorf("Conditions() = %v; want [MemoryPressure]", got)
	}
	if tt := h.m.Taints(); len(tt) != 1 || tt[0].Key != TaintMemoryPressure || tt[0].Effect != api.TaintEffectNoSchedule {
		t.Errorf("Taints() = %v; want memory-pressure:NoSchedule", tt)
	}
	if h.changes != 1 || len(h.rec.pod) != 1 || !slices.Contains(h.rec.node, "KubeletHasInsufficientMemory") || !slices.Contains(h.rec.node, ReasonNodePressure) {
		t.Errorf("changes %d, pod events %v, node events %v; want 1 change, an Evicted pod event, node events", h.changes, h.rec.pod, h.rec.node)
	}
}

func TestOneEvictionPerCycleWaitsForVictim(t *testing.T) {
	h := newHarness(t, nil)
	h.addPod("a", 300*mi, "")
	h.addPod("b", 200*mi, "")
	h.setAvailable(10 * mi)
	if got := h.sync(); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("cycle 1 evicted %v; want [a] (largest use above request)", got)
	}
	h.clock.Advance(time.Second)
	if got := h.sync(); len(got) != 0 {
		t.Fatalf("cycle 2 evicted %v while a is still stopping; want none", got)
	}
	h.pods.finish()
	h.clock.Advance(time.Second)
	if got := h.sync(); !slices.Equal(got, []string{"b"}) {
		t.Fatalf("cycle 3 evicted %v; want [b]", got)
	}
	// a victim that never stops holds evictions back at most 30 s
	h.addPod("c", 100*mi, "")
	h.clock.Advance(29 * time.Second)
	if got := h.sync(); len(got) != 0 {
		t.Fatalf("at 29s evicted %v; want none", got)
	}
	h.clock.Advance(time.Second)
	if got := h.sync(); !slices.Equal(got, []string{"c"}) {
		t.Fatalf("after the cleanup timeout evicted %v; want [c]", got)
	}
}

func TestSoftThresholdWaitsForGraceAndCapsPodGrace(t *testing.T) {
	h := newHarness(t, map[string]string{
		"eviction-hard": "memory.available<50Mi", "eviction-soft": "memory.available<500Mi",
		"eviction-soft-grace-period": "memory.available=1m", "eviction-max-pod-grace-period": "20",
	})
	h.addPod("a", 300*mi, "")
	h.setAvailable(300 * mi)
	if got := h.sync(); len(got) != 0 {
		t.Fatalf("at 0s evicted %v; want none within the grace period", got)
	}
	if got := h.conditions(); !slices.Equal(got, []string{api.NodeMemoryPressure}) {
		t.Errorf("Conditions() during grace = %v; want MemoryPressure at once", got)
	}
	h.clock.Advance(59 * time.Second)
	if got := h.sync(); len(got) != 0 {
		t.Fatalf("at 59s evicted %v; want none", got)
	}
	h.clock.Advance(time.Second)
	if got := h.sync(); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("at 60s evicted %v; want [a]", got)
	}
	if k := h.pods.killed()[0]; k.grace != 20 {
		t.Errorf("soft eviction grace = %d; want min(pod 30, max 20) = 20", k.grace)
	}
}

func TestSoftThresholdResetsWhenResolvedWithinGrace(t *testing.T) {
	h := newHarness(t, map[string]string{
		"eviction-hard": "", "eviction-soft": "memory.available<500Mi", "eviction-soft-grace-period": "memory.available=1m",
	})
	h.addPod("a", 300*mi, "")
	h.setAvailable(300 * mi)
	h.sync()
	h.clock.Advance(50 * time.Second)
	h.setAvailable(600 * mi)
	h.sync()
	h.clock.Advance(20 * time.Second)
	h.setAvailable(300 * mi)
	if got := h.sync(); len(got) != 0 {
		t.Fatalf("evicted %v; want none: the grace restarts when the threshold is met again", got)
	}
}

func TestPressureConditionHeldForTransitionPeriod(t *testing.T) {
	h := newHarness(t, map[string]string{"eviction-pressure-transition-period": "30s"})
	h.addPod("a", 300*mi, "")
	h.setAvailable(50 * mi)
	h.sync()
	h.pods.finish()
	h.setAvailable(800 * mi)
	for _, d := range []time.Duration{time.Second, 28 * time.Second} {
		h.clock.Advance(d)
		h.sync()
		if got := h.conditions(); !slices.Equal(got, []string{api.NodeMemoryPressure}) {
			t.Fatalf("Conditions() after recovery +%v = %v; want MemoryPressure held", d, got)
		}
	}
	h.clock.Advance(time.Second)
	h.sync()
	if got := h.conditions(); len(got) != 0 || len(h.m.Taints()) != 0 {
		t.Errorf("Conditions() 30s after recovery = %v, taints %v; want none", got, h.m.Taints())
	}
	if h.changes != 2 {
		t.Errorf("OnConditionsChange calls = %d; want 2 (on and off)", h.changes)
	}
}

func TestMinReclaimKeepsEvictingUntilReclaimed(t *testing.T) {
	h := newHarness(t, map[string]string{"eviction-hard": "memory.available<100Mi", "eviction-minimum-reclaim": "memory.available=200Mi"})
	h.addPod("a", 300*mi, "")
	h.addPod("b", 200*mi, "")
	h.addPod("c", 100*mi, "")
	h.setAvailable(50 * mi)
	if got := h.sync(); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("evicted %v; want [a]", got)
	}
	h.pods.finish()
	h.setAvailable(150 * mi) // above 100Mi, below 100Mi+200Mi
	h.clock.Advance(time.Second)
	if got := h.sync(); !slices.Equal(got, []string{"b"}) {
		t.Fatalf("evicted %v; want [b]: the threshold stays met until min-reclaim", got)
	}
	h.pods.finish()
	h.setAvailable(350 * mi)
	h.clock.Advance(time.Second)
	if got := h.sync(); len(got) != 0 {
		t.Fatalf("evicted %v; want none once 300Mi are available", got)
	}
	// resolved: 150Mi available no longer counts as met
	h.setAvailable(150 * mi)
	h.clock.Advance(time.Second)
	if got := h.sync(); len(got) != 0 {
		t.Fatalf("evicted %v at 150Mi after resolution; want none", got)
	}
}

func TestCriticalPodsAreNeverEvicted(t *testing.T) {
	h := newHarness(t, nil)
	h.addPod("static", 500*mi, "", func(p *api.Pod) { p.Annotations = map[string]string{"skiff.io/config.source": "file"} })
	h.addPod("system", 400*mi, "", withPriority(SystemCriticalPriority))
	h.setAvailable(10 * mi)
	if got := h.sync(); len(got) != 0 {
		t.Fatalf("evicted %v; want no critical pod", got)
	}
	h.addPod("user", 10*mi, "")
	h.clock.Advance(time.Second)
	if got := h.sync(); !slices.Equal(got, []string{"user"}) {
		t.Fatalf("evicted %v; want [user] before any critical pod", got)
	}
}

func TestPIDPressureEvictsByProcessCount(t *testing.T) {
	h := newHarness(t, map[string]string{"eviction-hard": "pid.available<10%"})
	h.addPod("few", 0, "")
	h.addPod("many", 0, "")
	h.stats.set(func(s *Summary) {
		s.PIDs.Running = 950
		s.Pods["few"] = PodStats{Processes: 3}
		s.Pods["many"] = PodStats{Processes: 800}
	})
	if got := h.sync(); !slices.Equal(got, []string{"many"}) {
		t.Fatalf("evicted %v; want [many]", got)
	}
	if got := h.conditions(); !slices.Equal(got, []string{api.NodePIDPressure}) {
		t.Errorf("Conditions() = %v; want [PIDPressure]", got)
	}
	if k := h.pods.killed()[0]; !strings.Contains(k.message, "low on resource: pids") || !strings.Contains(k.message, "was using 800") {
		t.Errorf("message = %q", k.message)
	}
}
