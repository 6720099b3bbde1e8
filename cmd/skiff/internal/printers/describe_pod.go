package printers

import (
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"

	"github.com/skiffhq/skiff/api"
)

func (d *describer) pod(p *api.Pod) {
	d.meta(&p.ObjectMeta, true)
	if p.Spec.Priority != nil {
		d.line(0, "Priority:\t%d", *p.Spec.Priority)
	}
	if p.Spec.ServiceAccountName != "" {
		d.line(0, "Service Account:\t%s", p.Spec.ServiceAccountName)
	}
	switch {
	case p.Spec.NodeName == "":
		d.line(0, "Node:\t<none>")
	case p.Status.HostIP == "":
		d.line(0, "Node:\t%s", p.Spec.NodeName)
	default:
		d.line(0, "Node:\t%s/%s", p.Spec.NodeName, p.Status.HostIP)
	}
	if p.Status.StartTime != nil {
		d.line(0, "Start Time:\t%s", d.stamp(p.Status.StartTime.Time))
	}
	d.labels(0, "Labels", p.Labels)
	d.annotations(0, p.Annotations)
	if p.DeletionTimestamp != nil && p.Status.Phase != api.PodSucceeded && p.Status.Phase != api.PodFailed {
		d.line(0, "Status:\tTerminating (lasts %s)", age(p.DeletionTimestamp.Time, d.now))
		if p.DeletionGracePeriodSeconds != nil {
			d.line(0, "Termination Grace Period:\t%ds", *p.DeletionGracePeriodSeconds)
		}
	} else {
		d.line(0, "Status:\t%s", p.Status.Phase)
	}
	if p.Status.Reason != "" {
		d.line(0, "Reason:\t%s", p.Status.Reason)
	}
	if p.Status.Message != "" {
		d.line(0, "Message:\t%s", p.Status.Message)
	}
	d.line(0, "IP:\t%s", p.Status.PodIP)
	if len(p.Status.PodIPs) == 0 {
		d.line(0, "IPs:\t<none>")
	} else {
		d.line(0, "IPs:")
		for _, ip := range p.Status.PodIPs {
			d.line(1, "IP:\t%s", ip.IP)
		}
	}
	if c := controlledBy(&p.ObjectMeta); c != "" {
		d.line(0, "Controlled By:\t%s", c)
	}
	if p.Status.NominatedNodeName != "" {
		d.line(0, "NominatedNodeName:\t%s", p.Status.NominatedNodeName)
	}
	if len(p.Spec.InitContainers) > 0 {
		d.line(0, "Init Containers:")
		for _, c := range p.Spec.InitContainers {
			d.container(1, c, statusOf(p.Status.InitContainerStatuses, c.Name))
		}
	}
	d.line(0, "Containers:")
	for _, c := range p.Spec.Containers {
		d.container(1, c, statusOf(p.Status.ContainerStatuses, c.Name))
	}
	if len(p.Status.Conditions) > 0 {
		d.line(0, "Conditions:")
		d.line(1, "Type\tStatus")
		for _, c := range p.Status.Conditions {
			d.line(1, "%s\t%s", c.Type, c.Status)
		}
	}
	d.volumes(0, p.Spec.Volumes)
	if p.Status.QOSClass != "" {
		d.line(0, "QoS Class:\t%s", p.Status.QOSClass)
	}
	d.labels(0, "Node-Selectors", p.Spec.NodeSelector)
	d.multiline(0, "Tolerations", tolerationStrings(p.Spec.Tolerations))
}

// statusOf finds the status of container name, or nil.
func statusOf(statuses []api.ContainerStatus, name string) *api.ContainerStatus {
	for i := range statuses {
		if statuses[i].Name == name {
			return &statuses[i]
		}
	}
	return nil
}

// container describes one container at level (its name), with its state
// when status is not nil (pods) and without (pod templates).
func (d *describer) container(level int, c api.Container, status *api.ContainerStatus) {
	d.line(level, "%s:", c.Name)
	l := level + 1
	if status != nil && status.ContainerID != "" {
		d.line(l, "Container ID:\t%s", status.ContainerID)
	}
	d.line(l, "Image:\t%s", c.Image)
	if status != nil {
		d.line(l, "Image ID:\t%s", status.ImageID)
	}
	ports, hostPorts := portStrings(c.Ports)
	d.portLine(l, "Port", ports)
	d.portLine(l, "Host Port", hostPorts)
	d.list(l, "Command", c.Command)
	d.list(l, "Args", c.Args)
	if status != nil {
		d.containerState(l, "State", status.State)
		if status.LastTerminationState.Terminated != nil {
			d.containerState(l, "Last State", status.LastTerminationState)
		}
		d.line(l, "Ready:\t%s", boolWord(status.Ready))
		d.line(l, "Restart Count:\t%d", status.RestartCount)
	}
	if len(c.Resources.Limits) > 0 {
		d.line(l, "Limits:")
		d.resourceList(l+1, c.Resources.Limits)
	}
	if len(c.Resources.Requests) > 0 {
		d.line(l, "Requests:")
		d.resourceList(l+1, c.Resources.Requests)
	}
	for _, p := range []struct {
		name  string
		probe *api.Probe
	}{{"Liveness", c.LivenessProbe}, {"Readiness", c.ReadinessProbe}, {"Startup", c.StartupProbe}} {
		if p.probe != nil {
			d.line(l, "%s:\t%s", p.name, probeString(p.probe))
		}
	}
	d.listOrNone(l, "Environment", envStrings(c.Env))
	d.listOrNone(l, "Mounts", mountStrings(c.VolumeMounts))
}

