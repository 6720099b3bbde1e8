package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/internal/testenv"
)

// fleet plays simulated nodes against a real server, through the API
// only: nodes are created and heartbeat with status writes, and each
// live node's "agent" runs the pods bound to it (Running, Ready) and
// confirms the deletion of pods marked for deletion, as a real agent does.
type fleet struct {
	h     *harness
	admin string
	nodes []string
}

func newFleet(t *testing.T, h *harness, nodes ...string) *fleet {
	f := &fleet{h: h, admin: h.adminToken(), nodes: nodes}
	for _, n := range nodes {
		h.mustDo("POST", "/api/v1/nodes", f.admin, `{"apiVersion":"v1","kind":"Node","metadata":{"name":"`+n+`"}}`, 201)
	}
	f.beat(nodes...)
	return f
}

// beat writes the status of each node: a heartbeat at the server's time.
func (f *fleet) beat(nodes ...string) {
	now := f.h.clk.Now().UTC().Format(time.RFC3339)
	for _, n := range nodes {
		f.h.mustDo("PATCH", "/api/v1/nodes/"+n+"/status", f.admin, fmt.Sprintf(`{"status":{`+
			`"capacity":{"cpu":"8","memory":"16Gi","pods":"110"},"allocatable":{"cpu":"8","memory":"16Gi","pods":"110"},`+
			`"conditions":[{"type":"Ready","status":"True","reason":"KubeletReady","lastHeartbeatTime":%q}]}}`, now), 200)
	}
}

func (f *fleet) pods() []api.Pod {
	var l struct{ Items []api.Pod }
	if err := json.Unmarshal(f.h.mustDo("GET", "/api/v1/namespaces/default/pods", f.admin, "", 200), &l); err != nil {
		f.h.t.Fatal(err)
	}
	return l.Items
}

// run plays the agents of live nodes once.
func (f *fleet) run(live ...string) {
	for _, p := range f.pods() {
		if !slices.Contains(live, p.Spec.NodeName) {
			continue
		}
		if p.DeletionTimestamp != nil {
			code, b := f.h.do("DELETE", "/api/v1/namespaces/default/pods/"+p.Name+"?gracePeriodSeconds=0", f.admin, "")
			if code != http.StatusOK && code != http.StatusNotFound {
				f.h.t.Fatalf("confirm deletion of %s = %d %s", p.Name, code, b)
			}
			continue
		}
		ready := false
		for _, c := range p.Status.Conditions {
			ready = ready || (c.Type == api.PodReady && c.Status == api.ConditionTrue)
		}
		if ready || p.Status.Phase == api.PodFailed {
			continue
		}
		now := f.h.clk.Now().UTC().Format(time.RFC3339)
		code, b := f.h.do("PATCH", "/api/v1/namespaces/default/pods/"+p.Name+"/status", f.admin,
			fmt.Sprintf(`{"status":{"phase":"Running","conditions":[{"type":"Ready","status":"True","lastTransitionTime":%q}]}}`, now))
		if code != http.StatusOK && code != http.StatusNotFound && code != http.StatusConflict {
			f.h.t.Fatalf("run %s = %d %s", p.Name, code, b)
		}
	}
}

// counts of the pods of owner kind/name.
type fleetCounts struct {
	active, ready, terminating int
	byNode                     map[string]int
	images                     map[string]int
}

// A Deployment's pods are those of its ReplicaSets.
func (f *fleet) count(kind, name string) fleetCounts {
	c := fleetCounts{byNode: map[string]int{}, images: map[string]int{}}
	owners := map[string]bool{kind + "/" + name: true}
	if kind == "Deployment" {
		for _, rs := range f.replicaSets(name) {
			owners["ReplicaSet/"+rs.Name] = true
		}
	}
	for _, p := range f.pods() {
		if len(p.OwnerReferences) == 0 || !owners[p.OwnerReferences[0].Kind+"/"+p.OwnerReferences[0].Name] {
			continue
		}
		if p.DeletionTimestamp != nil {
			c.terminating++
			continue
		}
		if p.Status.Phase == api.PodFailed || p.Status.Phase == api.PodSucceeded {
			continue
		}
		c.active++
		c.byNode[p.Spec.NodeName]++
		c.images[p.Spec.Containers[0].Image]++
		for _, cd := range p.Status.Conditions {
			if cd.Type == api.PodReady && cd.Status == api.ConditionTrue {
				c.ready++
			}
		}
	}
	return c
}

// until runs the live agents and checks ok until it holds (real-time
// deadline: the controllers run on their own goroutines).
func (f *fleet) until(what string, live []string, ok func() bool) {
	f.h.t.Helper()
	deadline := time.Now().Add(testenv.Bound(30 * time.Second))
	for !ok() {
		if time.Now().After(deadline) {
			f.h.t.Fatalf("timed out waiting for %s", what)
		}
		f.run(live...)
		time.Sleep(20 * time.Millisecond)
	}
}

