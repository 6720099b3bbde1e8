package servicealloc

import (
	"net/netip"

	"github.com/skiffhq/skiff/api"
)

// Reservation is what one Service write took from an Allocator. The
// caller writes the Service and then calls exactly one of Commit (the
// write is stored) or Rollback (it is not).
type Reservation struct {
	a     *Allocator
	ips   []netip.Addr
	ports []int
	// autoIP and autoPort mark what the Allocator chose rather than the
	// client asked for: on a store conflict only those can change (Held).
	autoIP   map[netip.Addr]bool
	autoPort map[int]bool
}

// Reserve fills svc's cluster IP and node ports for a write of svc over
// old (nil on create), taking what is new from a: a requested address or
// port is taken or refused, an empty one is allocated, and on update an
// empty cluster IP or node port keeps old's. svc is defaulted on entry and
// on return (clusterIPs and ipFamilies follow the new address). The
// errors name the fields at fault, for a 422; on error nothing stays
// reserved.
func (a *Allocator) Reserve(svc, old *api.Service) (*Reservation, api.FieldErrors) {
	r := &Reservation{a: a}
	var errs api.FieldErrors
	sp := &svc.Spec
	if old != nil && svc.NeedsClusterIP() && old.NeedsClusterIP() && sp.ClusterIP == "" {
		sp.ClusterIP, sp.ClusterIPs = old.Spec.ClusterIP, old.Spec.ClusterIPs
	}
	if svc.NeedsClusterIP() && !(old != nil && old.Spec.ClusterIP == sp.ClusterIP && sp.ClusterIP != "") {
		var want netip.Addr
		if sp.ClusterIP != "" {
			ip, err := netip.ParseAddr(sp.ClusterIP)
			if err != nil {
				errs = append(errs, api.Invalid(api.NewPath("spec", "clusterIP"), sp.ClusterIP, "must be a valid IP address"))
			}
			want = ip
		}
		if len(errs) == 0 {
			ip, err := a.AllocateIP(want)
			if err != nil {
				errs = append(errs, api.Invalid(api.NewPath("spec", "clusterIPs"), []string{sp.ClusterIP}, "failed to allocate IP "+sp.ClusterIP+": "+err.Error()))
			} else {
				r.ips = append(r.ips, ip)
				if !want.IsValid() {
					r.autoIP = map[netip.Addr]bool{ip: true}
				}
				sp.ClusterIP, sp.ClusterIPs = ip.String(), []string{ip.String()}
			}
		}
	}
	if svc.NeedsNodePorts() {
		errs = append(errs, r.reservePorts(svc, old)...)
	}
	if len(errs) > 0 {
		r.Rollback()
		return nil, errs
	}
	api.SetDefaultsService(svc)
	return r, nil
}

// reservePorts fills and takes the node ports of svc.
func (r *Reservation) reservePorts(svc, old *api.Service) api.FieldErrors {
	var errs api.FieldErrors
	held := map[int32]bool{} // ports old holds: keeping them needs no allocation
	if old != nil {
		for _, p := range nodePorts(old) {
			held[int32(p)] = true
		}
	}
	mine := map[int32]bool{} // taken by this write already (TCP and UDP may share)
	for i := range svc.Spec.Ports {
		p := &svc.Spec.Ports[i]
		if p.NodePort == 0 && old != nil {
			p.NodePort = oldNodePort(old, p)
		}
		switch {
		case p.NodePort != 0 && (held[p.NodePort] || mine[p.NodePort]):
			mine[p.NodePort] = true
		default:
			got, err := r.a.AllocatePort(int(p.NodePort))
			if err != nil {
				errs = append(errs, api.Invalid(api.NewPath("spec", "ports").Index(i).Child("nodePort"), p.NodePort, err.Error()))
				continue
			}
			r.ports = append(r.ports, got)
			if p.NodePort == 0 {
				if r.autoPort == nil {
					r.autoPort = map[int]bool{}
				}
				r.autoPort[got] = true
			}
			p.NodePort = int32(got)
			mine[p.NodePort] = true
		}
	}
	return errs
}

// oldNodePort is the node port old gave the port matching p (by port and
// protocol, else by name), or 0.
func oldNodePort(old *api.Service, p *api.ServicePort) int32 {
	for _, o := range old.Spec.Ports {
		if o.Port == p.Port && o.Protocol == p.Protocol && o.NodePort != 0 {
			return o.NodePort
		}
	}
	for _, o := range old.Spec.Ports {
		if p.Name != "" && o.Name == p.Name && o.NodePort != 0 {
			return o.NodePort
		}
	}
	return 0
}

// Rollback gives back what Reserve took: the write did not happen.
func (r *Reservation) Rollback() {
	if r == nil {
		return
	}
	for _, ip := range r.ips {
		r.a.ReleaseIP(ip)
	}
	for _, p := range r.ports {
		r.a.ReleasePort(p)
	}
	r.ips, r.ports = nil, nil
}

// Commit records that the write of stored over old happened: what old
// held and stored no longer does is released.
func (r *Reservation) Commit(stored, old *api.Service) {
	if r == nil || old == nil {
		return
	}
	keepIP := map[netip.Addr]bool{}
	for _, ip := range clusterIPs(stored) {
		keepIP[ip] = true
	}
	for _, ip := range clusterIPs(old) {
		if !keepIP[ip] {
			r.a.ReleaseIP(ip)
		}
	}
	keepPort := map[int]bool{}
	for _, p := range nodePorts(stored) {
		keepPort[p] = true
	}
	for _, p := range nodePorts(old) {
		if !keepPort[p] {
			r.a.ReleasePort(p)
		}
	}
}

// Release frees everything a deleted Service held.
func (a *Allocator) Release(svc *api.Service) {
	for _, ip := range clusterIPs(svc) {
		a.ReleaseIP(ip)
	}
	for _, p := range nodePorts(svc) {
		a.ReleasePort(p)
	}
}
