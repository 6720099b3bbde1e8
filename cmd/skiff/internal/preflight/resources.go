package preflight

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/skiffhq/skiff/agent/eviction"
)

// measure is one eviction signal's available amount and capacity.
type measure struct {
	name        string
	signal      eviction.Signal
	avail, capa int64
	err         error
	bytes       bool
}

// humanBytes renders n in binary units with one decimal: "1.5Gi".
func humanBytes(n int64) string {
	units := []string{"", "Ki", "Mi", "Gi", "Ti", "Pi"}
	v, i := float64(n), 0
	for v >= 1024 && i < len(units)-1 {
		v /= 1024
		i++
	}
	if i == 0 {
		return strconv.FormatInt(n, 10)
	}
	return strconv.FormatFloat(v, 'f', 1, 64) + units[i]
}

// resources compares free memory, disk and inodes with the eviction
// thresholds: below a hard one fails (the agent would evict pods, or
// refuse them, at once), below a soft one or within 1.5 times a hard one
// warns.
func resources(f Facts, thresholds []eviction.Threshold) []Result {
	ms := []measure{
		{"memory", eviction.SignalMemoryAvailable, f.MemAvailable, f.MemTotal, f.MemErr, true},
		{"nodefs", eviction.SignalNodeFsAvailable, f.NodeFS.Avail, f.NodeFS.Capacity, f.NodeFS.Err, true},
		{"nodefs", eviction.SignalNodeFsInodesFree, f.NodeFS.InodesFree, f.NodeFS.Inodes, f.NodeFS.Err, false},
		{"imagefs", eviction.SignalImageFsAvailable, f.ImageFS.Avail, f.ImageFS.Capacity, f.ImageFS.Err, true},
		{"imagefs", eviction.SignalImageFsInodesFree, f.ImageFS.InodesFree, f.ImageFS.Inodes, f.ImageFS.Err, false},
	}
	paths := map[string]string{"nodefs": f.NodeFS.Path, "imagefs": f.ImageFS.Path}
	var out []Result
	for _, m := range ms {
		var hard, soft *eviction.Threshold
		for i := range thresholds {
			t := &thresholds[i]
			if t.Signal != m.signal {
				continue
			}
			if t.Hard {
				hard = t
			} else {
				soft = t
			}
		}
		if hard == nil && soft == nil {
			continue
		}
		out = append(out, judge(m, paths[m.name], hard, soft))
	}
	return out
}

func judge(m measure, path string, hard, soft *eviction.Threshold) Result {
	r := Result{Name: m.name}
	where := ""
	if path != "" {
		where = " on " + path
	}
	if m.err != nil {
		r.Status, r.Detail, r.Fix = Warn, fmt.Sprintf("cannot measure %s%s: %v", m.signal, where, m.err), "check that the path exists and is readable"
		return r
	}
	amount := func(n int64) string {
		if m.bytes {
			return humanBytes(n)
		}
		return strconv.FormatInt(n, 10) + " inodes"
	}
	r.Detail = fmt.Sprintf("%s=%s of %s%s", m.signal, amount(m.avail), amount(m.capa), where)
	var limits []string
	if hard != nil {
		h := hard.Value.Resolve(m.capa)
		limits = append(limits, "hard "+hard.Value.String())
		switch {
		case m.avail < h:
			r.Status = Fail
			r.Fix = fmt.Sprintf("free %s%s, or lower --eviction-hard %s<%s: below it the agent evicts pods and admits none", amount(h-m.avail), where, m.signal, hard.Value)
		case m.avail < h+h/2:
			r.Status = Warn
			r.Fix = fmt.Sprintf("less than 1.5 times the hard threshold (%s) is free: the agent will evict pods soon", amount(h))
		}
	}
	if soft != nil {
		s := soft.Value.Resolve(m.capa)
		limits = append(limits, "soft "+soft.Value.String())
		if r.Status == OK && m.avail < s {
			r.Status = Warn
			r.Fix = fmt.Sprintf("below the soft threshold %s<%s: the agent evicts pods after the grace period", m.signal, soft.Value)
		}
	}
	r.Detail += fmt.Sprintf(" (evicts below %s)", strings.Join(limits, ", "))
	return r
}
