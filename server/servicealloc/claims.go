package servicealloc

import (
	"net/netip"
	"strconv"
	"strings"

	"github.com/skiffhq/skiff/api"
)

// Claim prefixes: a Service claims "clusterip/<address>" and
// "nodeport/<port>" in the store, which refuses a second holder (see
// storage.ClaimFunc). The store, shared by every server, is what makes an
// address unique across servers; an Allocator is each server's cache of
// it.
const (
	claimIP   = "clusterip/"
	claimPort = "nodeport/"
)

// Claims returns the store claims of a Service: its cluster IP and its
// node ports. Any other object claims nothing. It is the
// storage.ClaimFunc for "services".
func Claims(obj api.Object) []string {
	s, ok := obj.(*api.Service)
	if !ok {
		return nil
	}
	var out []string
	for _, ip := range clusterIPs(s) {
		out = append(out, ipClaim(ip))
	}
	for _, p := range nodePorts(s) {
		out = append(out, portClaim(p))
	}
	return out
}

func ipClaim(ip netip.Addr) string { return claimIP + ip.String() }
func portClaim(p int) string       { return claimPort + strconv.Itoa(p) }

// Held records that the store refused this reservation's write because
// another object holds claim (a storage.ClaimError): another server took
// it. The address or port stays marked as taken in the Allocator, and
// Held reports whether writing again can succeed: true when the
// Allocator chose it (Reserve will choose another), false when the client
// asked for it. The caller then calls Rollback and, on true, Reserve
// again from the client's object.
func (r *Reservation) Held(claim string) (retry bool) {
	if r == nil {
		return false
	}
	if s, ok := strings.CutPrefix(claim, claimIP); ok {
		ip, err := netip.ParseAddr(s)
		if err != nil {
			return false
		}
		for i, got := range r.ips {
			if got == ip {
				r.ips = append(r.ips[:i], r.ips[i+1:]...) // Rollback keeps it taken
				return r.autoIP[ip]
			}
		}
		// Not ours to release: mark it taken for the next try.
		if _, err := r.a.AllocateIP(ip); err != nil {
			return false
		}
		return false
	}
	if s, ok := strings.CutPrefix(claim, claimPort); ok {
		p, err := strconv.Atoi(s)
		if err != nil {
			return false
		}
		for i, got := range r.ports {
			if got == p {
				r.ports = append(r.ports[:i], r.ports[i+1:]...)
				return r.autoPort[p]
			}
		}
	}
	return false
}

// HeldError is the field error for a claim another server's Service
// holds, when the client asked for it: the same 422 a local conflict
// gives.
func HeldError(svc *api.Service, claim string) api.FieldErrors {
	if s, ok := strings.CutPrefix(claim, claimIP); ok {
		return api.FieldErrors{api.Invalid(api.NewPath("spec", "clusterIPs"), []string{s},
			"failed to allocate IP "+s+": "+s+": "+ErrAllocated.Error())}
	}
	if s, ok := strings.CutPrefix(claim, claimPort); ok {
		for i, p := range svc.Spec.Ports {
			if strconv.Itoa(int(p.NodePort)) == s {
				return api.FieldErrors{api.Invalid(api.NewPath("spec", "ports").Index(i).Child("nodePort"), p.NodePort, s+": "+ErrPortInUse.Error())}
			}
		}
	}
	return api.FieldErrors{api.Invalid(api.NewPath("spec"), claim, "already allocated")}
}

// Resync replaces what the Allocator holds with what services hold: the
// stored Services, listed after another server may have freed addresses
// this one still counts as taken. Reservations in flight on this server
// are forgotten; should one of them be chosen again, the store refuses
// the second write (see Held). It returns Load's problems.
func (a *Allocator) Resync(services []*api.Service) []string {
	a.mu.Lock()
	a.ips.SetInt64(0)
	a.nodePort.SetInt64(0)
	a.usedIPs, a.usedPort = 0, 0
	a.mu.Unlock()
	return a.Load(services)
}
