package apiserver

import (
	"context"
	"errors"
	"fmt"
	"net/netip"

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

// loadServices marks the cluster IPs and node ports of the stored
// Services as taken. Addresses outside the configured ranges (a changed
// --service-cidr) are logged: those Services keep them, but new ones
// cannot be given them.
func (s *Server) loadServices(ctx context.Context) error {
	objs, _, err := s.store.List(ctx, "services", storage.ListOptions{})
	if err != nil {
		return fmt.Errorf("list services: %w", err)
	}
	svcs := make([]*api.Service, 0, len(objs))
	for _, o := range objs {
		svcs = append(svcs, o.(*api.Service))
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
		r, errs := s.services.Reserve(svc, nil)
		if errs != nil {
			return fmt.Errorf("create service default/kubernetes: %w", errs)
		}
		err := s.store.Create(ctx, svc)
		s.settleReservation(r, err, svc, nil)
		if err != nil && !errors.Is(err, storage.ErrExists) {
			return fmt.Errorf("create service default/kubernetes: %w", err)
		}
	} else if err != nil {
		return fmt.Errorf("get service default/kubernetes: %w", err)
	} else {
		// The server's port may have changed since the last start.
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
	r, errs := s.services.Reserve(svc, nil)
	if errs != nil {
		return fmt.Errorf("create service %s/%s: %w", dnsNamespace, dnsService, errs)
	}
	err := s.store.Create(ctx, svc)
	s.settleReservation(r, err, svc, nil)
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
