package api

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

func storedPod() *Pod {
	p := validPod()
	p.UID = "0b7c1d2e-3f40-4a5b-8c6d-7e8f90a1b2c3"
	p.CreationTimestamp = NewTime(time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC))
	p.ResourceVersion = "7"
	p.Spec.ActiveDeadlineSeconds = ptrTo(int64(600))
	return p
}

func TestValidatePodUpdate(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(p *Pod)
		want   []fe
	}{
		{"unchanged", func(p *Pod) {}, nil},
		{"labels and annotations", func(p *Pod) {
			p.Labels["version"] = "2"
			p.Annotations = map[string]string{"note": "x"}
		}, nil},
		{"status", func(p *Pod) { p.Status.Phase = PodRunning; p.Status.PodIP = "10.42.0.5" }, nil},
		{"images", func(p *Pod) {
			p.Spec.Containers[0].Image = "nginx:1.28"
			p.Spec.InitContainers[0].Image = "busybox:1.37"
		}, nil},
		{"empty image", func(p *Pod) { p.Spec.Containers[1].Image = "" }, []fe{req("spec.containers[1].image")}},
		{"lower deadline", func(p *Pod) { p.Spec.ActiveDeadlineSeconds = ptrTo(int64(60)) }, nil},
		{"raise deadline", func(p *Pod) { p.Spec.ActiveDeadlineSeconds = ptrTo(int64(601)) }, []fe{inv("spec.activeDeadlineSeconds")}},
		{"drop deadline", func(p *Pod) { p.Spec.ActiveDeadlineSeconds = nil }, []fe{inv("spec.activeDeadlineSeconds")}},
		{"add toleration", func(p *Pod) {
			p.Spec.Tolerations = append(p.Spec.Tolerations, Toleration{Key: "node.kubernetes.io/not-ready", Operator: TolerationOpExists, Effect: TaintEffectNoExecute, TolerationSeconds: ptrTo(int64(30))})
		}, nil},
		{"change toleration", func(p *Pod) { p.Spec.Tolerations[0].Value = "api" }, []fe{forb("spec.tolerations")}},
		{"remove toleration", func(p *Pod) { p.Spec.Tolerations = nil }, []fe{forb("spec.tolerations")}},
		{"bind node", func(p *Pod) { p.Spec.NodeName = "edge-1" }, nil},
		{"change ports", func(p *Pod) { p.Spec.Containers[0].Ports[0].ContainerPort = 8080 }, []fe{forb("spec")}},
		{"change restart policy and env", func(p *Pod) {
			p.Spec.RestartPolicy = RestartPolicyNever
			p.Spec.Containers[1].Env = []EnvVar{{Name: "A", Value: "b"}}
		}, []fe{forb("spec")}},
		{"add container", func(p *Pod) {
			p.Spec.Containers = append(p.Spec.Containers, Container{Name: "x", Image: "x", ImagePullPolicy: PullAlways, TerminationMessagePolicy: "File"})
		}, []fe{forb("spec.containers")}},
		{"remove init container", func(p *Pod) { p.Spec.InitContainers = nil }, []fe{forb("spec.initContainers")}},
		{"rename", func(p *Pod) { p.Name = "web-1" }, []fe{inv("metadata.name")}},
		{"move namespace", func(p *Pod) { p.Namespace = "prod" }, []fe{inv("metadata.namespace")}},
		{"new uid", func(p *Pod) { p.UID = "other" }, []fe{inv("metadata.uid")}},
		{"no uid", func(p *Pod) { p.UID = "" }, []fe{inv("metadata.uid")}},
		{"new creation time", func(p *Pod) { p.CreationTimestamp = NewTime(time.Now()) }, []fe{inv("metadata.creationTimestamp")}},
		{"resources equal in other form", func(p *Pod) {
			p.Spec.Containers[0].Resources.Limits[ResourceCPU] = q("0.5")
		}, nil},
		{"resources changed", func(p *Pod) {
			p.Spec.Containers[0].Resources.Limits[ResourceCPU] = q("2")
		}, []fe{forb("spec")}},
		{"nil and empty slices alike", func(p *Pod) {
			p.Spec.Containers[1].Args = []string{}
			p.Spec.ImagePullSecrets = []LocalObjectReference{}
		}, nil},
	}
	for _, tc := range tests {
		old := storedPod()
		p := storedPod()
		tc.mutate(p)
		checkErrs(t, fmt.Sprintf("ValidateUpdate(%s)", tc.name), ValidateUpdate(p, old), tc.want...)
	}
}

