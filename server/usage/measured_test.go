package usage

import (
	"encoding/json"
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
	nh, ph := m.History("n")
	if len(nh) != 3 || !nh[2].Time.Equal(t0.Add(50*time.Second)) || len(ph["u"]) != 3 {
		t.Errorf("History = %d node points (last %v), %d pod points; want 3 each, the newest last", len(nh), nh[len(nh)-1].Time, len(ph["u"]))
	}
	// A report no newer than the last is ignored.
	m.Add("n", rep(t0, 0), t0.Add(51*time.Second))
	if r, _ := m.Node("n", t0.Add(51*time.Second), DefaultStale); r.CPUMilli != 500 {
		t.Errorf("an old report changed the rate to %d", r.CPUMilli)
	}
	// A counter that went back (a restarted pod) has no rate; a pod gone
	// from the report loses its history.
	at := t0.Add(60 * time.Second)
	m.Add("n", rep(at, 1, pod(1)), at)
	if _, ok := m.Node("n", at, DefaultStale); ok {
		t.Error("Node after a counter reset = ok; want no rate")
	}
	at = at.Add(10 * time.Second)
	m.Add("n", rep(at, 2), at)
	if _, ph := m.History("n"); len(ph) != 0 {
		t.Errorf("pod history after the pod left = %v; want none", ph)
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
