package api

import (
	"net/netip"
	"regexp"

	"github.com/skiffhq/skiff/api/labels"
)

// dns1035Label is Kubernetes' rule for Service names: a DNS label that
// starts with a letter, so that the name is also a valid DNS host name.
var dns1035Label = regexp.MustCompile(`^[a-z]([-a-z0-9]*[a-z0-9])?$`)

// isDNS1035Label reports the problems with value as a Service name.
func isDNS1035Label(value string) []string {
	var errs []string
	if len(value) > 63 {
		errs = append(errs, maxLenError(63))
	}
	if !dns1035Label.MatchString(value) {
		errs = append(errs, regexError("a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character",
			"[a-z]([-a-z0-9]*[a-z0-9])?", "my-name", "abc-123"))
	}
	return errs
}

var (
	serviceTypes     = []string{string(ServiceTypeClusterIP), string(ServiceTypeExternalName), string(ServiceTypeLoadBalancer), string(ServiceTypeNodePort)}
	trafficPolicies  = []string{TrafficPolicyCluster, TrafficPolicyLocal}
	affinities       = []string{SessionAffinityClientIP, SessionAffinityNone}
	portProtocols    = []string{string(ProtocolSCTP), string(ProtocolTCP), string(ProtocolUDP)}
	ipFamilyPolicies = []string{IPFamilyPolicyPreferDualStack, IPFamilyPolicyRequireDualStack, IPFamilyPolicySingleStack}
	ipFamilies       = []string{IPv4Protocol, IPv6Protocol}
	addressTypes     = []string{AddressTypeFQDN, AddressTypeIPv4, AddressTypeIPv6}
)

// SetDefaultsService fills a Service as Kubernetes does: type ClusterIP,
// sessionAffinity None, each port's protocol TCP and targetPort its port,
// externalTrafficPolicy Cluster for node-port Services, internalTrafficPolicy
// Cluster, and clusterIPs from clusterIP. The API server allocates the
// cluster IP and node ports after defaulting. s may be nil.
func SetDefaultsService(s *Service) {
	if s == nil {
		return
	}
	sp := &s.Spec
	if sp.Type == "" {
		sp.Type = ServiceTypeClusterIP
	}
	if sp.SessionAffinity == "" {
		sp.SessionAffinity = SessionAffinityNone
	}
	for i := range sp.Ports {
		p := &sp.Ports[i]
		if p.Protocol == "" {
			p.Protocol = ProtocolTCP
		}
		if p.TargetPort.Type == Int && p.TargetPort.IntVal == 0 {
			p.TargetPort = FromInt(p.Port)
		}
	}
	if sp.Type == ServiceTypeExternalName {
		return
	}
	if sp.ExternalTrafficPolicy == "" && (sp.Type == ServiceTypeNodePort || sp.Type == ServiceTypeLoadBalancer) {
		sp.ExternalTrafficPolicy = TrafficPolicyCluster
	}
	if sp.InternalTrafficPolicy == nil {
		sp.InternalTrafficPolicy = ptrTo(TrafficPolicyCluster)
	}
	if sp.ClusterIP != "" && len(sp.ClusterIPs) == 0 {
		sp.ClusterIPs = []string{sp.ClusterIP}
	}
	if sp.ClusterIP != "" {
		if sp.IPFamilyPolicy == nil {
			sp.IPFamilyPolicy = ptrTo(IPFamilyPolicySingleStack)
		}
		if len(sp.IPFamilies) == 0 {
			fam := IPv4Protocol
			if a, err := netip.ParseAddr(sp.ClusterIP); err == nil && a.Is6() {
				fam = IPv6Protocol
			}
			sp.IPFamilies = []string{fam}
		}
	}
}

// SetDefaultsEndpointSlice sets each port's protocol to TCP when unset.
func SetDefaultsEndpointSlice(s *EndpointSlice) {
	if s == nil {
		return
	}
	for i := range s.Ports {
		if s.Ports[i].Protocol == nil {
			s.Ports[i].Protocol = ptrTo(ProtocolTCP)
		}
	}
}

