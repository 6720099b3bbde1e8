package proxy

import (
	"cmp"
	"net/netip"
	"slices"
	"strconv"

	"github.com/skiffhq/skiff/api"
)

// Protocol numbers of the ports the proxy serves.
const (
	ProtoTCP uint8 = 6
	ProtoUDP uint8 = 17
)

// Endpoint is one backend of a Port.
type Endpoint struct {
	IP    netip.Addr
	Port  uint16
	Local bool // on this node
}

// String is "ip:port".
func (e Endpoint) String() string { return netip.AddrPortFrom(e.IP, e.Port).String() }

// Port is one port of one Service as the node serves it.
type Port struct {
	// Name is "namespace/service:port" (port name, or number when
	// unnamed), unique per Service port and protocol.
	Name      string
	ClusterIP netip.Addr // invalid for a headless Service
	Port      uint16
	Proto     uint8
	NodePort  uint16 // 0 when none
	// ExternalLocal is externalTrafficPolicy: Local: node-port traffic
	// goes only to local endpoints and keeps its client address.
	// InternalLocal is internalTrafficPolicy: Local for cluster-IP
	// traffic.
	ExternalLocal bool
	InternalLocal bool
	// Endpoints are where new connections may go, sorted: the ready
	// ones or, when none is ready, the serving terminating ones (as
	// kube-proxy falls back).
	Endpoints []Endpoint
}

// Key is Name plus the protocol, unique in a State.
func (p *Port) Key() string { return p.Name + "/" + strconv.Itoa(int(p.Proto)) }

// State is every Port the node serves, sorted by Key.
type State struct {
	Ports []Port
}

// Options are the node's facts Build needs.
type Options struct {
	// NodeName marks endpoints on this node as Local.
	NodeName string
	// LocalServices maps a cluster IP to an address of this node that
	// serves it on the same ports (the cluster DNS served by the agent
	// itself): such a Service gets that one endpoint.
	LocalServices map[netip.Addr]netip.Addr
}

// Build derives the node's State from services and their slices. Only
// IPv4 is served; ExternalName Services and Services without ports or
// cluster IP (headless) give no Port. Bad input is skipped, never fatal.
func Build(services []*api.Service, slices []*api.EndpointSlice, opt Options) *State {
	bySvc := map[string][]*api.EndpointSlice{}
	for _, s := range slices {
		if s == nil || s.AddressType != api.AddressTypeIPv4 {
			continue
		}
		if n := s.Labels[api.LabelServiceName]; n != "" {
			bySvc[s.Namespace+"/"+n] = append(bySvc[s.Namespace+"/"+n], s)
		}
	}
	st := &State{}
	for _, svc := range services {
		if svc == nil || svc.Spec.Type == api.ServiceTypeExternalName {
			continue
		}
		cip, _ := netip.ParseAddr(svc.Spec.ClusterIP)
		if !cip.Is4() {
			continue // headless (DNS only), or not IPv4
		}
		local, isLocal := opt.LocalServices[cip]
		for _, sp := range svc.Spec.Ports {
			proto := protoOf(sp.Protocol)
			if proto == 0 || sp.Port <= 0 || sp.Port > 65535 {
				continue
			}
			name := sp.Name
			if name == "" {
				name = strconv.Itoa(int(sp.Port))
			}
			p := Port{
				Name: svc.Namespace + "/" + svc.Name + ":" + name, ClusterIP: cip, Port: uint16(sp.Port), Proto: proto,
				ExternalLocal: svc.Spec.ExternalTrafficPolicy == api.TrafficPolicyLocal,
				InternalLocal: svc.Spec.InternalTrafficPolicy != nil && *svc.Spec.InternalTrafficPolicy == api.TrafficPolicyLocal,
			}
			if svc.NeedsNodePorts() && sp.NodePort > 0 && sp.NodePort <= 65535 {
				p.NodePort = uint16(sp.NodePort)
			}
			if isLocal {
				p.Endpoints = []Endpoint{{IP: local, Port: uint16(sp.Port), Local: true}}
			} else {
				p.Endpoints = endpointsFor(bySvc[svc.Namespace+"/"+svc.Name], &sp, opt.NodeName)
			}
			st.Ports = append(st.Ports, p)
		}
	}
	slicesSortPorts(st.Ports)
	return st
}

