package api

import (
	"fmt"
	"strings"
	"testing"
)

func TestValidateNode(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(n *Node)
		want   []fe
	}{
		{"valid", func(n *Node) {}, nil},
		{"namespace forbidden", func(n *Node) { n.Namespace = "default" }, []fe{forb("metadata.namespace")}},
		{"bad name", func(n *Node) { n.Name = "Edge 1" }, []fe{inv("metadata.name")}},
		{"taint key", func(n *Node) { n.Spec.Taints[0].Key = "" }, []fe{inv("spec.taints[0].key"), inv("spec.taints[0].key")}},
		{"taint value", func(n *Node) { n.Spec.Taints[1].Value = "a b" }, []fe{inv("spec.taints[1].value")}},
		{"taint effect missing", func(n *Node) { n.Spec.Taints[0].Effect = "" }, []fe{req("spec.taints[0].effect")}},
		{"taint effect bad", func(n *Node) { n.Spec.Taints[0].Effect = "NoRun" }, []fe{nsup("spec.taints[0].effect")}},
		{"taint duplicate", func(n *Node) {
			n.Spec.Taints = append(n.Spec.Taints, Taint{Key: "gpu", Value: "false", Effect: TaintEffectPreferNoSchedule})
		}, []fe{dup("spec.taints[2]")}},
		{"taint same key other effect", func(n *Node) {
			n.Spec.Taints = append(n.Spec.Taints, Taint{Key: "gpu", Effect: TaintEffectNoExecute})
		}, nil},
		{"pod CIDR", func(n *Node) { n.Spec.PodCIDR, n.Spec.PodCIDRs = "10.42.1.0", nil }, []fe{inv("spec.podCIDR")}},
		{"pod CIDRs mismatch", func(n *Node) { n.Spec.PodCIDRs = []string{"10.42.2.0/24"} }, []fe{inv("spec.podCIDRs[0]")}},
		{"pod CIDRs dual stack", func(n *Node) { n.Spec.PodCIDRs = []string{"10.42.1.0/24", "fd00:42::/64"} }, nil},
		{"pod CIDRs same family", func(n *Node) { n.Spec.PodCIDRs = []string{"10.42.1.0/24", "10.43.1.0/24"} }, []fe{inv("spec.podCIDRs")}},
		{"pod CIDRs bad", func(n *Node) { n.Spec.PodCIDRs = []string{"10.42.1.0/24", "x"} }, []fe{inv("spec.podCIDRs[1]")}},
	}
	for _, tc := range tests {
		n := validNode()
		tc.mutate(n)
		checkErrs(t, fmt.Sprintf("Validate(%s)", tc.name), Validate(n), tc.want...)
	}
}

func TestValidateNamespace(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(ns *Namespace)
		want   []fe
	}{
		{"valid", func(ns *Namespace) {}, nil},
		{"dotted name", func(ns *Namespace) { ns.Name = "team.a" }, []fe{inv("metadata.name")}},
		{"long name", func(ns *Namespace) { ns.Name = strings.Repeat("a", 64) }, []fe{inv("metadata.name")}},
		{"namespace forbidden", func(ns *Namespace) { ns.Namespace = "default" }, []fe{forb("metadata.namespace")}},
		{"spec finalizer", func(ns *Namespace) { ns.Spec.Finalizers = []string{"kubernetes", "mine"} }, []fe{inv("spec.finalizers[1]")}},
		{"phase", func(ns *Namespace) { ns.Status.Phase = "Gone" }, []fe{nsup("status.phase")}},
	}
	for _, tc := range tests {
		ns := validNamespace()
		tc.mutate(ns)
		checkErrs(t, fmt.Sprintf("Validate(%s)", tc.name), Validate(ns), tc.want...)
	}
}

