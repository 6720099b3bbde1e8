package node_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/skiffhq/skiff/agent/node"
	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/internal/clock"
)

func TestRegistrarAppliesPressureTaintsRealServer(t *testing.T) {
	info, admin := startServer(t)
	ctx := context.Background()
	nc := joinedClient(t, info, "edge-t")
	var mu sync.Mutex
	var want []api.Taint
	set := func(ts ...api.Taint) { mu.Lock(); want = ts; mu.Unlock() }
	const memKey, diskKey = "node.kubernetes.io/memory-pressure", "node.kubernetes.io/disk-pressure"
	r := node.NewRegistrar(node.Config{
		API: nc, NodeName: "edge-t", Info: fixedInfo, Runtime: &fakeRuntime{}, Clock: clock.NewFake(time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)),
		Taints:    func() []api.Taint { mu.Lock(); defer mu.Unlock(); return append([]api.Taint(nil), want...) },
		TaintKeys: []string{memKey, diskKey},
	})
	nodes, _ := api.LookupResource("nodes")
	taints := func() []api.Taint {
		obj, err := admin.Get(ctx, nodes, "", "edge-t")
		if err != nil {
			t.Fatal(err)
		}
		return obj.(*api.Node).Spec.Taints
	}
	set(api.Taint{Key: memKey, Effect: api.TaintEffectNoSchedule})
	if err := r.SyncOnce(ctx); err != nil {
		t.Fatal(err)
	}
	if got := taints(); len(got) != 1 || got[0].Key != memKey || got[0].Effect != api.TaintEffectNoSchedule {
		t.Fatalf("taints after register = %+v; want memory-pressure:NoSchedule", got)
	}
	// an admin's taint is left alone; the pressure taint follows the manager
	obj, _ := admin.Get(ctx, nodes, "", "edge-t")
	n := obj.(*api.Node)
	n.Spec.Taints = append(n.Spec.Taints, api.Taint{Key: "gpu", Effect: api.TaintEffectNoSchedule})
	if _, err := admin.Update(ctx, n); err != nil {
		t.Fatal(err)
	}
	set(api.Taint{Key: diskKey, Effect: api.TaintEffectNoSchedule})
	if err := r.SyncOnce(ctx); err != nil {
		t.Fatal(err)
	}
	got := taints()
	if len(got) != 2 || got[0].Key != "gpu" || got[1].Key != diskKey {
		t.Fatalf("taints = %+v; want gpu kept, memory-pressure replaced by disk-pressure", got)
	}
	set()
	if err := r.SyncOnce(ctx); err != nil {
		t.Fatal(err)
	}
	if got := taints(); len(got) != 1 || got[0].Key != "gpu" {
		t.Fatalf("taints after pressure ends = %+v; want only gpu", got)
	}
}

func TestRegistrarTriggerSyncsBeforeHeartbeat(t *testing.T) {
	info, _ := startServer(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	nc := joinedClient(t, info, "edge-k")
	calls := make(chan struct{}, 16)
	clk := clock.NewFake(time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC))
	r := node.NewRegistrar(node.Config{API: nc, NodeName: "edge-k", Info: fixedInfo, Runtime: &fakeRuntime{}, Clock: clk,
		Conditions: func() []api.NodeCondition { calls <- struct{}{}; return nil }})
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	wait := func(what string) {
		t.Helper()
		select {
		case <-calls:
		case <-time.After(10 * time.Second):
			t.Fatalf("no sync %s", what)
		}
	}
	wait("at start")
	r.Trigger() // fake time does not move: only the trigger can cause a sync
	wait("after Trigger")
	cancel()
	<-done
}
