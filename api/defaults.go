package api

import "strings"

// Default values filled in by SetDefaults, the same as Kubernetes'.
const (
	DefaultTerminationGracePeriodSeconds int64 = 30
	DefaultSchedulerName                       = "default-scheduler"
	DefaultTerminationMessagePath              = "/dev/termination-log"
	DefaultVolumeMode                    int32 = 0o644
	DefaultRevisionHistoryLimit          int32 = 10
	DefaultProgressDeadlineSeconds       int32 = 600
	NamespaceActive                            = "Active"
	NamespaceTerminating                       = "Terminating"

	// LabelMetadataName is the label every namespace carries with its own
	// name, so that selectors can pick namespaces by name.
	LabelMetadataName = "kubernetes.io/metadata.name"
)

// Termination message policies of a container.
const (
	TerminationMessageReadFile              = "File"
	TerminationMessageFallbackToLogsOnError = "FallbackToLogsOnError"
)

// SetDefaults fills the unset fields of obj with their Kubernetes default
// values, in place. The API server calls it on every create and update body
// before Validate; the agent calls it on static pods. It accepts any input,
// including nil and half-filled objects, and never panics; kinds it does not
// know are left alone.
func SetDefaults(obj Object) {
	switch o := obj.(type) {
	case *Pod:
		SetDefaultsPod(o)
	case *Node:
		SetDefaultsNode(o)
	case *Namespace:
		SetDefaultsNamespace(o)
	case *Secret:
		SetDefaultsSecret(o)
	case *Deployment:
		SetDefaultsDeployment(o)
	case *DaemonSet:
		SetDefaultsDaemonSet(o)
	case *ReplicaSet:
		SetDefaultsReplicaSet(o)
	case *Job:
		SetDefaultsJob(o)
	case *CronJob:
		SetDefaultsCronJob(o)
	case *Service:
		SetDefaultsService(o)
	case *EndpointSlice:
		SetDefaultsEndpointSlice(o)
	case *StatefulSet:
		SetDefaultsStatefulSet(o)
	case *PersistentVolumeClaim:
		SetDefaultsPersistentVolumeClaim(o)
	case *PersistentVolume:
		SetDefaultsPersistentVolume(o)
	case *StorageClass:
		SetDefaultsStorageClass(o)
	}
	// ConfigMap and Event have no defaults.
}

// SetDefaultsPod defaults p's spec (see SetDefaultsPodSpec), then, as
// Kubernetes does for pods but not for templates, sets each container's
// missing requests to its limits and, for hostNetwork pods, each unset
// hostPort to its containerPort. Last it computes status.qosClass from the
// defaulted resources. p may be nil.
func SetDefaultsPod(p *Pod) {
	if p == nil {
		return
	}
	SetDefaultsPodSpec(&p.Spec)
	for _, cs := range [][]Container{p.Spec.Containers, p.Spec.InitContainers} {
		for i := range cs {
			defaultRequestsToLimits(&cs[i].Resources)
			if p.Spec.HostNetwork {
				for j := range cs[i].Ports {
					if cs[i].Ports[j].HostPort == 0 {
						cs[i].Ports[j].HostPort = cs[i].Ports[j].ContainerPort
					}
				}
			}
		}
	}
	if p.Spec.EnableServiceLinks == nil {
		p.Spec.EnableServiceLinks = ptrTo(true)
	}
	p.Status.QOSClass = QOSClass(p)
}

// defaultRequestsToLimits copies every limit that has no request into the
// requests, per resource.
func defaultRequestsToLimits(r *ResourceRequirements) {
	if len(r.Limits) == 0 {
		return
	}
	if r.Requests == nil {
		r.Requests = make(ResourceList, len(r.Limits))
	}
	for name, q := range r.Limits {
		if _, ok := r.Requests[name]; !ok {
			r.Requests[name] = q.DeepCopy()
		}
	}
}

