package apiserver

import (
	"context"
	"encoding/json"
	"net/http"
	"net/netip"
	"testing"

	"github.com/skiffhq/skiff/api"
)

const svcPath = "/api/v1/namespaces/default/services"

func svcJSON(name, extra string) string {
	return `{"apiVersion":"v1","kind":"Service","metadata":{"name":"` + name + `"},"spec":{"selector":{"app":"web"},"ports":[{"name":"http","port":80,"targetPort":"http"},{"name":"dns","port":53,"protocol":"UDP"}]` + extra + `}}`
}

func (h *harness) createService(name, extra string, wantCode int) (*api.Service, api.Status) {
	h.t.Helper()
	code, b := h.do(http.MethodPost, svcPath, "application/json", svcJSON(name, extra))
	if code != wantCode {
		h.t.Fatalf("POST service %s%s = %d %s; want %d", name, extra, code, b, wantCode)
	}
	var s api.Service
	var st api.Status
	if code == http.StatusCreated {
		if err := json.Unmarshal(b, &s); err != nil {
			h.t.Fatal(err)
		}
	} else if err := json.Unmarshal(b, &st); err != nil {
		h.t.Fatal(err)
	}
	return &s, st
}

func causes(st api.Status) []string {
	var out []string
	if st.Details != nil {
		for _, c := range st.Details.Causes {
			out = append(out, c.Field)
		}
	}
	return out
}

func TestServiceAllocationCreateRequestDelete(t *testing.T) {
	h := newHarness(t)
	s, _ := h.createService("web", `,"type":"NodePort"`, http.StatusCreated)
	ip, err := netip.ParseAddr(s.Spec.ClusterIP)
	if err != nil || !netip.MustParsePrefix("10.43.0.0/16").Contains(ip) || s.Spec.ClusterIPs[0] != s.Spec.ClusterIP {
		t.Fatalf("created service clusterIP %q clusterIPs %v; want an address of 10.43.0.0/16", s.Spec.ClusterIP, s.Spec.ClusterIPs)
	}
	for i, p := range s.Spec.Ports {
		if p.NodePort < 30000 || p.NodePort > 32767 {
			t.Errorf("ports[%d].nodePort = %d; want 30000-32767", i, p.NodePort)
		}
	}
	if s.Spec.Ports[0].TargetPort != api.FromString("http") || s.Spec.Ports[1].TargetPort != api.FromInt(53) {
		t.Errorf("targetPorts = %v, %v; want http, 53", s.Spec.Ports[0].TargetPort, s.Spec.Ports[1].TargetPort)
	}

	// The same address or node port again is refused with 422 naming the field.
	_, st := h.createService("clash", `,"type":"NodePort","clusterIP":"`+s.Spec.ClusterIP+`"`, http.StatusUnprocessableEntity)
	if c := causes(st); len(c) != 1 || c[0] != "spec.clusterIPs" {
		t.Errorf("duplicate clusterIP causes = %v; want spec.clusterIPs", c)
	}
	np := s.Spec.Ports[0].NodePort
	_, st = h.createService("clash", `,"type":"NodePort","ports":[{"port":80,"nodePort":`+itoa(np)+`}]`, http.StatusUnprocessableEntity)
	if c := causes(st); len(c) != 1 || c[0] != "spec.ports[0].nodePort" {
		t.Errorf("duplicate nodePort causes = %v; want spec.ports[0].nodePort", c)
	}
	_, st = h.createService("out", `,"clusterIP":"10.99.0.1"`, http.StatusUnprocessableEntity)
	if c := causes(st); len(c) != 1 || c[0] != "spec.clusterIPs" {
		t.Errorf("out-of-range clusterIP causes = %v; want spec.clusterIPs", c)
	}
	// A requested free address is honoured; a headless Service takes none.
	if r, _ := h.createService("fixed", `,"clusterIP":"10.43.7.7"`, http.StatusCreated); r.Spec.ClusterIP != "10.43.7.7" {
		t.Errorf("requested clusterIP = %q; want 10.43.7.7", r.Spec.ClusterIP)
	}
	if r, _ := h.createService("headless", `,"clusterIP":"None"`, http.StatusCreated); r.Spec.ClusterIP != "None" {
		t.Errorf("headless clusterIP = %q; want None", r.Spec.ClusterIP)
	}

	// A PUT without clusterIP and nodePorts keeps them.
	s.Spec.ClusterIP, s.Spec.ClusterIPs = "", nil
	s.Spec.Ports[0].NodePort = 0
	b, _ := json.Marshal(s)
	code, out := h.do(http.MethodPut, svcPath+"/web", "application/json", string(b))
	var put api.Service
	if code != 200 || json.Unmarshal(out, &put) != nil || put.Spec.ClusterIP != ip.String() || put.Spec.Ports[0].NodePort != np {
		t.Fatalf("PUT without clusterIP = %d %s; want the old address %s and nodePort %d kept", code, out, ip, np)
	}
	// Changing the cluster IP is refused.
	code, out = h.do(http.MethodPatch, svcPath+"/web", "application/merge-patch+json", `{"spec":{"clusterIP":"10.43.9.9","clusterIPs":["10.43.9.9"]}}`)
	if code != http.StatusUnprocessableEntity {
		t.Errorf("PATCH clusterIP = %d %s; want 422", code, out)
	}
	// Deleting releases: the address and node port can be asked for again.
	if code, out := h.do(http.MethodDelete, svcPath+"/web", "", ""); code != 200 {
		t.Fatalf("DELETE = %d %s", code, out)
	}
	h.createService("again", `,"type":"NodePort","clusterIP":"`+ip.String()+`","ports":[{"port":80,"nodePort":`+itoa(np)+`}]`, http.StatusCreated)
}