func TestValidatePodUpdateNames(t *testing.T) {
	old := storedPod()
	old.Spec.NodeName = "edge-1"
	p := storedPod()
	p.Spec.NodeName = "edge-2"
	p.Spec.Containers[0].Ports[0].Name = "web"
	errs := ValidateUpdate(p, old)
	if len(errs) != 1 {
		t.Fatalf("ValidateUpdate(rebind) = %v; want one error", errs)
	}
	msg := errs[0].Error()
	for _, want := range []string{
		"spec: Forbidden: pod updates may not change fields other than `spec.containers[*].image`",
		"changed: spec.containers[0].ports[0].name, spec.nodeName",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("ValidateUpdate(rebind) = %q; want it to contain %q", msg, want)
		}
	}
}

func TestValidateUpdateOtherKinds(t *testing.T) {
	immutable := ptrTo(true)
	tests := []struct {
		name     string
		old, obj func() Object
		want     []fe
	}{
		{"deployment selector", validDeploymentObj, func() Object {
			d := validDeployment()
			d.Spec.Selector.MatchLabels["tier"] = "front"
			return d
		}, []fe{inv("spec.selector")}},
		{"deployment scale and image", validDeploymentObj, func() Object {
			d := validDeployment()
			d.Spec.Replicas = ptrTo(int32(10))
			d.Spec.Template.Spec.Containers[0].Image = "nginx:1.28"
			d.Spec.Template.Spec.Containers[0].Ports = nil
			return d
		}, nil},
		{"daemonset selector", validDaemonSetObj, func() Object {
			ds := validDaemonSet()
			ds.Spec.Selector = &LabelSelector{MatchLabels: map[string]string{"name": "agent"}}
			return ds
		}, []fe{inv("spec.selector")}},
		{"immutable secret data", func() Object {
			s := validSecret()
			s.Immutable = immutable
			return s
		}, func() Object {
			s := validSecret()
			s.Data["password"] = []byte("changed")
			return s
		}, []fe{forb("immutable"), forb("data")}},
		{"immutable secret labels", func() Object {
			s := validSecret()
			s.Immutable = immutable
			return s
		}, func() Object {
			s := validSecret()
			s.Immutable = immutable
			s.Labels = map[string]string{"a": "b"}
			return s
		}, nil},
		{"secret type", validSecretObj, func() Object {
			s := validSecret()
			s.Type = "example.com/other"
			return s
		}, []fe{inv("type")}},
		{"mutable secret", validSecretObj, func() Object {
			s := validSecret()
			s.Data = map[string][]byte{"new": nil}
			s.Immutable = immutable
			return s
		}, nil},
		{"immutable configmap", func() Object {
			c := validConfigMap()
			c.Immutable = immutable
			return c
		}, func() Object {
			c := validConfigMap()
			c.Immutable = immutable
			c.Data["MODE"] = "dev"
			c.BinaryData = nil
			return c
		}, []fe{forb("data"), forb("binaryData")}},
		{"event count", validEventObj, func() Object {
			e := validEvent()
			e.Count = 5
			e.LastTimestamp = NewTime(time.Now())
			return e
		}, nil},
		{"event object", validEventObj, func() Object {
			e := validEvent()
			e.InvolvedObject.Name = "web-1"
			return e
		}, []fe{inv("involvedObject")}},
		{"node pod CIDR", validNodeObj, func() Object {
			n := validNode()
			n.Spec.PodCIDR, n.Spec.PodCIDRs = "10.42.2.0/24", []string{"10.42.2.0/24"}
			return n
		}, []fe{forb("spec.podCIDR"), forb("spec.podCIDRs")}},
		{"node first pod CIDR", func() Object {
			n := validNode()
			n.Spec.PodCIDR, n.Spec.PodCIDRs = "", nil
			return n
		}, validNodeObj, nil},
		{"node unschedulable", validNodeObj, func() Object {
			n := validNode()
			n.Spec.Unschedulable = true
			return n
		}, nil},
		{"namespace rename", validNamespaceObj, func() Object {
			ns := validNamespace()
			ns.Name = "team-b"
			SetDefaultsNamespace(ns)
			return ns
		}, []fe{inv("metadata.name")}},
		{"kind change", validNamespaceObj, validNodeObj, []fe{inv("kind")}},
		{"nil old", func() Object { return nil }, validNodeObj, []fe{req("")}},
		{"typed nil old", func() Object { return (*Node)(nil) }, validNodeObj, []fe{req("")}},
		{"nil new", validNodeObj, func() Object { return (*Node)(nil) }, []fe{req("")}},
		{"unknown kind", validNodeObj, func() Object { return &unknownObject{} }, []fe{nsup("kind")}},
	}
	for _, tc := range tests {
		checkErrs(t, fmt.Sprintf("ValidateUpdate(%s)", tc.name), ValidateUpdate(tc.obj(), tc.old()), tc.want...)
	}
}