// list writes title and each entry on its own line below it, if any.
func (d *describer) list(level int, title string, entries []string) {
	if len(entries) == 0 {
		return
	}
	d.line(level, "%s:", title)
	for _, e := range entries {
		d.line(level+1, "%s", e)
	}
}

// listOrNone is list, or "title:\t<none>" when there are no entries.
func (d *describer) listOrNone(level int, title string, entries []string) {
	if len(entries) == 0 {
		d.line(level, "%s:\t<none>", title)
		return
	}
	d.list(level, title, entries)
}

func (d *describer) portLine(level int, title string, ports []string) {
	switch len(ports) {
	case 0:
		d.line(level, "%s:\t<none>", title)
	case 1:
		d.line(level, "%s:\t%s", title, ports[0])
	default:
		d.line(level, "%ss:\t%s", title, strings.Join(ports, ", "))
	}
}

// portStrings renders "80/TCP" for each container port and host port.
func portStrings(ports []api.ContainerPort) (container, host []string) {
	for _, p := range ports {
		proto := p.Protocol
		if proto == "" {
			proto = api.ProtocolTCP
		}
		container = append(container, fmt.Sprintf("%d/%s", p.ContainerPort, proto))
		host = append(host, fmt.Sprintf("%d/%s", p.HostPort, proto))
	}
	return container, host
}

func (d *describer) containerState(level int, title string, s api.ContainerState) {
	switch {
	case s.Running != nil:
		d.line(level, "%s:\tRunning", title)
		d.line(level+1, "Started:\t%s", d.stamp(s.Running.StartedAt.Time))
	case s.Terminated != nil:
		t := s.Terminated
		d.line(level, "%s:\tTerminated", title)
		if t.Reason != "" {
			d.line(level+1, "Reason:\t%s", t.Reason)
		}
		if t.Message != "" {
			d.line(level+1, "Message:\t%s", t.Message)
		}
		d.line(level+1, "Exit Code:\t%d", t.ExitCode)
		if t.Signal > 0 {
			d.line(level+1, "Signal:\t%d", t.Signal)
		}
		d.line(level+1, "Started:\t%s", d.stamp(t.StartedAt.Time))
		d.line(level+1, "Finished:\t%s", d.stamp(t.FinishedAt.Time))
	default:
		d.line(level, "%s:\tWaiting", title)
		if s.Waiting != nil && s.Waiting.Reason != "" {
			d.line(level+1, "Reason:\t%s", s.Waiting.Reason)
		}
		if s.Waiting != nil && s.Waiting.Message != "" {
			d.line(level+1, "Message:\t%s", s.Waiting.Message)
		}
	}
}

// Probe defaults the agent applies to fields left at zero, shown as used.
const (
	defaultProbeTimeout   = 1
	defaultProbePeriod    = 10
	defaultProbeSuccess   = 1
	defaultProbeThreshold = 3
)

func orDefault(v, def int32) int32 {
	if v == 0 {
		return def
	}
	return v
}

// probeString renders a probe like kubectl:
// "http-get http://:8080/healthz delay=3s timeout=1s period=3s #success=1 #failure=3".
func probeString(p *api.Probe) string {
	attrs := fmt.Sprintf("delay=%ds timeout=%ds period=%ds #success=%d #failure=%d",
		p.InitialDelaySeconds, orDefault(p.TimeoutSeconds, defaultProbeTimeout), orDefault(p.PeriodSeconds, defaultProbePeriod),
		orDefault(p.SuccessThreshold, defaultProbeSuccess), orDefault(p.FailureThreshold, defaultProbeThreshold))
	switch {
	case p.Exec != nil:
		return fmt.Sprintf("exec %v %s", p.Exec.Command, attrs)
	case p.HTTPGet != nil:
		scheme := strings.ToLower(p.HTTPGet.Scheme)
		if scheme == "" {
			scheme = "http"
		}
		u := url.URL{Scheme: scheme, Host: net.JoinHostPort(p.HTTPGet.Host, p.HTTPGet.Port.String()), Path: p.HTTPGet.Path}
		return fmt.Sprintf("http-get %s %s", u.String(), attrs)
	case p.TCPSocket != nil:
		return fmt.Sprintf("tcp-socket %s:%s %s", p.TCPSocket.Host, p.TCPSocket.Port.String(), attrs)
	}
	return "unknown " + attrs
}

