package api

// Service exposes the pods its selector matches under one stable virtual
// IP (the cluster IP), on every node's addresses (NodePort), and by name in
// the cluster DNS, as Kubernetes' core/v1 Service.
type Service struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata"`
	Spec       ServiceSpec   `json:"spec,omitzero"`
	Status     ServiceStatus `json:"status,omitzero"`
}

// ServiceType says how a Service is exposed.
type ServiceType string

// Service types. LoadBalancer and ExternalName are accepted: a LoadBalancer
// Service works as a NodePort one (no load balancer is provisioned, so its
// external IP stays pending), an ExternalName one is a DNS CNAME.
const (
	ServiceTypeClusterIP    ServiceType = "ClusterIP"
	ServiceTypeNodePort     ServiceType = "NodePort"
	ServiceTypeLoadBalancer ServiceType = "LoadBalancer"
	ServiceTypeExternalName ServiceType = "ExternalName"
)

// ClusterIPNone is spec.clusterIP of a headless Service: no virtual IP; the
// DNS name resolves to the ready pods' addresses.
const ClusterIPNone = "None"

// Traffic policies (externalTrafficPolicy, internalTrafficPolicy).
const (
	TrafficPolicyCluster = "Cluster"
	TrafficPolicyLocal   = "Local"
)

// Session affinities. Only None is acted on; ClientIP is stored.
const (
	SessionAffinityNone     = "None"
	SessionAffinityClientIP = "ClientIP"
)

// IP family policies and families.
const (
	IPFamilyPolicySingleStack      = "SingleStack"
	IPFamilyPolicyPreferDualStack  = "PreferDualStack"
	IPFamilyPolicyRequireDualStack = "RequireDualStack"
	IPv4Protocol                   = "IPv4"
	IPv6Protocol                   = "IPv6"
)

// ServiceSpec is the desired state of a Service. Fields marked "stored
// only" are accepted and returned but skiff does not act on them.
type ServiceSpec struct {
	Ports                         []ServicePort          `json:"ports,omitempty" patchStrategy:"merge" patchMergeKey:"port"`
	Selector                      map[string]string      `json:"selector,omitempty"`
	ClusterIP                     string                 `json:"clusterIP,omitempty"`
	ClusterIPs                    []string               `json:"clusterIPs,omitempty"`
	Type                          ServiceType            `json:"type,omitempty"`
	ExternalIPs                   []string               `json:"externalIPs,omitempty"` // stored only
	SessionAffinity               string                 `json:"sessionAffinity,omitempty"`
	SessionAffinityConfig         *SessionAffinityConfig `json:"sessionAffinityConfig,omitempty"` // stored only
	LoadBalancerIP                string                 `json:"loadBalancerIP,omitempty"`        // stored only
	LoadBalancerSourceRanges      []string               `json:"loadBalancerSourceRanges,omitempty"`
	LoadBalancerClass             *string                `json:"loadBalancerClass,omitempty"`
	ExternalName                  string                 `json:"externalName,omitempty"`
	ExternalTrafficPolicy         string                 `json:"externalTrafficPolicy,omitempty"`
	InternalTrafficPolicy         *string                `json:"internalTrafficPolicy,omitempty"`
	HealthCheckNodePort           int32                  `json:"healthCheckNodePort,omitempty"` // stored only
	PublishNotReadyAddresses      bool                   `json:"publishNotReadyAddresses,omitempty"`
	IPFamilies                    []string               `json:"ipFamilies,omitempty"`
	IPFamilyPolicy                *string                `json:"ipFamilyPolicy,omitempty"`
	AllocateLoadBalancerNodePorts *bool                  `json:"allocateLoadBalancerNodePorts,omitempty"`
	TrafficDistribution           *string                `json:"trafficDistribution,omitempty"` // stored only
}

// ServicePort is one port of a Service: traffic to Port on the cluster IP
// (and NodePort on the nodes) goes to TargetPort of a selected pod, given
// by number or by the name of a container port.
type ServicePort struct {
	Name        string      `json:"name,omitempty"`
	Protocol    Protocol    `json:"protocol,omitempty"`
	AppProtocol *string     `json:"appProtocol,omitempty"`
	Port        int32       `json:"port"`
	TargetPort  IntOrString `json:"targetPort,omitzero"`
	NodePort    int32       `json:"nodePort,omitempty"`
}

// SessionAffinityConfig configures ClientIP session affinity (stored only).
type SessionAffinityConfig struct {
	ClientIP *ClientIPConfig `json:"clientIP,omitempty"`
}

// ClientIPConfig holds the ClientIP affinity timeout.
type ClientIPConfig struct {
	TimeoutSeconds *int32 `json:"timeoutSeconds,omitempty"`
}

// ServiceStatus is the observed state of a Service: its load balancer
// ingress points (always empty in skiff) and conditions.
type ServiceStatus struct {
	LoadBalancer LoadBalancerStatus `json:"loadBalancer,omitzero"`
	Conditions   []ServiceCondition `json:"conditions,omitempty"`
}

// ServiceCondition is one condition of a Service (metav1.Condition's
// shape; stored only).
type ServiceCondition struct {
	Type               string `json:"type"`
	Status             string `json:"status"`
	ObservedGeneration int64  `json:"observedGeneration,omitempty"`
	LastTransitionTime Time   `json:"lastTransitionTime"`
	Reason             string `json:"reason"`
	Message            string `json:"message"`
}