func validateService(s *Service) FieldErrors {
	errs := validateObjectMeta(&s.ObjectMeta, true, isDNS1035Label, NewPath("metadata"))
	sp, p := &s.Spec, NewPath("spec")
	errs = append(errs, validateOneOf(string(sp.Type), serviceTypes, p.Child("type"))...)
	errs = append(errs, validateOneOf(sp.SessionAffinity, affinities, p.Child("sessionAffinity"))...)
	if sp.Type == ServiceTypeExternalName {
		if sp.ClusterIP != "" && sp.ClusterIP != ClusterIPNone {
			errs = append(errs, Forbidden(p.Child("clusterIP"), "may not be set for ExternalName services"))
		}
		if sp.ExternalName == "" {
			errs = append(errs, Required(p.Child("externalName"), ""))
		} else {
			errs = append(errs, validateDNSSubdomain(sp.ExternalName, p.Child("externalName"))...)
		}
	} else {
		errs = append(errs, validateClusterIPs(sp, p)...)
		if sp.ExternalName != "" {
			errs = append(errs, Forbidden(p.Child("externalName"), "may only be set for ExternalName services"))
		}
	}
	if s.IsHeadless() && (sp.Type == ServiceTypeNodePort || sp.Type == ServiceTypeLoadBalancer) {
		errs = append(errs, Invalid(p.Child("clusterIP"), sp.ClusterIP, "may not be set to 'None' for "+string(sp.Type)+" services"))
	}
	if len(sp.Ports) == 0 && !s.IsHeadless() && sp.Type != ServiceTypeExternalName {
		errs = append(errs, Required(p.Child("ports"), ""))
	}
	errs = append(errs, validateServicePorts(s, p.Child("ports"))...)
	errs = append(errs, validateLabels(sp.Selector, p.Child("selector"))...)
	if sp.ExternalTrafficPolicy != "" {
		if sp.Type != ServiceTypeNodePort && sp.Type != ServiceTypeLoadBalancer && len(sp.ExternalIPs) == 0 {
			errs = append(errs, Invalid(p.Child("externalTrafficPolicy"), sp.ExternalTrafficPolicy, "may only be set for externally-accessible services"))
		} else {
			errs = append(errs, validateOneOf(sp.ExternalTrafficPolicy, trafficPolicies, p.Child("externalTrafficPolicy"))...)
		}
	}
	if sp.InternalTrafficPolicy != nil {
		errs = append(errs, validateOneOf(*sp.InternalTrafficPolicy, trafficPolicies, p.Child("internalTrafficPolicy"))...)
	}
	if sp.IPFamilyPolicy != nil {
		errs = append(errs, validateOneOf(*sp.IPFamilyPolicy, ipFamilyPolicies, p.Child("ipFamilyPolicy"))...)
	}
	for i, f := range sp.IPFamilies {
		errs = append(errs, validateOneOf(f, ipFamilies, p.Child("ipFamilies").Index(i))...)
	}
	for i, ip := range sp.ExternalIPs {
		if _, err := netip.ParseAddr(ip); err != nil {
			errs = append(errs, Invalid(p.Child("externalIPs").Index(i), ip, "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"))
		}
	}
	for i, r := range sp.LoadBalancerSourceRanges {
		errs = append(errs, validateCIDR(r, p.Child("loadBalancerSourceRanges").Index(i))...)
	}
	return errs
}

// validateClusterIPs checks clusterIP (empty, None or an address) and that
// clusterIPs, when given, starts with it.
func validateClusterIPs(sp *ServiceSpec, p Path) FieldErrors {
	var errs FieldErrors
	if sp.ClusterIP != "" && sp.ClusterIP != ClusterIPNone {
		if _, err := netip.ParseAddr(sp.ClusterIP); err != nil {
			errs = append(errs, Invalid(p.Child("clusterIP"), sp.ClusterIP, "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"))
		}
	}
	if len(sp.ClusterIPs) > 0 && sp.ClusterIPs[0] != sp.ClusterIP {
		errs = append(errs, Invalid(p.Child("clusterIPs").Index(0), sp.ClusterIPs[0], "must match `clusterIP` if specified"))
	}
	if len(sp.ClusterIPs) > 2 {
		errs = append(errs, Invalid(p.Child("clusterIPs"), len(sp.ClusterIPs), "may specify no more than one IP for each IP family"))
	}
	for i := 1; i < len(sp.ClusterIPs); i++ {
		if _, err := netip.ParseAddr(sp.ClusterIPs[i]); err != nil {
			errs = append(errs, Invalid(p.Child("clusterIPs").Index(i), sp.ClusterIPs[i], "must be a valid IP address"))
		}
	}
	return errs
}

