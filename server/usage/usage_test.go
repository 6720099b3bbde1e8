package usage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/api/resource"
	"github.com/skiffhq/skiff/internal/clock"
	"github.com/skiffhq/skiff/storage"
)

var t0 = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

func node(name, cpu, mem string, ready string) *api.Node {
	n := &api.Node{}
	n.Name = name
	n.Status.Allocatable = api.ResourceList{api.ResourceCPU: resource.MustParse(cpu), api.ResourceMemory: resource.MustParse(mem)}
	if ready != "" {
		n.Status.Conditions = []api.NodeCondition{{Type: api.NodeReady, Status: ready}}
	}
	return n
}

func pod(name, nodeName string, phase api.PodPhase, reqs ...string) *api.Pod {
	p := &api.Pod{}
	p.Name, p.Namespace = name, "default"
	p.Spec.NodeName = nodeName
	p.Status.Phase = phase
	for i := 0; i+1 < len(reqs); i += 2 {
		p.Spec.Containers = append(p.Spec.Containers, api.Container{Name: "c", Resources: api.ResourceRequirements{
			Requests: api.ResourceList{api.ResourceCPU: resource.MustParse(reqs[i]), api.ResourceMemory: resource.MustParse(reqs[i+1])}}})
	}
	return p
}

// TestSampleFigures: a sample, read from the stored JSON of nodes and
// pods, counts each node's pods that have not finished, their requests
// (an init container's when larger than the containers' sum), the
// node's allocatable and Ready.
func TestSampleFigures(t *testing.T) {
	withInit := pod("init", "a", api.PodRunning, "100m", "10Mi")
	withInit.Spec.InitContainers = []api.Container{{Name: "i", Resources: api.ResourceRequirements{Requests: api.ResourceList{api.ResourceCPU: resource.MustParse("1")}}}}
	nodes := []*api.Node{node("a", "2", "1Gi", api.ConditionTrue), node("b", "500m", "512Mi", "False"), node("c", "1", "1Gi", "")}
	pods := []*api.Pod{
		pod("p1", "a", api.PodRunning, "250m", "64Mi", "250m", "64Mi"),
		pod("p2", "a", api.PodPending, "100m", "100Mi"),
		pod("done", "a", api.PodSucceeded, "1", "1Gi"),  // finished: not counted
		pod("failed", "b", api.PodFailed, "1", "1Gi"),   // finished: not counted
		pod("lost", "gone", api.PodRunning, "1", "1Gi"), // on no known node
		pod("unbound", "", api.PodPending, "1", "1Gi"),
		withInit,
	}
	st := &fakeStore{}
	st.set(nodes...)
	for _, p := range pods {
		st.pods = append(st.pods, p)
	}
	r, err := New(Config{Store: st, Clock: clock.NewFake(t0)})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.SampleNow(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := map[string]Sample{}
	for _, name := range []string{"a", "b", "c", "gone", ""} {
		if ss, ok := r.Samples(name); ok {
			if len(ss) != 1 {
				t.Fatalf("Samples(%q) = %+v; want one", name, ss)
			}
			got[name] = ss[0]
		}
	}
	want := map[string]Sample{
		"a": {Time: t0, Ready: true, Pods: 3, CPURequestedMilli: 250 + 250 + 100 + 1000, CPUAllocatableMilli: 2000, MemoryRequestedBytes: (64 + 64 + 100 + 10) << 20, MemoryAllocatableBytes: 1 << 30},
		"b": {Time: t0, CPUAllocatableMilli: 500, MemoryAllocatableBytes: 512 << 20},
		"c": {Time: t0, CPUAllocatableMilli: 1000, MemoryAllocatableBytes: 1 << 30},
	}
	if len(got) != len(want) {
		t.Fatalf("the sample has %d nodes; want %d: %+v", len(got), len(want), got)
	}
	for name, w := range want {
		if got[name] != w {
			t.Errorf("sample of %q = %+v; want %+v", name, got[name], w)
		}
	}
}

// fakeStore serves fixed lists and reports each listing of pods (the last
// step of a sample).
type fakeStore struct {
	mu      sync.Mutex
	nodes   []api.Object
	pods    []api.Object
	err     error
	sampled chan struct{}
}

func (f *fakeStore) Scan(_ context.Context, resource string, _ storage.ListOptions, fn func([]byte) error) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return 0, f.err
	}
	objs := f.pods
	if resource == "nodes" {
		objs = f.nodes
	} else if f.sampled != nil {
		defer func() { f.sampled <- struct{}{} }()
	}
	for _, o := range objs {
		b, err := json.Marshal(o)
		if err != nil {
			return 0, err
		}
		if err := fn(b); err != nil {
			return 0, err
		}
	}
	return 1, nil
}

