package eviction

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/skiffhq/skiff/agent/kubelet"
	"github.com/skiffhq/skiff/agent/runtime"
	"github.com/skiffhq/skiff/agent/runtime/fake"
	"github.com/skiffhq/skiff/api"
)

func uids(pods []*api.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.UID)
	}
	return out
}

func TestRankMemory(t *testing.T) {
	low := func(p *api.Pod) *api.Pod { n := int32(-10); p.Spec.Priority = &n; return p }
	high := func(p *api.Pod) *api.Pod { n := int32(1000); p.Spec.Priority = &n; return p }
	pods := []*api.Pod{
		pod("under", "500Mi"),      // uses 100Mi of 500Mi: below request
		high(pod("high-over", "")), // over request, high priority
		pod("over-small", "100Mi"), // 150Mi: 50Mi over
		pod("over-big", "100Mi"),   // 400Mi: 300Mi over
		low(pod("low-over", "")),   // over, lowest priority
		pod("nostats", ""),         // no stats counts as over
	}
	stats := map[string]PodStats{
		"under":      {MemoryWorkingSet: 100 * mi},
		"high-over":  {MemoryWorkingSet: 900 * mi},
		"over-small": {MemoryWorkingSet: 150 * mi},
		"over-big":   {MemoryWorkingSet: 400 * mi},
		"low-over":   {MemoryWorkingSet: 10 * mi},
	}
	rankPods(pods, stats, resourceMemory)
	want := []string{"low-over", "over-big", "over-small", "nostats", "high-over", "under"}
	if got := uids(pods); !slices.Equal(got, want) {
		t.Errorf("rank(memory) = %v; want %v", got, want)
	}
}

func TestRankDiskAndInodes(t *testing.T) {
	withStorageRequest := func(p *api.Pod) *api.Pod {
		p.Spec.Containers[0].Resources.Requests = api.ResourceList{api.ResourceEphemeralStorage: q("1Gi")}
		return p
	}
	pods := []*api.Pod{withStorageRequest(pod("within", "")), pod("logs", ""), pod("emptydir", "")}
	stats := map[string]PodStats{
		"within":   {Containers: map[string]ContainerFs{"c": {Rootfs: 500 * mi}}, Inodes: 900},
		"logs":     {Containers: map[string]ContainerFs{"c": {Logs: 100 * mi, Rootfs: 10 * mi}}, Inodes: 10},
		"emptydir": {EmptyDirs: map[string]int64{"scratch": 300 * mi}, Inodes: 50},
	}
	rankPods(pods, stats, resourceStorage)
	if got, want := uids(pods), []string{"emptydir", "logs", "within"}; !slices.Equal(got, want) {
		t.Errorf("rank(disk) = %v; want %v", got, want)
	}
	rankPods(pods, stats, resourceInodes)
	if got, want := uids(pods), []string{"within", "emptydir", "logs"}; !slices.Equal(got, want) {
		t.Errorf("rank(inodes) = %v; want %v", got, want)
	}
}

func TestLocalStorageViolations(t *testing.T) {
	p := pod("p", "")
	p.Spec.Containers = append(p.Spec.Containers, api.Container{Name: "d", Image: "busybox"})
	p.Spec.Volumes = []api.Volume{{Name: "scratch"}}
	p.Spec.Volumes[0].EmptyDir = &api.EmptyDirVolumeSource{SizeLimit: ptr(q("10Mi"))}
	if got := localStorageViolation(p, PodStats{EmptyDirs: map[string]int64{"scratch": 10 * mi}}); got != "" {
		t.Errorf("emptyDir at its limit: %q; want none", got)
	}
	if got := localStorageViolation(p, PodStats{EmptyDirs: map[string]int64{"scratch": 11 * mi}}); !strings.Contains(got, `EmptyDir volume "scratch" exceeds the limit "10Mi"`) {
		t.Errorf("emptyDir over its limit: %q", got)
	}
	p.Spec.Containers[0].Resources.Limits = api.ResourceList{api.ResourceEphemeralStorage: q("20Mi")}
	if got := localStorageViolation(p, PodStats{Containers: map[string]ContainerFs{"c": {Rootfs: 15 * mi, Logs: 6 * mi}}}); !strings.Contains(got, `Container c exceeded its local ephemeral storage limit "20Mi"`) {
		t.Errorf("container over its limit: %q", got)
	}
	p.Spec.Containers[1].Resources.Limits = api.ResourceList{api.ResourceEphemeralStorage: q("20Mi")}
	if got := localStorageViolation(p, PodStats{Containers: map[string]ContainerFs{"c": {Rootfs: 18 * mi}, "d": {Logs: 15 * mi}}, EmptyDirs: map[string]int64{"scratch": 9 * mi}}); !strings.Contains(got, "Pod ephemeral local storage usage exceeds the total limit of containers 40Mi") {
		t.Errorf("pod over its total: %q", got)
	}
}

func ptr[T any](v T) *T { return &v }