// LoadBalancerStatus lists a load balancer's ingress points.
type LoadBalancerStatus struct {
	Ingress []LoadBalancerIngress `json:"ingress,omitempty"`
}

// LoadBalancerIngress is one ingress point of a load balancer.
type LoadBalancerIngress struct {
	IP       string       `json:"ip,omitempty"`
	Hostname string       `json:"hostname,omitempty"`
	IPMode   *string      `json:"ipMode,omitempty"`
	Ports    []PortStatus `json:"ports,omitempty"`
}

// PortStatus is the state of one load balancer port.
type PortStatus struct {
	Port     int32    `json:"port"`
	Protocol Protocol `json:"protocol"`
	Error    *string  `json:"error,omitempty"`
}

// IsHeadless reports whether s has no cluster IP (clusterIP: None).
func (s *Service) IsHeadless() bool { return s.Spec.ClusterIP == ClusterIPNone }

// NeedsNodePorts reports whether s's ports get node ports.
func (s *Service) NeedsNodePorts() bool {
	return s.Spec.Type == ServiceTypeNodePort ||
		(s.Spec.Type == ServiceTypeLoadBalancer && (s.Spec.AllocateLoadBalancerNodePorts == nil || *s.Spec.AllocateLoadBalancerNodePorts))
}

// NeedsClusterIP reports whether s gets a cluster IP allocated.
func (s *Service) NeedsClusterIP() bool {
	return s.Spec.Type != ServiceTypeExternalName && s.Spec.ClusterIP != ClusterIPNone
}

// Endpoints lists the addresses behind a Service, maintained by the
// endpoints controller (core/v1 Endpoints; EndpointSlice is its successor).
type Endpoints struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata"`
	Subsets    []EndpointSubset `json:"subsets,omitempty"`
}

// EndpointSubset is a set of addresses sharing a set of ports.
type EndpointSubset struct {
	Addresses         []EndpointAddress `json:"addresses,omitempty"`
	NotReadyAddresses []EndpointAddress `json:"notReadyAddresses,omitempty"`
	Ports             []EndpointPort    `json:"ports,omitempty"`
}

// EndpointAddress is one endpoint's IP and the pod behind it.
type EndpointAddress struct {
	IP        string           `json:"ip"`
	Hostname  string           `json:"hostname,omitempty"`
	NodeName  *string          `json:"nodeName,omitempty"`
	TargetRef *ObjectReference `json:"targetRef,omitempty"`
}

// EndpointPort is one port of an endpoint (Endpoints and EndpointSlice).
type EndpointPort struct {
	Name        *string   `json:"name,omitempty"`
	Port        *int32    `json:"port,omitempty"`
	Protocol    *Protocol `json:"protocol,omitempty"`
	AppProtocol *string   `json:"appProtocol,omitempty"`
}

// EndpointSlice is a part (at most 100 endpoints) of the endpoints of a
// Service (discovery.k8s.io/v1). The agents' service proxies and DNS read
// these, not Endpoints.
type EndpointSlice struct {
	TypeMeta    `json:",inline"`
	ObjectMeta  `json:"metadata"`
	AddressType string         `json:"addressType"`
	Endpoints   []Endpoint     `json:"endpoints"`
	Ports       []EndpointPort `json:"ports"`
}

// EndpointSlice address types.
const (
	AddressTypeIPv4 = "IPv4"
	AddressTypeIPv6 = "IPv6"
	AddressTypeFQDN = "FQDN"
)

// Labels and limits of EndpointSlices, as Kubernetes names them.
const (
	LabelServiceName           = "kubernetes.io/service-name"
	LabelManagedBy             = "endpointslice.kubernetes.io/managed-by"
	EndpointSliceController    = "endpointslice-controller.k8s.io"
	MaxEndpointsPerSlice       = 100
	LabelHeadless              = "service.kubernetes.io/headless"
	AnnotationEndpointsTrigger = "endpoints.kubernetes.io/last-change-trigger-time"
)

// Endpoint is one backend of an EndpointSlice.
type Endpoint struct {
	Addresses  []string           `json:"addresses"`
	Conditions EndpointConditions `json:"conditions,omitzero"`
	Hostname   *string            `json:"hostname,omitempty"`
	TargetRef  *ObjectReference   `json:"targetRef,omitempty"`
	NodeName   *string            `json:"nodeName,omitempty"`
	Zone       *string            `json:"zone,omitempty"`
	Hints      *EndpointHints     `json:"hints,omitempty"` // stored only
}

// EndpointConditions say whether an endpoint takes traffic: Ready (ready
// and not terminating), Serving (ready, terminating or not) and
// Terminating (being deleted).
type EndpointConditions struct {
	Ready       *bool `json:"ready,omitempty"`
	Serving     *bool `json:"serving,omitempty"`
	Terminating *bool `json:"terminating,omitempty"`
}

// EndpointHints carries topology hints (stored only).
type EndpointHints struct {
	ForZones []ForZone `json:"forZones,omitempty"`
}

// ForZone names a zone in EndpointHints.
type ForZone struct {
	Name string `json:"name"`
}