func envStrings(env []api.EnvVar) []string {
	out := make([]string, 0, len(env))
	for _, e := range env {
		switch {
		case e.ValueFrom == nil:
			out = append(out, fmt.Sprintf("%s:\t%s", e.Name, e.Value))
		case e.ValueFrom.SecretKeyRef != nil:
			r := e.ValueFrom.SecretKeyRef
			out = append(out, fmt.Sprintf("%s:\t<set to the key '%s' in secret '%s'>\tOptional: %t", e.Name, r.Key, r.Name, r.Optional != nil && *r.Optional))
		case e.ValueFrom.ConfigMapKeyRef != nil:
			r := e.ValueFrom.ConfigMapKeyRef
			out = append(out, fmt.Sprintf("%s:\t<set to the key '%s' of config map '%s'>\tOptional: %t", e.Name, r.Key, r.Name, r.Optional != nil && *r.Optional))
		default:
			out = append(out, fmt.Sprintf("%s:\t<unknown source>", e.Name))
		}
	}
	return out
}

// mountStrings renders "/data from cache (rw)" per mount, by mount path.
func mountStrings(mounts []api.VolumeMount) []string {
	sorted := slices.Clone(mounts)
	slices.SortStableFunc(sorted, func(a, b api.VolumeMount) int { return strings.Compare(a.MountPath, b.MountPath) })
	out := make([]string, 0, len(sorted))
	for _, m := range sorted {
		flags := "rw"
		if m.ReadOnly {
			flags = "ro"
		}
		if m.SubPath != "" {
			flags += fmt.Sprintf(",path=%q", m.SubPath)
		}
		out = append(out, fmt.Sprintf("%s from %s (%s)", m.MountPath, m.Name, flags))
	}
	return out
}

func (d *describer) volumes(level int, vols []api.Volume) {
	if len(vols) == 0 {
		d.line(level, "Volumes:\t<none>")
		return
	}
	d.line(level, "Volumes:")
	for _, v := range vols {
		d.line(level+1, "%s:", v.Name)
		l := level + 2
		switch {
		case v.EmptyDir != nil:
			d.line(l, "Type:\tEmptyDir (a temporary directory that shares a pod's lifetime)")
			d.line(l, "Medium:\t%s", v.EmptyDir.Medium)
			limit := "<unset>"
			if v.EmptyDir.SizeLimit != nil {
				limit = v.EmptyDir.SizeLimit.String()
			}
			d.line(l, "SizeLimit:\t%s", limit)
		case v.HostPath != nil:
			d.line(l, "Type:\tHostPath (bare host directory volume)")
			d.line(l, "Path:\t%s", v.HostPath.Path)
			typ := ""
			if v.HostPath.Type != nil {
				typ = *v.HostPath.Type
			}
			d.line(l, "HostPathType:\t%s", typ)
		case v.Secret != nil:
			d.line(l, "Type:\tSecret (a volume populated by a Secret)")
			d.line(l, "SecretName:\t%s", v.Secret.SecretName)
			d.line(l, "Optional:\t%t", v.Secret.Optional != nil && *v.Secret.Optional)
		case v.ConfigMap != nil:
			d.line(l, "Type:\tConfigMap (a volume populated by a ConfigMap)")
			d.line(l, "Name:\t%s", v.ConfigMap.Name)
			d.line(l, "Optional:\t%t", v.ConfigMap.Optional != nil && *v.ConfigMap.Optional)
		default:
			d.line(l, "<unknown>")
		}
	}
}

// tolerationStrings renders "key=value:Effect op=Exists for 300s" per
// toleration, as kubectl does.
func tolerationStrings(ts []api.Toleration) []string {
	out := make([]string, 0, len(ts))
	for _, t := range ts {
		var b strings.Builder
		b.WriteString(t.Key)
		if t.Value != "" {
			b.WriteString("=" + t.Value)
		}
		if t.Effect != "" {
			b.WriteString(":" + t.Effect)
		}
		if t.Operator == "Exists" && t.Value == "" {
			if t.Key != "" || t.Effect != "" {
				b.WriteString(" ")
			}
			b.WriteString("op=Exists")
		}
		if t.TolerationSeconds != nil {
			fmt.Fprintf(&b, " for %ds", *t.TolerationSeconds)
		}
		out = append(out, b.String())
	}
	return out
}
