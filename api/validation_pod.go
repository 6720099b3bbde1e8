package api

import (
	"fmt"
	"math"
	"net/netip"
	"slices"
	"strings"

	"github.com/skiffhq/skiff/api/labels"
)

func validatePod(p *Pod) FieldErrors {
	errs := validateObjectMeta(&p.ObjectMeta, true, labels.IsDNS1123Subdomain, NewPath("metadata"))
	return append(errs, validatePodSpec(&p.Spec, NewPath("spec"))...)
}

// validatePodTemplate checks a workload's pod template: its labels and
// annotations and its pod spec, under p ("spec.template").
func validatePodTemplate(t *PodTemplateSpec, p Path) FieldErrors {
	errs := validateLabels(t.Labels, p.Child("metadata").Child("labels"))
	errs = append(errs, validateAnnotations(t.Annotations, p.Child("metadata").Child("annotations"))...)
	return append(errs, validatePodSpec(&t.Spec, p.Child("spec"))...)
}

// validatePodSpec checks a pod spec, of a pod or of a template, under p.
func validatePodSpec(s *PodSpec, p Path) FieldErrors {
	vols, errs := validateVolumes(s.Volumes, p.Child("volumes"))

	names := map[string]bool{}
	if len(s.Containers) == 0 {
		errs = append(errs, Required(p.Child("containers"), ""))
	}
	for i := range s.Containers {
		ip := p.Child("containers").Index(i)
		errs = append(errs, validateContainer(&s.Containers[i], vols, names, false, ip)...)
	}
	errs = append(errs, validateHostPortConflicts(s.Containers, p.Child("containers"), 0)...)
	for i := range s.InitContainers {
		ip := p.Child("initContainers").Index(i)
		errs = append(errs, validateContainer(&s.InitContainers[i], vols, names, true, ip)...)
		// Init containers run one at a time, so only ports within one clash.
		errs = append(errs, validateHostPortConflicts(s.InitContainers[i:i+1], p.Child("initContainers"), i)...)
	}
	if s.HostNetwork {
		errs = append(errs, validateHostNetworkPorts(s.Containers, p.Child("containers"))...)
		errs = append(errs, validateHostNetworkPorts(s.InitContainers, p.Child("initContainers"))...)
	}

	errs = append(errs, validateOneOf(string(s.RestartPolicy),
		[]string{string(RestartPolicyAlways), string(RestartPolicyOnFailure), string(RestartPolicyNever)},
		p.Child("restartPolicy"))...)
	errs = append(errs, validateOneOf(s.DNSPolicy,
		[]string{DNSClusterFirstWithHostNet, DNSClusterFirst, DNSDefault, DNSNone}, p.Child("dnsPolicy"))...)
	errs = append(errs, validatePodDNSConfig(s.DNSPolicy, s.DNSConfig, p.Child("dnsConfig"))...)
	if s.TerminationGracePeriodSeconds != nil {
		errs = append(errs, validateNonnegative(*s.TerminationGracePeriodSeconds, p.Child("terminationGracePeriodSeconds"))...)
	}
	if v := s.ActiveDeadlineSeconds; v != nil && (*v < 1 || *v > math.MaxInt32) {
		errs = append(errs, Invalid(p.Child("activeDeadlineSeconds"), *v, inclusiveRangeError(1, math.MaxInt32)))
	}
	errs = append(errs, validateLabels(s.NodeSelector, p.Child("nodeSelector"))...)
	if s.NodeName != "" {
		errs = append(errs, validateDNSSubdomain(s.NodeName, p.Child("nodeName"))...)
	}
	if s.Hostname != "" {
		errs = append(errs, validateDNSLabel(s.Hostname, p.Child("hostname"))...)
	}
	if s.Subdomain != "" {
		errs = append(errs, validateDNSLabel(s.Subdomain, p.Child("subdomain"))...)
	}
	for _, f := range []struct{ value, name string }{
		{s.SchedulerName, "schedulerName"},
		{s.ServiceAccountName, "serviceAccountName"},
		{s.PriorityClassName, "priorityClassName"},
	} {
		if f.value != "" {
			errs = append(errs, validateDNSSubdomain(f.value, p.Child(f.name))...)
		}
	}
	if s.SecurityContext != nil {
		errs = append(errs, validatePodSecurityContext(s.SecurityContext, p.Child("securityContext"))...)
	}
	if s.Affinity != nil {
		errs = append(errs, validateAffinity(s.Affinity, p.Child("affinity"))...)
	}
	errs = append(errs, validateTolerations(s.Tolerations, p.Child("tolerations"))...)
	errs = append(errs, validateTopologySpread(s.TopologySpreadConstraints, p.Child("topologySpreadConstraints"))...)
	return errs
}

