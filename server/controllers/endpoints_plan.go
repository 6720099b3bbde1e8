package controllers

import (
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/api/labels"
)

// This file holds the pure part of the endpoints controllers: which
// endpoints a Service has, given its pods, and how they are spread over
// EndpointSlices of at most api.MaxEndpointsPerSlice endpoints.

// maxEndpointsAddresses caps the addresses of one Endpoints object, as
// Kubernetes does (the rest are only in EndpointSlices).
const maxEndpointsAddresses = 1000

// serviceEndpoint is one pod behind a Service with its ports resolved.
type serviceEndpoint struct {
	pod      *api.Pod
	addrType string
	ip       string
	ports    []api.EndpointPort // one per service port that resolves
	portsKey string             // identical for endpoints with the same ports
	ready    bool               // takes new traffic
	serving  bool               // ready, terminating or not
	term     bool               // being deleted
}

// selectsPod reports whether svc's selector matches pod (a Service
// without a selector selects nothing: its endpoints are the user's).
func selectsPod(svc *api.Service, pod *api.Pod) bool {
	if len(svc.Spec.Selector) == 0 || pod.Namespace != svc.Namespace {
		return false
	}
	sel, err := labels.SelectorFromSet(labels.Set(svc.Spec.Selector))
	return err == nil && sel.Matches(labels.Set(pod.Labels))
}

// serviceEndpoints returns the endpoints of svc among pods, sorted by pod
// name: every selected pod with an IP that has not finished. Conditions
// are those of Kubernetes: ready when the pod is Ready and not
// terminating, serving when Ready, both forced true by
// publishNotReadyAddresses.
func serviceEndpoints(svc *api.Service, pods []*api.Pod) []serviceEndpoint {
	var out []serviceEndpoint
	for _, p := range pods {
		if !selectsPod(svc, p) || p.Status.PodIP == "" || finished(p) {
			continue
		}
		ip, err := netip.ParseAddr(p.Status.PodIP)
		if err != nil {
			continue
		}
		e := serviceEndpoint{pod: p, ip: ip.String(), addrType: api.AddressTypeIPv4, term: p.DeletionTimestamp != nil}
		if ip.Is6() {
			e.addrType = api.AddressTypeIPv6
		}
		ready, _ := podReady(p)
		e.serving = ready || svc.Spec.PublishNotReadyAddresses
		e.ready = e.serving && (!e.term || svc.Spec.PublishNotReadyAddresses)
		e.ports = resolvePorts(svc, p)
		var key strings.Builder
		key.WriteString(e.addrType)
		for _, ep := range e.ports {
			key.WriteString("|" + *ep.Name + "/" + string(*ep.Protocol) + "/" + strconv.Itoa(int(*ep.Port)))
		}
		e.portsKey = key.String()
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b serviceEndpoint) int { return strings.Compare(a.pod.Name, b.pod.Name) })
	return out
}

// resolvePorts maps svc's ports onto pod: a numeric targetPort is taken
// as is, a named one is looked up among the pod's container ports of the
// same protocol (a port that does not resolve is left out).
func resolvePorts(svc *api.Service, pod *api.Pod) []api.EndpointPort {
	out := make([]api.EndpointPort, 0, len(svc.Spec.Ports))
	for _, sp := range svc.Spec.Ports {
		port := sp.TargetPort.IntVal
		if sp.TargetPort.Type == api.String {
			port = namedPort(pod, sp.TargetPort.StrVal, sp.Protocol)
		}
		if port <= 0 {
			continue
		}
		name, proto := sp.Name, sp.Protocol
		out = append(out, api.EndpointPort{Name: &name, Port: &port, Protocol: &proto, AppProtocol: sp.AppProtocol})
	}
	return out
}

func namedPort(pod *api.Pod, name string, proto api.Protocol) int32 {
	for _, c := range pod.Spec.Containers {
		for _, p := range c.Ports {
			if p.Name == name && (p.Protocol == proto || (p.Protocol == "" && proto == api.ProtocolTCP)) {
				return p.ContainerPort
			}
		}
	}
	return 0
}

