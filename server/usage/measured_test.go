package usage

import (
	"encoding/json"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/skiffhq/skiff/api"
)

func rep(at time.Time, nodeCPU uint64, pods ...api.PodUsage) api.UsageReport {
	return api.UsageReport{Time: at, Node: api.NodeUsage{CPUUsageNanos: nodeCPU, MemoryWorkingSet: 100}, Pods: pods}
}

func TestMeasuredRatesAndBounds(t *testing.T) {
	m := NewMeasured(3)
	pod := func(cpu uint64) api.PodUsage {
		return api.PodUsage{Namespace: "d", Name: "p", UID: "u", CPUUsageNanos: cpu, Containers: []api.ContainerUsage{{Name: "c", CPUUsageNanos: cpu}}}
	}
	if _, ok := m.Node("n", t0, DefaultStale); ok {
		t.Fatal("Node before any report = ok; want none")
	}
	m.Add("n", rep(t0, 0, pod(0)), t0)
	if _, ok := m.Node("n", t0, DefaultStale); ok {
		t.Fatal("Node after one report = ok; want none (a rate needs two)")
	}
	for i := 1; i <= 5; i++ {
		at := t0.Add(time.Duration(i) * 10 * time.Second)
		m.Add("n", rep(at, uint64(i)*5e9, pod(uint64(i)*1e9)), at)
	}
	r, ok := m.Node("n", t0.Add(50*time.Second), DefaultStale)
	if !ok || r.CPUMilli != 500 || r.Window != 10*time.Second {
		t.Errorf("Node = %+v, %v; want 500m over 10s", r, ok)
	}
	pods := m.Pods("n", t0.Add(50*time.Second), DefaultStale)
	if len(pods) != 1 || pods[0].CPUMilli != 100 || len(pods[0].Containers) != 1 || pods[0].Containers[0].CPUMilli != 100 {
		t.Errorf("Pods = %+v; want p at 100m with c at 100m", pods)
	}
	// Five rates kept in a ring of three: the newest three, oldest first.
	nh := m.History("n")
	if len(nh) != 3 {
		t.Fatalf("History = %d points; want 3", len(nh))
	}
	for i := range nh {
		at := t0.Add(time.Duration(i+3) * 10 * time.Second)
		if !nh[i].Time.Equal(at) || nh[i].CPUMilli != 500 || nh[i].Memory != 100 {
			t.Errorf("History[%d] = %v %dm %dB; want %v 500m 100B", i, nh[i].Time, nh[i].CPUMilli, nh[i].Memory, at)
		}
	}
	// A report no newer than the last is ignored.
	m.Add("n", rep(t0, 0), t0.Add(51*time.Second))
	if r, _ := m.Node("n", t0.Add(51*time.Second), DefaultStale); r.CPUMilli != 500 {
		t.Errorf("an old report changed the rate to %d", r.CPUMilli)
	}
	// A counter that went back (a restarted pod) has no rate; a pod gone
	// from the report has no rate either.
	at := t0.Add(60 * time.Second)
	m.Add("n", rep(at, 1, pod(1)), at)
	if _, ok := m.Node("n", at, DefaultStale); ok {
		t.Error("Node after a counter reset = ok; want no rate")
	}
	at = at.Add(10 * time.Second)
	m.Add("n", rep(at, 2), at)
	if got := m.Pods("n", at, DefaultStale); len(got) != 0 {
		t.Errorf("Pods after the pod left = %+v; want none", got)
	}
	// Stale, then forgotten after an hour without reports.
	if _, ok := m.Node("n", at.Add(DefaultStale+time.Second), DefaultStale); ok {
		t.Error("Node past DefaultStale = ok; want stale")
	}
	m.Add("other", rep(at, 0), at.Add(2*time.Hour))
	if got := m.Nodes(); len(got) != 1 || got[0] != "other" {
		t.Errorf("Nodes after an hour of silence = %v; want [other]", got)
	}
}

func TestValidateReport(t *testing.T) {
	ok := rep(t0, 1, api.PodUsage{Namespace: "d", Name: "p", UID: "u", Containers: []api.ContainerUsage{{Name: "c"}}})
	if err := ValidateReport(&ok); err != nil {
		t.Errorf("ValidateReport(valid) = %v", err)
	}
	for name, bad := range map[string]api.UsageReport{
		"no time":        {},
		"pod no uid":     rep(t0, 1, api.PodUsage{Namespace: "d", Name: "p"}),
		"container name": rep(t0, 1, api.PodUsage{Namespace: "d", Name: "p", UID: "u", Containers: []api.ContainerUsage{{}}}),
		"too many pods":  {Time: t0, Pods: make([]api.PodUsage, MaxReportPods+1)},
	} {
		if err := ValidateReport(&bad); err == nil {
			t.Errorf("ValidateReport(%s) = nil; want an error", name)
		}
	}
}

// FuzzUsageReport: any body decodes, validates and is recorded without
// a panic.
func FuzzUsageReport(f *testing.F) {
	f.Add(`{"time":"2026-01-01T00:00:00Z","node":{"cpuUsageNanos":5},"pods":[{"namespace":"d","name":"p","uid":"u","containers":[{"name":"c"}]}]}`)
	f.Add(`{"time":"2026-01-01T00:00:00Z","pods":[{"name":""}]}`)
	f.Fuzz(func(t *testing.T, body string) {
		var r api.UsageReport
		if json.Unmarshal([]byte(body), &r) != nil || ValidateReport(&r) != nil {
			return
		}
		m := NewMeasured(2)
		m.Add("n", r, t0)
		r.Time = r.Time.Add(time.Second)
		m.Add("n", r, t0)
		m.Pods("n", t0, DefaultStale)
		m.Node("n", t0, DefaultStale)
	})
}

// BenchmarkMeasuredMemory is the heap an agent's usage reports cost the
// server once an hour of them is kept: per node the last two reports
// (five pods of two containers here) and the history ring.
//
//	go test ./server/usage -run '^$' -bench MeasuredMemory -benchtime 1x
func BenchmarkMeasuredMemory(b *testing.B) {
	const nodes, pods = 1000, 5
	for range b.N {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		m := NewMeasured(0)
		for i := range DefaultMeasuredKeep + 1 {
			at := t0.Add(time.Duration(i) * 15 * time.Second)
			for n := range nodes {
				r := api.UsageReport{Time: at, Node: api.NodeUsage{CPUUsageNanos: uint64(i) * 3e9, MemoryWorkingSet: 1 << 30, MemoryCapacity: 4 << 30}}
				for p := range pods {
					name := fmt.Sprintf("web-%d-%d", n, p)
					r.Pods = append(r.Pods, api.PodUsage{Namespace: "default", Name: name, UID: name + "-uid", CPUUsageNanos: uint64(i) * 1e8,
						MemoryWorkingSet: 64 << 20, MemoryRSS: 60 << 20,
						Containers: []api.ContainerUsage{{Name: "app", CPUUsageNanos: uint64(i) * 9e7}, {Name: "sidecar", CPUUsageNanos: uint64(i) * 1e7}}})
				}
				m.Add(fmt.Sprintf("node-%d", n), r, at)
			}
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		if h := m.History("node-0"); len(h) != DefaultMeasuredKeep {
			b.Fatalf("History = %d points; want %d", len(h), DefaultMeasuredKeep)
		}
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/nodes, "heap-B/node")
		runtime.KeepAlive(m)
	}
}
