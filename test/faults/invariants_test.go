package faults

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/skiffhq/skiff/agent"
	"github.com/skiffhq/skiff/agent/cgroups"
	"github.com/skiffhq/skiff/agent/runtime"
	"github.com/skiffhq/skiff/agent/runtime/containerd"
	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/api/client"
)

func res(name string) api.ResourceInfo {
	r, ok := api.LookupResource(name)
	if !ok {
		panic("no resource " + name)
	}
	return r
}

// writeRecord is one acknowledged ConfigMap write: its name and value.
type writeRecord struct{ name, value string }

// writer creates a ConfigMap every interval until stop is called, and
// records each one the server acknowledged; failures (the server is
// away) are expected and not recorded.
func (c *cluster) writer(interval time.Duration) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			name, value := fmt.Sprintf("w-%06d", i), fmt.Sprintf("v%d-%d", i, time.Now().UnixNano())
			cm := &api.ConfigMap{TypeMeta: api.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
				ObjectMeta: api.ObjectMeta{Name: name, Namespace: "default"}, Data: map[string]string{"v": value}}
			wctx, wcancel := context.WithTimeout(ctx, 5*time.Second)
			_, err := c.admin.Create(wctx, cm)
			wcancel()
			if err == nil {
				c.writesMu.Lock()
				c.writes = append(c.writes, writeRecord{name, value})
				c.writesMu.Unlock()
			}
		}
	}()
	return func() { cancel(); wg.Wait() }
}

// pods lists every pod.
func (c *cluster) pods() []*api.Pod {
	objs, _, err := c.admin.List(context.Background(), res("pods"), "", client.ListOptions{})
	if err != nil {
		c.t.Fatalf("list pods: %v", err)
	}
	out := make([]*api.Pod, 0, len(objs))
	for _, o := range objs {
		out = append(out, o.(*api.Pod))
	}
	return out
}

// nodeReady is the node's Ready condition status ("True", "False",
// "Unknown") and its reason.
func nodeReady(n *api.Node) (string, string) {
	for _, cd := range n.Status.Conditions {
		if cd.Type == api.NodeReady {
			return cd.Status, cd.Reason
		}
	}
	return "", ""
}

func (c *cluster) waitNodeReady(name string, ready bool, d time.Duration) {
	c.t.Helper()
	c.eventually(d, fmt.Sprintf("node %s Ready=%v", name, ready), func() bool {
		o, err := c.admin.Get(context.Background(), res("nodes"), "", name)
		if err != nil {
			return false
		}
		s, _ := nodeReady(o.(*api.Node))
		return (s == api.ConditionTrue) == ready
	})
}

