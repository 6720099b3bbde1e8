package scheduler

import "github.com/skiffhq/skiff/api"

// TaintUnreachable is the taint the node lifecycle controller puts on a
// node whose heartbeats stopped, as in Kubernetes.
const TaintUnreachable = "node.kubernetes.io/unreachable"

// NodeSelected reports whether n satisfies pi's nodeSelector and its
// required node affinity (the NodeAffinity filter alone), for callers
// such as the DaemonSet controller that place pods themselves. It reads
// pi and n only.
func NodeSelected(pi *PodInfo, n *api.Node) bool {
	ni := newNodeInfo(n.Name)
	ni.setNode(n)
	return len(filterAffinity(pi, ni, nil)) == 0
}

// Tolerates reports whether ts tolerate taint, with Kubernetes'
// matching rules (see the TaintToleration filter). Toleration seconds are
// not considered.
func Tolerates(ts []api.Toleration, taint *api.Taint) bool { return tolerates(ts, taint) }
