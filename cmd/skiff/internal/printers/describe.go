package printers

import (
	"bytes"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/skiffhq/skiff/api"
)

// Describe writes obj the way `kubectl describe` does, followed by an
// Events table of events (those whose involvedObject is obj; the caller
// selects them), oldest first; secrets and events themselves get no
// Events table, as in kubectl. Times are shown in now's location and ages
// are measured from now. Nodes are described without their pods; use
// DescribeNode to include them.
func Describe(w io.Writer, obj api.Object, events []api.Event, now time.Time) error {
	d := newDescriber(now)
	switch o := obj.(type) {
	case *api.Pod:
		d.pod(o)
	case *api.Node:
		d.node(o, nil, false)
	case *api.Deployment:
		d.deployment(o)
	case *api.DaemonSet:
		d.daemonSet(o)
	case *api.Namespace:
		d.namespace(o)
	case *api.ConfigMap:
		d.configMap(o)
	case *api.Service:
		d.service(o)
	case *api.Secret:
		d.secret(o)
		return d.flushTo(w) // kubectl shows no events for secrets
	case *api.Event:
		d.event(o)
		return d.flushTo(w) // an event has no events of its own
	case *api.ReplicaSet:
		d.replicaSet(o)
	case *api.StatefulSet:
		d.statefulSet(o)
	case *api.Job:
		d.job(o)
	case *api.CronJob:
		d.cronJob(o)
	case *api.PodDisruptionBudget:
		d.budget(o)
	case *api.PersistentVolumeClaim:
		d.claim(o)
	case *api.PersistentVolume:
		d.volume(o)
	case *api.StorageClass:
		d.storageClass(o)
	case *api.ServiceAccount:
		d.serviceAccount(o)
	case *api.Role:
		d.role(&o.ObjectMeta, true, o.Rules)
	case *api.ClusterRole:
		d.role(&o.ObjectMeta, false, o.Rules)
	case *api.RoleBinding:
		d.binding(&o.ObjectMeta, true, o.RoleRef, o.Subjects)
	case *api.ClusterRoleBinding:
		d.binding(&o.ObjectMeta, false, o.RoleRef, o.Subjects)
	case *api.Endpoints:
		d.endpoints(o)
	case *api.EndpointSlice:
		d.endpointSlice(o)
	default:
		return fmt.Errorf("describe: no describer for %T", obj)
	}
	d.events(events)
	return d.flushTo(w)
}

// DescribeNode is Describe for a node plus its non-terminated pods (those
// with spec.nodeName of the node; the caller lists them) and the resources
// they request against the node's allocatable.
func DescribeNode(w io.Writer, n *api.Node, pods []api.Pod, events []api.Event, now time.Time) error {
	if n == nil {
		return fmt.Errorf("describe: nil node")
	}
	d := newDescriber(now)
	d.node(n, pods, true)
	d.events(events)
	return d.flushTo(w)
}

// describer accumulates describe output in kubectl's layout: "Key:\tvalue"
// lines aligned by a tabwriter (padding 2), nested by two spaces a level.
type describer struct {
	buf bytes.Buffer
	tw  *tabwriter.Writer
	now time.Time
}

func newDescriber(now time.Time) *describer {
	d := &describer{now: now}
	d.tw = tabwriter.NewWriter(&trimWriter{buf: &d.buf}, 0, 8, 2, ' ', 0)
	return d
}

// trimWriter drops the spaces the tabwriter pads a label with when its
// value is empty, so no line ends in whitespace.
type trimWriter struct {
	buf    *bytes.Buffer
	spaces int // spaces held back until something other than '\n' follows
}

// Write implements io.Writer; it never fails.
func (t *trimWriter) Write(p []byte) (int, error) {
	for _, c := range p {
		switch c {
		case ' ':
			t.spaces++
		case '\n':
			t.spaces = 0
			t.buf.WriteByte(c)
		default:
			for ; t.spaces > 0; t.spaces-- {
				t.buf.WriteByte(' ')
			}
			t.buf.WriteByte(c)
		}
	}
	return len(p), nil
}

// line writes one line at an indentation level; format uses \t between
// cells to align.
func (d *describer) line(level int, format string, args ...any) {
	// Writes to a tabwriter over a bytes.Buffer cannot fail.
	fmt.Fprintf(d.tw, strings.Repeat("  ", level)+format+"\n", args...)
}

// raw writes text verbatim on lines of its own, outside any alignment (a
// tab in a config value must not become a column).
func (d *describer) raw(text string) {
	if text == "" {
		return
	}
	d.tw.Flush() // into a bytes.Buffer: cannot fail
	d.buf.WriteString(text)
	if !strings.HasSuffix(text, "\n") {
		d.buf.WriteByte('\n')
	}
}

