package api

import (
	"fmt"
	"strings"
	"testing"
)

func TestValidatePod(t *testing.T) {
	c0 := "spec.containers[0]"
	tests := []struct {
		name   string
		mutate func(p *Pod)
		want   []fe
	}{
		{"valid", func(p *Pod) {}, nil},
		{"generateName only", func(p *Pod) { p.Name, p.GenerateName = "", "web-" }, nil},
		{"no name", func(p *Pod) { p.Name = "" }, []fe{req("metadata.name")}},
		{"bad name", func(p *Pod) { p.Name = "Web" }, []fe{inv("metadata.name")}},
		{"bad generateName", func(p *Pod) { p.Name, p.GenerateName = "", "Web-" }, []fe{inv("metadata.generateName")}},
		{"no namespace", func(p *Pod) { p.Namespace = "" }, []fe{req("metadata.namespace")}},
		{"bad namespace", func(p *Pod) { p.Namespace = "a.b" }, []fe{inv("metadata.namespace")}},
		{"no containers", func(p *Pod) { p.Spec.Containers = nil }, []fe{req("spec.containers")}},
		{"container name missing", func(p *Pod) { p.Spec.Containers[1].Name = "" }, []fe{req("spec.containers[1].name")}},
		{"container name invalid", func(p *Pod) { p.Spec.Containers[1].Name = "Side_Car" }, []fe{inv("spec.containers[1].name")}},
		{"container name duplicate", func(p *Pod) { p.Spec.Containers[1].Name = "web" }, []fe{dup("spec.containers[1].name")}},
		{"init container name clashes", func(p *Pod) { p.Spec.InitContainers[0].Name = "sidecar" }, []fe{dup("spec.initContainers[0].name")}},
		{"image missing", func(p *Pod) { p.Spec.Containers[0].Image = "" }, []fe{req(c0 + ".image")}},
		{"image padded", func(p *Pod) { p.Spec.Containers[0].Image = " nginx" }, []fe{inv(c0 + ".image")}},
		{"pull policy", func(p *Pod) { p.Spec.Containers[0].ImagePullPolicy = "Sometimes" }, []fe{nsup(c0 + ".imagePullPolicy")}},
		{"termination message policy", func(p *Pod) { p.Spec.Containers[0].TerminationMessagePolicy = "Log" }, []fe{nsup(c0 + ".terminationMessagePolicy")}},
		{"restart policy", func(p *Pod) { p.Spec.RestartPolicy = "Sometimes" }, []fe{nsup("spec.restartPolicy")}},
		{"dns policy", func(p *Pod) { p.Spec.DNSPolicy = "Google" }, []fe{nsup("spec.dnsPolicy")}},
		{"dns policy None without dnsConfig", func(p *Pod) { p.Spec.DNSPolicy = DNSNone }, []fe{req("spec.dnsConfig")}},
		{"dns policy None with a nameserver", func(p *Pod) {
			p.Spec.DNSPolicy = DNSNone
			p.Spec.DNSConfig = &PodDNSConfig{Nameservers: []string{"10.0.0.2"}, Searches: []string{"example.com."}}
		}, nil},
		{"dns config bad nameserver", func(p *Pod) {
			p.Spec.DNSConfig = &PodDNSConfig{Nameservers: []string{"dns"}, Searches: []string{"-bad"}, Options: []PodDNSConfigOption{{}}}
		}, []fe{inv("spec.dnsConfig.nameservers[0]"), inv("spec.dnsConfig.searches[0]"), req("spec.dnsConfig.options[0].name")}},
		{"grace period negative", func(p *Pod) { p.Spec.TerminationGracePeriodSeconds = ptrTo(int64(-1)) }, []fe{inv("spec.terminationGracePeriodSeconds")}},
		{"active deadline zero", func(p *Pod) { p.Spec.ActiveDeadlineSeconds = ptrTo(int64(0)) }, []fe{inv("spec.activeDeadlineSeconds")}},
		{"priority any", func(p *Pod) { p.Spec.Priority = ptrTo(int32(-2000000000)) }, nil},
		{"node name", func(p *Pod) { p.Spec.NodeName = "Edge_1" }, []fe{inv("spec.nodeName")}},
		{"hostname", func(p *Pod) { p.Spec.Hostname = "a.b" }, []fe{inv("spec.hostname")}},
		{"scheduler name", func(p *Pod) { p.Spec.SchedulerName = "My Scheduler" }, []fe{inv("spec.schedulerName")}},
		{"node selector", func(p *Pod) { p.Spec.NodeSelector = map[string]string{"bad key!": "v", "ok": "bad value!"} }, []fe{inv("spec.nodeSelector"), inv("spec.nodeSelector")}},

		// ports
		{"container port zero", func(p *Pod) { p.Spec.Containers[0].Ports[0].ContainerPort = 0 }, []fe{req(c0 + ".ports[0].containerPort")}},
		{"container port range", func(p *Pod) { p.Spec.Containers[0].Ports[0].ContainerPort = 70000 }, []fe{inv(c0 + ".ports[0].containerPort")}},
		{"host port range", func(p *Pod) { p.Spec.Containers[0].Ports[0].HostPort = -1 }, []fe{inv(c0 + ".ports[0].hostPort")}},
		{"protocol", func(p *Pod) { p.Spec.Containers[0].Ports[0].Protocol = "ICMP" }, []fe{nsup(c0 + ".ports[0].protocol")}},
		{"protocol SCTP", func(p *Pod) { p.Spec.Containers[0].Ports[0].Protocol = ProtocolSCTP }, nil},
		{"host IP", func(p *Pod) { p.Spec.Containers[0].Ports[0].HostIP = "localhost" }, []fe{inv(c0 + ".ports[0].hostIP")}},
		{"port name too long and bad", func(p *Pod) { p.Spec.Containers[0].Ports[0].Name = "-http--metrics-port-" }, []fe{
			inv(c0 + ".ports[0].name"), inv(c0 + ".ports[0].name"), inv(c0 + ".ports[0].name")}},
		{"port name digits only", func(p *Pod) { p.Spec.Containers[0].Ports[0].Name = "8080" }, []fe{inv(c0 + ".ports[0].name")}},
		{"port name uppercase", func(p *Pod) { p.Spec.Containers[0].Ports[0].Name = "HTTP" }, []fe{inv(c0 + ".ports[0].name"), inv(c0 + ".ports[0].name")}},
		{"port name duplicate", func(p *Pod) {
			p.Spec.Containers[0].Ports = append(p.Spec.Containers[0].Ports, ContainerPort{Name: "http", ContainerPort: 81, Protocol: ProtocolTCP})
		}, []fe{dup(c0 + ".ports[1].name")}},
		{"host port clash across containers", func(p *Pod) {
			p.Spec.Containers[0].Ports[0].HostPort = 8080
			p.Spec.Containers[1].Ports = []ContainerPort{{ContainerPort: 9090, HostPort: 8080, Protocol: ProtocolTCP}}
		}, []fe{dup("spec.containers[1].ports[0].hostPort")}},
		{"host port other protocol", func(p *Pod) {
			p.Spec.Containers[0].Ports[0].HostPort = 8080
			p.Spec.Containers[1].Ports = []ContainerPort{{ContainerPort: 9090, HostPort: 8080, Protocol: ProtocolUDP}}
		}, nil},
		{"host port init containers apart", func(p *Pod) {
			p.Spec.Containers[0].Ports[0].HostPort = 8080
			p.Spec.InitContainers[0].Ports = []ContainerPort{{ContainerPort: 9090, HostPort: 8080, Protocol: ProtocolTCP}}
		}, nil},
		{"host network port mismatch", func(p *Pod) {
			p.Spec.HostNetwork = true
			p.Spec.Containers[0].Ports[0].HostPort = 8080
		}, []fe{inv(c0 + ".ports[0].containerPort")}},

		// env
		{"env name missing", func(p *Pod) { p.Spec.Containers[0].Env[0].Name = "" }, []fe{req(c0 + ".env[0].name")}},
		{"env name with =", func(p *Pod) { p.Spec.Containers[0].Env[0].Name = "A=B" }, []fe{inv(c0 + ".env[0].name")}},
		{"env name control char", func(p *Pod) { p.Spec.Containers[0].Env[0].Name = "A\tB" }, []fe{inv(c0 + ".env[0].name")}},
		{"env valueFrom empty", func(p *Pod) {
			p.Spec.Containers[0].Env[0] = EnvVar{Name: "X", ValueFrom: &EnvVarSource{}}
		}, []fe{inv(c0 + ".env[0].valueFrom")}},
		{"env valueFrom two sources and value", func(p *Pod) {
			p.Spec.Containers[0].Env[0] = EnvVar{Name: "X", Value: "v", ValueFrom: &EnvVarSource{
				ConfigMapKeyRef: &ConfigMapKeySelector{LocalObjectReference: LocalObjectReference{Name: "cm"}, Key: "k"},
				SecretKeyRef:    &SecretKeySelector{LocalObjectReference: LocalObjectReference{Name: "s"}, Key: "k"},
			}}
		}, []fe{inv(c0 + ".env[0].valueFrom"), inv(c0 + ".env[0].valueFrom")}},
		{"env key and name missing", func(p *Pod) {
			p.Spec.Containers[0].Env[0] = EnvVar{Name: "X", ValueFrom: &EnvVarSource{SecretKeyRef: &SecretKeySelector{}}}
		}, []fe{req(c0 + ".env[0].valueFrom.secretKeyRef.name"), req(c0 + ".env[0].valueFrom.secretKeyRef.key")}},
		{"env key invalid", func(p *Pod) {
			p.Spec.Containers[0].Env[0] = EnvVar{Name: "X", ValueFrom: &EnvVarSource{ConfigMapKeyRef: &ConfigMapKeySelector{LocalObjectReference: LocalObjectReference{Name: "cm"}, Key: "a/b"}}}
		}, []fe{inv(c0 + ".env[0].valueFrom.configMapKeyRef.key")}},
		{"env fieldRef unknown path", func(p *Pod) {
			p.Spec.Containers[0].Env[0] = EnvVar{Name: "X", ValueFrom: &EnvVarSource{FieldRef: &ObjectFieldSelector{FieldPath: "spec.bogus"}}}
		}, []fe{nsup(c0 + ".env[0].valueFrom.fieldRef.fieldPath")}},
		{"env fieldRef label without key", func(p *Pod) {
			p.Spec.Containers[0].Env[0] = EnvVar{Name: "X", ValueFrom: &EnvVarSource{FieldRef: &ObjectFieldSelector{FieldPath: "metadata.labels['']"}}}
		}, []fe{inv(c0 + ".env[0].valueFrom.fieldRef.fieldPath")}},
		{"env resourceFieldRef unknown", func(p *Pod) {
			p.Spec.Containers[0].Env[0] = EnvVar{Name: "X", ValueFrom: &EnvVarSource{ResourceFieldRef: &ResourceFieldSelector{Resource: "limits.gpu"}}}
		}, []fe{nsup(c0 + ".env[0].valueFrom.resourceFieldRef.resource")}},
		{"envFrom neither source", func(p *Pod) {
			p.Spec.Containers[0].EnvFrom = []EnvFromSource{{Prefix: "P_"}}
		}, []fe{inv(c0 + ".envFrom[0]")}},
		{"envFrom secret without name", func(p *Pod) {
			p.Spec.Containers[0].EnvFrom = []EnvFromSource{{SecretRef: &SecretEnvSource{}}}
		}, []fe{req(c0 + ".envFrom[0].secretRef.name")}},

		// resources
		{"request above limit", func(p *Pod) { p.Spec.Containers[0].Resources.Requests[ResourceMemory] = q("1Gi") }, []fe{inv(c0 + ".resources.requests[memory]")}},
		{"negative limit", func(p *Pod) { p.Spec.Containers[0].Resources.Limits[ResourceCPU] = q("-1") }, []fe{
			inv(c0 + ".resources.limits[cpu]"), inv(c0 + ".resources.requests[cpu]")}},
		{"negative request", func(p *Pod) { p.Spec.Containers[0].Resources.Requests[ResourceCPU] = q("-1m") }, []fe{inv(c0 + ".resources.requests[cpu]")}},
		{"unknown resource", func(p *Pod) {
			p.Spec.Containers[0].Resources.Limits["nvidia.com/gpu"] = q("1")
			p.Spec.Containers[0].Resources.Requests["hugepages-2Mi"] = q("1")
		}, []fe{nsup(c0 + ".resources.limits[nvidia.com/gpu]"), nsup(c0 + ".resources.requests[hugepages-2Mi]")}},
		{"pods is not a container resource", func(p *Pod) { p.Spec.Containers[0].Resources.Requests[ResourcePods] = q("1") }, []fe{nsup(c0 + ".resources.requests[pods]")}},

		// volumes and mounts
		{"volume name missing", func(p *Pod) { p.Spec.Volumes[0].Name = "" }, []fe{req("spec.volumes[0].name"), inv(c0 + ".volumeMounts[0].name")}},
		{"volume name duplicate", func(p *Pod) { p.Spec.Volumes[1].Name = "data" }, []fe{dup("spec.volumes[1].name"), inv(c0 + ".volumeMounts[1].name")}},
		{"volume no source", func(p *Pod) { p.Spec.Volumes[0].EmptyDir = nil }, []fe{req("spec.volumes[0]")}},
		{"volume two sources", func(p *Pod) { p.Spec.Volumes[0].HostPath = &HostPathVolumeSource{Path: "/x"} }, []fe{forb("spec.volumes[0].emptyDir")}},
		{"hostPath relative", func(p *Pod) {
			p.Spec.Volumes[0] = Volume{Name: "data", VolumeSource: VolumeSource{HostPath: &HostPathVolumeSource{Path: "var/log"}}}
		}, []fe{inv("spec.volumes[0].hostPath.path")}},
		{"hostPath missing and bad type", func(p *Pod) {
			p.Spec.Volumes[0] = Volume{Name: "data", VolumeSource: VolumeSource{HostPath: &HostPathVolumeSource{Type: ptrTo("Pipe")}}}
		}, []fe{req("spec.volumes[0].hostPath.path"), nsup("spec.volumes[0].hostPath.type")}},
		{"hostPath backsteps", func(p *Pod) {
			p.Spec.Volumes[0] = Volume{Name: "data", VolumeSource: VolumeSource{HostPath: &HostPathVolumeSource{Path: "/var/../etc"}}}
		}, []fe{inv("spec.volumes[0].hostPath.path")}},
		{"emptyDir medium and size", func(p *Pod) {
			p.Spec.Volumes[0].EmptyDir = &EmptyDirVolumeSource{Medium: "Disk", SizeLimit: ptrTo(q("-1Mi"))}
		}, []fe{nsup("spec.volumes[0].emptyDir.medium"), inv("spec.volumes[0].emptyDir.sizeLimit")}},
		{"secret volume", func(p *Pod) {
			p.Spec.Volumes[0].EmptyDir = nil
			p.Spec.Volumes[0].Secret = &SecretVolumeSource{DefaultMode: ptrTo(int32(0o1777)), Items: []KeyToPath{
				{Key: "", Path: "/abs"}, {Key: "k", Path: "../up"}, {Key: "k", Path: ""}, {Key: "k", Path: "ok", Mode: ptrTo(int32(-1))},
			}}
		}, []fe{
			req("spec.volumes[0].secret.secretName"), inv("spec.volumes[0].secret.defaultMode"),
			req("spec.volumes[0].secret.items[0].key"), inv("spec.volumes[0].secret.items[0].path"),
			inv("spec.volumes[0].secret.items[1].path"), req("spec.volumes[0].secret.items[2].path"),
			inv("spec.volumes[0].secret.items[3].mode"),
		}},
		{"configMap volume name", func(p *Pod) { p.Spec.Volumes[1].ConfigMap.Name = "" }, []fe{req("spec.volumes[1].configMap.name")}},
		{"mount unknown volume", func(p *Pod) { p.Spec.Containers[0].VolumeMounts[0].Name = "nope" }, []fe{inv(c0 + ".volumeMounts[0].name")}},
		{"mount path missing", func(p *Pod) { p.Spec.Containers[0].VolumeMounts[0].MountPath = "" }, []fe{req(c0 + ".volumeMounts[0].mountPath")}},
		{"mount path relative", func(p *Pod) { p.Spec.Containers[0].VolumeMounts[0].MountPath = "data" }, []fe{inv(c0 + ".volumeMounts[0].mountPath")}},
		{"mount path twice", func(p *Pod) { p.Spec.Containers[0].VolumeMounts[1].MountPath = "/data" }, []fe{inv(c0 + ".volumeMounts[1].mountPath")}},
		{"mount subPath", func(p *Pod) { p.Spec.Containers[0].VolumeMounts[0].SubPath = "../x" }, []fe{inv(c0 + ".volumeMounts[0].subPath")}},

		// probes
		{"probe without handler", func(p *Pod) { p.Spec.Containers[0].LivenessProbe.HTTPGet = nil }, []fe{req(c0 + ".livenessProbe")}},
		{"probe two handlers", func(p *Pod) {
			p.Spec.Containers[0].LivenessProbe.Exec = &ExecAction{Command: []string{"true"}}
		}, []fe{forb(c0 + ".livenessProbe.httpGet")}},
		{"probe exec empty", func(p *Pod) {
			p.Spec.Containers[0].LivenessProbe.HTTPGet = nil
			p.Spec.Containers[0].LivenessProbe.Exec = &ExecAction{}
		}, []fe{req(c0 + ".livenessProbe.exec.command")}},
		{"probe port", func(p *Pod) { p.Spec.Containers[0].ReadinessProbe.TCPSocket.Port = FromInt(0) }, []fe{inv(c0 + ".readinessProbe.tcpSocket.port")}},
		{"probe port name", func(p *Pod) { p.Spec.Containers[0].LivenessProbe.HTTPGet.Port = FromString("web_port") }, []fe{inv(c0 + ".livenessProbe.httpGet.port")}},
		{"probe scheme and path", func(p *Pod) {
			h := p.Spec.Containers[0].LivenessProbe.HTTPGet
			h.Scheme, h.Path = "FTP", ""
			h.HTTPHeaders = []HTTPHeader{{Name: "X Bad", Value: "v"}}
		}, []fe{nsup(c0 + ".livenessProbe.httpGet.scheme"), req(c0 + ".livenessProbe.httpGet.path"), inv(c0 + ".livenessProbe.httpGet.httpHeaders[0].name")}},
		{"probe negative seconds", func(p *Pod) {
			p.Spec.Containers[0].ReadinessProbe.InitialDelaySeconds = -1
			p.Spec.Containers[0].ReadinessProbe.PeriodSeconds = -1
		}, []fe{inv(c0 + ".readinessProbe.initialDelaySeconds"), inv(c0 + ".readinessProbe.periodSeconds")}},
		{"liveness success threshold", func(p *Pod) { p.Spec.Containers[0].LivenessProbe.SuccessThreshold = 2 }, []fe{inv(c0 + ".livenessProbe.successThreshold")}},
		{"readiness success threshold", func(p *Pod) { p.Spec.Containers[0].ReadinessProbe.SuccessThreshold = 2 }, nil},
		{"startup success threshold", func(p *Pod) {
			p.Spec.Containers[0].StartupProbe = &Probe{ProbeHandler: ProbeHandler{TCPSocket: &TCPSocketAction{Port: FromInt(80)}}, SuccessThreshold: 3}
		}, []fe{inv(c0 + ".startupProbe.successThreshold")}},
		{"readiness grace period", func(p *Pod) { p.Spec.Containers[0].ReadinessProbe.TerminationGracePeriodSeconds = ptrTo(int64(5)) }, []fe{inv(c0 + ".readinessProbe.terminationGracePeriodSeconds")}},
		{"liveness grace period zero", func(p *Pod) { p.Spec.Containers[0].LivenessProbe.TerminationGracePeriodSeconds = ptrTo(int64(0)) }, []fe{inv(c0 + ".livenessProbe.terminationGracePeriodSeconds")}},
		{"init container probe", func(p *Pod) {
			p.Spec.InitContainers[0].ReadinessProbe = &Probe{ProbeHandler: ProbeHandler{TCPSocket: &TCPSocketAction{Port: FromInt(80)}}}
		}, []fe{forb("spec.initContainers[0].readinessProbe")}},

		// security
		{"capability empty", func(p *Pod) {
			p.Spec.Containers[0].SecurityContext = &SecurityContext{Capabilities: &Capabilities{Add: []string{"NET_ADMIN", ""}}}
		}, []fe{req(c0 + ".securityContext.capabilities.add[1]")}},
		{"privileged without escalation", func(p *Pod) {
			p.Spec.Containers[0].SecurityContext = &SecurityContext{Privileged: ptrTo(true), AllowPrivilegeEscalation: ptrTo(false)}
		}, []fe{inv(c0 + ".securityContext")}},
		{"negative user ids", func(p *Pod) {
			p.Spec.SecurityContext = &PodSecurityContext{RunAsUser: ptrTo(int64(-1)), SupplementalGroups: []int64{1, -2}}
			p.Spec.Containers[0].SecurityContext = &SecurityContext{RunAsGroup: ptrTo(int64(1 << 40))}
		}, []fe{inv("spec.securityContext.runAsUser"), inv("spec.securityContext.supplementalGroups[1]"), inv(c0 + ".securityContext.runAsGroup")}},

		// metadata
		{"labels", func(p *Pod) { p.Labels = map[string]string{"a/b/c": "x", "ok": strings.Repeat("v", 64)} }, []fe{inv("metadata.labels"), inv("metadata.labels")}},
		{"annotations", func(p *Pod) { p.Annotations = map[string]string{"bad key": "x"} }, []fe{inv("metadata.annotations")}},
		{"annotations too big", func(p *Pod) { p.Annotations = map[string]string{"big": strings.Repeat("x", 256<<10)} }, []fe{long("metadata.annotations")}},
		{"negative generation", func(p *Pod) { p.Generation = -1 }, []fe{inv("metadata.generation")}},
		{"owner references", func(p *Pod) {
			p.OwnerReferences = []OwnerReference{
				{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs", UID: "1", Controller: ptrTo(true)},
				{APIVersion: "apps/", Controller: ptrTo(true)},
			}
		}, []fe{inv("metadata.ownerReferences[1].apiVersion"), inv("metadata.ownerReferences[1].kind"), inv("metadata.ownerReferences[1].name"),
			inv("metadata.ownerReferences[1].uid"), inv("metadata.ownerReferences[1].controller")}},
		{"finalizers", func(p *Pod) { p.Finalizers = []string{"orphan", "example.com/cleanup", "cleanup", "a b"} }, []fe{
			inv("metadata.finalizers[2]"), inv("metadata.finalizers[3]")}},

		// many faults at once are all reported
		{"every fault collected", func(p *Pod) {
			p.Name = ""
			p.Spec.Containers[0].Image = ""
			p.Spec.Containers[1].Name = "web"
			p.Spec.RestartPolicy = "Maybe"
		}, []fe{req("metadata.name"), req(c0 + ".image"), dup("spec.containers[1].name"), nsup("spec.restartPolicy")}},
	}
	for _, tc := range tests {
		p := validPod()
		tc.mutate(p)
		checkErrs(t, fmt.Sprintf("Validate(%s)", tc.name), Validate(p), tc.want...)
	}
}

func TestValidatePodScheduling(t *testing.T) {
	na := "spec.affinity.nodeAffinity"
	reqTerm := na + ".requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]"
	nodeAffinity := func(terms ...NodeSelectorTerm) *Affinity {
		return &Affinity{NodeAffinity: &NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &NodeSelector{NodeSelectorTerms: terms}}}
	}
	expr := func(key, op string, values ...string) NodeSelectorTerm {
		return NodeSelectorTerm{MatchExpressions: []NodeSelectorRequirement{{Key: key, Operator: op, Values: values}}}
	}
	field := func(key, op string, values ...string) NodeSelectorTerm {
		return NodeSelectorTerm{MatchFields: []NodeSelectorRequirement{{Key: key, Operator: op, Values: values}}}
	}
	tests := []struct {
		name string
		spec func(s *PodSpec)
		want []fe
	}{
		{"toleration exists with value", func(s *PodSpec) {
			s.Tolerations = []Toleration{{Key: "k", Operator: TolerationOpExists, Value: "v"}}
		}, []fe{inv("spec.tolerations[0].value")}},
		{"toleration empty key needs Exists", func(s *PodSpec) {
			s.Tolerations = []Toleration{{Operator: TolerationOpEqual}}
		}, []fe{inv("spec.tolerations[0].operator")}},
		{"toleration empty key and operator", func(s *PodSpec) {
			s.Tolerations = []Toleration{{Value: "x"}}
		}, []fe{inv("spec.tolerations[0].operator")}},
		{"toleration bad operator", func(s *PodSpec) {
			s.Tolerations = []Toleration{{Key: "k", Operator: "Like"}}
		}, []fe{nsup("spec.tolerations[0].operator")}},
		{"toleration bad effect and key", func(s *PodSpec) {
			s.Tolerations = []Toleration{{Key: "bad key", Effect: "NoRun"}}
		}, []fe{inv("spec.tolerations[0].key"), nsup("spec.tolerations[0].effect")}},
		{"toleration seconds without NoExecute", func(s *PodSpec) {
			s.Tolerations = []Toleration{{Key: "k", Effect: TaintEffectNoSchedule, TolerationSeconds: ptrTo(int64(10))}}
		}, []fe{inv("spec.tolerations[0].effect")}},
		{"toleration bad value", func(s *PodSpec) {
			s.Tolerations = []Toleration{{Key: "k", Value: "not ok"}}
		}, []fe{inv("spec.tolerations[0].value")}},
		{"no terms", func(s *PodSpec) { s.Affinity = nodeAffinity() }, []fe{req(na + ".requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms")}},
		{"In without values", func(s *PodSpec) { s.Affinity = nodeAffinity(expr("zone", "In")) }, []fe{req(reqTerm + ".matchExpressions[0].values")}},
		{"Exists with values", func(s *PodSpec) { s.Affinity = nodeAffinity(expr("zone", "Exists", "a")) }, []fe{forb(reqTerm + ".matchExpressions[0].values")}},
		{"Gt two values", func(s *PodSpec) { s.Affinity = nodeAffinity(expr("cores", "Gt", "1", "2")) }, []fe{req(reqTerm + ".matchExpressions[0].values")}},
		{"Lt not integer", func(s *PodSpec) { s.Affinity = nodeAffinity(expr("cores", "Lt", "many")) }, []fe{inv(reqTerm + ".matchExpressions[0].values[0]")}},
		{"Lt negative", func(s *PodSpec) { s.Affinity = nodeAffinity(expr("cores", "Lt", "-3")) }, nil},
		{"bad operator and key", func(s *PodSpec) { s.Affinity = nodeAffinity(expr("", "Near", "x")) }, []fe{
			inv(reqTerm + ".matchExpressions[0].operator"), inv(reqTerm + ".matchExpressions[0].key"), inv(reqTerm + ".matchExpressions[0].key")}},
		{"bad value", func(s *PodSpec) { s.Affinity = nodeAffinity(expr("zone", "NotIn", "a b")) }, []fe{inv(reqTerm + ".matchExpressions[0].values[0]")}},
		{"matchFields other key", func(s *PodSpec) { s.Affinity = nodeAffinity(field("metadata.labels", "In", "x")) }, []fe{inv(reqTerm + ".matchFields[0].key")}},
		{"matchFields two values", func(s *PodSpec) { s.Affinity = nodeAffinity(field("metadata.name", "In", "a", "b")) }, []fe{req(reqTerm + ".matchFields[0].values")}},
		{"matchFields Exists", func(s *PodSpec) { s.Affinity = nodeAffinity(field("metadata.name", "Exists")) }, []fe{inv(reqTerm + ".matchFields[0].operator")}},
		{"matchFields bad name", func(s *PodSpec) { s.Affinity = nodeAffinity(field("metadata.name", "In", "Node_1")) }, []fe{inv(reqTerm + ".matchFields[0].values[0]")}},
		{"preferred weight", func(s *PodSpec) {
			s.Affinity = &Affinity{NodeAffinity: &NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []PreferredSchedulingTerm{
				{Weight: 0, Preference: expr("zone", "In", "a")}, {Weight: 101, Preference: expr("zone", "Gt")},
			}}}
		}, []fe{inv(na + ".preferredDuringSchedulingIgnoredDuringExecution[0].weight"), inv(na + ".preferredDuringSchedulingIgnoredDuringExecution[1].weight"),
			req(na + ".preferredDuringSchedulingIgnoredDuringExecution[1].preference.matchExpressions[0].values")}},
		{"empty affinity", func(s *PodSpec) { s.Affinity = &Affinity{NodeAffinity: &NodeAffinity{}} }, nil},
		{"spread ok", func(s *PodSpec) {
			s.TopologySpreadConstraints = []TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: "topology.kubernetes.io/zone", WhenUnsatisfiable: DoNotSchedule,
				LabelSelector: &LabelSelector{MatchLabels: map[string]string{"app": "web"}}}, {MaxSkew: 2, TopologyKey: "topology.kubernetes.io/zone", WhenUnsatisfiable: ScheduleAnyway}}
		}, nil},
		{"spread bad", func(s *PodSpec) {
			s.TopologySpreadConstraints = []TopologySpreadConstraint{{MaxSkew: 0, WhenUnsatisfiable: "Sometimes"},
				{MaxSkew: 1, TopologyKey: "zone", WhenUnsatisfiable: DoNotSchedule, LabelSelector: &LabelSelector{MatchLabels: map[string]string{"app": "a b"}}},
				{MaxSkew: 1, TopologyKey: "zone", WhenUnsatisfiable: DoNotSchedule}}
		}, []fe{inv("spec.topologySpreadConstraints[0].maxSkew"), req("spec.topologySpreadConstraints[0].topologyKey"),
			nsup("spec.topologySpreadConstraints[0].whenUnsatisfiable"), inv("spec.topologySpreadConstraints[1].labelSelector.matchLabels"),
			dup("spec.topologySpreadConstraints[2]")}},
	}
	for _, tc := range tests {
		p := validPod()
		tc.spec(&p.Spec)
		checkErrs(t, fmt.Sprintf("Validate(%s)", tc.name), Validate(p), tc.want...)
	}
}