// SetDefaultsPodSpec defaults a pod spec, of a pod or of a workload's
// template: restartPolicy Always, dnsPolicy ClusterFirst, a 30 s
// termination grace period, the default scheduler, an empty pod security
// context, and the defaults of every volume and container. s may be nil.
func SetDefaultsPodSpec(s *PodSpec) {
	if s == nil {
		return
	}
	if s.RestartPolicy == "" {
		s.RestartPolicy = RestartPolicyAlways
	}
	if s.DNSPolicy == "" {
		s.DNSPolicy = DNSClusterFirst
	}
	if s.TerminationGracePeriodSeconds == nil {
		s.TerminationGracePeriodSeconds = ptrTo(DefaultTerminationGracePeriodSeconds)
	}
	if s.SchedulerName == "" {
		s.SchedulerName = DefaultSchedulerName
	}
	if s.SecurityContext == nil {
		s.SecurityContext = &PodSecurityContext{}
	}
	for i := range s.Volumes {
		setDefaultsVolume(&s.Volumes[i])
	}
	for i := range s.InitContainers {
		setDefaultsContainer(&s.InitContainers[i])
	}
	for i := range s.Containers {
		setDefaultsContainer(&s.Containers[i])
	}
}

func setDefaultsVolume(v *Volume) {
	src := &v.VolumeSource
	if src.HostPath == nil && src.EmptyDir == nil && src.Secret == nil && src.ConfigMap == nil && src.PersistentVolumeClaim == nil {
		src.EmptyDir = &EmptyDirVolumeSource{}
	}
	if src.HostPath != nil && src.HostPath.Type == nil {
		src.HostPath.Type = ptrTo("")
	}
	if src.Secret != nil && src.Secret.DefaultMode == nil {
		src.Secret.DefaultMode = ptrTo(DefaultVolumeMode)
	}
	if src.ConfigMap != nil && src.ConfigMap.DefaultMode == nil {
		src.ConfigMap.DefaultMode = ptrTo(DefaultVolumeMode)
	}
}

func setDefaultsContainer(c *Container) {
	if c.ImagePullPolicy == "" {
		c.ImagePullPolicy = defaultPullPolicy(c.Image)
	}
	if c.TerminationMessagePath == "" {
		c.TerminationMessagePath = DefaultTerminationMessagePath
	}
	if c.TerminationMessagePolicy == "" {
		c.TerminationMessagePolicy = TerminationMessageReadFile
	}
	for i := range c.Ports {
		if c.Ports[i].Protocol == "" {
			c.Ports[i].Protocol = ProtocolTCP
		}
	}
	for _, p := range []*Probe{c.LivenessProbe, c.ReadinessProbe, c.StartupProbe} {
		setDefaultsProbe(p)
	}
}

// defaultPullPolicy is Always for an image tagged "latest" or with neither
// tag nor digest, and IfNotPresent otherwise, as in Kubernetes.
func defaultPullPolicy(image string) PullPolicy {
	name, _, hasDigest := strings.Cut(image, "@")
	tag := ""
	if c := strings.LastIndexByte(name, ':'); c > strings.LastIndexByte(name, '/') {
		tag = name[c+1:]
	}
	if tag == "latest" || (tag == "" && !hasDigest) {
		return PullAlways
	}
	return PullIfNotPresent
}

func setDefaultsProbe(p *Probe) {
	if p == nil {
		return
	}
	if p.TimeoutSeconds == 0 {
		p.TimeoutSeconds = 1
	}
	if p.PeriodSeconds == 0 {
		p.PeriodSeconds = 10
	}
	if p.SuccessThreshold == 0 {
		p.SuccessThreshold = 1
	}
	if p.FailureThreshold == 0 {
		p.FailureThreshold = 3
	}
	if h := p.HTTPGet; h != nil {
		if h.Path == "" {
			h.Path = "/"
		}
		if h.Scheme == "" {
			h.Scheme = URISchemeHTTP
		}
	}
}

// SetDefaultsNode defaults status.allocatable to status.capacity when only
// the capacity is reported, and keeps spec.podCIDR and spec.podCIDRs in
// step (podCIDRs[0] is podCIDR), as Kubernetes' v1 conversion does. n may
// be nil.
func SetDefaultsNode(n *Node) {
	if n == nil {
		return
	}
	if n.Status.Allocatable == nil && n.Status.Capacity != nil {
		n.Status.Allocatable = make(ResourceList, len(n.Status.Capacity))
		for name, q := range n.Status.Capacity {
			n.Status.Allocatable[name] = q.DeepCopy()
		}
	}
	switch {
	case n.Spec.PodCIDR != "" && len(n.Spec.PodCIDRs) == 0:
		n.Spec.PodCIDRs = []string{n.Spec.PodCIDR}
	case n.Spec.PodCIDR == "" && len(n.Spec.PodCIDRs) > 0:
		n.Spec.PodCIDR = n.Spec.PodCIDRs[0]
	}
}