// eventually polls cond every 100 ms until it holds or d passes.
func (c *cluster) eventually(d time.Duration, what string, cond func() bool) {
	c.t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			if f, err := os.Create(filepath.Join(os.TempDir(), "skiff-faults-goroutines.txt")); err == nil {
				pprof.Lookup("goroutine").WriteTo(f, 2) //nolint:errcheck // a debugging aid
				f.Close()
			}
			c.t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// inspect lists what h's containerd holds (pods, containers, sandboxes).
func (h *agentHost) inspect() []runtime.PodStatus {
	t := h.c.t
	t.Helper()
	ctx := context.Background()
	rt, err := containerd.New(ctx, containerd.Config{Socket: h.cfg.Containerd, Namespace: agent.Namespace, DataDir: filepath.Join(h.cfg.DataDir, "agent"), CgroupRoot: h.cfg.CgroupRoot})
	if err != nil {
		t.Fatalf("inspect %s: %v", h.name, err)
	}
	defer rt.Close()
	// This runtime reaps exited tasks as it lists, beside the agent's,
	// which reaps them too: a delete that loses that race fails with
	// "ttrpc: closed" (the other delete shut the shim down). The task is
	// gone then, and the next list does not see it.
	var pods []runtime.PodStatus
	for try := 1; ; try++ {
		if pods, err = rt.ListPods(ctx); err == nil || try == 3 {
			break
		}
		t.Logf("inspect %s (try %d): %v", h.name, try, err)
		time.Sleep(200 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("inspect %s: %v", h.name, err)
	}
	return pods
}

// runningUIDs is the UIDs of h's pods with a running container, with
// the pod's namespace/name.
func runningUIDs(pods []runtime.PodStatus) map[string]string {
	out := map[string]string{}
	for _, p := range pods {
		for _, ct := range p.Containers {
			if ct.State == runtime.StateRunning {
				out[p.UID] = p.Namespace + "/" + p.Name
			}
		}
	}
	return out
}

// vethsIn counts the veth links in the namespace at path other than the
// host's own link (eth0).
func vethsIn(path string) (int, error) {
	ns, err := netns.GetFromPath(path)
	if err != nil {
		return 0, err
	}
	defer ns.Close()
	h, err := netlink.NewHandleAt(ns, unix.NETLINK_ROUTE)
	if err != nil {
		return 0, err
	}
	defer h.Close()
	links, err := h.LinkList()
	if err != nil {
		return 0, err
	}
	n := 0
	for _, l := range links {
		if l.Type() == "veth" && l.Attrs().Name != "eth0" {
			n++
		}
	}
	return n, nil
}

// violations reports what breaks the invariants now: a pod running on
// two nodes (or twice by name), a running container of a pod its node
// should not run, a pod cgroup or veth without a sandbox; and an
// acknowledged write that is gone. static lists pod names (namespace/
// name) the agents run from files, which the API knows as mirror pods.
func (c *cluster) violations() []string {
	var out []string
	apiPods := map[string]*api.Pod{}
	for _, p := range c.pods() {
		apiPods[string(p.UID)] = p
	}
	byUID, byName := map[string]string{}, map[string]string{}
	for _, h := range c.hosts {
		if h.cfg.DataDir == "" {
			continue
		}
		pods := h.inspect()
		for uid, name := range runningUIDs(pods) {
			if other, ok := byUID[uid]; ok {
				out = append(out, fmt.Sprintf("pod %s (%s) runs on %s and %s", name, uid, other, h.name))
			}
			if other, ok := byName[name]; ok {
				out = append(out, fmt.Sprintf("pod %s runs on %s and %s", name, other, h.name))
			}
			byUID[uid], byName[name] = h.name, h.name
			if c.static[name] {
				continue // static pods: their UID is the file's, not the API's
			}
			p, ok := apiPods[uid]
			switch {
			case !ok:
				out = append(out, fmt.Sprintf("%s: pod %s (%s) runs but is not in the API", h.name, name, uid))
			case p.Spec.NodeName != h.name:
				out = append(out, fmt.Sprintf("%s: pod %s runs but is bound to %q", h.name, name, p.Spec.NodeName))
			case p.Status.Phase == api.PodFailed || p.Status.Phase == api.PodSucceeded:
				out = append(out, fmt.Sprintf("%s: pod %s runs but is %s (%s)", h.name, name, p.Status.Phase, p.Status.Reason))
			}
		}
		sandboxes, netted := map[string]bool{}, 0
		for _, p := range pods {
			if p.Sandbox != nil {
				sandboxes[p.UID] = true
				if p.Sandbox.NetNSPath != "" {
					netted++
				}
			}
		}
		cg, err := cgroups.New(h.cfg.CgroupRoot)
		if err != nil {
			out = append(out, fmt.Sprintf("%s: cgroups: %v", h.name, err))
		} else if cgs, err := cg.Pods(); err != nil {
			out = append(out, fmt.Sprintf("%s: pod cgroups: %v", h.name, err))
		} else {
			for _, p := range cgs {
				if !sandboxes[p.UID] {
					out = append(out, fmt.Sprintf("%s: orphan pod cgroup %s", h.name, p.UID))
				}
			}
		}
		if n, err := vethsIn(h.nsPath); err != nil {
			out = append(out, fmt.Sprintf("%s: veths: %v", h.name, err))
		} else if n != netted {
			out = append(out, fmt.Sprintf("%s: %d pod veths for %d pod sandboxes", h.name, n, netted))
		}
	}
	c.writesMu.Lock()
	writes := append([]writeRecord(nil), c.writes...)
	c.writesMu.Unlock()
	for _, w := range writes {
		o, err := c.admin.Get(context.Background(), res("configmaps"), "default", w.name)
		if err != nil {
			out = append(out, fmt.Sprintf("acknowledged write %s lost: %v", w.name, err))
			continue
		}
		if got := o.(*api.ConfigMap).Data["v"]; got != w.value {
			out = append(out, fmt.Sprintf("acknowledged write %s: value %q, want %q", w.name, got, w.value))
		}
	}
	sort.Strings(out)
	return out
}

// checkInvariants waits up to d for the invariants to hold (pods are
// stopped and cleaned up in real time), and fails the test with what
// still breaks them.
func (c *cluster) checkInvariants(d time.Duration) {
	c.t.Helper()
	deadline := time.Now().Add(d)
	for {
		v := c.violations()
		if len(v) == 0 {
			c.writesMu.Lock()
			c.t.Logf("invariants hold (%d acknowledged writes read back)", len(c.writes))
			c.writesMu.Unlock()
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("invariants broken after %v:\n  %s", d, strings.Join(v, "\n  "))
		}
		time.Sleep(500 * time.Millisecond)
	}
}