func protoOf(p api.Protocol) uint8 {
	switch p {
	case api.ProtocolTCP, "":
		return ProtoTCP
	case api.ProtocolUDP:
		return ProtoUDP
	}
	return 0
}

// endpointsFor collects the endpoints of service port sp from its slices:
// slice ports match by name (and protocol). Ready endpoints, or if there
// are none, serving ones.
func endpointsFor(slices []*api.EndpointSlice, sp *api.ServicePort, node string) []Endpoint {
	var ready, serving []Endpoint
	seen := map[Endpoint]bool{}
	for _, s := range slices {
		port := slicePort(s, sp)
		if port == 0 {
			continue
		}
		for _, ep := range s.Endpoints {
			if len(ep.Addresses) == 0 {
				continue
			}
			ip, err := netip.ParseAddr(ep.Addresses[0])
			if err != nil || !ip.Is4() {
				continue
			}
			e := Endpoint{IP: ip, Port: port, Local: ep.NodeName != nil && *ep.NodeName == node && node != ""}
			if seen[e] {
				continue
			}
			seen[e] = true
			c := ep.Conditions
			switch {
			case c.Ready == nil || *c.Ready:
				ready = append(ready, e)
			case c.Serving != nil && *c.Serving:
				serving = append(serving, e)
			}
		}
	}
	out := ready
	if len(out) == 0 {
		out = serving
	}
	sortEndpoints(out)
	return out
}

// slicePort is the port s gives service port sp, 0 when none.
func slicePort(s *api.EndpointSlice, sp *api.ServicePort) uint16 {
	for _, p := range s.Ports {
		name := ""
		if p.Name != nil {
			name = *p.Name
		}
		proto := api.ProtocolTCP
		if p.Protocol != nil {
			proto = *p.Protocol
		}
		if name == sp.Name && proto == sp.Protocol && p.Port != nil && *p.Port > 0 && *p.Port <= 65535 {
			return uint16(*p.Port)
		}
	}
	return 0
}

func slicesSortPorts(ps []Port) {
	slices.SortFunc(ps, func(a, b Port) int { return cmp.Compare(a.Key(), b.Key()) })
}

func sortEndpoints(es []Endpoint) {
	slices.SortFunc(es, func(a, b Endpoint) int {
		if c := a.IP.Compare(b.IP); c != 0 {
			return c
		}
		return cmp.Compare(a.Port, b.Port)
	})
}

// RemovedUDP returns the UDP endpoints old served that new no longer
// does, for each Port key: their conntrack entries must go, or a client
// keeps sending to a backend that left. It also returns the cluster IPs
// of UDP ports that had endpoints and have none now.
func RemovedUDP(old, new *State) (endpoints []Endpoint, emptied []netip.Addr) {
	if old == nil {
		return nil, nil
	}
	cur := map[string]map[Endpoint]bool{}
	if new != nil {
		for i := range new.Ports {
			p := &new.Ports[i]
			m := map[Endpoint]bool{}
			for _, e := range p.Endpoints {
				m[e] = true
			}
			cur[p.Key()] = m
		}
	}
	seen := map[Endpoint]bool{}
	for i := range old.Ports {
		p := &old.Ports[i]
		if p.Proto != ProtoUDP {
			continue
		}
		now := cur[p.Key()]
		for _, e := range p.Endpoints {
			if !now[e] && !seen[e] {
				seen[e] = true
				endpoints = append(endpoints, e)
			}
		}
		if len(p.Endpoints) > 0 && len(now) == 0 {
			emptied = append(emptied, p.ClusterIP)
		}
	}
	return endpoints, emptied
}
