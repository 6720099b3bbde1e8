package printers

import (
	"time"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/internal/table"
)

// HumanDuration formats d the way kubectl's AGE column does (Kubernetes'
// duration.HumanDuration): "45s", "3m20s", "10m", "5h3m", "20h", "2d3h",
// "45d", "3y120d", "9y". Precision drops as d grows. Up to one second in
// the future counts as "0s" (clock skew); more is "<invalid>". It is
// table.HumanDuration, the function the API server's tables use.
func HumanDuration(d time.Duration) string { return table.HumanDuration(d) }

// The helpers below are package table's, under the names describe uses,
// so `skiff describe` and `skiff get` (and kubectl against the server)
// compute the same words the same way.

func age(t, now time.Time) string { return table.Age(t, now) }

func orNone(s string) string { return table.OrNone(s) }

func nodeRoles(n *api.Node) []string { return table.NodeRoles(n) }

func selectorString(ls *api.LabelSelector) string { return table.SelectorString(ls) }

func formatLabels(m map[string]string) string { return table.FormatLabels(m) }

func desiredReplicas(d *api.Deployment) int32 { return table.DesiredReplicas(d) }

func eventSource(e *api.Event) string { return table.EventSource(e) }

func eventTimes(e *api.Event, now time.Time) (first, last string, count int32) {
	return table.EventTimes(e, now)
}
