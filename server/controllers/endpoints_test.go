package controllers

import (
	"fmt"
	"slices"
	"testing"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/storage"
)

func epPod(name, ip string, ready bool) *api.Pod {
	p := &api.Pod{
		ObjectMeta: api.ObjectMeta{Namespace: "default", Name: name, Labels: map[string]string{"app": "web"}},
		Spec: api.PodSpec{NodeName: "n1", Containers: []api.Container{{Name: "c", Image: "nginx",
			Ports: []api.ContainerPort{{Name: "http", ContainerPort: 8080}}}}},
		Status: api.PodStatus{Phase: api.PodRunning, PodIP: ip},
	}
	st := api.ConditionFalse
	if ready {
		st = api.ConditionTrue
	}
	p.Status.Conditions = []api.PodCondition{{Type: api.PodReady, Status: st}}
	return p
}

func webService() *api.Service {
	return &api.Service{
		ObjectMeta: api.ObjectMeta{Namespace: "default", Name: "web", UID: "svc-uid", Labels: map[string]string{"tier": "front"}},
		Spec: api.ServiceSpec{ClusterIP: "10.43.0.20", Selector: map[string]string{"app": "web"},
			Ports: []api.ServicePort{{Name: "http", Port: 80, TargetPort: api.FromString("http")}, {Name: "metrics", Port: 9090}}},
	}
}

func TestPlanSlicesSpreadsAndKeepsPlaces(t *testing.T) {
	svc := webService()
	api.SetDefaults(svc)
	var pods []*api.Pod
	for i := range 250 {
		pods = append(pods, epPod(fmt.Sprintf("p%03d", i), fmt.Sprintf("10.42.%d.%d", i/200, i%200+1), true))
	}
	eps := serviceEndpoints(svc, pods)
	plan := planSlices(svc, eps, nil)
	var sizes []int
	for _, s := range plan.create {
		sizes = append(sizes, len(s.Endpoints))
		if s.Labels[api.LabelServiceName] != "web" || s.Labels[api.LabelManagedBy] != api.EndpointSliceController || s.Labels["tier"] != "front" {
			t.Errorf("slice labels = %v", s.Labels)
		}
	}
	if !slices.Equal(sizes, []int{100, 100, 50}) || len(plan.update) != 0 || len(plan.delete) != 0 {
		t.Fatalf("planSlices(250 endpoints) created %v, updated %d, deleted %d; want 100,100,50 created", sizes, len(plan.update), len(plan.delete))
	}
	for i, s := range plan.create {
		s.Name = fmt.Sprintf("web-%d", i)
	}
	// One pod goes and two come: only the slice that lost one and the
	// one with room change.
	pods = append(pods[1:], epPod("q1", "10.42.9.1", true), epPod("q2", "10.42.9.2", true))
	plan2 := planSlices(svc, serviceEndpoints(svc, pods), plan.create)
	if len(plan2.create) != 0 || len(plan2.delete) != 0 || len(plan2.update) != 2 {
		t.Fatalf("after one pod left and two came: create %d update %d delete %d; want 0, 2, 0", len(plan2.create), len(plan2.update), len(plan2.delete))
	}
	total := 0
	for _, s := range plan2.update {
		if len(s.Endpoints) > api.MaxEndpointsPerSlice {
			t.Errorf("slice %s has %d endpoints; want at most 100", s.Name, len(s.Endpoints))
		}
	}
	for _, s := range plan.create {
		if i := slices.IndexFunc(plan2.update, func(u *api.EndpointSlice) bool { return u.Name == s.Name }); i >= 0 {
			total += len(plan2.update[i].Endpoints)
		} else {
			total += len(s.Endpoints)
		}
	}
	if total != 251 {
		t.Errorf("endpoints after the change = %d; want 251", total)
	}
}

func TestServiceEndpointsConditions(t *testing.T) {
	svc := webService()
	api.SetDefaults(svc)
	term := epPod("c-term", "10.42.0.3", true)
	term.DeletionTimestamp = api.NewTimePtr(epoch)
	done := epPod("d-done", "10.42.0.4", true)
	done.Status.Phase = api.PodSucceeded
	other := epPod("e-other", "10.42.0.5", true)
	other.Labels = map[string]string{"app": "db"}
	noIP := epPod("f-noip", "", true)
	pods := []*api.Pod{epPod("a-ready", "10.42.0.1", true), epPod("b-unready", "10.42.0.2", false), term, done, other, noIP}

	eps := serviceEndpoints(svc, pods)
	type cond struct{ ready, serving, term bool }
	got := map[string]cond{}
	for _, e := range eps {
		got[e.pod.Name] = cond{e.ready, e.serving, e.term}
		if p := e.ports; len(p) != 2 || *p[0].Port != 8080 || *p[1].Port != 9090 {
			t.Errorf("%s ports = %+v; want http→8080 (named) and 9090", e.pod.Name, p)
		}
	}
	want := map[string]cond{"a-ready": {true, true, false}, "b-unready": {false, false, false}, "c-term": {false, true, true}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("serviceEndpoints conditions = %v; want %v", got, want)
	}
	e := desiredEndpoints(svc, eps)
	if len(e.Subsets) != 1 || len(e.Subsets[0].Addresses) != 1 || e.Subsets[0].Addresses[0].IP != "10.42.0.1" ||
		len(e.Subsets[0].NotReadyAddresses) != 1 || e.Subsets[0].NotReadyAddresses[0].IP != "10.42.0.2" {
		t.Errorf("desiredEndpoints = %+v; want ready 10.42.0.1, not ready 10.42.0.2, terminating left out", e.Subsets)
	}

	svc.Spec.PublishNotReadyAddresses = true
	for _, e := range serviceEndpoints(svc, pods) {
		if !e.ready || !e.serving {
			t.Errorf("publishNotReadyAddresses: %s ready %v serving %v; want both true", e.pod.Name, e.ready, e.serving)
		}
	}
}