// SetDefaultsNamespace sets status.phase to Active when unset and labels
// the namespace with kubernetes.io/metadata.name=<name>. ns may be nil.
func SetDefaultsNamespace(ns *Namespace) {
	if ns == nil {
		return
	}
	if ns.Status.Phase == "" {
		ns.Status.Phase = NamespaceActive
	}
	if ns.Name != "" {
		if ns.Labels == nil {
			ns.Labels = map[string]string{}
		}
		ns.Labels[LabelMetadataName] = ns.Name
	}
}

// SetDefaultsSecret merges stringData into data (stringData wins) and
// clears it, as Kubernetes does on write, and sets type to Opaque when
// unset. s may be nil.
func SetDefaultsSecret(s *Secret) {
	if s == nil {
		return
	}
	if len(s.StringData) > 0 {
		if s.Data == nil {
			s.Data = make(map[string][]byte, len(s.StringData))
		}
		for k, v := range s.StringData {
			s.Data[k] = []byte(v)
		}
	}
	s.StringData = nil
	if s.Type == "" {
		s.Type = SecretTypeOpaque
	}
}

// SetDefaultsDeployment defaults an apps/v1 Deployment: 1 replica, a
// RollingUpdate strategy with 25% maxUnavailable and 25% maxSurge, a
// revision history of 10, a 600 s progress deadline, and the template's pod
// spec. d may be nil.
func SetDefaultsDeployment(d *Deployment) {
	if d == nil {
		return
	}
	if d.Spec.Replicas == nil {
		d.Spec.Replicas = ptrTo(int32(1))
	}
	st := &d.Spec.Strategy
	if st.Type == "" {
		st.Type = RollingUpdateDeploymentStrategyType
	}
	if st.Type == RollingUpdateDeploymentStrategyType {
		if st.RollingUpdate == nil {
			st.RollingUpdate = &RollingUpdateDeployment{}
		}
		if st.RollingUpdate.MaxUnavailable == nil {
			st.RollingUpdate.MaxUnavailable = ptrTo(FromString("25%"))
		}
		if st.RollingUpdate.MaxSurge == nil {
			st.RollingUpdate.MaxSurge = ptrTo(FromString("25%"))
		}
	}
	if d.Spec.RevisionHistoryLimit == nil {
		d.Spec.RevisionHistoryLimit = ptrTo(DefaultRevisionHistoryLimit)
	}
	if d.Spec.ProgressDeadlineSeconds == nil {
		d.Spec.ProgressDeadlineSeconds = ptrTo(DefaultProgressDeadlineSeconds)
	}
	SetDefaultsPodSpec(&d.Spec.Template.Spec)
}

// SetDefaultsDaemonSet defaults an apps/v1 DaemonSet: a RollingUpdate
// update strategy with maxUnavailable 1 and maxSurge 0, a revision history
// of 10, and the template's pod spec. ds may be nil.
func SetDefaultsDaemonSet(ds *DaemonSet) {
	if ds == nil {
		return
	}
	st := &ds.Spec.UpdateStrategy
	if st.Type == "" {
		st.Type = RollingUpdateDaemonSetStrategyType
	}
	if st.Type == RollingUpdateDaemonSetStrategyType {
		if st.RollingUpdate == nil {
			st.RollingUpdate = &RollingUpdateDaemonSet{}
		}
		if st.RollingUpdate.MaxUnavailable == nil {
			st.RollingUpdate.MaxUnavailable = ptrTo(FromInt(1))
		}
		if st.RollingUpdate.MaxSurge == nil {
			st.RollingUpdate.MaxSurge = ptrTo(FromInt(0))
		}
	}
	if ds.Spec.RevisionHistoryLimit == nil {
		ds.Spec.RevisionHistoryLimit = ptrTo(DefaultRevisionHistoryLimit)
	}
	SetDefaultsPodSpec(&ds.Spec.Template.Spec)
}

func ptrTo[T any](v T) *T { return &v }