// validateContainer checks one container at p. vols holds the pod's volume
// names; names collects container names across containers and init
// containers, which must all differ.
func validateContainer(c *Container, vols, names map[string]bool, init bool, p Path) FieldErrors {
	var errs FieldErrors
	np := p.Child("name")
	switch {
	case c.Name == "":
		errs = append(errs, Required(np, ""))
	case names[c.Name]:
		errs = append(errs, Duplicate(np, c.Name))
	default:
		errs = append(errs, validateDNSLabel(c.Name, np)...)
	}
	names[c.Name] = true

	if c.Image == "" {
		errs = append(errs, Required(p.Child("image"), ""))
	} else if strings.TrimSpace(c.Image) != c.Image {
		errs = append(errs, Invalid(p.Child("image"), c.Image, "must not have leading or trailing whitespace"))
	}
	errs = append(errs, validateOneOf(string(c.ImagePullPolicy),
		[]string{string(PullAlways), string(PullIfNotPresent), string(PullNever)}, p.Child("imagePullPolicy"))...)
	errs = append(errs, validateOneOf(c.TerminationMessagePolicy,
		[]string{TerminationMessageReadFile, TerminationMessageFallbackToLogsOnError}, p.Child("terminationMessagePolicy"))...)

	errs = append(errs, validateContainerPorts(c.Ports, p.Child("ports"))...)
	errs = append(errs, validateEnvFrom(c.EnvFrom, p.Child("envFrom"))...)
	errs = append(errs, validateEnv(c.Env, p.Child("env"))...)
	errs = append(errs, validateResources(&c.Resources, p.Child("resources"))...)
	errs = append(errs, validateVolumeMounts(c.VolumeMounts, vols, p.Child("volumeMounts"))...)
	errs = append(errs, validateProbes(c, init, p)...)
	if c.SecurityContext != nil {
		errs = append(errs, validateSecurityContext(c.SecurityContext, p.Child("securityContext"))...)
	}
	return errs
}

func validateContainerPorts(ports []ContainerPort, p Path) FieldErrors {
	var errs FieldErrors
	names := map[string]bool{}
	for i, port := range ports {
		ip := p.Index(i)
		if port.Name != "" {
			msgs := isValidPortName(port.Name)
			for _, msg := range msgs {
				errs = append(errs, Invalid(ip.Child("name"), port.Name, msg))
			}
			if len(msgs) == 0 && names[port.Name] {
				errs = append(errs, Duplicate(ip.Child("name"), port.Name))
			}
			names[port.Name] = true
		}
		if port.ContainerPort == 0 {
			errs = append(errs, Required(ip.Child("containerPort"), ""))
		} else {
			for _, msg := range isValidPortNum(int(port.ContainerPort)) {
				errs = append(errs, Invalid(ip.Child("containerPort"), port.ContainerPort, msg))
			}
		}
		if port.HostPort != 0 {
			for _, msg := range isValidPortNum(int(port.HostPort)) {
				errs = append(errs, Invalid(ip.Child("hostPort"), port.HostPort, msg))
			}
		}
		errs = append(errs, validateOneOf(string(port.Protocol),
			[]string{string(ProtocolSCTP), string(ProtocolTCP), string(ProtocolUDP)}, ip.Child("protocol"))...)
		if port.HostIP != "" {
			if _, err := netip.ParseAddr(port.HostIP); err != nil {
				errs = append(errs, Invalid(ip.Child("hostIP"), port.HostIP, "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"))
			}
		}
	}
	return errs
}

// validateHostPortConflicts reports a hostPort used twice with the same
// protocol and hostIP among containers, which sit at p[base+i].
func validateHostPortConflicts(containers []Container, p Path, base int) FieldErrors {
	var errs FieldErrors
	seen := map[string]bool{}
	for i := range containers {
		for j, port := range containers[i].Ports {
			if port.HostPort == 0 {
				continue
			}
			key := fmt.Sprintf("%s/%s/%d", port.HostIP, port.Protocol, port.HostPort)
			if seen[key] {
				errs = append(errs, Duplicate(p.Index(base+i).Child("ports").Index(j).Child("hostPort"), key))
			}
			seen[key] = true
		}
	}
	return errs
}

// validateHostNetworkPorts requires hostPort == containerPort on the host
// network, where the two are the same socket.
func validateHostNetworkPorts(containers []Container, p Path) FieldErrors {
	var errs FieldErrors
	for i := range containers {
		for j, port := range containers[i].Ports {
			if port.HostPort != 0 && port.HostPort != port.ContainerPort {
				errs = append(errs, Invalid(p.Index(i).Child("ports").Index(j).Child("containerPort"),
					port.ContainerPort, "must match `hostPort` when `hostNetwork` is true"))
			}
		}
	}
	return errs
}

