package api

import "github.com/skiffhq/skiff/api/resource"

// Pod is a group of containers that run together on one node.
type Pod struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata"`
	Spec       PodSpec   `json:"spec"`
	Status     PodStatus `json:"status,omitzero"`
}

// RestartPolicy says when the agent restarts a pod's containers.
type RestartPolicy string

// Restart policies.
const (
	RestartPolicyAlways    RestartPolicy = "Always"
	RestartPolicyOnFailure RestartPolicy = "OnFailure"
	RestartPolicyNever     RestartPolicy = "Never"
)

// PodSpec is the desired state of a pod. Fields marked "stored only" are
// accepted and returned but skiff does not act on them (see docs/api.md).
type PodSpec struct {
	// List of volumes that containers of the pod may mount: hostPath,
	// emptyDir, secret, configMap or persistentVolumeClaim.
	Volumes []Volume `json:"volumes,omitempty" patchStrategy:"merge,retainKeys" patchMergeKey:"name"`
	// Containers run to completion, in order, before the app containers
	// start; each must exit 0.
	InitContainers []Container `json:"initContainers,omitempty" patchStrategy:"merge" patchMergeKey:"name"`
	// The app containers of the pod; at least one.
	Containers []Container `json:"containers" patchStrategy:"merge" patchMergeKey:"name"`
	// Restart policy for all containers: Always (default), OnFailure or
	// Never.
	RestartPolicy RestartPolicy `json:"restartPolicy,omitempty"`
	// Seconds the pod is given to stop gracefully after SIGTERM before it
	// is killed. Default 30.
	TerminationGracePeriodSeconds *int64 `json:"terminationGracePeriodSeconds,omitempty"`
	// Seconds the pod may be active before it is failed. Stored only.
	ActiveDeadlineSeconds *int64 `json:"activeDeadlineSeconds,omitempty"`
	// DNS policy of the pod: ClusterFirst (default), Default or None.
	DNSPolicy string `json:"dnsPolicy,omitempty"`
	// Extra resolver settings, appended to (or with dnsPolicy None,
	// making up) the pod's /etc/resolv.conf.
	DNSConfig *PodDNSConfig `json:"dnsConfig,omitempty"`
	// Labels a node must have for the pod to be scheduled there.
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`
	// Name of the service account the pod runs as. Stored only.
	ServiceAccountName string `json:"serviceAccountName,omitempty"`
	// Whether a service account token is mounted. Stored only.
	AutomountServiceAccountToken *bool `json:"automountServiceAccountToken,omitempty"`
	// The node the pod is bound to: set by the scheduler, or by the
	// client to bypass it.
	NodeName string `json:"nodeName,omitempty"`
	// Run the pod in the node's network namespace.
	HostNetwork bool `json:"hostNetwork,omitempty"`
	// Pod-level security attributes (user, group, supplemental groups).
	SecurityContext *PodSecurityContext `json:"securityContext,omitempty"`
	// Secrets of the pod's namespace used to pull its images.
	ImagePullSecrets []LocalObjectReference `json:"imagePullSecrets,omitempty" patchStrategy:"merge" patchMergeKey:"name"`
	// Hostname of the pod; defaults to its name.
	Hostname string `json:"hostname,omitempty"`
	// With hostname, makes the pod's name <hostname>.<subdomain>.<ns>.svc
	// (a headless Service of that name). Stored only.
	Subdomain string `json:"subdomain,omitempty"`
	// Node affinity: required and preferred node constraints.
	Affinity *Affinity `json:"affinity,omitempty"`
	// The scheduler that places the pod. Stored only.
	SchedulerName string `json:"schedulerName,omitempty"`
	// Taints of nodes the pod tolerates.
	Tolerations []Toleration `json:"tolerations,omitempty"`
	// How the pod's group spreads over topology domains (zones, nodes).
	TopologySpreadConstraints []TopologySpreadConstraint `json:"topologySpreadConstraints,omitempty" patchStrategy:"merge" patchMergeKey:"topologyKey"`
	// Name of the pod's priority class. Stored only.
	PriorityClassName string `json:"priorityClassName,omitempty"`
	// Scheduling priority: higher-priority pods may preempt lower ones.
	Priority *int32 `json:"priority,omitempty"`
	// Whether Service environment variables are injected. Stored only.
	EnableServiceLinks *bool `json:"enableServiceLinks,omitempty"`
}

// PodDNSConfig adds to (or, with dnsPolicy None, makes up) the pod's
// /etc/resolv.conf: nameservers and search domains are appended, options
// override those of the same name.
type PodDNSConfig struct {
	Nameservers []string             `json:"nameservers,omitempty"`
	Searches    []string             `json:"searches,omitempty"`
	Options     []PodDNSConfigOption `json:"options,omitempty"`
}

// PodDNSConfigOption is one resolver option ("ndots", "5").
type PodDNSConfigOption struct {
	Name  string  `json:"name,omitempty"`
	Value *string `json:"value,omitempty"`
}

// PodSecurityContext holds pod-level security settings.
type PodSecurityContext struct {
	RunAsUser          *int64  `json:"runAsUser,omitempty"`
	RunAsGroup         *int64  `json:"runAsGroup,omitempty"`
	RunAsNonRoot       *bool   `json:"runAsNonRoot,omitempty"`
	FSGroup            *int64  `json:"fsGroup,omitempty"` // stored only
	SupplementalGroups []int64 `json:"supplementalGroups,omitempty"`
}

// LocalObjectReference names an object in the same namespace.
type LocalObjectReference struct {
	Name string `json:"name,omitempty"`
}

// Volume is a named volume that containers of the pod may mount.
type Volume struct {
	Name         string `json:"name"`
	VolumeSource `json:",inline"`
}

// VolumeSource says where a volume's content comes from; exactly one is set.
type VolumeSource struct {
	HostPath  *HostPathVolumeSource  `json:"hostPath,omitempty"`
	EmptyDir  *EmptyDirVolumeSource  `json:"emptyDir,omitempty"`
	Secret    *SecretVolumeSource    `json:"secret,omitempty"`
	ConfigMap *ConfigMapVolumeSource `json:"configMap,omitempty"`

	PersistentVolumeClaim *PersistentVolumeClaimVolumeSource `json:"persistentVolumeClaim,omitempty"`
}

// PersistentVolumeClaimVolumeSource mounts the volume bound to a claim of
// the pod's namespace.
type PersistentVolumeClaimVolumeSource struct {
	ClaimName string `json:"claimName"`
	ReadOnly  bool   `json:"readOnly,omitempty"`
}

// HostPathVolumeSource mounts a path of the node.
type HostPathVolumeSource struct {
	Path string  `json:"path"`
	Type *string `json:"type,omitempty"`
}

// EmptyDirVolumeSource is a scratch directory that lives as long as the pod.
type EmptyDirVolumeSource struct {
	Medium    string             `json:"medium,omitempty"`
	SizeLimit *resource.Quantity `json:"sizeLimit,omitempty"`
}

// KeyToPath maps one key of a secret or config map to a file.
type KeyToPath struct {
	Key  string `json:"key"`
	Path string `json:"path"`
	Mode *int32 `json:"mode,omitempty"`
}

// SecretVolumeSource projects a secret's keys as files.
type SecretVolumeSource struct {
	SecretName  string      `json:"secretName,omitempty"`
	Items       []KeyToPath `json:"items,omitempty"`
	DefaultMode *int32      `json:"defaultMode,omitempty"`
	Optional    *bool       `json:"optional,omitempty"`
}

// ConfigMapVolumeSource projects a config map's keys as files.
type ConfigMapVolumeSource struct {
	LocalObjectReference `json:",inline"`
	Items                []KeyToPath `json:"items,omitempty"`
	DefaultMode          *int32      `json:"defaultMode,omitempty"`
	Optional             *bool       `json:"optional,omitempty"`
}

// PullPolicy says when the agent pulls a container image.
type PullPolicy string

// Image pull policies.
const (
	PullAlways       PullPolicy = "Always"
	PullNever        PullPolicy = "Never"
	PullIfNotPresent PullPolicy = "IfNotPresent"
)

// Container is one container of a pod.
type Container struct {
	Name                     string               `json:"name"`
	Image                    string               `json:"image,omitempty"`
	Command                  []string             `json:"command,omitempty"`
	Args                     []string             `json:"args,omitempty"`
	WorkingDir               string               `json:"workingDir,omitempty"`
	Ports                    []ContainerPort      `json:"ports,omitempty" patchStrategy:"merge" patchMergeKey:"containerPort"`
	EnvFrom                  []EnvFromSource      `json:"envFrom,omitempty"`
	Env                      []EnvVar             `json:"env,omitempty" patchStrategy:"merge" patchMergeKey:"name"`
	Resources                ResourceRequirements `json:"resources,omitzero"`
	VolumeMounts             []VolumeMount        `json:"volumeMounts,omitempty" patchStrategy:"merge" patchMergeKey:"mountPath"`
	LivenessProbe            *Probe               `json:"livenessProbe,omitempty"`
	ReadinessProbe           *Probe               `json:"readinessProbe,omitempty"`
	StartupProbe             *Probe               `json:"startupProbe,omitempty"`
	TerminationMessagePath   string               `json:"terminationMessagePath,omitempty"`   // stored only
	TerminationMessagePolicy string               `json:"terminationMessagePolicy,omitempty"` // stored only
	ImagePullPolicy          PullPolicy           `json:"imagePullPolicy,omitempty"`
	SecurityContext          *SecurityContext     `json:"securityContext,omitempty"`
	Stdin                    bool                 `json:"stdin,omitempty"` // stored only
	TTY                      bool                 `json:"tty,omitempty"`   // stored only
}

// Protocol is a network protocol of a port.
type Protocol string

// Protocols.
const (
	ProtocolTCP Protocol = "TCP"
	ProtocolUDP Protocol = "UDP"
)

// ContainerPort is a port a container listens on, optionally published on
// the node as HostPort.
type ContainerPort struct {
	Name          string   `json:"name,omitempty"`
	HostPort      int32    `json:"hostPort,omitempty"`
	ContainerPort int32    `json:"containerPort"`
	Protocol      Protocol `json:"protocol,omitempty"`
	HostIP        string   `json:"hostIP,omitempty"`
}

// EnvVar is one environment variable, given literally or taken from a key
// of a secret or config map.
type EnvVar struct {
	Name      string        `json:"name"`
	Value     string        `json:"value,omitempty"`
	ValueFrom *EnvVarSource `json:"valueFrom,omitempty"`
}

// EnvVarSource selects the source of an environment variable's value;
// exactly one is set.
type EnvVarSource struct {
	FieldRef         *ObjectFieldSelector   `json:"fieldRef,omitempty"`
	ResourceFieldRef *ResourceFieldSelector `json:"resourceFieldRef,omitempty"`
	ConfigMapKeyRef  *ConfigMapKeySelector  `json:"configMapKeyRef,omitempty"`
	SecretKeyRef     *SecretKeySelector     `json:"secretKeyRef,omitempty"`
}

// ObjectFieldSelector selects a field of the pod (the downward API):
// metadata.name, metadata.namespace, metadata.uid,
// metadata.labels['KEY'], metadata.annotations['KEY'], spec.nodeName,
// spec.serviceAccountName, status.hostIP, status.podIP, status.podIPs.
type ObjectFieldSelector struct {
	APIVersion string `json:"apiVersion,omitempty"`
	FieldPath  string `json:"fieldPath"`
}

// ResourceFieldSelector selects a container's resource request or limit
// (limits.cpu, limits.memory, requests.cpu, requests.memory, ...),
// divided by Divisor (default 1).
type ResourceFieldSelector struct {
	ContainerName string             `json:"containerName,omitempty"`
	Resource      string             `json:"resource"`
	Divisor       *resource.Quantity `json:"divisor,omitempty"`
}

// EnvFromSource takes every key of a config map or secret as an
// environment variable, each name prefixed with Prefix; exactly one of
// ConfigMapRef and SecretRef is set.
type EnvFromSource struct {
	Prefix       string              `json:"prefix,omitempty"`
	ConfigMapRef *ConfigMapEnvSource `json:"configMapRef,omitempty"`
	SecretRef    *SecretEnvSource    `json:"secretRef,omitempty"`
}

// ConfigMapEnvSource names a config map whose keys become variables.
type ConfigMapEnvSource struct {
	LocalObjectReference `json:",inline"`
	Optional             *bool `json:"optional,omitempty"`
}

// SecretEnvSource names a secret whose keys become variables.
type SecretEnvSource struct {
	LocalObjectReference `json:",inline"`
	Optional             *bool `json:"optional,omitempty"`
}

// ConfigMapKeySelector selects a key of a config map.
type ConfigMapKeySelector struct {
	LocalObjectReference `json:",inline"`
	Key                  string `json:"key"`
	Optional             *bool  `json:"optional,omitempty"`
}

// SecretKeySelector selects a key of a secret.
type SecretKeySelector struct {
	LocalObjectReference `json:",inline"`
	Key                  string `json:"key"`
	Optional             *bool  `json:"optional,omitempty"`
}

// ResourceName names a compute resource ("cpu", "memory", ...).
type ResourceName string

// Resource names skiff accounts for.
const (
	ResourceCPU              ResourceName = "cpu"
	ResourceMemory           ResourceName = "memory"
	ResourceEphemeralStorage ResourceName = "ephemeral-storage"
	ResourcePods             ResourceName = "pods"
)

// ResourceList maps resource names to quantities.
type ResourceList map[ResourceName]resource.Quantity

// ResourceRequirements holds a container's requests and limits.
type ResourceRequirements struct {
	Limits   ResourceList `json:"limits,omitempty"`
	Requests ResourceList `json:"requests,omitempty"`
}

// IsZero reports whether no requests or limits are set (for omitzero).
func (r ResourceRequirements) IsZero() bool { return len(r.Limits) == 0 && len(r.Requests) == 0 }

// VolumeMount mounts a pod volume into a container.
type VolumeMount struct {
	Name      string `json:"name"`
	ReadOnly  bool   `json:"readOnly,omitempty"`
	MountPath string `json:"mountPath"`
	SubPath   string `json:"subPath,omitempty"`
}

// Probe describes a health check of a container.
type Probe struct {
	ProbeHandler                  `json:",inline"`
	InitialDelaySeconds           int32  `json:"initialDelaySeconds,omitempty"`
	TimeoutSeconds                int32  `json:"timeoutSeconds,omitempty"`
	PeriodSeconds                 int32  `json:"periodSeconds,omitempty"`
	SuccessThreshold              int32  `json:"successThreshold,omitempty"`
	FailureThreshold              int32  `json:"failureThreshold,omitempty"`
	TerminationGracePeriodSeconds *int64 `json:"terminationGracePeriodSeconds,omitempty"`
}

// ProbeHandler is the action a probe takes; exactly one is set.
type ProbeHandler struct {
	Exec      *ExecAction      `json:"exec,omitempty"`
	HTTPGet   *HTTPGetAction   `json:"httpGet,omitempty"`
	TCPSocket *TCPSocketAction `json:"tcpSocket,omitempty"`
}

// ExecAction runs a command inside the container; exit 0 is success.
type ExecAction struct {
	Command []string `json:"command,omitempty"`
}

// HTTPGetAction performs an HTTP GET; a 2xx or 3xx answer is success.
type HTTPGetAction struct {
	Path        string       `json:"path,omitempty"`
	Port        IntOrString  `json:"port"`
	Host        string       `json:"host,omitempty"`
	Scheme      string       `json:"scheme,omitempty"`
	HTTPHeaders []HTTPHeader `json:"httpHeaders,omitempty"`
}

// HTTPHeader is one header sent by an HTTP probe.
type HTTPHeader struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// TCPSocketAction opens a TCP connection; success when it connects.
type TCPSocketAction struct {
	Port IntOrString `json:"port"`
	Host string      `json:"host,omitempty"`
}

// SecurityContext holds container-level security settings.
type SecurityContext struct {
	Capabilities             *Capabilities `json:"capabilities,omitempty"`
	Privileged               *bool         `json:"privileged,omitempty"`
	RunAsUser                *int64        `json:"runAsUser,omitempty"`
	RunAsGroup               *int64        `json:"runAsGroup,omitempty"`
	RunAsNonRoot             *bool         `json:"runAsNonRoot,omitempty"`
	ReadOnlyRootFilesystem   *bool         `json:"readOnlyRootFilesystem,omitempty"`
	AllowPrivilegeEscalation *bool         `json:"allowPrivilegeEscalation,omitempty"`
}

// Capabilities adds and drops Linux capabilities ("NET_ADMIN", ...).
type Capabilities struct {
	Add  []string `json:"add,omitempty"`
	Drop []string `json:"drop,omitempty"`
}

// TopologySpreadConstraint spreads the pods LabelSelector matches (in the
// pod's namespace) over the domains of TopologyKey, the values that node
// label takes: a pod may go to a domain only while the count there, with
// it, exceeds the smallest domain's by at most MaxSkew (DoNotSchedule),
// or it merely prefers the emptier domains (ScheduleAnyway). Nodes
// without the label are not candidates under DoNotSchedule.
type TopologySpreadConstraint struct {
	MaxSkew           int32          `json:"maxSkew"`
	TopologyKey       string         `json:"topologyKey"`
	WhenUnsatisfiable string         `json:"whenUnsatisfiable"`
	LabelSelector     *LabelSelector `json:"labelSelector,omitempty"`
}

// WhenUnsatisfiable values.
const (
	DoNotSchedule  = "DoNotSchedule"
	ScheduleAnyway = "ScheduleAnyway"
)

// Affinity holds scheduling constraints; skiff supports node affinity.
type Affinity struct {
	NodeAffinity *NodeAffinity `json:"nodeAffinity,omitempty"`
}

// NodeAffinity holds required and preferred node constraints.
type NodeAffinity struct {
	RequiredDuringSchedulingIgnoredDuringExecution  *NodeSelector             `json:"requiredDuringSchedulingIgnoredDuringExecution,omitempty"`
	PreferredDuringSchedulingIgnoredDuringExecution []PreferredSchedulingTerm `json:"preferredDuringSchedulingIgnoredDuringExecution,omitempty"`
}

// NodeSelector is a disjunction (OR) of node selector terms.
type NodeSelector struct {
	NodeSelectorTerms []NodeSelectorTerm `json:"nodeSelectorTerms"`
}

// NodeSelectorTerm is a conjunction (AND) of requirements on node labels
// (matchExpressions) and node fields (matchFields: metadata.name).
type NodeSelectorTerm struct {
	MatchExpressions []NodeSelectorRequirement `json:"matchExpressions,omitempty"`
	MatchFields      []NodeSelectorRequirement `json:"matchFields,omitempty"`
}

// NodeSelectorRequirement is one requirement; Operator is In, NotIn,
// Exists, DoesNotExist, Gt or Lt.
type NodeSelectorRequirement struct {
	Key      string   `json:"key"`
	Operator string   `json:"operator"`
	Values   []string `json:"values,omitempty"`
}

// PreferredSchedulingTerm is a weighted preference (weight 1–100).
type PreferredSchedulingTerm struct {
	Weight     int32            `json:"weight"`
	Preference NodeSelectorTerm `json:"preference"`
}

// Toleration lets a pod schedule onto (or stay on) nodes with a matching taint.
type Toleration struct {
	Key               string `json:"key,omitempty"`
	Operator          string `json:"operator,omitempty"` // Exists or Equal (default)
	Value             string `json:"value,omitempty"`
	Effect            string `json:"effect,omitempty"` // empty matches all effects
	TolerationSeconds *int64 `json:"tolerationSeconds,omitempty"`
}

// PodPhase is the coarse lifecycle phase of a pod.
type PodPhase string

// Pod phases.
const (
	PodPending   PodPhase = "Pending"
	PodRunning   PodPhase = "Running"
	PodSucceeded PodPhase = "Succeeded"
	PodFailed    PodPhase = "Failed"
	PodUnknown   PodPhase = "Unknown"
)

// PodQOSClass is a pod's quality-of-service class, derived from its
// containers' requests and limits.
type PodQOSClass string

// QoS classes.
const (
	PodQOSGuaranteed PodQOSClass = "Guaranteed"
	PodQOSBurstable  PodQOSClass = "Burstable"
	PodQOSBestEffort PodQOSClass = "BestEffort"
)

// Pod condition types.
const (
	PodScheduled    = "PodScheduled"
	PodInitialized  = "Initialized"
	ContainersReady = "ContainersReady"
	PodReady        = "Ready"
)

// PodStatus is the observed state of a pod, written by the scheduler and
// the agent.
type PodStatus struct {
	Phase                 PodPhase          `json:"phase,omitempty"`
	Conditions            []PodCondition    `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type"`
	Message               string            `json:"message,omitempty"`
	Reason                string            `json:"reason,omitempty"`
	NominatedNodeName     string            `json:"nominatedNodeName,omitempty"`
	HostIP                string            `json:"hostIP,omitempty"`
	PodIP                 string            `json:"podIP,omitempty"`
	PodIPs                []PodIP           `json:"podIPs,omitempty" patchStrategy:"merge" patchMergeKey:"ip"`
	StartTime             *Time             `json:"startTime,omitempty"`
	InitContainerStatuses []ContainerStatus `json:"initContainerStatuses,omitempty"`
	ContainerStatuses     []ContainerStatus `json:"containerStatuses,omitempty"`
	QOSClass              PodQOSClass       `json:"qosClass,omitempty"`
}