func itoa(v int32) string { b, _ := json.Marshal(v); return string(b) }

// TestServiceAllocationSurvivesRestart checks that a new Server over the
// same store (a restart) knows every address and port already taken.
func TestServiceAllocationSurvivesRestart(t *testing.T) {
	h := newHarness(t)
	s, _ := h.createService("web", `,"type":"NodePort"`, http.StatusCreated)
	srv, err := New(Config{Store: h.store, Clock: h.clock})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Bootstrap(context.Background()); err != nil {
		t.Fatal(err)
	}
	h.srv = srv
	mux := http.NewServeMux()
	mux.HandleFunc("/api/", srv.ServeResource)
	h.http.Config.Handler = mux
	_, st := h.createService("clash", `,"type":"NodePort","clusterIP":"`+s.Spec.ClusterIP+`","ports":[{"port":80,"nodePort":`+itoa(s.Spec.Ports[1].NodePort)+`}]`, http.StatusUnprocessableEntity)
	if c := causes(st); len(c) != 2 {
		t.Errorf("after restart, duplicate causes = %v; want spec.clusterIPs and spec.ports[0].nodePort", c)
	}
	ips, ports := srv.services.Used()
	if ips != 2 || ports != 2 { // web and kubernetes; web's two node ports
		t.Errorf("after restart Used() = %d, %d; want 2, 2", ips, ports)
	}
}

func TestKubernetesService(t *testing.T) {
	h := newHarness(t)
	srv, err := New(Config{Store: h.store, Clock: h.clock, APIEndpoint: netip.MustParseAddrPort("192.0.2.10:7443")})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Bootstrap(context.Background()); err != nil {
		t.Fatal(err)
	}
	obj, err := h.store.Get(context.Background(), "services", "default", "kubernetes")
	if err != nil {
		t.Fatal(err)
	}
	s := obj.(*api.Service)
	if s.Spec.ClusterIP != "10.43.0.1" || s.Spec.Ports[0].Port != 443 || s.Spec.Ports[0].TargetPort != api.FromInt(7443) {
		t.Errorf("kubernetes service = %+v; want 10.43.0.1:443 → 7443", s.Spec)
	}
	sl, err := h.store.Get(context.Background(), "endpointslices", "default", "kubernetes")
	if err != nil {
		t.Fatal(err)
	}
	if got := sl.(*api.EndpointSlice).Endpoints[0].Addresses[0]; got != "192.0.2.10" {
		t.Errorf("kubernetes endpoint = %s; want 192.0.2.10", got)
	}
}

func TestServiceStatusIsASubresource(t *testing.T) {
	h := newHarness(t)
	s, _ := h.createService("lb", `,"type":"LoadBalancer"},"status":{"loadBalancer":{"ingress":[{"ip":"192.0.2.9"}]}`, http.StatusCreated)
	if len(s.Status.LoadBalancer.Ingress) != 0 {
		t.Errorf("create kept a client's status %+v; want it reset", s.Status)
	}
	code, b := h.do(http.MethodPatch, svcPath+"/lb/status", "application/merge-patch+json", `{"status":{"loadBalancer":{"ingress":[{"ip":"192.0.2.9"}]}}}`)
	var got api.Service
	if code != 200 || json.Unmarshal(b, &got) != nil || len(got.Status.LoadBalancer.Ingress) != 1 || got.Spec.ClusterIP != s.Spec.ClusterIP {
		t.Errorf("PATCH status = %d %s; want the ingress stored and the spec kept", code, b)
	}
}

// TestKubernetesServiceUnchangedAcrossRestart: a start over a store that
// has the `kubernetes` Service and its endpoints writes nothing when the
// server's address is the same: Bootstrap (before the server listens)
// leaves the known port alone, and publishing the same endpoint changes
// nothing. Each write was a change sent to every agent (two at each
// start, the first pointing the Service at port 443).
func TestKubernetesServiceUnchangedAcrossRestart(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	ep := netip.MustParseAddrPort("192.0.2.10:7443")
	first, err := New(Config{Store: h.store, Clock: h.clock})
	if err != nil {
		t.Fatal(err)
	}
	if err := first.Bootstrap(ctx); err != nil {
		t.Fatal(err)
	}
	if err := first.PublishAPIEndpoint(ctx, ep); err != nil {
		t.Fatal(err)
	}
	before := h.store.Revision()

	// The next start: Bootstrap without the endpoint, then the same one.
	next, err := New(Config{Store: h.store, Clock: h.clock})
	if err != nil {
		t.Fatal(err)
	}
	if err := next.Bootstrap(ctx); err != nil {
		t.Fatal(err)
	}
	obj, err := h.store.Get(ctx, "services", "default", "kubernetes")
	if err != nil {
		t.Fatal(err)
	}
	if tp := obj.(*api.Service).Spec.Ports[0].TargetPort; tp != api.FromInt(7443) {
		t.Errorf("after Bootstrap the Service targets %v; want the last known port 7443", tp)
	}
	if err := next.PublishAPIEndpoint(ctx, ep); err != nil {
		t.Fatal(err)
	}
	if after := h.store.Revision(); after != before {
		t.Errorf("a start with the same endpoint moved the store from revision %d to %d; want no write", before, after)
	}

	// A new port is written.
	if err := next.PublishAPIEndpoint(ctx, netip.MustParseAddrPort("192.0.2.10:8443")); err != nil {
		t.Fatal(err)
	}
	obj, err = h.store.Get(ctx, "services", "default", "kubernetes")
	if err != nil {
		t.Fatal(err)
	}
	if tp := obj.(*api.Service).Spec.Ports[0].TargetPort; tp != api.FromInt(8443) {
		t.Errorf("after a new endpoint the Service targets %v; want 8443", tp)
	}
}