func validateEnv(env []EnvVar, p Path) FieldErrors {
	var errs FieldErrors
	for i, ev := range env {
		ip := p.Index(i)
		if ev.Name == "" {
			errs = append(errs, Required(ip.Child("name"), ""))
		} else {
			for _, msg := range isEnvVarName(ev.Name) {
				errs = append(errs, Invalid(ip.Child("name"), ev.Name, msg))
			}
		}
		if ev.ValueFrom != nil {
			errs = append(errs, validateEnvVarSource(ev.ValueFrom, ev.Value, ip.Child("valueFrom"))...)
		}
	}
	return errs
}

func validateEnvVarSource(src *EnvVarSource, value string, p Path) FieldErrors {
	var errs FieldErrors
	n := 0
	if r := src.FieldRef; r != nil {
		n++
		errs = append(errs, validateFieldRef(r, p.Child("fieldRef"))...)
	}
	if r := src.ResourceFieldRef; r != nil {
		n++
		errs = append(errs, validateResourceFieldRef(r, p.Child("resourceFieldRef"))...)
	}
	if r := src.ConfigMapKeyRef; r != nil {
		n++
		errs = append(errs, validateKeySelector(r.Name, r.Key, p.Child("configMapKeyRef"))...)
	}
	if r := src.SecretKeyRef; r != nil {
		n++
		errs = append(errs, validateKeySelector(r.Name, r.Key, p.Child("secretKeyRef"))...)
	}
	switch {
	case n == 0:
		errs = append(errs, Invalid(p, "", "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`"))
	case n > 1:
		errs = append(errs, Invalid(p, "", "may not have more than one field specified at a time"))
	}
	if n != 0 && value != "" {
		errs = append(errs, Invalid(p, "", "may not be specified when `value` is not empty"))
	}
	return errs
}

// envFieldPaths are the pod fields a fieldRef may select, besides
// metadata.labels['KEY'] and metadata.annotations['KEY'].
func envFieldPaths() []string {
	return []string{
		"metadata.name", "metadata.namespace", "metadata.uid", "spec.nodeName",
		"spec.serviceAccountName", "status.hostIP", "status.hostIPs", "status.podIP", "status.podIPs",
	}
}

func validateFieldRef(r *ObjectFieldSelector, p Path) FieldErrors {
	fp := p.Child("fieldPath")
	if r.FieldPath == "" {
		return FieldErrors{Required(fp, "")}
	}
	if r.APIVersion != "" && r.APIVersion != "v1" {
		return FieldErrors{NotSupported(p.Child("apiVersion"), r.APIVersion, []string{"v1"})}
	}
	for _, prefix := range []string{"metadata.labels['", "metadata.annotations['"} {
		if rest, ok := strings.CutPrefix(r.FieldPath, prefix); ok {
			if key, ok := strings.CutSuffix(rest, "']"); ok && key != "" {
				return nil
			}
			return FieldErrors{Invalid(fp, r.FieldPath, "must be "+prefix+"KEY']")}
		}
	}
	if allowed := envFieldPaths(); !slices.Contains(allowed, r.FieldPath) {
		return FieldErrors{NotSupported(fp, r.FieldPath, allowed)}
	}
	return nil
}

// envResourceFields are what a resourceFieldRef may select.
func envResourceFields() []string {
	return []string{
		"limits.cpu", "limits.memory", "limits.ephemeral-storage",
		"requests.cpu", "requests.memory", "requests.ephemeral-storage",
	}
}

func validateResourceFieldRef(r *ResourceFieldSelector, p Path) FieldErrors {
	rp := p.Child("resource")
	if r.Resource == "" {
		return FieldErrors{Required(rp, "")}
	}
	if allowed := envResourceFields(); !slices.Contains(allowed, r.Resource) {
		return FieldErrors{NotSupported(rp, r.Resource, allowed)}
	}
	if r.Divisor != nil && r.Divisor.Sign() <= 0 {
		return FieldErrors{Invalid(p.Child("divisor"), r.Divisor.String(), "must be greater than zero")}
	}
	return nil
}