// sliceEndpoint renders e for an EndpointSlice.
func sliceEndpoint(svc *api.Service, e *serviceEndpoint) api.Endpoint {
	ready, serving, term := e.ready, e.serving, e.term
	ep := api.Endpoint{
		Addresses:  []string{e.ip},
		Conditions: api.EndpointConditions{Ready: &ready, Serving: &serving, Terminating: &term},
		TargetRef:  &api.ObjectReference{Kind: "Pod", Namespace: e.pod.Namespace, Name: e.pod.Name, UID: e.pod.UID},
	}
	if n := e.pod.Spec.NodeName; n != "" {
		ep.NodeName = &n
	}
	if h := e.pod.Spec.Hostname; h != "" && e.pod.Spec.Subdomain == svc.Name {
		ep.Hostname = &h
	}
	return ep
}

// desiredEndpoints builds the Endpoints object of svc: one subset per
// distinct port set, ready addresses and not-ready ones (terminating pods
// are left out unless publishNotReadyAddresses), at most 1000 addresses.
func desiredEndpoints(svc *api.Service, eps []serviceEndpoint) *api.Endpoints {
	out := &api.Endpoints{ObjectMeta: api.ObjectMeta{Namespace: svc.Namespace, Name: svc.Name, Labels: serviceLabels(svc, false)}}
	idx := map[string]int{}
	n := 0
	for i := range eps {
		e := &eps[i]
		if n >= maxEndpointsAddresses || (e.term && !svc.Spec.PublishNotReadyAddresses) || len(e.ports) == 0 {
			continue
		}
		k, ok := idx[e.portsKey]
		if !ok {
			k = len(out.Subsets)
			idx[e.portsKey] = k
			out.Subsets = append(out.Subsets, api.EndpointSubset{Ports: e.ports})
		}
		addr := api.EndpointAddress{IP: e.ip, TargetRef: sliceEndpoint(svc, e).TargetRef}
		if nn := e.pod.Spec.NodeName; nn != "" {
			addr.NodeName = &nn
		}
		if h := e.pod.Spec.Hostname; h != "" && e.pod.Spec.Subdomain == svc.Name {
			addr.Hostname = h
		}
		if e.ready {
			out.Subsets[k].Addresses = append(out.Subsets[k].Addresses, addr)
		} else {
			out.Subsets[k].NotReadyAddresses = append(out.Subsets[k].NotReadyAddresses, addr)
		}
		n++
	}
	return out
}

