package apiserver

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/server/servicealloc"
	"github.com/skiffhq/skiff/storage"
)

// This file holds what the API server does for Services beyond storing
// them: cluster IP and node port allocation around each write, and the
// `kubernetes` Service that points at the server itself.

// settleReservation commits or rolls back what a Service write reserved.
// A write whose context ended may have been stored nevertheless, so its
// reservation is kept: at worst an address stays taken until the next
// start rebuilds the allocator from the store.
func (s *Server) settleReservation(r *servicealloc.Reservation, err error, stored, old *api.Service) {
	switch {
	case err == nil:
		r.Commit(stored, old)
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
	default:
		r.Rollback()
	}
}

// maxClaimRetries bounds how often one Service write chooses again after
// the store said another server holds what this one chose.
const maxClaimRetries = 8

// reserveService reserves svc's addresses over old. When the allocator
// refuses and the store is shared with other servers, its view may be
// stale (another server freed the address): it resyncs from the store
// and tries once more.
func (s *Server) reserveService(ctx context.Context, svc, old *api.Service) (*servicealloc.Reservation, error) {
	var saved api.ServiceSpec
	shared := s.store.Backend() != "sqlite"
	if shared {
		saved = cloneServiceSpec(svc.Spec)
	}
	r, errs := s.services.Reserve(svc, old)
	if errs == nil {
		return r, nil
	}
	if !shared {
		return nil, errs
	}
	if err := s.resyncServices(ctx); err != nil {
		return nil, err
	}
	svc.Spec = saved
	if r, errs = s.services.Reserve(svc, old); errs != nil {
		return nil, errs
	}
	return r, nil
}

// writeService reserves svc's addresses over old (nil on create), runs
// write and settles the reservation. The store refuses a write whose
// cluster IP or node port another Service holds (servicealloc.Claims):
// when this server chose it, it resyncs from the store and chooses
// again; when the client asked for it, the answer is the 422 a local
// conflict gives.
func (s *Server) writeService(ctx context.Context, svc, old *api.Service, write func() error) error {
	orig := cloneServiceSpec(svc.Spec)
	for attempt := 0; ; attempt++ {
		r, err := s.reserveService(ctx, svc, old)
		if err != nil {
			return err
		}
		err = write()
		var ce *storage.ClaimError
		if !errors.As(err, &ce) {
			s.settleReservation(r, err, svc, old)
			return err
		}
		retry := r.Held(ce.Claim)
		r.Rollback()
		if !retry || attempt >= maxClaimRetries {
			return servicealloc.HeldError(svc, ce.Claim)
		}
		s.log.Debug("service address taken by another server; choosing again", "service", svc.Namespace+"/"+svc.Name, "claim", ce.Claim)
		if err := s.resyncServices(ctx); err != nil {
			return err
		}
		svc.Spec = cloneServiceSpec(orig)
	}
}

// cloneServiceSpec copies the parts of a spec Reserve writes to.
func cloneServiceSpec(sp api.ServiceSpec) api.ServiceSpec {
	sp.ClusterIPs = slices.Clone(sp.ClusterIPs)
	sp.Ports = slices.Clone(sp.Ports)
	return sp
}

// resyncServices rebuilds the allocator from the stored Services.
func (s *Server) resyncServices(ctx context.Context) error {
	svcs, err := s.storedServices(ctx)
	if err != nil {
		return err
	}
	for _, p := range s.services.Resync(svcs) {
		s.log.Warn("stored service address outside the allocator", "problem", p)
	}
	return nil
}

func (s *Server) storedServices(ctx context.Context) ([]*api.Service, error) {
	objs, _, err := s.store.List(ctx, "services", storage.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list services: %w", err)
	}
	svcs := make([]*api.Service, 0, len(objs))
	for _, o := range objs {
		svcs = append(svcs, o.(*api.Service))
	}
	return svcs, nil
}

// loadServices marks the cluster IPs and node ports of the stored
// Services as taken. Addresses outside the configured ranges (a changed
// --service-cidr) are logged: those Services keep them, but new ones
// cannot be given them.
func (s *Server) loadServices(ctx context.Context) error {
	svcs, err := s.storedServices(ctx)
	if err != nil {
		return err
	}
	for _, p := range s.services.Load(svcs) {
		s.log.Warn("stored service address outside the allocator", "problem", p)
	}
	return nil
}

// Name and port of the Service through which pods reach the API server.
const (
	kubernetesService = "kubernetes"
	kubernetesPort    = 443
)

