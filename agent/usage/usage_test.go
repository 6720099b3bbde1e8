package usage

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skiffhq/skiff/agent/cgroups"
	"github.com/skiffhq/skiff/agent/eviction"
	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/internal/clock"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

type fakeSource struct {
	s    eviction.Summary
	pods []*api.Pod
}

func (f fakeSource) Latest() (eviction.Summary, []*api.Pod, bool) {
	return f.s, f.pods, !f.s.Time.IsZero()
}

type fakeDetailer map[string]eviction.PodDetail

func (f fakeDetailer) PodDetails(context.Context, []*api.Pod) map[string]eviction.PodDetail { return f }

type fakePoster struct {
	mu    sync.Mutex
	paths []string
	body  []string
	fail  error
	code  int // the answer's status (default 204)
	sent  chan struct{}
}

func (f *fakePoster) Do(_ context.Context, method, path string, body io.Reader) (*http.Response, error) {
	b, _ := io.ReadAll(body)
	f.mu.Lock()
	f.paths = append(f.paths, method+" "+path)
	f.body = append(f.body, string(b))
	f.mu.Unlock()
	f.sent <- struct{}{}
	if f.fail != nil {
		return nil, f.fail
	}
	code := f.code
	if code == 0 {
		code = http.StatusNoContent
	}
	return &http.Response{StatusCode: code, Body: io.NopCloser(strings.NewReader(""))}, nil
}

func pod(ns, name, uid string) *api.Pod {
	p := &api.Pod{}
	p.Namespace, p.Name, p.UID = ns, name, uid
	return p
}

func fixture() (fakeSource, fakeDetailer) {
	s := eviction.Summary{Time: t0, CPUNanos: 5e9,
		Memory: eviction.MemoryStats{Capacity: 1 << 30, WorkingSet: 1 << 28},
		NodeFS: eviction.FsStats{Capacity: 1000, Available: 400},
		Pods: map[string]eviction.PodStats{
			"u1": {CPUNanos: 1e9, MemoryWorkingSet: 100, MemoryRSS: 80},
			"u2": {CPUNanos: 2e9, MemoryWorkingSet: -1}, // a bad reading floors at 0
		}}
	pods := []*api.Pod{pod("default", "web", "u1"), pod("a", "z", "u2"), pod("default", "pending", "u3")}
	d := fakeDetailer{"u1": {
		Containers: map[string]cgroups.Usage{"b": {CPUNanos: 3}, "a": {CPUNanos: 7, Memory: cgroups.MemoryStats{WorkingSet: 60, RSS: 50}}},
		Network:    &api.NetworkUsage{RxBytes: 10, TxBytes: 20},
	}}
	return fakeSource{s: s, pods: pods}, d
}

func TestBuild(t *testing.T) {
	src, d := fixture()
	got := Build(src.s, src.pods, d)
	want := api.UsageReport{Time: t0,
		Node: api.NodeUsage{CPUUsageNanos: 5e9, MemoryWorkingSet: 1 << 28, MemoryCapacity: 1 << 30, FsCapacity: 1000, FsAvailable: 400},
		Pods: []api.PodUsage{
			{Namespace: "a", Name: "z", UID: "u2", CPUUsageNanos: 2e9},
			{Namespace: "default", Name: "web", UID: "u1", CPUUsageNanos: 1e9, MemoryWorkingSet: 100, MemoryRSS: 80,
				Network:    &api.NetworkUsage{RxBytes: 10, TxBytes: 20},
				Containers: []api.ContainerUsage{{Name: "a", CPUUsageNanos: 7, MemoryWorkingSet: 60, MemoryRSS: 50}, {Name: "b", CPUUsageNanos: 3}}},
		}}
	gb, _ := json.Marshal(got)
	wb, _ := json.Marshal(want)
	if string(gb) != string(wb) {
		t.Errorf("Build =\n%s\nwant\n%s", gb, wb)
	}
}

// TestReporterSendsEveryInterval steps a fake clock: one POST per
// interval, to the node's own stats path; a failed send does not stop
// the loop.
func TestReporterSendsEveryInterval(t *testing.T) {
	src, d := fixture()
	clk := clock.NewFake(t0)
	post := &fakePoster{sent: make(chan struct{}, 4), fail: errors.New("server down")}
	dues := make(chan time.Time, 4)
	r, err := New(Config{NodeName: "n1", Source: src, Detailer: d, API: post, Clock: clk, Due: func(at time.Time) { dues <- at }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- r.Run(ctx) }()
	clk.BlockUntil(1)
	clk.Advance(DefaultInterval - time.Second)
	select {
	case <-post.sent:
		t.Fatal("a report was sent before the interval passed")
	default:
	}
	for i := 0; i < 2; i++ {
		// Each report is announced for when it goes out (the registrar
		// leaves the beat before it to the report).
		if due, want := <-dues, t0.Add(time.Duration(i+1)*DefaultInterval); !due.Equal(want) {
			t.Fatalf("report %d announced for %v; want %v", i, due.Sub(t0), want.Sub(t0))
		}
		clk.Advance(time.Second)
		<-post.sent
		clk.Advance(DefaultInterval - time.Second)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run = %v; want nil at cancel", err)
	}
	post.mu.Lock()
	defer post.mu.Unlock()
	if len(post.paths) != 2 || post.paths[0] != "POST /api/v1/skiff/nodes/n1/stats" {
		t.Errorf("sent %v; want two POSTs to /api/v1/skiff/nodes/n1/stats", post.paths)
	}
	var rep api.UsageReport
	if err := json.Unmarshal([]byte(post.body[0]), &rep); err != nil || len(rep.Pods) != 2 {
		t.Errorf("body %s (%v); want a report with 2 pods", post.body[0], err)
	}
	if got := r.Latest(); len(got.Pods) != 2 {
		t.Errorf("Latest() has %d pods; want 2", len(got.Pods))
	}
}

// TestReportTellsWhatTheServerHeard: a report the server took (204) is
// passed on as heard at the instant it was sent (the server counts it as
// a heartbeat); a 205 asks for the node's conditions; a failed send is
// neither.
func TestReportTellsWhatTheServerHeard(t *testing.T) {
	src, d := fixture()
	clk := clock.NewFake(t0)
	post := &fakePoster{sent: make(chan struct{}, 4)}
	var heard []time.Time
	wanted := 0
	r, err := New(Config{NodeName: "n1", Source: src, Detailer: d, API: post, Clock: clk,
		Heard: func(at time.Time) { heard = append(heard, at) }, StatusWanted: func() { wanted++ }})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := r.ReportOnce(ctx); err != nil {
		t.Fatal(err)
	}
	if len(heard) != 1 || !heard[0].Equal(t0) || wanted != 0 {
		t.Fatalf("after a 204: heard %v, status wanted %d times; want heard at %v only", heard, wanted, t0)
	}
	clk.Advance(DefaultInterval)
	post.code = http.StatusResetContent
	if err := r.ReportOnce(ctx); err != nil {
		t.Fatal(err)
	}
	if len(heard) != 1 || wanted != 1 {
		t.Fatalf("after a 205: heard %v, status wanted %d times; want no new heard, wanted once", heard, wanted)
	}
	post.fail = errors.New("server down")
	if err := r.ReportOnce(ctx); err == nil || len(heard) != 1 || wanted != 1 {
		t.Fatalf("after a failure: err %v, heard %v, status wanted %d times; want an error and nothing else", err, heard, wanted)
	}
}

func TestNewRequires(t *testing.T) {
	if _, err := New(Config{}); err == nil {
		t.Error("New(empty) succeeded; want an error")
	}
}
