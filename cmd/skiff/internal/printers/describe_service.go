package printers

import (
	"strconv"
	"strings"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/internal/table"
)

// service describes s as kubectl does (without its endpoints, which
// kubectl reads from the Endpoints object).
func (d *describer) service(s *api.Service) {
	d.meta(&s.ObjectMeta, true)
	d.labels(0, "Labels", s.Labels)
	d.annotations(0, s.Annotations)
	d.line(0, "Selector:\t%s", table.FormatLabels(s.Spec.Selector))
	d.line(0, "Type:\t%s", s.Spec.Type)
	if p := s.Spec.IPFamilyPolicy; p != nil {
		d.line(0, "IP Family Policy:\t%s", *p)
	}
	if len(s.Spec.IPFamilies) > 0 {
		d.line(0, "IP Families:\t%s", strings.Join(s.Spec.IPFamilies, ","))
	}
	if s.Spec.Type == api.ServiceTypeExternalName {
		d.line(0, "External Name:\t%s", s.Spec.ExternalName)
	} else {
		d.line(0, "IP:\t%s", orNone(s.Spec.ClusterIP))
		if len(s.Spec.ClusterIPs) > 0 {
			d.line(0, "IPs:\t%s", strings.Join(s.Spec.ClusterIPs, ","))
		}
	}
	for _, p := range s.Spec.Ports {
		name := p.Name
		if name == "" {
			name = "<unset>"
		}
		d.line(0, "Port:\t%s\t%d/%s", name, p.Port, p.Protocol)
		tp := p.TargetPort.String()
		if p.TargetPort.Type == api.Int {
			tp += "/" + string(p.Protocol)
		}
		d.line(0, "TargetPort:\t%s", tp)
		if p.NodePort != 0 {
			d.line(0, "NodePort:\t%s\t%s/%s", name, strconv.Itoa(int(p.NodePort)), p.Protocol)
		}
	}
	d.line(0, "Session Affinity:\t%s", s.Spec.SessionAffinity)
	if s.Spec.ExternalTrafficPolicy != "" {
		d.line(0, "External Traffic Policy:\t%s", s.Spec.ExternalTrafficPolicy)
	}
	if p := s.Spec.InternalTrafficPolicy; p != nil {
		d.line(0, "Internal Traffic Policy:\t%s", *p)
	}
}