// ensureKubernetesService creates the `kubernetes` Service in default
// (the first address of the service CIDR, port 443 named https) and, when
// the server's own address is known, its Endpoints and EndpointSlice,
// which it keeps current: there is no selector, so no controller writes
// them.
func (s *Server) ensureKubernetesService(ctx context.Context) error {
	ip, ok := s.services.NthIP(1)
	if !ok {
		return errors.New("service CIDR has no first address")
	}
	svc := &api.Service{
		ObjectMeta: api.ObjectMeta{Namespace: "default", Name: kubernetesService,
			Labels: map[string]string{"component": "apiserver", "provider": "kubernetes"}},
		Spec: api.ServiceSpec{
			ClusterIP: ip.String(),
			Ports:     []api.ServicePort{{Name: "https", Port: kubernetesPort, Protocol: api.ProtocolTCP, TargetPort: api.FromInt(int32(s.apiEndpoint.Port()))}},
		},
	}
	if !s.apiEndpoint.IsValid() {
		svc.Spec.Ports[0].TargetPort = api.FromInt(kubernetesPort)
	}
	if _, err := s.store.Get(ctx, "services", "default", kubernetesService); errors.Is(err, storage.ErrNotFound) {
		prepareForCreate(svc, s.clock.Now())
		api.SetDefaults(svc)
		err := s.writeService(ctx, svc, nil, func() error { return s.store.Create(ctx, svc) })
		if err != nil && !errors.Is(err, storage.ErrExists) {
			return fmt.Errorf("create service default/kubernetes: %w", err)
		}
	} else if err != nil {
		return fmt.Errorf("get service default/kubernetes: %w", err)
	} else if s.apiEndpoint.IsValid() {
		// The server's port may have changed since the last start. Only
		// the known port is written: Bootstrap runs before the server
		// listens, and writing 443 then (and the real port once it
		// listened) sent every agent two changes of the Service at each
		// start, its rules briefly pointing at the wrong port.
		_, err := s.store.GuaranteedUpdate(ctx, "services", "default", kubernetesService, func(cur api.Object) (api.Object, error) {
			c := cur.(*api.Service)
			c.Spec.Ports = svc.Spec.Ports
			return c, nil
		})
		if err != nil {
			return fmt.Errorf("update service default/kubernetes: %w", err)
		}
	}
	if err := s.ensureDNSService(ctx); err != nil {
		return err
	}
	if !s.apiEndpoint.IsValid() {
		return nil
	}
	return s.writeKubernetesEndpoints(ctx, s.apiEndpoint)
}

// PublishAPIEndpoint points the `kubernetes` Service's endpoints at ep,
// the server's address as pods reach it. Run calls it once it listens.
func (s *Server) PublishAPIEndpoint(ctx context.Context, ep netip.AddrPort) error {
	if !ep.IsValid() {
		return nil
	}
	s.apiEndpoint = ep
	return s.ensureKubernetesService(ctx)
}

// The Service the agents' DNS servers answer behind, as in Kubernetes.
const (
	dnsNamespace = "kube-system"
	dnsService   = "kube-dns"
)

// ensureDNSService creates kube-system/kube-dns with the cluster DNS
// address, so no other Service is given it. It has no selector: every
// agent answers DNS itself and its service proxy sends the address to
// its own DNS server.
func (s *Server) ensureDNSService(ctx context.Context) error {
	if s.clusterDNS == "" {
		return nil
	}
	svc := &api.Service{
		ObjectMeta: api.ObjectMeta{Namespace: dnsNamespace, Name: dnsService, Labels: map[string]string{
			"k8s-app": "kube-dns", "kubernetes.io/name": "CoreDNS", "kubernetes.io/cluster-service": "true",
		}},
		Spec: api.ServiceSpec{ClusterIP: s.clusterDNS, Ports: []api.ServicePort{
			{Name: "dns", Port: 53, Protocol: api.ProtocolUDP}, {Name: "dns-tcp", Port: 53, Protocol: api.ProtocolTCP},
		}},
	}
	if _, err := s.store.Get(ctx, "services", dnsNamespace, dnsService); err == nil || !errors.Is(err, storage.ErrNotFound) {
		return err
	}
	prepareForCreate(svc, s.clock.Now())
	api.SetDefaults(svc)
	err := s.writeService(ctx, svc, nil, func() error { return s.store.Create(ctx, svc) })
	if err != nil && !errors.Is(err, storage.ErrExists) {
		return fmt.Errorf("create service %s/%s: %w", dnsNamespace, dnsService, err)
	}
	return nil
}

// writeKubernetesEndpoints stores the Endpoints and EndpointSlice of the
// `kubernetes` Service pointing at ep.
func (s *Server) writeKubernetesEndpoints(ctx context.Context, ep netip.AddrPort) error {
	port, name, proto := int32(ep.Port()), "https", api.ProtocolTCP
	addrType := api.AddressTypeIPv4
	if ep.Addr().Is6() {
		addrType = api.AddressTypeIPv6
	}
	eps := &api.Endpoints{
		ObjectMeta: api.ObjectMeta{Namespace: "default", Name: kubernetesService},
		Subsets: []api.EndpointSubset{{
			Addresses: []api.EndpointAddress{{IP: ep.Addr().String()}},
			Ports:     []api.EndpointPort{{Name: &name, Port: &port, Protocol: &proto}},
		}},
	}
	ready := true
	slice := &api.EndpointSlice{
		ObjectMeta: api.ObjectMeta{Namespace: "default", Name: kubernetesService,
			Labels: map[string]string{api.LabelServiceName: kubernetesService}},
		AddressType: addrType,
		Endpoints:   []api.Endpoint{{Addresses: []string{ep.Addr().String()}, Conditions: api.EndpointConditions{Ready: &ready, Serving: &ready}}},
		Ports:       []api.EndpointPort{{Name: &name, Port: &port, Protocol: &proto}},
	}
	for _, obj := range []api.Object{eps, slice} {
		res, _ := api.ResourceOf(obj)
		want := obj
		_, err := s.store.GuaranteedUpdate(ctx, res.Resource, "default", kubernetesService, func(cur api.Object) (api.Object, error) {
			next, err := deepCopy(want)
			if err != nil {
				return nil, err
			}
			m, cm := next.GetObjectMeta(), cur.GetObjectMeta()
			m.UID, m.CreationTimestamp, m.Generation, m.ResourceVersion = cm.UID, cm.CreationTimestamp, cm.Generation, cm.ResourceVersion
			api.SetTypeMeta(next)
			return next, nil
		})
		if errors.Is(err, storage.ErrNotFound) {
			prepareForCreate(obj, s.clock.Now())
			api.SetDefaults(obj)
			err = s.store.Create(ctx, obj)
		}
		if err != nil && !errors.Is(err, storage.ErrExists) {
			return fmt.Errorf("write %s default/kubernetes: %w", res.Resource, err)
		}
	}
	return nil
}
