package scheduler

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"
	"strings"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/api/labels"
)

// Resources is an amount of each resource the scheduler accounts for, as
// integers: milli-CPUs and bytes.
type Resources struct {
	MilliCPU         int64
	Memory           int64
	EphemeralStorage int64
}

func (r *Resources) add(o Resources) {
	r.MilliCPU += o.MilliCPU
	r.Memory += o.Memory
	r.EphemeralStorage += o.EphemeralStorage
}

func (r *Resources) sub(o Resources) {
	r.MilliCPU -= o.MilliCPU
	r.Memory -= o.Memory
	r.EphemeralStorage -= o.EphemeralStorage
}

// maxOf sets every resource of r to the larger of r's and o's.
func (r *Resources) maxOf(o Resources) {
	r.MilliCPU = max(r.MilliCPU, o.MilliCPU)
	r.Memory = max(r.Memory, o.Memory)
	r.EphemeralStorage = max(r.EphemeralStorage, o.EphemeralStorage)
}

// resourcesOf converts the accounted resources of l, once.
func resourcesOf(l api.ResourceList) Resources {
	var r Resources
	if q, ok := l[api.ResourceCPU]; ok {
		r.MilliCPU = q.MilliValue()
	}
	if q, ok := l[api.ResourceMemory]; ok {
		r.Memory = q.Value()
	}
	if q, ok := l[api.ResourceEphemeralStorage]; ok {
		r.EphemeralStorage = q.Value()
	}
	return r
}

// Requests that scoring assumes for a container that requests none, as
// kube-scheduler does, so that many "free" pods do not pile onto one node.
const (
	defaultMilliCPURequest = 100
	defaultMemoryRequest   = 200 << 20
)

// HostPort is a port a pod publishes on its node.
type HostPort struct {
	Protocol api.Protocol
	IP       string // "" or 0.0.0.0 means every address
	Port     int32
}

// conflicts reports whether p and o cannot both be bound on one node.
func (p HostPort) conflicts(o HostPort) bool {
	if p.Port != o.Port || p.Protocol != o.Protocol {
		return false
	}
	return p.IP == o.IP || anyIP(p.IP) || anyIP(o.IP)
}

func anyIP(ip string) bool { return ip == "" || ip == "0.0.0.0" || ip == "::" }

// nodeTerm is a compiled NodeSelectorTerm: label requirements and
// metadata.name requirements, all of which must hold. A term that failed
// to compile (or is empty) matches nothing, as in Kubernetes.
type nodeTerm struct {
	labels  []labels.Requirement
	names   []nameReq
	invalid bool
}

func (t *nodeTerm) matches(ni *NodeInfo) bool {
	if t.invalid {
		return false
	}
	for i := range t.labels {
		if !t.labels[i].Matches(ni.Labels) {
			return false
		}
	}
	for _, r := range t.names {
		if slices.Contains(r.values, ni.Name) == r.notIn {
			return false
		}
	}
	return true
}

// nameReq is a matchFields requirement: metadata.name In or NotIn values
// (node names may be longer than label values, so labels cannot hold it).
type nameReq struct {
	notIn  bool
	values []string
}

// weightedTerm is a compiled preferred scheduling term.
type weightedTerm struct {
	weight int64
	term   nodeTerm
}

var nodeSelectorOps = map[string]labels.Operator{
	"In": labels.In, "NotIn": labels.NotIn, "Exists": labels.Exists,
	"DoesNotExist": labels.DoesNotExist, "Gt": labels.GreaterThan, "Lt": labels.LessThan,
}

func compileTerm(t *api.NodeSelectorTerm) nodeTerm {
	var out nodeTerm
	if len(t.MatchExpressions) == 0 && len(t.MatchFields) == 0 {
		out.invalid = true
		return out
	}
	for _, r := range t.MatchExpressions {
		req, ok := compileRequirement(r.Key, r)
		if !ok {
			return nodeTerm{invalid: true}
		}
		out.labels = append(out.labels, req)
	}
	for _, r := range t.MatchFields {
		if r.Key != "metadata.name" || (r.Operator != "In" && r.Operator != "NotIn") {
			return nodeTerm{invalid: true}
		}
		if len(r.Values) == 0 {
			return nodeTerm{invalid: true}
		}
		out.names = append(out.names, nameReq{notIn: r.Operator == "NotIn", values: r.Values})
	}
	return out
}

func compileRequirement(key string, r api.NodeSelectorRequirement) (labels.Requirement, bool) {
	op, ok := nodeSelectorOps[r.Operator]
	if !ok {
		return labels.Requirement{}, false
	}
	req, err := labels.NewRequirement(key, op, r.Values)
	if err != nil {
		return labels.Requirement{}, false
	}
	return req, true
}