// serviceLabels are the labels of svc's Endpoints or EndpointSlices: the
// Service's own plus, on slices, the service-name and managed-by labels
// (and the headless marker).
func serviceLabels(svc *api.Service, slice bool) map[string]string {
	out := map[string]string{}
	for k, v := range svc.Labels {
		out[k] = v
	}
	if slice {
		out[api.LabelServiceName] = svc.Name
		out[api.LabelManagedBy] = api.EndpointSliceController
		if svc.IsHeadless() {
			out[api.LabelHeadless] = ""
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// slicePlan is what to write to bring a Service's slices to the wanted
// state.
type slicePlan struct {
	create []*api.EndpointSlice // names empty: the writer names them
	update []*api.EndpointSlice
	delete []*api.EndpointSlice
}

// planSlices spreads eps over svc's slices, moving as little as possible:
// an endpoint stays in the slice that holds it, new ones fill slices with
// room before new slices are made, and a slice left empty is deleted. A
// Service without endpoints keeps one empty slice, as in Kubernetes.
// existing are svc's current slices (by label); they are not modified.
func planSlices(svc *api.Service, eps []serviceEndpoint, existing []*api.EndpointSlice) slicePlan {
	type group struct {
		addrType string
		ports    []api.EndpointPort
		want     map[string]*serviceEndpoint // ip → endpoint
		order    []string
	}
	groups := map[string]*group{}
	var keys []string
	for i := range eps {
		e := &eps[i]
		g := groups[e.portsKey]
		if g == nil {
			g = &group{addrType: e.addrType, ports: e.ports, want: map[string]*serviceEndpoint{}}
			groups[e.portsKey] = g
			keys = append(keys, e.portsKey)
		}
		if _, dup := g.want[e.ip]; !dup {
			g.want[e.ip] = e
			g.order = append(g.order, e.ip)
		}
	}
	labelsWant := serviceLabels(svc, true)
	var plan slicePlan
	var kept []*api.EndpointSlice // after filtering, per group, in order
	placed := map[string]bool{}   // portsKey|ip
	byGroup := map[string][]*api.EndpointSlice{}
	for _, old := range existing {
		k := sliceKey(old)
		g := groups[k]
		if g == nil {
			if len(eps) == 0 && len(kept) == 0 && len(old.Endpoints) == 0 && len(old.Ports) == 0 {
				kept = append(kept, old) // the placeholder of a Service without endpoints
				if !equalLabels(old.Labels, labelsWant) {
					u := copySlice(old, old.Endpoints)
					u.Labels = labelsWant
					plan.update = append(plan.update, u)
				}
				continue
			}
			plan.delete = append(plan.delete, old)
			continue
		}
		var keep []api.Endpoint
		for _, ep := range old.Endpoints {
			if len(ep.Addresses) == 0 {
				continue
			}
			e := g.want[ep.Addresses[0]]
			if e == nil || placed[k+"|"+e.ip] {
				continue
			}
			placed[k+"|"+e.ip] = true
			keep = append(keep, sliceEndpoint(svc, e))
		}
		if len(keep) == 0 {
			plan.delete = append(plan.delete, old)
			continue
		}
		u := copySlice(old, keep)
		u.Labels = labelsWant
		byGroup[k] = append(byGroup[k], u)
		kept = append(kept, u)
		if !sameSlice(u, old) {
			plan.update = append(plan.update, u)
		}
	}
	for _, k := range keys {
		g := groups[k]
		var fresh []api.Endpoint
		for _, ip := range g.order {
			if !placed[k+"|"+ip] {
				fresh = append(fresh, sliceEndpoint(svc, g.want[ip]))
			}
		}
		// Fill slices with room first.
		for _, s := range byGroup[k] {
			if len(fresh) == 0 {
				break
			}
			room := api.MaxEndpointsPerSlice - len(s.Endpoints)
			if room <= 0 {
				continue
			}
			n := min(room, len(fresh))
			s.Endpoints = append(s.Endpoints, fresh[:n]...)
			fresh = fresh[n:]
			if !slices.Contains(plan.update, s) {
				plan.update = append(plan.update, s)
			}
		}
		for len(fresh) > 0 {
			n := min(api.MaxEndpointsPerSlice, len(fresh))
			plan.create = append(plan.create, newSlice(svc, g.addrType, g.ports, labelsWant, fresh[:n]))
			fresh = fresh[n:]
		}
	}
	if len(eps) == 0 && len(kept) == 0 {
		plan.create = append(plan.create, newSlice(svc, api.AddressTypeIPv4, nil, labelsWant, nil))
	}
	return plan
}

// sliceKey is the portsKey of the endpoints a slice holds.
func sliceKey(s *api.EndpointSlice) string {
	var b strings.Builder
	b.WriteString(s.AddressType)
	for _, p := range s.Ports {
		name, proto, port := "", api.ProtocolTCP, int32(0)
		if p.Name != nil {
			name = *p.Name
		}
		if p.Protocol != nil {
			proto = *p.Protocol
		}
		if p.Port != nil {
			port = *p.Port
		}
		b.WriteString("|" + name + "/" + string(proto) + "/" + strconv.Itoa(int(port)))
	}
	return b.String()
}

func newSlice(svc *api.Service, addrType string, ports []api.EndpointPort, lbl map[string]string, eps []api.Endpoint) *api.EndpointSlice {
	yes := true
	return &api.EndpointSlice{
		ObjectMeta: api.ObjectMeta{
			Namespace: svc.Namespace, GenerateName: svc.Name + "-", Labels: lbl,
			OwnerReferences: []api.OwnerReference{{APIVersion: "v1", Kind: "Service", Name: svc.Name, UID: svc.UID, Controller: &yes, BlockOwnerDeletion: &yes}},
		},
		AddressType: addrType,
		Endpoints:   slices.Clone(eps),
		Ports:       ports,
	}
}

// copySlice returns a copy of s holding eps (metadata copied shallowly,
// so the caller must replace, not modify, its maps).
func copySlice(s *api.EndpointSlice, eps []api.Endpoint) *api.EndpointSlice {
	c := *s
	c.Endpoints = eps
	return &c
}

func equalLabels(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// sameSlice reports whether a and b hold the same endpoints and labels.
func sameSlice(a, b *api.EndpointSlice) bool {
	return equalLabels(a.Labels, b.Labels) && semanticJSONEqual(a.Endpoints, b.Endpoints)
}
