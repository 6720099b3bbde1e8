package node

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/skiffhq/skiff/api"
)

// taintUpdateAttempts bounds the read-merge-write of the Node's taints
// when other writers race it.
const taintUpdateAttempts = 5

// syncTaints makes the Node's spec carry exactly the taints Config.Taints
// returns among the keys Config.TaintKeys owns (the eviction manager's
// pressure taints), leaving every other taint alone. It reads and writes
// the Node only when the wanted set changed since the last success.
func (r *Registrar) syncTaints(ctx context.Context) error {
	if r.cfg.Taints == nil {
		return nil
	}
	want := r.cfg.Taints()
	sig := taintSignature(want)
	r.mu.Lock()
	done := r.taintsApplied && r.appliedTaints == sig
	r.mu.Unlock()
	if done {
		return nil
	}
	nodes, _ := api.LookupResource("nodes")
	// The server writes the Node too (the pod CIDR, an admin's taints):
	// a conflict means read again and merge again, a few times at most.
	for attempt := 1; ; attempt++ {
		obj, err := r.cfg.API.Get(ctx, nodes, "", r.cfg.NodeName)
		if err != nil {
			return fmt.Errorf("read node for taints: %w", err)
		}
		n := obj.(*api.Node)
		merged, changed := mergeTaints(n.Spec.Taints, want, r.cfg.TaintKeys)
		if !changed {
			break
		}
		n.Spec.Taints = merged
		_, err = r.cfg.API.Update(ctx, n)
		if err == nil {
			r.log.Info("node taints updated", "node", r.cfg.NodeName, "taints", sig)
			break
		}
		if !api.IsConflict(err) || attempt == taintUpdateAttempts {
			return fmt.Errorf("update node taints: %w", err)
		}
	}
	r.mu.Lock()
	r.taintsApplied, r.appliedTaints = true, sig
	r.mu.Unlock()
	return nil
}

// mergeTaints returns have with the owned keys' taints replaced by want
// (a taint kept as is keeps its timeAdded), and whether anything changed.
func mergeTaints(have, want []api.Taint, owned []string) ([]api.Taint, bool) {
	own := func(k string) bool { return slices.Contains(owned, k) }
	var out []api.Taint
	for _, t := range have {
		if !own(t.Key) || slices.ContainsFunc(want, func(w api.Taint) bool { return sameTaint(w, t) }) {
			out = append(out, t)
		}
	}
	for _, w := range want {
		if !slices.ContainsFunc(out, func(t api.Taint) bool { return sameTaint(w, t) }) {
			out = append(out, w)
		}
	}
	changed := len(out) != len(have)
	for i := 0; !changed && i < len(out); i++ {
		changed = !sameTaint(out[i], have[i])
	}
	return out, changed
}

func sameTaint(a, b api.Taint) bool {
	return a.Key == b.Key && a.Value == b.Value && a.Effect == b.Effect
}

func taintSignature(ts []api.Taint) string {
	parts := make([]string, 0, len(ts))
	for _, t := range ts {
		parts = append(parts, t.Key+"="+t.Value+":"+t.Effect)
	}
	slices.Sort(parts)
	return strings.Join(parts, ",")
}