// flushTo aligns everything written so far and copies it to w.
func (d *describer) flushTo(w io.Writer) error {
	if err := d.tw.Flush(); err != nil {
		return fmt.Errorf("describe: %w", err)
	}
	_, err := w.Write(d.buf.Bytes())
	return err
}

// stamp formats t like kubectl describe (RFC 1123 with numeric zone) in
// now's location.
func (d *describer) stamp(t time.Time) string {
	if t.IsZero() {
		return "<unset>"
	}
	return t.In(d.now.Location()).Format(time.RFC1123Z)
}

// multiline writes title with the first entry on its line and the others
// aligned below it, or "<none>".
func (d *describer) multiline(level int, title string, entries []string) {
	if len(entries) == 0 {
		d.line(level, "%s:\t<none>", title)
		return
	}
	for i, e := range entries {
		if i == 0 {
			d.line(level, "%s:\t%s", title, e)
		} else {
			d.line(level, "\t%s", e)
		}
	}
}

// labels writes a map as sorted "k=v" lines.
func (d *describer) labels(level int, title string, m map[string]string) {
	d.multiline(level, title, sortedPairs(m, "="))
}

// maxAnnotationLen bounds an annotation value shown by describe.
const maxAnnotationLen = 140

// lastAppliedAnnotation is kubectl's bookkeeping annotation, never shown.
const lastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"

// annotations writes a map as sorted "k: v" lines, long or multi-line
// values shortened.
func (d *describer) annotations(level int, m map[string]string) {
	short := make(map[string]string, len(m))
	for k, v := range m {
		if k == lastAppliedAnnotation {
			continue
		}
		if i := strings.IndexByte(v, '\n'); i >= 0 {
			v = v[:i] + "..."
		}
		if utf8.RuneCountInString(v) > maxAnnotationLen {
			v = string([]rune(v)[:maxAnnotationLen]) + "..."
		}
		short[k] = v
	}
	d.multiline(level, "Annotations", sortedPairs(short, ": "))
}

func sortedPairs(m map[string]string, sep string) []string {
	out := make([]string, 0, len(m))
	for k, v := range m {
		out = append(out, k+sep+v)
	}
	slices.Sort(out)
	return out
}

// meta writes the header every describe starts with.
func (d *describer) meta(m *api.ObjectMeta, namespaced bool) {
	d.line(0, "Name:\t%s", m.Name)
	if namespaced {
		d.line(0, "Namespace:\t%s", m.Namespace)
	}
}

// controlledBy is "Kind/name" of the controlling owner, or "".
func controlledBy(m *api.ObjectMeta) string {
	for _, o := range m.OwnerReferences {
		if o.Controller != nil && *o.Controller {
			return o.Kind + "/" + o.Name
		}
	}
	return ""
}

// events writes the Events table, oldest first, like kubectl's
// DescribeEvents: AGE is "5m" or, for a repeated event, "2m (x5 over 10m)".
func (d *describer) events(events []api.Event) {
	if len(events) == 0 {
		d.line(0, "Events:\t<none>")
		return
	}
	d.tw.Flush() // the table aligns on its own; into a buffer: cannot fail
	sorted := slices.Clone(events)
	slices.SortStableFunc(sorted, func(a, b api.Event) int { return eventLast(&a).Compare(eventLast(&b)) })
	d.line(0, "Events:")
	d.line(1, "Type\tReason\tAge\tFrom\tMessage")
	d.line(1, "----\t------\t----\t----\t-------")
	for i := range sorted {
		e := &sorted[i]
		first := age(e.EventTime.Time, d.now)
		if e.EventTime.IsZero() {
			first = age(e.FirstTimestamp.Time, d.now)
		}
		interval := first
		if e.Count > 1 {
			interval = fmt.Sprintf("%s (x%d over %s)", age(e.LastTimestamp.Time, d.now), e.Count, first)
		}
		from := e.Source.Component
		if from == "" {
			from = e.ReportingController
		}
		d.line(1, "%s\t%s\t%s\t%s\t%s", e.Type, e.Reason, interval, from, strings.TrimSpace(e.Message))
	}
}

// eventLast is when an event last happened, for ordering.
func eventLast(e *api.Event) time.Time {
	switch {
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	}
	return e.FirstTimestamp.Time
}

// resourceList writes "name:\tquantity" lines sorted by name.
func (d *describer) resourceList(level int, rl api.ResourceList) {
	names := make([]string, 0, len(rl))
	for n := range rl {
		names = append(names, string(n))
	}
	slices.Sort(names)
	for _, n := range names {
		q := rl[api.ResourceName(n)]
		d.line(level, "%s:\t%s", n, q.String())
	}
}

// boolWord is "True" or "False", as describe prints booleans.
func boolWord(b bool) string {
	if b {
		return "True"
	}
	return "False"
}
