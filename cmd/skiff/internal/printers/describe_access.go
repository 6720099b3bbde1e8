package printers

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/skiffhq/skiff/api"
)

// This file describes the access kinds (ServiceAccount and the RBAC
// roles and bindings) and the endpoints kinds, in kubectl's layout.

func (d *describer) serviceAccount(sa *api.ServiceAccount) {
	d.meta(&sa.ObjectMeta, true)
	d.labels(0, "Labels", sa.Labels)
	d.annotations(0, sa.Annotations)
	pull := make([]string, 0, len(sa.ImagePullSecrets))
	for _, s := range sa.ImagePullSecrets {
		pull = append(pull, s.Name)
	}
	d.multiline(0, "Image pull secrets", pull)
	mount := make([]string, 0, len(sa.Secrets))
	for _, s := range sa.Secrets {
		mount = append(mount, s.Name)
	}
	d.multiline(0, "Mountable secrets", mount)
	d.line(0, "Tokens:\t<none>")
}

// role describes a Role or a ClusterRole: its rules as kubectl's table.
func (d *describer) role(m *api.ObjectMeta, namespaced bool, rules []api.PolicyRule) {
	d.meta(m, namespaced)
	d.labels(0, "Labels", m.Labels)
	d.annotations(0, m.Annotations)
	d.line(0, "PolicyRule:")
	d.line(1, "Resources\tNon-Resource URLs\tResource Names\tVerbs")
	d.line(1, "---------\t-----------------\t--------------\t-----")
	for _, r := range rules {
		res := make([]string, 0, len(r.Resources))
		for _, name := range r.Resources {
			for _, g := range orEmpty(r.APIGroups) {
				if g != "" {
					name += "." + g
				}
				res = append(res, name)
			}
		}
		d.line(1, "%s\t%s\t%s\t%s", strings.Join(res, ", "), bracketed(r.NonResourceURLs), bracketed(r.ResourceNames), bracketed(r.Verbs))
	}
}

// orEmpty is groups, or one empty group when there are none.
func orEmpty(groups []string) []string {
	if len(groups) == 0 {
		return []string{""}
	}
	return groups
}

// bracketed formats a list as kubectl does: [a b c].
func bracketed(s []string) string { return "[" + strings.Join(s, " ") + "]" }

// binding describes a RoleBinding or a ClusterRoleBinding.
func (d *describer) binding(m *api.ObjectMeta, namespaced bool, ref api.RoleRef, subjects []api.Subject) {
	d.meta(m, namespaced)
	d.labels(0, "Labels", m.Labels)
	d.annotations(0, m.Annotations)
	d.line(0, "Role:")
	d.line(1, "Kind:\t%s", ref.Kind)
	d.line(1, "Name:\t%s", ref.Name)
	d.line(0, "Subjects:")
	d.line(1, "Kind\tName\tNamespace")
	d.line(1, "----\t----\t---------")
	for _, s := range subjects {
		d.line(1, "%s\t%s\t%s", s.Kind, s.Name, s.Namespace)
	}
}

func (d *describer) endpoints(e *api.Endpoints) {
	d.meta(&e.ObjectMeta, true)
	d.labels(0, "Labels", e.Labels)
	d.annotations(0, e.Annotations)
	d.line(0, "Subsets:")
	for _, s := range e.Subsets {
		d.line(1, "Addresses:\t%s", addressList(s.Addresses))
		d.line(1, "NotReadyAddresses:\t%s", addressList(s.NotReadyAddresses))
		d.line(1, "Ports:")
		d.line(2, "Name\tPort\tProtocol")
		d.line(2, "----\t----\t--------")
		for _, p := range s.Ports {
			d.line(2, "%s\t%s\t%s", strOr(p.Name, "<unset>"), portOr(p.Port), protocolOr(p.Protocol))
		}
		d.line(0, "")
	}
}

func addressList(as []api.EndpointAddress) string {
	if len(as) == 0 {
		return "<none>"
	}
	ips := make([]string, len(as))
	for i, a := range as {
		ips[i] = a.IP
	}
	return strings.Join(ips, ",")
}

func (d *describer) endpointSlice(s *api.EndpointSlice) {
	d.meta(&s.ObjectMeta, true)
	d.labels(0, "Labels", s.Labels)
	d.annotations(0, s.Annotations)
	d.line(0, "AddressType:\t%s", s.AddressType)
	d.line(0, "Ports:")
	d.line(1, "Name\tPort\tProtocol")
	d.line(1, "----\t----\t--------")
	for _, p := range s.Ports {
		d.line(1, "%s\t%s\t%s", strOr(p.Name, "<unset>"), portOr(p.Port), protocolOr(p.Protocol))
	}
	d.line(0, "Endpoints:")
	for _, e := range s.Endpoints {
		d.line(1, "- Addresses:\t%s", strings.Join(e.Addresses, ","))
		d.line(2, "Conditions:")
		d.line(3, "Ready:\t%s", boolOr(e.Conditions.Ready))
		if e.Hostname != nil {
			d.line(2, "Hostname:\t%s", *e.Hostname)
		}
		if e.TargetRef != nil {
			d.line(2, "TargetRef:\t%s/%s", e.TargetRef.Kind, e.TargetRef.Name)
		}
		d.line(2, "NodeName:\t%s", strOr(e.NodeName, "<unset>"))
	}
}

func strOr(s *string, def string) string {
	if s == nil || *s == "" {
		return def
	}
	return *s
}

func portOr(p *int32) string {
	if p == nil {
		return "<unset>"
	}
	return strconv.Itoa(int(*p))
}

func protocolOr(p *api.Protocol) string {
	if p == nil {
		return string(api.ProtocolTCP)
	}
	return string(*p)
}

func boolOr(b *bool) string {
	if b == nil {
		return "<unset>"
	}
	return fmt.Sprint(*b)
}