// tableRow returns the cells of the first row of the server-side table
// kubectl asks for.
func (f *fleet) tableRow(path string) []any {
	req, err := http.NewRequest("GET", f.h.info.URL+path, nil)
	if err != nil {
		f.h.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+f.admin)
	req.Header.Set("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
	resp, err := f.h.client.Do(req)
	if err != nil {
		f.h.t.Fatal(err)
	}
	defer resp.Body.Close()
	var tbl api.Table
	if err := json.NewDecoder(resp.Body).Decode(&tbl); err != nil || len(tbl.Rows) == 0 {
		f.h.t.Fatalf("table of %s: %v (%d rows)", path, err, len(tbl.Rows))
	}
	return tbl.Rows[0].Cells
}

// replicaSets returns the ReplicaSets the Deployment name controls.
func (f *fleet) replicaSets(deploy string) []api.ReplicaSet {
	var l struct{ Items []api.ReplicaSet }
	if err := json.Unmarshal(f.h.mustDo("GET", "/apis/apps/v1/namespaces/default/replicasets", f.admin, "", 200), &l); err != nil {
		f.h.t.Fatal(err)
	}
	var out []api.ReplicaSet
	for _, rs := range l.Items {
		for _, r := range rs.OwnerReferences {
			if r.Kind == "Deployment" && r.Name == deploy && r.Controller != nil && *r.Controller {
				out = append(out, rs)
			}
		}
	}
	return out
}

func (f *fleet) deployment(name string) api.Deployment {
	var d api.Deployment
	json.Unmarshal(f.h.mustDo("GET", "/apis/apps/v1/namespaces/default/deployments/"+name, f.admin, "", 200), &d)
	return d
}

// TestControllersIntegration runs the controllers inside a real server
// with simulated nodes: replicas kept when pods are deleted, scale up and
// down, a rolling update that never drops below maxUnavailable, a
// DaemonSet following node labels, a node going silent → NotReady → pods
// replaced on live nodes, and garbage collection on delete.
func TestControllersIntegration(t *testing.T) {
	h := startHarnessWith(t, "", nil, func(c *Config) { c.DisableControllers = false })
	all := []string{"edge-1", "edge-2", "edge-3"}
	f := newFleet(t, h, all...)
	h.mustDo("POST", "/apis/apps/v1/namespaces/default/deployments", f.admin, `{"apiVersion":"apps/v1","kind":"Deployment",
		"metadata":{"name":"web"},"spec":{"replicas":4,"selector":{"matchLabels":{"app":"web"}},
		"strategy":{"type":"RollingUpdate","rollingUpdate":{"maxSurge":1,"maxUnavailable":1}},
		"template":{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"name":"c","image":"nginx:1"}]}}}}`, 201)
	ready := func(n int) func() bool {
		return func() bool {
			d := f.deployment("web")
			c := f.count("Deployment", "web")
			return d.Status.ReadyReplicas == int32(n) && d.Status.AvailableReplicas == int32(n) && c.active == n && c.terminating == 0
		}
	}
	f.until("4 ready replicas", all, ready(4))
	// kubectl get deployments (server-side table): READY UP-TO-DATE AVAILABLE.
	if cells := f.tableRow("/apis/apps/v1/namespaces/default/deployments"); len(cells) < 4 || fmt.Sprint(cells[:4]) != "[web 4/4 4 4]" {
		t.Errorf("deployment table row = %v; want web 4/4 4 4", cells)
	}

	// A deleted pod is replaced.
	victim := f.pods()[0].Name
	h.mustDo("DELETE", "/api/v1/namespaces/default/pods/"+victim, f.admin, "", 200)
	f.until("the deleted pod to be replaced", all, func() bool {
		for _, p := range f.pods() {
			if p.Name == victim {
				return false
			}
		}
		return ready(4)()
	})

	// Scale through the scale subresource and a patch.
	h.mustDo("PATCH", "/apis/apps/v1/namespaces/default/deployments/web/scale", f.admin, `{"spec":{"replicas":7}}`, 200)
	f.until("7 replicas", all, ready(7))
	h.mustDo("PATCH", "/apis/apps/v1/namespaces/default/deployments/web", f.admin, `{"spec":{"replicas":3}}`, 200)
	f.until("3 replicas", all, ready(3))

	// A rolling update never leaves fewer than replicas-maxUnavailable ready.
	h.mustDo("PATCH", "/apis/apps/v1/namespaces/default/deployments/web", f.admin,
		`{"spec":{"template":{"spec":{"containers":[{"name":"c","image":"nginx:2"}]}}}}`, 200)
	f.until("the rollout to finish", all, func() bool {
		c := f.count("Deployment", "web")
		if c.ready < 2 {
			t.Fatalf("rolling update dropped to %d ready pods; want at least 2", c.ready)
		}
		if c.active > 4 {
			t.Fatalf("rolling update ran %d pods; want at most 4", c.active)
		}
		d := f.deployment("web")
		return c.images["nginx:2"] == 3 && c.active == 3 && d.Status.UpdatedReplicas == 3 && d.Status.AvailableReplicas == 3 &&
			d.Annotations["deployment.kubernetes.io/revision"] == "2"
	})

	// A DaemonSet follows node labels.
	h.mustDo("POST", "/apis/apps/v1/namespaces/default/daemonsets", f.admin, `{"apiVersion":"apps/v1","kind":"DaemonSet",
		"metadata":{"name":"logs"},"spec":{"selector":{"matchLabels":{"app":"logs"}},
		"template":{"metadata":{"labels":{"app":"logs"}},"spec":{"nodeSelector":{"logs":"on"},"containers":[{"name":"c","image":"fluent-bit:3"}]}}}}`, 201)
	for _, n := range []string{"edge-1", "edge-2"} {
		h.mustDo("PATCH", "/api/v1/nodes/"+n, f.admin, `{"metadata":{"labels":{"logs":"on"}}}`, 200)
	}
	daemons := func(nodes ...string) func() bool {
		return func() bool {
			c := f.count("DaemonSet", "logs")
			if c.active != len(nodes) || c.terminating != 0 {
				return false
			}
			for _, n := range nodes {
				if c.byNode[n] != 1 {
					return false
				}
			}
			return true
		}
	}
	f.until("daemons on edge-1 and edge-2", all, daemons("edge-1", "edge-2"))
	h.mustDo("PATCH", "/api/v1/nodes/edge-1", f.admin, `{"metadata":{"labels":{"logs":null}}}`, 200)
	h.mustDo("PATCH", "/api/v1/nodes/edge-3", f.admin, `{"metadata":{"labels":{"logs":"on"}}}`, 200)
	f.until("daemons on edge-2 and edge-3", all, daemons("edge-2", "edge-3"))

	// A node goes silent: NotReady after the grace, its Deployment pods
	// replaced on live nodes after the eviction timeout; its daemon stays.
	// The silent node is one of the two with a daemon that also runs web
	// pods (where the scheduler put them is its business).
	byNode := f.count("Deployment", "web").byNode
	silent := "edge-3"
	if byNode[silent] == 0 {
		silent = "edge-2"
	}
	if byNode[silent] == 0 {
		t.Fatalf("setup: no web pod on edge-2 or edge-3 (%v)", byNode)
	}
	var live []string
	for _, n := range all {
		if n != silent {
			live = append(live, n)
		}
	}
	before := byNode[silent]
	step := func(d time.Duration) {
		for elapsed := time.Duration(0); elapsed < d; elapsed += 5 * time.Second {
			h.clk.Advance(5 * time.Second)
			f.beat(live...)
			f.run(live...)
		}
	}
	step(45 * time.Second)
	f.until(silent+" to be unreachable", live, func() bool {
		var n api.Node
		json.Unmarshal(h.mustDo("GET", "/api/v1/nodes/"+silent, f.admin, "", 200), &n)
		for _, c := range n.Status.Conditions {
			if c.Type == api.NodeReady && c.Status == api.ConditionUnknown {
				return len(n.Spec.Taints) == 2
			}
		}
		return false
	})
	step(60 * time.Second)
	f.until(silent+"'s web pods replaced on live nodes", live, func() bool {
		h.clk.Advance(time.Second) // let the monitor tick again if it raced
		f.beat(live...)
		c := f.count("Deployment", "web")
		return c.byNode[silent] == 0 && c.ready == 3 && c.terminating == before
	})
	if c := f.count("DaemonSet", "logs"); c.byNode[silent] != 1 {
		t.Errorf("daemon pods %v after the node went silent; want it kept (daemons tolerate unreachable)", c.byNode)
	}
	// The node returns: its agent stops the replaced copies.
	f.beat(all...)
	f.until("no duplicates after the node returned", all, func() bool {
		c := f.count("Deployment", "web")
		return c.terminating == 0 && c.active == 3
	})

	// Deleting the owners deletes their pods.
	h.mustDo("DELETE", "/apis/apps/v1/namespaces/default/deployments/web", f.admin, "", 200)
	h.mustDo("DELETE", "/apis/apps/v1/namespaces/default/daemonsets/logs", f.admin, "", 200)
	f.until("every pod to be collected", all, func() bool { return len(f.pods()) == 0 })
	events := string(h.mustDo("GET", "/api/v1/namespaces/default/events", f.admin, "", 200))
	for _, want := range []string{"ScalingReplicaSet", "SuccessfulCreate", "NodeNotReady", "TaintManagerEviction"} {
		if !strings.Contains(events, want) {
			t.Errorf("events lack %s", want)
		}
	}
}
