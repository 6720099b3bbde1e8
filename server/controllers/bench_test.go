package controllers

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/api/resource"
	"github.com/skiffhq/skiff/server/scheduler"
	"github.com/skiffhq/skiff/storage"
	"github.com/skiffhq/skiff/storage/storagetest"
)

// BenchmarkDeployment1000On100Nodes measures, on a real store with the
// real scheduler and controllers and 100 simulated nodes whose agents run
// every pod bound to them at once (and confirm deletions at once): the
// time from creating a 1 000-replica Deployment until all replicas are
// bound, until all are available, and the time of a full rolling update
// (25% surge, 25% unavailable) until all 1 000 run the new template.
func BenchmarkDeployment1000On100Nodes(b *testing.B) {
	for range b.N {
		bound, avail, rollout := benchDeployment(b, 100, 1000)
		b.ReportMetric(bound.Seconds(), "s-all-bound")
		b.ReportMetric(avail.Seconds(), "s-all-available")
		b.ReportMetric(rollout.Seconds(), "s-rolling-update")
	}
}

func benchDeployment(b *testing.B, nodes, replicas int) (bound, avail, rollout time.Duration) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	store := storagetest.Open(b, storage.Options{})
	log := slog.New(slog.DiscardHandler)
	now := time.Now()
	for i := range nodes {
		n := readyNode(fmt.Sprintf("node-%03d", i), nil)
		n.Status.Allocatable = api.ResourceList{api.ResourceCPU: resource.MustParse("16"), api.ResourceMemory: resource.MustParse("32Gi"), api.ResourcePods: resource.MustParse("110")}
		n.Status.Conditions[0].LastHeartbeatTime = api.NewTime(now)
		n.UID, n.CreationTimestamp = fmt.Sprintf("uid-node-%d", i), api.NewTime(now)
		api.SetTypeMeta(n)
		if err := store.Create(ctx, n); err != nil {
			b.Fatal(err)
		}
	}
	wg, _ := startControlPlane(ctx, b, store, log)
	defer wg.Wait()
	defer cancel()
	agents := newSimAgents(store, log)
	wg.Go(func() { agents.run(ctx) })

	dep := deployment("web", int32(replicas), "nginx:1")
	dep.UID, dep.CreationTimestamp, dep.Generation = "uid-web", api.NewTime(time.Now()), 1
	api.SetTypeMeta(dep)
	api.SetDefaults(dep)
	start := time.Now()
	if err := store.Create(ctx, dep); err != nil {
		b.Fatal(err)
	}
	wait := func(what string, ok func(d *api.Deployment) bool) time.Duration {
		deadline := time.Now().Add(5 * time.Minute)
		for {
			o, err := store.Get(ctx, "deployments", "default", "web")
			if err != nil {
				b.Fatal(err)
			}
			if ok(o.(*api.Deployment)) {
				return time.Since(start)
			}
			if time.Now().After(deadline) {
				b.Fatalf("timed out waiting for %s", what)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	bound = func() time.Duration {
		for {
			if agents.bound() >= replicas {
				return time.Since(start)
			}
			time.Sleep(2 * time.Millisecond)
		}
	}()
	avail = wait("all available", func(d *api.Deployment) bool { return int(d.Status.AvailableReplicas) == replicas })

	_, err := store.GuaranteedUpdate(ctx, "deployments", "default", "web", func(cur api.Object) (api.Object, error) {
		d := cur.(*api.Deployment)
		d.Spec.Template.Spec.Containers[0].Image = "nginx:2"
		d.Generation++
		return d, nil
	})
	if err != nil {
		b.Fatal(err)
	}
	start = time.Now()
	rollout = wait("the rollout", func(d *api.Deployment) bool {
		return d.Status.ObservedGeneration == 2 && int(d.Status.UpdatedReplicas) == replicas &&
			int(d.Status.AvailableReplicas) == replicas && int(d.Status.Replicas) == replicas
	})
	return bound, avail, rollout
}

// simAgents plays the agents of every node: a pod bound to a node becomes
// Running and Ready at once; a pod marked for deletion is removed at once.
type simAgents struct {
	store *storage.Store
	pods  *Informer

	mu     sync.Mutex
	dirty  map[string]bool
	notify chan struct{}
}

func newSimAgents(store *storage.Store, log *slog.Logger) *simAgents {
	a := &simAgents{store: store, pods: NewInformer(store, "pods", nil, log), dirty: map[string]bool{}, notify: make(chan struct{}, 1)}
	a.pods.AddHandler(func(_, cur api.Object) {
		if cur == nil || cur.(*api.Pod).Spec.NodeName == "" {
			return
		}
		a.mu.Lock()
		a.dirty[KeyOf(cur)] = true
		a.mu.Unlock()
		select {
		case a.notify <- struct{}{}:
		default:
		}
	})
	return a
}

// bound counts the active pods bound to a node.
func (a *simAgents) bound() int {
	n := 0
	for _, o := range a.pods.List() {
		if p := o.(*api.Pod); p.Spec.NodeName != "" && active(p) {
			n++
		}
	}
	return n
}

func (a *simAgents) run(ctx context.Context) {
	go a.pods.Run(ctx)
	for {
		select {
		case <-ctx.Done():
			return
		case <-a.notify:
		}
		a.mu.Lock()
		keys := a.dirty
		a.dirty = map[string]bool{}
		a.mu.Unlock()
		var updates []api.Object
		var wg sync.WaitGroup
		for k := range keys {
			o := a.pods.Get(k)
			if o == nil {
				continue
			}
			p := o.(*api.Pod)
			if p.DeletionTimestamp != nil {
				wg.Go(func() { a.store.Delete(ctx, "pods", p.Namespace, p.Name, "") })
				continue
			}
			if ready, _ := podReady(p); ready {
				continue
			}
			c := *p
			c.Status.Phase = api.PodRunning
			c.Status.Conditions = []api.PodCondition{{Type: api.PodReady, Status: api.ConditionTrue, LastTransitionTime: api.NewTime(time.Now())}}
			updates = append(updates, &c)
		}
		if len(updates) > 0 {
			a.store.UpdateBatch(ctx, updates)
		}
		wg.Wait()
	}
}

// startControlPlane runs the real scheduler and controllers on store
// until ctx ends; the caller waits for the returned group after that.
func startControlPlane(ctx context.Context, b *testing.B, store *storage.Store, log *slog.Logger) (*sync.WaitGroup, *Manager) {
	sched, err := scheduler.New(scheduler.Config{Store: store, Logger: log})
	if err != nil {
		b.Fatal(err)
	}
	m, err := New(Config{Store: store, Logger: log})
	if err != nil {
		b.Fatal(err)
	}
	wg := &sync.WaitGroup{}
	wg.Go(func() { sched.Run(ctx) })
	wg.Go(func() { m.Run(ctx) })
	return wg, m
}