func validateEnvFrom(from []EnvFromSource, p Path) FieldErrors {
	var errs FieldErrors
	for i, f := range from {
		ip := p.Index(i)
		if f.Prefix != "" {
			for _, msg := range isEnvVarName(f.Prefix) {
				errs = append(errs, Invalid(ip.Child("prefix"), f.Prefix, msg))
			}
		}
		n := 0
		if f.ConfigMapRef != nil {
			n++
			if f.ConfigMapRef.Name == "" {
				errs = append(errs, Required(ip.Child("configMapRef").Child("name"), ""))
			}
		}
		if f.SecretRef != nil {
			n++
			if f.SecretRef.Name == "" {
				errs = append(errs, Required(ip.Child("secretRef").Child("name"), ""))
			}
		}
		switch {
		case n == 0:
			errs = append(errs, Invalid(ip, "", "must specify one of: `configMapRef` or `secretRef`"))
		case n > 1:
			errs = append(errs, Invalid(ip, "", "may not have more than one field specified at a time"))
		}
	}
	return errs
}

func validateKeySelector(name, key string, p Path) FieldErrors {
	var errs FieldErrors
	if name == "" {
		errs = append(errs, Required(p.Child("name"), ""))
	} else {
		errs = append(errs, validateDNSSubdomain(name, p.Child("name"))...)
	}
	if key == "" {
		errs = append(errs, Required(p.Child("key"), ""))
	} else {
		for _, msg := range isConfigMapKey(key) {
			errs = append(errs, Invalid(p.Child("key"), key, msg))
		}
	}
	return errs
}

// containerResourceNames are the resources a container may request.
func containerResourceNames() []string {
	return []string{string(ResourceCPU), string(ResourceMemory), string(ResourceEphemeralStorage)}
}

// validateResources checks requests and limits: known resource names,
// non-negative quantities, and requests no larger than limits.
func validateResources(r *ResourceRequirements, p Path) FieldErrors {
	var errs FieldErrors
	allowed := containerResourceNames()
	for _, name := range sortedKeys(r.Limits) {
		q := r.Limits[name]
		fp := p.Child("limits").Key(string(name))
		if !slices.Contains(allowed, string(name)) {
			errs = append(errs, NotSupported(fp, string(name), allowed))
		}
		if q.Sign() < 0 {
			errs = append(errs, Invalid(fp, q.String(), isNegativeErrorMsg))
		}
	}
	for _, name := range sortedKeys(r.Requests) {
		q := r.Requests[name]
		fp := p.Child("requests").Key(string(name))
		if !slices.Contains(allowed, string(name)) {
			errs = append(errs, NotSupported(fp, string(name), allowed))
		}
		if q.Sign() < 0 {
			errs = append(errs, Invalid(fp, q.String(), isNegativeErrorMsg))
		}
		if lim, ok := r.Limits[name]; ok && q.Cmp(lim) > 0 {
			errs = append(errs, Invalid(fp, q.String(),
				fmt.Sprintf("must be less than or equal to %s limit of %s", name, lim.String())))
		}
	}
	return errs
}

func validatePodSecurityContext(sc *PodSecurityContext, p Path) FieldErrors {
	errs := validateIDs(p, map[string]*int64{"runAsUser": sc.RunAsUser, "runAsGroup": sc.RunAsGroup, "fsGroup": sc.FSGroup})
	for i, g := range sc.SupplementalGroups {
		if g < 0 || g > math.MaxInt32 {
			errs = append(errs, Invalid(p.Child("supplementalGroups").Index(i), g, inclusiveRangeError(0, math.MaxInt32)))
		}
	}
	return errs
}

func validateSecurityContext(sc *SecurityContext, p Path) FieldErrors {
	errs := validateIDs(p, map[string]*int64{"runAsUser": sc.RunAsUser, "runAsGroup": sc.RunAsGroup})
	if c := sc.Capabilities; c != nil {
		for _, list := range []struct {
			name string
			caps []string
		}{{"add", c.Add}, {"drop", c.Drop}} {
			for i, capName := range list.caps {
				if capName == "" {
					errs = append(errs, Required(p.Child("capabilities").Child(list.name).Index(i), ""))
				}
			}
		}
	}
	if sc.AllowPrivilegeEscalation != nil && !*sc.AllowPrivilegeEscalation && sc.Privileged != nil && *sc.Privileged {
		errs = append(errs, Invalid(p, nil, "cannot set `allowPrivilegeEscalation` to false and `privileged` to true"))
	}
	return errs
}

// validateIDs checks user and group IDs (0 to 2^31-1), in field-name order.
func validateIDs(p Path, ids map[string]*int64) FieldErrors {
	var errs FieldErrors
	for _, name := range sortedKeys(ids) {
		if v := ids[name]; v != nil && (*v < 0 || *v > math.MaxInt32) {
			errs = append(errs, Invalid(p.Child(name), *v, inclusiveRangeError(0, math.MaxInt32)))
		}
	}
	return errs
}