// PodIP is one address of a pod.
type PodIP struct {
	IP string `json:"ip"`
}

// PodCondition is one condition of a pod (Ready, PodScheduled, ...).
type PodCondition struct {
	Type               string `json:"type"`
	Status             string `json:"status"` // True, False or Unknown
	LastProbeTime      Time   `json:"lastProbeTime,omitzero"`
	LastTransitionTime Time   `json:"lastTransitionTime,omitzero"`
	Reason             string `json:"reason,omitempty"`
	Message            string `json:"message,omitempty"`
}

// Condition statuses.
const (
	ConditionTrue    = "True"
	ConditionFalse   = "False"
	ConditionUnknown = "Unknown"
)

// ContainerStatus is the observed state of one container.
type ContainerStatus struct {
	Name                 string         `json:"name"`
	State                ContainerState `json:"state,omitzero"`
	LastTerminationState ContainerState `json:"lastState,omitzero"`
	Ready                bool           `json:"ready"`
	RestartCount         int32          `json:"restartCount"`
	Image                string         `json:"image"`
	ImageID              string         `json:"imageID"`
	ContainerID          string         `json:"containerID,omitempty"`
	Started              *bool          `json:"started,omitempty"`
}

// ContainerState holds exactly one of waiting, running or terminated.
type ContainerState struct {
	Waiting    *ContainerStateWaiting    `json:"waiting,omitempty"`
	Running    *ContainerStateRunning    `json:"running,omitempty"`
	Terminated *ContainerStateTerminated `json:"terminated,omitempty"`
}

// IsZero reports whether no state is set (for omitzero).
func (s ContainerState) IsZero() bool {
	return s.Waiting == nil && s.Running == nil && s.Terminated == nil
}

// ContainerStateWaiting is a container that has not started yet.
type ContainerStateWaiting struct {
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
}

// ContainerStateRunning is a running container.
type ContainerStateRunning struct {
	StartedAt Time `json:"startedAt,omitzero"`
}

// ContainerStateTerminated is a container that exited.
type ContainerStateTerminated struct {
	ExitCode    int32  `json:"exitCode"`
	Signal      int32  `json:"signal,omitempty"`
	Reason      string `json:"reason,omitempty"`
	Message     string `json:"message,omitempty"`
	StartedAt   Time   `json:"startedAt,omitzero"`
	FinishedAt  Time   `json:"finishedAt,omitzero"`
	ContainerID string `json:"containerID,omitempty"`
}

// PodTemplateSpec is the pod a workload controller stamps out.
type PodTemplateSpec struct {
	ObjectMeta `json:"metadata,omitzero"`
	Spec       PodSpec `json:"spec"`
}