// validateServicePorts checks each port and that names and port/protocol
// pairs are unique (a name is required when there are several ports).
func validateServicePorts(s *Service, p Path) FieldErrors {
	var errs FieldErrors
	names := map[string]bool{}
	type key struct {
		port  int32
		proto Protocol
	}
	seen := map[key]bool{}
	nodePorts := map[key]bool{}
	for i := range s.Spec.Ports {
		sp, ip := &s.Spec.Ports[i], p.Index(i)
		if sp.Name == "" {
			if len(s.Spec.Ports) > 1 {
				errs = append(errs, Required(ip.Child("name"), ""))
			}
		} else {
			for _, msg := range labels.IsDNS1123Label(sp.Name) {
				errs = append(errs, Invalid(ip.Child("name"), sp.Name, msg))
			}
			if names[sp.Name] {
				errs = append(errs, Duplicate(ip.Child("name"), sp.Name))
			}
			names[sp.Name] = true
		}
		for _, msg := range isValidPortNum(int(sp.Port)) {
			errs = append(errs, Invalid(ip.Child("port"), sp.Port, msg))
		}
		errs = append(errs, validateOneOf(string(sp.Protocol), portProtocols, ip.Child("protocol"))...)
		if k := (key{sp.Port, sp.Protocol}); seen[k] {
			errs = append(errs, Duplicate(ip, map[string]any{"port": sp.Port, "protocol": sp.Protocol}))
		} else {
			seen[k] = true
		}
		switch {
		case sp.TargetPort.Type == String:
			for _, msg := range isValidPortName(sp.TargetPort.StrVal) {
				errs = append(errs, Invalid(ip.Child("targetPort"), sp.TargetPort.StrVal, msg))
			}
		case s.Spec.Type != ServiceTypeExternalName:
			for _, msg := range isValidPortNum(int(sp.TargetPort.IntVal)) {
				errs = append(errs, Invalid(ip.Child("targetPort"), sp.TargetPort.IntVal, msg))
			}
		}
		if sp.NodePort != 0 {
			if s.Spec.Type != ServiceTypeNodePort && s.Spec.Type != ServiceTypeLoadBalancer {
				errs = append(errs, Forbidden(ip.Child("nodePort"), "may not be used when `type` is '"+string(s.Spec.Type)+"'"))
			}
			for _, msg := range isValidPortNum(int(sp.NodePort)) {
				errs = append(errs, Invalid(ip.Child("nodePort"), sp.NodePort, msg))
			}
			if k := (key{sp.NodePort, sp.Protocol}); nodePorts[k] {
				errs = append(errs, Duplicate(ip.Child("nodePort"), sp.NodePort))
			} else {
				nodePorts[k] = true
			}
		}
		if sp.AppProtocol != nil {
			errs = append(errs, validateQualifiedName(*sp.AppProtocol, ip.Child("appProtocol"))...)
		}
	}
	return errs
}

// validateServiceUpdate adds the update rules: a cluster IP once set never
// changes (unless the Service becomes ExternalName, which drops it).
func validateServiceUpdate(n, o *Service) FieldErrors {
	var errs FieldErrors
	if n.Spec.Type == ServiceTypeExternalName || o.Spec.Type == ServiceTypeExternalName {
		return nil
	}
	if o.Spec.ClusterIP != "" && n.Spec.ClusterIP != o.Spec.ClusterIP {
		errs = append(errs, Invalid(NewPath("spec", "clusterIP"), n.Spec.ClusterIP, "field is immutable"))
	}
	return errs
}

func validateEndpoints(e *Endpoints) FieldErrors {
	errs := validateObjectMeta(&e.ObjectMeta, true, labels.IsDNS1123Subdomain, NewPath("metadata"))
	for i, ss := range e.Subsets {
		sp := NewPath("subsets").Index(i)
		for field, addrs := range map[string][]EndpointAddress{"addresses": ss.Addresses, "notReadyAddresses": ss.NotReadyAddresses} {
			for j, a := range addrs {
				ap := sp.Child(field).Index(j)
				if _, err := netip.ParseAddr(a.IP); err != nil {
					errs = append(errs, Invalid(ap.Child("ip"), a.IP, "must be a valid IP address"))
				}
				if a.Hostname != "" {
					errs = append(errs, validateDNSLabel(a.Hostname, ap.Child("hostname"))...)
				}
			}
		}
		errs = append(errs, validateEndpointPorts(ss.Ports, len(ss.Ports) > 1, sp.Child("ports"))...)
	}
	return errs
}

// validateEndpointPorts checks ports of Endpoints and EndpointSlices.
func validateEndpointPorts(ports []EndpointPort, needNames bool, p Path) FieldErrors {
	var errs FieldErrors
	names := map[string]bool{}
	for i, port := range ports {
		ip := p.Index(i)
		name := ""
		if port.Name != nil {
			name = *port.Name
		}
		switch {
		case name == "" && needNames:
			errs = append(errs, Required(ip.Child("name"), ""))
		case name != "":
			errs = append(errs, validateDNSLabel(name, ip.Child("name"))...)
		}
		if names[name] {
			errs = append(errs, Duplicate(ip.Child("name"), name))
		}
		names[name] = true
		if port.Port == nil {
			errs = append(errs, Required(ip.Child("port"), ""))
		} else {
			for _, msg := range isValidPortNum(int(*port.Port)) {
				errs = append(errs, Invalid(ip.Child("port"), *port.Port, msg))
			}
		}
		if port.Protocol == nil {
			errs = append(errs, Required(ip.Child("protocol"), ""))
		} else {
			errs = append(errs, validateOneOf(string(*port.Protocol), portProtocols, ip.Child("protocol"))...)
		}
	}
	return errs
}

