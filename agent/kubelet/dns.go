package kubelet

import (
	"bufio"
	"bytes"
	"net/netip"
	"slices"
	"strings"

	"github.com/skiffhq/skiff/api"
)

// Limits of a pod's resolv.conf, as the kubelet applies them.
const (
	maxDNSNameservers = 3
	maxDNSSearches    = 32
	clusterNdots      = "5"
)

// resolvParts is a resolv.conf broken into what the kubelet merges.
type resolvParts struct {
	nameservers []string
	searches    []string
	options     []string // "name" or "name:value", in order
}

// parseResolv reads nameserver, search/domain and options lines; loopback
// nameservers are dropped (a pod cannot reach the host's 127.0.0.53).
func parseResolv(data []byte) resolvParts {
	var p resolvParts
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 2 || strings.HasPrefix(f[0], "#") || strings.HasPrefix(f[0], ";") {
			continue
		}
		switch f[0] {
		case "nameserver":
			if a, err := netip.ParseAddr(f[1]); err == nil && !a.IsLoopback() {
				p.nameservers = append(p.nameservers, f[1])
			}
		case "search", "domain":
			p.searches = f[1:]
		case "options":
			p.options = append(p.options, f[1:]...)
		}
	}
	return p
}

// podResolvConf is the /etc/resolv.conf of pod, as the kubelet writes it:
//   - dnsPolicy ClusterFirst (the default): the cluster DNS, the search
//     path <namespace>.svc.<domain> svc.<domain> <domain> and then the
//     host's, and options ndots:5; with no cluster DNS configured it falls
//     back to Default;
//   - Default: the host's resolv.conf (without loopback nameservers);
//   - None: only what dnsConfig gives.
//
// dnsConfig's nameservers and searches are appended (three nameservers
// and 32 search domains at most, duplicates dropped) and its options
// replace host options of the same name.
func podResolvConf(pod *api.Pod, host []byte, clusterDNS, clusterDomain string) []byte {
	hp := parseResolv(host)
	var p resolvParts
	policy := pod.Spec.DNSPolicy
	if policy == "" {
		policy = api.DNSClusterFirst
	}
	if (policy == api.DNSClusterFirst || policy == api.DNSClusterFirstWithHostNet) && clusterDNS == "" {
		policy = api.DNSDefault
	}
	switch policy {
	case api.DNSClusterFirst, api.DNSClusterFirstWithHostNet:
		p.nameservers = []string{clusterDNS}
		p.searches = append([]string{pod.Namespace + ".svc." + clusterDomain, "svc." + clusterDomain, clusterDomain}, hp.searches...)
		p.options = []string{"ndots:" + clusterNdots}
	case api.DNSNone:
	default:
		p = hp
	}
	if c := pod.Spec.DNSConfig; c != nil {
		p.nameservers = append(p.nameservers, c.Nameservers...)
		p.searches = append(p.searches, c.Searches...)
		for _, o := range c.Options {
			opt := o.Name
			if o.Value != nil {
				opt += ":" + *o.Value
			}
			p.options = slices.DeleteFunc(p.options, func(x string) bool { n, _, _ := strings.Cut(x, ":"); return n == o.Name })
			p.options = append(p.options, opt)
		}
	}
	p.nameservers = dedupe(p.nameservers, maxDNSNameservers)
	p.searches = dedupe(p.searches, maxDNSSearches)
	var b bytes.Buffer
	for _, n := range p.nameservers {
		b.WriteString("nameserver " + n + "\n")
	}
	if len(p.searches) > 0 {
		b.WriteString("search " + strings.Join(p.searches, " ") + "\n")
	}
	if len(p.options) > 0 {
		b.WriteString("options " + strings.Join(p.options, " ") + "\n")
	}
	return b.Bytes()
}

func dedupe(in []string, limit int) []string {
	var out []string
	for _, s := range in {
		if s != "" && !slices.Contains(out, s) && len(out) < limit {
			out = append(out, s)
		}
	}
	return out
}