func TestLocalStorageLimitEvictsWithoutPressure(t *testing.T) {
	h := newHarness(t, nil)
	p := h.addPod("filler", 10*mi, "")
	p.Spec.Volumes = []api.Volume{{Name: "scratch", VolumeSource: api.VolumeSource{EmptyDir: &api.EmptyDirVolumeSource{SizeLimit: ptr(q("1Mi"))}}}}
	h.addPod("quiet", 10*mi, "")
	h.stats.set(func(s *Summary) { s.Pods["filler"] = PodStats{EmptyDirs: map[string]int64{"scratch": 2 * mi}} })
	if got := h.sync(); !slices.Equal(got, []string{"filler"}) {
		t.Fatalf("evicted %v; want [filler]", got)
	}
	if k := h.pods.killed()[0]; k.grace != 0 || !strings.Contains(k.message, "EmptyDir") {
		t.Errorf("kill = %+v; want grace 0 and the emptyDir message", k)
	}
}

func TestDeadContainersAndUnusedImages(t *testing.T) {
	rpods := []runtime.PodStatus{
		{UID: "run", Containers: []runtime.ContainerStatus{
			{ID: "run-c-0", Name: "c", RestartCount: 0, State: runtime.StateExited, Image: "a"},
			{ID: "run-c-1", Name: "c", RestartCount: 1, State: runtime.StateExited, Image: "a"},
		}},
		{UID: "done", Containers: []runtime.ContainerStatus{{ID: "done-c-0", Name: "c", State: runtime.StateExited, ImageID: "sha256:b"}}},
		{UID: "orphan", Containers: []runtime.ContainerStatus{{ID: "orphan-c-0", Name: "c", State: runtime.StateExited}}},
	}
	states := map[string]kubelet.PodState{"run": kubelet.PodSyncing, "done": kubelet.PodTerminated}
	if got := deadContainers(rpods, states); !slices.Equal(got, []string{"done-c-0", "run-c-0"}) {
		t.Errorf("deadContainers = %v; want [done-c-0 run-c-0]", got)
	}
	imgs := []runtime.Image{
		{Ref: "a"}, {Ref: "b", ID: "sha256:b"},
		{Ref: "new", CreatedAt: t0.Add(time.Hour)}, {Ref: "old", CreatedAt: t0},
	}
	var got []string
	for _, i := range unusedImages(imgs, rpods) {
		got = append(got, i.Ref)
	}
	if !slices.Equal(got, []string{"old", "new"}) {
		t.Errorf("unusedImages = %v; want [old new]", got)
	}
}

func TestDiskPressureReclaimsImagesBeforeEvicting(t *testing.T) {
	h := newHarness(t, map[string]string{"eviction-hard": "nodefs.available<10%"})
	h.addPod("a", 10*mi, "")
	h.rt.AddImageSized("old", 600*mi, t0)
	h.rt.AddImageSized("newer", 600*mi, t0.Add(time.Hour))
	h.rt.AddImageSized("newest", 600*mi, t0.Add(2*time.Hour))
	h.stats.hook = func(s *Summary) {
		s.NodeFS.Available = 500*mi + 600*mi*int64(h.rt.CallCount(fake.MethodRemoveImage, ""))
	}
	if got := h.sync(); len(got) != 0 {
		t.Fatalf("evicted %v; want none: removing images frees enough", got)
	}
	// 1Gi (10%) less 500Mi available: the oldest image frees enough
	if h.rt.CallCount(fake.MethodRemoveImage, "old") != 1 || h.rt.CallCount(fake.MethodRemoveImage, "") != 1 {
		t.Errorf("calls = %v; want only the oldest image removed", h.rt.Calls())
	}
	if got := h.conditions(); !slices.Equal(got, []string{api.NodeDiskPressure}) {
		t.Errorf("Conditions() = %v; want [DiskPressure]", got)
	}
}

func TestDiskPressureEvictsWhenReclaimIsNotEnough(t *testing.T) {
	h := newHarness(t, map[string]string{"eviction-hard": "nodefs.available<10%"})
	h.addPod("small", 10*mi, "")
	h.addPod("big", 10*mi, "")
	h.rt.AddImageSized("unused", 10*mi, t0)
	h.stats.set(func(s *Summary) {
		s.NodeFS.Available = 100 * mi
		s.Pods["small"] = PodStats{Containers: map[string]ContainerFs{"c": {Logs: mi}}}
		s.Pods["big"] = PodStats{EmptyDirs: map[string]int64{"data": 800 * mi}}
	})
	if got := h.sync(); !slices.Equal(got, []string{"big"}) {
		t.Fatalf("evicted %v; want [big]", got)
	}
	if h.rt.CallCount(fake.MethodRemoveImage, "unused") != 1 {
		t.Error("the unused image was not removed first")
	}
	if k := h.pods.killed()[0]; !strings.Contains(k.message, "low on resource: ephemeral-storage") || !strings.Contains(k.message, "was using 800Mi") {
		t.Errorf("message = %q", k.message)
	}
	// memory is not reclaimed at node level
	if _, err := h.m.reclaim(context.Background(), nil, resourceMemory, 0); err != nil {
		t.Errorf("reclaim = %v", err)
	}
}
