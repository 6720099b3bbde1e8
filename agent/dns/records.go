package dns

import (
	"net/netip"
	"strconv"
	"strings"

	mdns "github.com/miekg/dns"

	"github.com/skiffhq/skiff/agent/proxy"
	"github.com/skiffhq/skiff/api"
)

// zone is the cluster's records, immutable once built.
type zone struct {
	domain string // "cluster.local."
	a      map[string][]netip.Addr
	srv    map[string][]*mdns.SRV
	cname  map[string]string
	ptr    map[string][]string
	names  map[string]bool // every owner name and its ancestors within the domain
}

func newZone(domain string) *zone {
	return &zone{domain: domain, a: map[string][]netip.Addr{}, srv: map[string][]*mdns.SRV{}, cname: map[string]string{}, ptr: map[string][]string{}, names: map[string]bool{}}
}

// addName records name and its ancestors down to the domain as existing.
func (z *zone) addName(name string) {
	for n := name; len(n) >= len(z.domain) && !z.names[n]; {
		z.names[n] = true
		i := strings.IndexByte(n, '.')
		if i < 0 || i == len(n)-1 {
			break
		}
		n = n[i+1:]
	}
}

func (z *zone) addA(name string, ip netip.Addr) {
	z.addName(name)
	for _, have := range z.a[name] {
		if have == ip {
			return
		}
	}
	z.a[name] = append(z.a[name], ip)
}

func (z *zone) addPTR(ip netip.Addr, target string) {
	rev, err := mdns.ReverseAddr(ip.String())
	if err != nil {
		return
	}
	z.ptr[rev] = append(z.ptr[rev], target)
}

// dashed is an address as a DNS label: 10-42-1-2.
func dashed(ip netip.Addr) string { return strings.ReplaceAll(ip.String(), ".", "-") }

// buildZone indexes snap under domain ("cluster.local.").
func buildZone(snap *proxy.Snapshot, domain string, ttl uint32) *zone {
	z := newZone(domain)
	z.addName(domain)
	if snap == nil {
		return z
	}
	bySvc := map[string][]*api.EndpointSlice{}
	for _, s := range snap.Slices {
		if s == nil {
			continue
		}
		if n := s.Labels[api.LabelServiceName]; n != "" {
			bySvc[s.Namespace+"/"+n] = append(bySvc[s.Namespace+"/"+n], s)
		}
	}
	for _, svc := range snap.Services {
		if svc == nil {
			continue
		}
		base := strings.ToLower(svc.Name + "." + svc.Namespace + ".svc." + domain)
		z.addName(base)
		if svc.Spec.Type == api.ServiceTypeExternalName {
			z.cname[base] = mdns.Fqdn(strings.ToLower(svc.Spec.ExternalName))
			continue
		}
		if cip, err := netip.ParseAddr(svc.Spec.ClusterIP); err == nil {
			z.addA(base, cip)
			z.addPTR(cip, base)
			for _, p := range svc.Spec.Ports {
				if p.Name == "" {
					continue
				}
				name := "_" + strings.ToLower(p.Name) + "._" + strings.ToLower(string(p.Protocol)) + "." + base
				z.addName(name)
				z.srv[name] = append(z.srv[name], &mdns.SRV{Hdr: hdr(name, mdns.TypeSRV, ttl), Priority: 0, Weight: 100, Port: uint16(p.Port), Target: base})
			}
			continue
		}
		// Headless: the endpoints themselves.
		for _, sl := range bySvc[svc.Namespace+"/"+svc.Name] {
			for _, ep := range sl.Endpoints {
				if ep.Conditions.Ready != nil && !*ep.Conditions.Ready {
					continue
				}
				for _, a := range ep.Addresses {
					ip, err := netip.ParseAddr(a)
					if err != nil {
						continue
					}
					z.addA(base, ip)
					host := dashed(ip)
					if ep.Hostname != nil && *ep.Hostname != "" {
						host = strings.ToLower(*ep.Hostname)
					}
					target := host + "." + base
					z.addA(target, ip)
					z.addPTR(ip, target)
					for _, p := range sl.Ports {
						if p.Name == nil || *p.Name == "" || p.Port == nil {
							continue
						}
						proto := api.ProtocolTCP
						if p.Protocol != nil {
							proto = *p.Protocol
						}
						name := "_" + strings.ToLower(*p.Name) + "._" + strings.ToLower(string(proto)) + "." + base
						z.addName(name)
						z.srv[name] = append(z.srv[name], &mdns.SRV{Hdr: hdr(name, mdns.TypeSRV, ttl), Priority: 0, Weight: 100, Port: uint16(*p.Port), Target: target})
					}
				}
			}
		}
	}
	return z
}

func hdr(name string, t uint16, ttl uint32) mdns.RR_Header {
	return mdns.RR_Header{Name: name, Rrtype: t, Class: mdns.ClassINET, Ttl: ttl}
}

// podAddr parses <a-b-c-d>.<ns>.pod.<domain> into the address.
func podAddr(name, domain string) (netip.Addr, bool) {
	rest, ok := strings.CutSuffix(name, ".pod."+domain)
	if !ok {
		return netip.Addr{}, false
	}
	label, _, ok := strings.Cut(rest, ".")
	if !ok {
		return netip.Addr{}, false
	}
	parts := strings.Split(label, "-")
	if len(parts) != 4 {
		return netip.Addr{}, false
	}
	var b [4]byte
	for i, p := range parts {
		v, err := strconv.Atoi(p)
		if err != nil || v < 0 || v > 255 {
			return netip.Addr{}, false
		}
		b[i] = byte(v)
	}
	return netip.AddrFrom4(b), true
}