func validDeploymentObj() Object { return validDeployment() }
func validDaemonSetObj() Object  { return validDaemonSet() }
func validSecretObj() Object     { return validSecret() }
func validEventObj() Object      { return validEvent() }
func validNodeObj() Object       { return validNode() }
func validNamespaceObj() Object  { return validNamespace() }

func TestSemanticEqual(t *testing.T) {
	tests := []struct {
		a, b any
		want bool
	}{
		{[]string(nil), []string{}, true},
		{map[string]string(nil), map[string]string{}, true},
		{map[string][]byte{"a": nil}, map[string][]byte{"a": {}}, true},
		{map[string][]byte{"a": nil}, map[string][]byte{"b": nil}, false},
		{ResourceList{ResourceCPU: q("1")}, ResourceList{ResourceCPU: q("1000m")}, true},
		{ResourceList{ResourceCPU: q("1")}, ResourceList{ResourceCPU: q("1001m")}, false},
		{NewTime(time.Unix(5, 0)), Time{time.Unix(5, 0).In(time.FixedZone("x", 3600))}, true},
		{(*LabelSelector)(nil), &LabelSelector{}, false},
		{&LabelSelector{MatchLabels: map[string]string{}}, &LabelSelector{}, true},
		{FromInt(1), FromString("1"), false},
	}
	for _, tc := range tests {
		if got := semanticEqual(tc.a, tc.b); got != tc.want {
			t.Errorf("semanticEqual(%v, %v) = %v; want %v", tc.a, tc.b, got, tc.want)
		}
	}
}

// TestChangedPaths: the paths of what differs, in walk order (fields in
// their order, keys sorted), under the path given, at most
// maxDiffPaths of them; inlined fields add no step.
func TestChangedPaths(t *testing.T) {
	spec := func() PodSpec {
		return PodSpec{NodeSelector: map[string]string{"b": "1", "a": "1"},
			Containers: []Container{{Name: "web", Image: "nginx", Ports: []ContainerPort{{ContainerPort: 80}}}, {Name: "side", Image: "busybox"}}}
	}
	a, b := spec(), spec()
	b.NodeSelector = map[string]string{"a": "2", "c": "1"}
	b.Containers[0].Ports[0].ContainerPort = 8080
	b.Containers[1].Image = "busybox:1.37"
	want := []string{"spec.containers[0].ports[0].containerPort", "spec.containers[1].image", "spec.nodeSelector[a]", "spec.nodeSelector[b]", "spec.nodeSelector[c]"}
	if got := changedPaths(a, b, NewPath("spec")); !slices.Equal(got, want) {
		t.Errorf("changedPaths = %q; want %q", got, want)
	}
	if got := changedPaths(a, b, Path{}); len(got) == 0 || got[0] != "containers[0].ports[0].containerPort" {
		t.Errorf("changedPaths from the root = %q; want containers[0].ports[0].containerPort first", got)
	}
	if got := changedPaths(a, spec(), NewPath("spec")); got != nil {
		t.Errorf("changedPaths of equal specs = %q; want none", got)
	}
	many := map[string]string{}
	for i := range 2 * maxDiffPaths {
		many[fmt.Sprintf("k%02d", i)] = "x"
	}
	if got := changedPaths(PodSpec{NodeSelector: many}, PodSpec{}, NewPath("spec")); len(got) != maxDiffPaths || got[0] != "spec.nodeSelector[k00]" {
		t.Errorf("changedPaths of %d changed keys = %q; want the first %d", len(many), got, maxDiffPaths)
	}
	// ObjectMeta is a named field of a Pod; TypeMeta is inlined.
	pa, pb := &Pod{ObjectMeta: ObjectMeta{Name: "x"}}, &Pod{ObjectMeta: ObjectMeta{Name: "y"}, TypeMeta: TypeMeta{Kind: "Pod"}}
	if got := changedPaths(pa, pb, Path{}); !slices.Equal(got, []string{"kind", "metadata.name"}) {
		t.Errorf("changedPaths of pods = %q; want kind, metadata.name", got)
	}
}