func (h *harness) listSlices() []*api.EndpointSlice {
	h.t.Helper()
	objs, _, err := h.store.List(h.ctx, "endpointslices", storage.ListOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	out := make([]*api.EndpointSlice, len(objs))
	for i, o := range objs {
		out[i] = o.(*api.EndpointSlice)
	}
	return out
}

func sliceReady(ss []*api.EndpointSlice) map[string]bool {
	out := map[string]bool{}
	for _, s := range ss {
		for _, e := range s.Endpoints {
			out[e.Addresses[0]] = *e.Conditions.Ready
		}
	}
	return out
}

func TestEndpointsControllerFollowsPods(t *testing.T) {
	h := newHarness(t)
	h.create(webService())
	h.settle()
	ss := h.listSlices()
	if len(ss) != 1 || len(ss[0].Endpoints) != 0 {
		t.Fatalf("a Service without pods has slices %+v; want one empty slice", ss)
	}
	h.create(epPod("a", "10.42.0.1", true))
	h.create(epPod("b", "10.42.0.2", true))
	h.settle()
	if got := sliceReady(h.listSlices()); fmt.Sprint(got) != "map[10.42.0.1:true 10.42.0.2:true]" {
		t.Fatalf("slices after two ready pods = %v", got)
	}
	if len(h.listSlices()) != 1 {
		t.Errorf("slices = %d; want the placeholder replaced by one slice", len(h.listSlices()))
	}

	// A pod turning unready leaves the ready set.
	h.edit("pods", "default", "b", func(o api.Object) {
		o.(*api.Pod).Status.Conditions[0].Status = api.ConditionFalse
	})
	h.settle()
	if got := sliceReady(h.listSlices()); fmt.Sprint(got) != "map[10.42.0.1:true 10.42.0.2:false]" {
		t.Errorf("slices after b turned unready = %v", got)
	}
	e := h.get("endpoints", "default", "web").(*api.Endpoints)
	if len(e.Subsets) != 1 || len(e.Subsets[0].Addresses) != 1 || len(e.Subsets[0].NotReadyAddresses) != 1 {
		t.Errorf("endpoints after b turned unready = %+v", e.Subsets)
	}

	// Deleting the Service removes its slices and Endpoints.
	h.remove("services", "default", "web")
	h.settle()
	if ss := h.listSlices(); len(ss) != 0 {
		t.Errorf("slices after the Service was deleted = %d; want 0", len(ss))
	}
	if _, err := h.store.Get(h.ctx, "endpoints", "default", "web"); err == nil {
		t.Error("endpoints remain after the Service was deleted")
	}
}

func TestEndpointsControllerLeavesSelectorlessServices(t *testing.T) {
	h := newHarness(t)
	svc := webService()
	svc.Spec.Selector = nil
	h.create(svc)
	own := &api.Endpoints{ObjectMeta: api.ObjectMeta{Namespace: "default", Name: "web"},
		Subsets: []api.EndpointSubset{{Addresses: []api.EndpointAddress{{IP: "192.0.2.1"}}}}}
	h.create(own)
	h.create(epPod("a", "10.42.0.1", true))
	h.settle()
	e := h.get("endpoints", "default", "web").(*api.Endpoints)
	if len(e.Subsets) != 1 || e.Subsets[0].Addresses[0].IP != "192.0.2.1" {
		t.Errorf("user's endpoints became %+v; want them left alone", e.Subsets)
	}
	if ss := h.listSlices(); len(ss) != 0 {
		t.Errorf("slices for a selectorless Service = %d; want 0", len(ss))
	}
}

func TestSliceEndpointHostname(t *testing.T) {
	svc := webService()
	p := epPod("db-0", "10.42.0.9", true)
	p.Spec.Hostname, p.Spec.Subdomain = "db-0", "web"
	other := epPod("x", "10.42.0.10", true)
	other.Spec.Hostname, other.Spec.Subdomain = "x", "elsewhere"
	eps := serviceEndpoints(svc, []*api.Pod{p, other})
	if h := sliceEndpoint(svc, &eps[0]).Hostname; h == nil || *h != "db-0" {
		t.Errorf("hostname of a pod whose subdomain is the Service = %v; want db-0", h)
	}
	if h := sliceEndpoint(svc, &eps[1]).Hostname; h != nil {
		t.Errorf("hostname of a pod of another subdomain = %q; want none", *h)
	}
}
