package api

import "strings"

// Node self-labels: the labels a node (its agent, with its own
// credential) may set on its own Node, as Kubernetes' NodeRestriction
// admission allows a kubelet. The server enforces them; the agent checks
// --labels against them at start.

// isSelfLabelKey reports the label keys a node may set on its own Node,
// and hasSelfLabelPrefix the key prefixes (Kubernetes' NodeRestriction
// list).
func isSelfLabelKey(k string) bool {
	switch k {
	case "kubernetes.io/hostname", "kubernetes.io/arch", "kubernetes.io/os",
		"beta.kubernetes.io/arch", "beta.kubernetes.io/os", "beta.kubernetes.io/instance-type",
		"node.kubernetes.io/instance-type",
		"failure-domain.beta.kubernetes.io/region", "failure-domain.beta.kubernetes.io/zone",
		"topology.kubernetes.io/region", "topology.kubernetes.io/zone":
		return true
	}
	return false
}

func hasSelfLabelPrefix(k string) bool {
	return strings.HasPrefix(k, "kubelet.kubernetes.io/") || strings.HasPrefix(k, "node.kubernetes.io/")
}

// NodeRestrictionLabelPrefix is the label prefix a node may never set on
// itself: labels an admin puts there can be trusted to select nodes.
const NodeRestrictionLabelPrefix = "node-restriction.kubernetes.io/"

// IsNodeSelfLabel reports whether a node may set, change or remove the
// label key on its own Node. As in Kubernetes, keys outside the
// kubernetes.io and k8s.io domains are the node's to set; inside them only
// the self-label set is, and never the node-restriction.kubernetes.io/
// prefix.
func IsNodeSelfLabel(key string) bool {
	if strings.HasPrefix(key, NodeRestrictionLabelPrefix) {
		return false
	}
	prefix, _, ok := strings.Cut(key, "/")
	if !ok || !isReservedDomain(prefix) {
		return true
	}
	return isSelfLabelKey(key) || hasSelfLabelPrefix(key)
}

func isReservedDomain(d string) bool {
	d = strings.ToLower(d)
	for _, r := range []string{"kubernetes.io", "k8s.io"} {
		if d == r || strings.HasSuffix(d, "."+r) {
			return true
		}
	}
	return false
}