func TestValidateSecret(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(s *Secret)
		want   []fe
	}{
		{"valid", func(s *Secret) {}, nil},
		{"keys", func(s *Secret) {
			s.Data = map[string][]byte{".": nil, "..x": nil, "a/b": nil, strings.Repeat("k", 254): nil, ".hidden": nil}
		}, []fe{inv("data[.]"), inv("data[..x]"), inv("data[a/b]"), inv("data[" + strings.Repeat("k", 254) + "]")}},
		{"too big", func(s *Secret) {
			s.Data = map[string][]byte{"a": make([]byte, 600<<10), "b": make([]byte, 600<<10)}
		}, []fe{long("data")}},
		{"no type", func(s *Secret) { s.Type = "" }, []fe{req("type")}},
		{"custom type", func(s *Secret) { s.Type = "example.com/token" }, nil},
		{"tls keys", func(s *Secret) { s.Type = SecretTypeTLS; s.Data = map[string][]byte{"tls.crt": nil} }, []fe{req("data[tls.key]")}},
		{"docker config json", func(s *Secret) {
			s.Type = SecretTypeDockerConfigJSON
			s.Data = map[string][]byte{".dockerconfigjson": []byte("{")}
		}, []fe{inv("data[.dockerconfigjson]")}},
		{"docker config missing", func(s *Secret) { s.Type = SecretTypeDockercfg }, []fe{req("data[.dockercfg]")}},
		{"basic auth", func(s *Secret) { s.Type = SecretTypeBasicAuth }, nil},
		{"basic auth empty", func(s *Secret) { s.Type = SecretTypeBasicAuth; s.Data = nil }, []fe{req("data[username]"), req("data[password]")}},
		{"ssh auth", func(s *Secret) { s.Type = SecretTypeSSHAuth }, []fe{req("data[ssh-privatekey]")}},
		{"undefaulted stringData key", func(s *Secret) { s.StringData = map[string]string{"a b": "x"} }, []fe{inv("stringData[a b]")}},
	}
	for _, tc := range tests {
		s := validSecret()
		tc.mutate(s)
		checkErrs(t, fmt.Sprintf("Validate(%s)", tc.name), Validate(s), tc.want...)
	}
}

func TestValidateConfigMap(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(c *ConfigMap)
		want   []fe
	}{
		{"valid", func(c *ConfigMap) {}, nil},
		{"empty", func(c *ConfigMap) { c.Data, c.BinaryData = nil, nil }, nil},
		{"bad keys", func(c *ConfigMap) {
			c.Data["a b"] = ""
			c.BinaryData[".."] = nil
		}, []fe{inv("data[a b]"), inv("binaryData[..]")}},
		{"key in both", func(c *ConfigMap) { c.BinaryData["MODE"] = []byte("x") }, []fe{inv("data[MODE]"), inv("binaryData[MODE]")}},
		{"too big", func(c *ConfigMap) {
			c.Data["big"] = strings.Repeat("x", 1<<20)
		}, []fe{long("data")}},
		{"no name", func(c *ConfigMap) { c.Name = "" }, []fe{req("metadata.name")}},
	}
	for _, tc := range tests {
		c := validConfigMap()
		tc.mutate(c)
		checkErrs(t, fmt.Sprintf("Validate(%s)", tc.name), Validate(c), tc.want...)
	}
}

func TestValidateEvent(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(e *Event)
		want   []fe
	}{
		{"valid", func(e *Event) {}, nil},
		{"no involved object", func(e *Event) { e.InvolvedObject = ObjectReference{} }, []fe{req("involvedObject.name"), req("involvedObject.kind")}},
		{"namespace mismatch", func(e *Event) { e.InvolvedObject.Namespace = "other" }, []fe{inv("involvedObject.namespace")}},
		{"type", func(e *Event) { e.Type = "Info" }, []fe{nsup("type")}},
		{"no type", func(e *Event) { e.Type = "" }, nil},
		{"reason too long", func(e *Event) { e.Reason = strings.Repeat("r", 129) }, []fe{long("reason")}},
		{"negative count", func(e *Event) { e.Count = -1 }, []fe{inv("count")}},
		{"no namespace", func(e *Event) { e.Namespace = ""; e.InvolvedObject.Namespace = "" }, []fe{req("metadata.namespace")}},
	}
	for _, tc := range tests {
		e := validEvent()
		tc.mutate(e)
		checkErrs(t, fmt.Sprintf("Validate(%s)", tc.name), Validate(e), tc.want...)
	}
}
