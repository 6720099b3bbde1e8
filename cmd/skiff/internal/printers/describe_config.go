package printers

import (
	"slices"
	"strings"

	"github.com/skiffhq/skiff/api"
)

func (d *describer) namespace(ns *api.Namespace) {
	d.meta(&ns.ObjectMeta, false)
	d.labels(0, "Labels", ns.Labels)
	d.annotations(0, ns.Annotations)
	d.line(0, "Status:\t%s", ns.Status.Phase)
}

func (d *describer) secret(s *api.Secret) {
	d.meta(&s.ObjectMeta, true)
	d.labels(0, "Labels", s.Labels)
	d.annotations(0, s.Annotations)
	d.line(0, "")
	d.line(0, "Type:\t%s", s.Type)
	d.line(0, "")
	d.line(0, "Data")
	d.line(0, "====")
	for _, k := range sortedKeys(s.Data) {
		d.line(0, "%s:\t%d bytes", k, len(s.Data[k]))
	}
}

func (d *describer) configMap(c *api.ConfigMap) {
	d.meta(&c.ObjectMeta, true)
	d.labels(0, "Labels", c.Labels)
	d.annotations(0, c.Annotations)
	d.line(0, "")
	d.line(0, "Data")
	d.line(0, "====")
	for _, k := range sortedKeys(c.Data) {
		d.line(0, "%s:", k)
		d.line(0, "----")
		d.raw(c.Data[k])
		d.line(0, "")
	}
	if len(c.Data) == 0 {
		d.line(0, "")
	}
	d.line(0, "BinaryData")
	d.line(0, "====")
	for _, k := range sortedKeys(c.BinaryData) {
		d.line(0, "%s:\t%d bytes", k, len(c.BinaryData[k]))
	}
	d.line(0, "")
}

func (d *describer) event(e *api.Event) {
	d.meta(&e.ObjectMeta, true)
	d.labels(0, "Labels", e.Labels)
	d.annotations(0, e.Annotations)
	d.line(0, "Type:\t%s", e.Type)
	d.line(0, "Reason:\t%s", e.Reason)
	d.line(0, "Message:\t%s", strings.TrimSpace(e.Message))
	d.line(0, "Source:\t%s", eventSource(e))
	d.line(0, "Involved Object:")
	o := e.InvolvedObject
	d.line(1, "Kind:\t%s", o.Kind)
	d.line(1, "Name:\t%s", o.Name)
	if o.Namespace != "" {
		d.line(1, "Namespace:\t%s", o.Namespace)
	}
	if o.FieldPath != "" {
		d.line(1, "Field Path:\t%s", o.FieldPath)
	}
	first, last, count := eventTimes(e, d.now)
	d.line(0, "First Seen:\t%s ago", first)
	d.line(0, "Last Seen:\t%s ago", last)
	d.line(0, "Count:\t%d", count)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