func (f *fakeStore) set(nodes ...*api.Node) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.nodes = f.nodes[:0]
	for _, n := range nodes {
		f.nodes = append(f.nodes, n)
	}
}

// newRecorder is a Recorder keeping keep samples of a fakeStore's nodes,
// on a fake clock at t0.
func newRecorder(t *testing.T, keep int) (*clock.Fake, *fakeStore, *Recorder) {
	t.Helper()
	clk := clock.NewFake(t0)
	st := &fakeStore{}
	r, err := New(Config{Store: st, Clock: clk, Keep: keep})
	if err != nil {
		t.Fatal(err)
	}
	return clk, st, r
}

func TestRecorderKeepsTheLatestSamplesAndForgetsGoneNodes(t *testing.T) {
	clk, st, r := newRecorder(t, 3)
	ctx := context.Background()
	st.set(node("a", "1", "1Gi", api.ConditionTrue), node("b", "1", "1Gi", api.ConditionTrue))
	for i := range 5 {
		if err := r.SampleNow(ctx); err != nil {
			t.Fatal(err)
		}
		if i < 4 {
			clk.Advance(time.Minute)
		}
	}
	ss, ok := r.Samples("a")
	if !ok || len(ss) != 3 {
		t.Fatalf("Samples(a) = %d samples, %v; want the latest 3", len(ss), ok)
	}
	for i, s := range ss {
		if want := t0.Add(time.Duration(2+i) * time.Minute); !s.Time.Equal(want) {
			t.Errorf("Samples(a)[%d].Time = %v; want %v", i, s.Time, want)
		}
	}
	ss[0].Pods = 99 // a copy: the recorder's history is not touched
	if again, _ := r.Samples("a"); again[0].Pods != 0 {
		t.Error("Samples returned the recorder's own slice")
	}

	st.set(node("a", "1", "1Gi", api.ConditionTrue))
	if err := r.SampleNow(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok := r.Samples("b"); ok {
		t.Error("Samples(b) still has history after b is gone")
	}
	if _, ok := r.Samples("never"); ok {
		t.Error("Samples(never) = ok; want no history")
	}

	st.err = errors.New("disk on fire")
	if err := r.SampleNow(ctx); err == nil || !errors.Is(err, st.err) {
		t.Errorf("SampleNow with a failing store = %v; want the store's error wrapped", err)
	}
}

// waitSampled waits for st's next sample, at most 10 s.
func waitSampled(t *testing.T, st *fakeStore) {
	t.Helper()
	select {
	case <-st.sampled:
	case <-time.After(10 * time.Second):
		t.Fatal("no sample within 10s")
	}
}

func TestRunSamplesAtStartAndEveryInterval(t *testing.T) {
	clk := clock.NewFake(t0)
	st := &fakeStore{sampled: make(chan struct{})}
	st.set(node("a", "1", "1Gi", api.ConditionTrue))
	r, err := New(Config{Store: st, Clock: clk, Interval: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { r.Run(ctx); close(done) }()
	wait := func() { t.Helper(); waitSampled(t, st) }
	wait() // at start
	for range 2 {
		clk.BlockUntil(1)
		clk.Advance(30 * time.Second)
		wait()
	}
	cancel()
	<-done
	ss, _ := r.Samples("a")
	if len(ss) != 3 || !ss[2].Time.Equal(t0.Add(time.Minute)) {
		t.Errorf("after start and two ticks: %d samples, last at %v; want 3, the last at %v", len(ss), ss[len(ss)-1].Time, t0.Add(time.Minute))
	}
}

// TestRunPhaseDelaysTheTicks: with a Phase, the first sample is at the
// start, the next Phase+Interval after it, then every Interval (a
// server's samples fall between its store's once-a-minute maintenance).
// Run waits on one timer at a time, so a timer that fired is gone from
// the clock at once: the test sees whether a sample fell due.
func TestRunPhaseDelaysTheTicks(t *testing.T) {
	clk := clock.NewFake(t0)
	st := &fakeStore{sampled: make(chan struct{})}
	st.set(node("a", "1", "1Gi", api.ConditionTrue))
	r, err := New(Config{Store: st, Clock: clk, Interval: time.Minute, Phase: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	// Buffered: a sample at a wrong time must not block Run, which the
	// test waits for at its end.
	st.sampled = make(chan struct{}, 8)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { r.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	wait := func() { t.Helper(); waitSampled(t, st) }
	wait() // at start
	for _, due := range []time.Duration{90 * time.Second, 150 * time.Second} {
		clk.BlockUntil(1)
		clk.Set(t0.Add(due - time.Second))
		if n := clk.Waiters(); n != 1 {
			t.Fatalf("a sample fell due before +%v", due-time.Second)
		}
		clk.Advance(time.Second)
		if n := clk.Waiters(); n != 0 {
			t.Fatalf("no sample fell due at +%v", due)
		}
		wait()
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	for _, c := range []Config{{}, {Store: &fakeStore{}, Interval: -1}, {Store: &fakeStore{}, Keep: -1}, {Store: &fakeStore{}, Phase: -1}, {Store: &fakeStore{}, Phase: DefaultInterval}, {Store: &fakeStore{}, Pause: -1}} {
		if _, err := New(c); err == nil {
			t.Errorf("New(%+v) succeeded; want an error", c)
		}
	}
}

// TestRecorderRingKeepsOrderAcrossWraps: each node's history is the
// latest Keep samples, oldest first, with each sample's own time and
// figures, however many times its ring has wrapped; a node that joins
// later has only its own samples, and one that leaves and comes back
// starts afresh.
func TestRecorderRingKeepsOrderAcrossWraps(t *testing.T) {
	clk, st, r := newRecorder(t, 3)
	ctx := context.Background()
	// Round i: node a has i pods; c is listed from round 4 on; b in
	// rounds 0–1 and again from 5.
	for i := range 9 {
		nodes := []*api.Node{node("a", "1", "1Gi", api.ConditionTrue)}
		if i >= 4 {
			nodes = append(nodes, node("c", "2", "1Gi", api.ConditionTrue))
		}
		if i < 2 || i >= 5 {
			nodes = append(nodes, node("b", "1", "1Gi", ""))
		}
		st.set(nodes...)
		st.pods = nil
		for j := range i {
			st.pods = append(st.pods, pod("p"+string(rune('0'+j)), "a", api.PodRunning, "10m", "1Mi"))
			st.pods = append(st.pods, pod("q"+string(rune('0'+j)), "c", api.PodRunning, "1m", "1Mi"))
		}
		if err := r.SampleNow(ctx); err != nil {
			t.Fatal(err)
		}
		check := func(name string, wantPods []int) {
			t.Helper()
			ss, ok := r.Samples(name)
			if !ok || len(ss) != len(wantPods) {
				t.Fatalf("round %d: Samples(%s) = %+v, %v; want %d samples", i, name, ss, ok, len(wantPods))
			}
			for k, s := range ss {
				round := i - len(ss) + 1 + k
				if !s.Time.Equal(t0.Add(time.Duration(round)*time.Minute)) || s.Pods != wantPods[k] {
					t.Errorf("round %d: Samples(%s)[%d] = %d pods at %v; want %d at %v", i, name, k, s.Pods, s.Time, wantPods[k], t0.Add(time.Duration(round)*time.Minute))
				}
			}
		}
		var wantA []int
		for round := max(0, i-2); round <= i; round++ {
			wantA = append(wantA, round)
		}
		check("a", wantA)
		if i >= 4 {
			var wantC []int
			for round := max(4, i-2); round <= i; round++ {
				wantC = append(wantC, round)
			}
			check("c", wantC)
		}
		switch {
		case i >= 5:
			check("b", make([]int, min(i-4, 3)))
		case i >= 2:
			if _, ok := r.Samples("b"); ok {
				t.Errorf("round %d: b has history while it is not listed", i)
			}
		}
		clk.Advance(time.Minute)
	}
}

// TestSampleRefusesUndecodableObjects: a stored object the sample cannot
// read fails the sample and leaves the history as it was.
func TestSampleRefusesUndecodableObjects(t *testing.T) {
	st := &rawStore{nodes: [][]byte{[]byte(`{"metadata":{"name":"a"},"status":{"allocatable":{"cpu":"1"}}}`)}}
	r, err := New(Config{Store: st, Clock: clock.NewFake(t0)})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.SampleNow(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []struct{ nodes, pods [][]byte }{
		{nodes: [][]byte{[]byte(`{"metadata":`)}},
		{nodes: st.nodes, pods: [][]byte{[]byte(`{"spec":{"containers":[{"resources":{"requests":{"cpu":"lots"}}}]}}`)}},
	} {
		bst := &rawStore{nodes: bad.nodes, pods: bad.pods}
		r.store = bst
		if err := r.SampleNow(context.Background()); err == nil {
			t.Errorf("SampleNow of %q, %q succeeded; want an error", bad.nodes, bad.pods)
		}
	}
	if ss, ok := r.Samples("a"); !ok || len(ss) != 1 || ss[0].CPUAllocatableMilli != 1000 {
		t.Errorf("after failed samples: Samples(a) = %+v, %v; want the one good sample", ss, ok)
	}
}

// rawStore serves fixed stored JSON.
type rawStore struct{ nodes, pods [][]byte }

func (s *rawStore) Scan(_ context.Context, resource string, _ storage.ListOptions, fn func([]byte) error) (int64, error) {
	raws := s.pods
	if resource == "nodes" {
		raws = s.nodes
	}
	for _, raw := range raws {
		if err := fn(raw); err != nil {
			return 0, err
		}
	}
	return 1, nil
}

// TestSamplePausesBetweenChunks: with a Pause, a sample of 600 objects
// (300 nodes, 300 pods) waits the pause on the clock after the 256th and
// the 512th object, and records only once both have passed; a context
// that ends during a pause ends the sample, which records nothing.
func TestSamplePausesBetweenChunks(t *testing.T) {
	const pause = 20 * time.Millisecond
	clk := clock.NewFake(t0)
	st := &fakeStore{}
	var nodes []*api.Node
	for i := range 300 {
		name := fmt.Sprintf("n%03d", i)
		nodes = append(nodes, node(name, "1", "1Gi", api.ConditionTrue))
		st.pods = append(st.pods, pod("p"+name, name, api.PodRunning, "100m", "64Mi"))
	}
	st.set(nodes...)
	r, err := New(Config{Store: st, Clock: clk, Pause: pause})
	if err != nil {
		t.Fatal(err)
	}
	sample := func(ctx context.Context) chan error {
		done := make(chan error, 1)
		go func() { done <- r.SampleNow(ctx) }()
		return done
	}
	// pausing waits until the sample waits on the clock, or fails the
	// test when it finishes first.
	pausing := func(done chan error) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); clk.Waiters() != 1; time.Sleep(time.Millisecond) {
			select {
			case err := <-done:
				t.Fatalf("the sample ended (%v) without pausing", err)
			default:
			}
			if time.Now().After(deadline) {
				t.Fatal("the sample neither paused nor ended within 10s")
			}
		}
	}
	done := sample(context.Background())
	for i := range 2 {
		pausing(done)
		clk.Advance(pause - time.Nanosecond)
		if clk.Waiters() != 1 {
			t.Fatalf("pause %d ended before %v", i+1, pause)
		}
		if _, ok := r.Samples("n000"); ok {
			t.Fatalf("a sample was recorded during pause %d", i+1)
		}
		clk.Advance(time.Nanosecond)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the sample did not end after its two pauses")
	}
	if ss, ok := r.Samples("n299"); !ok || len(ss) != 1 || ss[0].Pods != 1 || ss[0].CPURequestedMilli != 100 {
		t.Errorf("after the paced sample, n299 has %+v; want one sample of 1 pod requesting 100m", ss)
	}

	ctx, cancel := context.WithCancel(context.Background())
	done = sample(ctx)
	pausing(done)
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("a sample whose context ended in a pause returned %v; want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the sample did not end with its context")
	}
	if ss, _ := r.Samples("n000"); len(ss) != 1 {
		t.Errorf("the cancelled sample recorded: n000 has %d samples; want 1", len(ss))
	}
}

// TestSampleFromSource: a Source that answers makes the sample without
// the store (whose scan would fail here); one that does not leaves the
// sample to the store.
func TestSampleFromSource(t *testing.T) {
	clk := clock.NewFake(t0)
	st := &fakeStore{err: errors.New("the store was read")}
	answer := true
	src := func(context.Context) ([]NodeFigures, bool) {
		if !answer {
			return nil, false
		}
		return []NodeFigures{{Name: "a", Ready: true, Pods: 3, CPURequestedMilli: 300, CPUAllocatableMilli: 2000, MemoryRequestedBytes: 1 << 20, MemoryAllocatableBytes: 1 << 30}}, true
	}
	r, err := New(Config{Store: st, Clock: clk, Source: src})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.SampleNow(context.Background()); err != nil {
		t.Fatalf("SampleNow with a Source that answers = %v; want nil", err)
	}
	want := Sample{Time: t0, Ready: true, Pods: 3, CPURequestedMilli: 300, CPUAllocatableMilli: 2000, MemoryRequestedBytes: 1 << 20, MemoryAllocatableBytes: 1 << 30}
	if ss, ok := r.Samples("a"); !ok || len(ss) != 1 || ss[0] != want {
		t.Errorf("Samples(a) = %+v; want [%+v]", ss, want)
	}
	answer = false
	if err := r.SampleNow(context.Background()); !errors.Is(err, st.err) {
		t.Errorf("SampleNow with a Source that does not answer = %v; want the store's error", err)
	}
}