// Bounds of an EndpointSlice, as Kubernetes sets them.
const (
	maxSliceEndpoints = 1000
	maxSliceAddresses = 100
	maxSlicePorts     = 20000
)

func validateEndpointSlice(s *EndpointSlice) FieldErrors {
	errs := validateObjectMeta(&s.ObjectMeta, true, labels.IsDNS1123Subdomain, NewPath("metadata"))
	if s.AddressType == "" {
		errs = append(errs, Required(NewPath("addressType"), ""))
	} else {
		errs = append(errs, validateOneOf(s.AddressType, addressTypes, NewPath("addressType"))...)
	}
	if len(s.Endpoints) > maxSliceEndpoints {
		errs = append(errs, TooLong(NewPath("endpoints"), maxSliceEndpoints))
	}
	for i := range s.Endpoints {
		ep, p := &s.Endpoints[i], NewPath("endpoints").Index(i)
		switch n := len(ep.Addresses); {
		case n == 0:
			errs = append(errs, Required(p.Child("addresses"), "must contain at least 1 address"))
		case n > maxSliceAddresses:
			errs = append(errs, TooLong(p.Child("addresses"), maxSliceAddresses))
		}
		for j, a := range ep.Addresses {
			errs = append(errs, validateSliceAddress(s.AddressType, a, p.Child("addresses").Index(j))...)
		}
		if ep.Hostname != nil {
			errs = append(errs, validateDNSLabel(*ep.Hostname, p.Child("hostname"))...)
		}
		if ep.NodeName != nil {
			errs = append(errs, validateDNSSubdomain(*ep.NodeName, p.Child("nodeName"))...)
		}
	}
	if len(s.Ports) > maxSlicePorts {
		errs = append(errs, TooLong(NewPath("ports"), maxSlicePorts))
	}
	errs = append(errs, validateEndpointPorts(s.Ports, false, NewPath("ports"))...)
	return errs
}

func validateSliceAddress(addrType, a string, p Path) FieldErrors {
	switch addrType {
	case AddressTypeIPv4, AddressTypeIPv6:
		ip, err := netip.ParseAddr(a)
		if err != nil || ip.Is4() != (addrType == AddressTypeIPv4) || ip.Is4In6() {
			return FieldErrors{Invalid(p, a, "must be a valid "+addrType+" address")}
		}
	case AddressTypeFQDN:
		return validateDNSSubdomain(a, p)
	}
	return nil
}

// Limits of a pod's resolv.conf, as Kubernetes sets them.
const (
	maxDNSNameservers    = 3
	maxDNSSearchPaths    = 32
	maxDNSSearchListSize = 2048
)

// validatePodDNSConfig checks dnsConfig: with dnsPolicy None it must give
// at least one nameserver; nameservers are IPs, searches DNS names.
func validatePodDNSConfig(policy string, c *PodDNSConfig, p Path) FieldErrors {
	var errs FieldErrors
	if c == nil {
		if policy == DNSNone {
			errs = append(errs, Required(p, "must provide `dnsConfig` when `dnsPolicy` is None"))
		}
		return errs
	}
	if policy == DNSNone && len(c.Nameservers) == 0 {
		errs = append(errs, Required(p.Child("nameservers"), "must provide at least one DNS nameserver when `dnsPolicy` is None"))
	}
	if len(c.Nameservers) > maxDNSNameservers {
		errs = append(errs, Invalid(p.Child("nameservers"), c.Nameservers, "must not have more than 3 nameservers"))
	}
	for i, ns := range c.Nameservers {
		if _, err := netip.ParseAddr(ns); err != nil {
			errs = append(errs, Invalid(p.Child("nameservers").Index(i), ns, "must be valid IP address"))
		}
	}
	if len(c.Searches) > maxDNSSearchPaths {
		errs = append(errs, Invalid(p.Child("searches"), c.Searches, "must not have more than 32 search paths"))
	}
	total := 0
	for i, s := range c.Searches {
		total += len(s) + 1
		if s == "." {
			continue
		}
		name := s
		if n := len(name); n > 1 && name[n-1] == '.' {
			name = name[:n-1]
		}
		errs = append(errs, validateDNSSubdomain(name, p.Child("searches").Index(i))...)
	}
	if total > maxDNSSearchListSize {
		errs = append(errs, Invalid(p.Child("searches"), c.Searches, "must not have more than 2048 characters (including spaces) in the search list"))
	}
	for i, o := range c.Options {
		if o.Name == "" {
			errs = append(errs, Required(p.Child("options").Index(i).Child("name"), "must not be empty"))
		}
	}
	return errs
}