// PodInfo is a pod with everything the filters and scores need computed
// once: requests as integers, host ports, compiled node affinity. Pod is
// shared with the watch and read-only.
type PodInfo struct {
	Pod      *api.Pod
	Key      string // namespace/name
	UID      string
	Priority int32
	// Requests are the pod's effective requests: per resource, the larger
	// of the sum over containers and any one init container.
	Requests Resources
	// NonZero is Requests with kube-scheduler's defaults for containers
	// that request no cpu or memory; scores use it.
	NonZero    Resources
	HostPorts  []HostPort
	BestEffort bool
	// OwnerUID is the UID of the pod's controller owner, or "".
	OwnerUID string
	// Images are the pod's container images, normalised.
	Images []string
	// class is the pod's equivalence class (equiv.go); "" when none.
	class string

	nodeSelector labels.Selector
	required     []nodeTerm // ORed; nil when no required affinity
	preferred    []weightedTerm
	spread       []spreadConstraint
}

// NewPodInfo computes p's PodInfo. p must not be modified afterwards.
func NewPodInfo(p *api.Pod) *PodInfo {
	pi := &PodInfo{
		Pod:        p,
		Key:        p.Namespace + "/" + p.Name,
		UID:        p.UID,
		BestEffort: api.QOSClass(p) == api.PodQOSBestEffort,
	}
	if p.Spec.Priority != nil {
		pi.Priority = *p.Spec.Priority
	}
	for i := range p.Spec.Containers {
		c := &p.Spec.Containers[i]
		r := resourcesOf(c.Resources.Requests)
		pi.Requests.add(r)
		pi.NonZero.add(nonZero(r, c.Resources.Requests))
		pi.HostPorts = appendHostPorts(pi.HostPorts, c, p.Spec.HostNetwork)
		if c.Image != "" {
			pi.Images = append(pi.Images, normaliseImage(c.Image))
		}
	}
	for i := range p.Spec.InitContainers {
		c := &p.Spec.InitContainers[i]
		r := resourcesOf(c.Resources.Requests)
		pi.Requests.maxOf(r)
		pi.NonZero.maxOf(nonZero(r, c.Resources.Requests))
	}
	pi.class = classKey(pi)
	pi.spread = compileSpread(p)
	for _, ref := range p.OwnerReferences {
		if ref.Controller != nil && *ref.Controller {
			pi.OwnerUID = ref.UID
			break
		}
	}
	if len(p.Spec.NodeSelector) > 0 {
		sel, err := labels.SelectorFromSet(p.Spec.NodeSelector)
		if err != nil {
			sel = labels.Nothing()
		}
		pi.nodeSelector = sel
	}
	if a := p.Spec.Affinity; a != nil && a.NodeAffinity != nil {
		na := a.NodeAffinity
		if req := na.RequiredDuringSchedulingIgnoredDuringExecution; req != nil {
			pi.required = make([]nodeTerm, 0, len(req.NodeSelectorTerms)+1)
			for i := range req.NodeSelectorTerms {
				pi.required = append(pi.required, compileTerm(&req.NodeSelectorTerms[i]))
			}
			if len(pi.required) == 0 {
				pi.required = append(pi.required, nodeTerm{invalid: true})
			}
		}
		for i := range na.PreferredDuringSchedulingIgnoredDuringExecution {
			t := &na.PreferredDuringSchedulingIgnoredDuringExecution[i]
			pi.preferred = append(pi.preferred, weightedTerm{weight: int64(t.Weight), term: compileTerm(&t.Preference)})
		}
	}
	return pi
}

// nonZero returns r with the scoring defaults for unset cpu and memory.
func nonZero(r Resources, l api.ResourceList) Resources {
	if _, ok := l[api.ResourceCPU]; !ok {
		r.MilliCPU = defaultMilliCPURequest
	}
	if _, ok := l[api.ResourceMemory]; !ok {
		r.Memory = defaultMemoryRequest
	}
	return r
}

func appendHostPorts(out []HostPort, c *api.Container, hostNetwork bool) []HostPort {
	for _, p := range c.Ports {
		hp := p.HostPort
		if hp == 0 && hostNetwork {
			hp = p.ContainerPort
		}
		if hp <= 0 {
			continue
		}
		proto := p.Protocol
		if proto == "" {
			proto = api.ProtocolTCP
		}
		out = append(out, HostPort{Protocol: proto, IP: p.HostIP, Port: hp})
	}
	return out
}

// normaliseImage turns a short image reference into its full form
// ("nginx" → "docker.io/library/nginx:latest") so pod and node names
// compare equal.
func normaliseImage(ref string) string {
	name, rest := ref, ""
	if i := strings.IndexByte(ref, '@'); i >= 0 {
		name, rest = ref[:i], ref[i:]
	}
	slash := strings.IndexByte(name, '/')
	if slash < 0 {
		name = "docker.io/library/" + name
	} else if first := name[:slash]; !strings.ContainsAny(first, ".:") && first != "localhost" {
		name = "docker.io/" + name
	}
	if rest == "" && !strings.Contains(name[strings.LastIndexByte(name, '/')+1:], ":") {
		name += ":latest"
	}
	return name + rest
}

// specJSONEqual reports whether a and b have the same spec and labels,
// the inputs of a scheduling decision.
func specJSONEqual(a, b *api.Pod) bool {
	if !maps.Equal(a.Labels, b.Labels) {
		return false
	}
	ja, err1 := json.Marshal(&a.Spec)
	jb, err2 := json.Marshal(&b.Spec)
	return err1 == nil && err2 == nil && bytes.Equal(ja, jb)
}
