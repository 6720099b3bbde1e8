package status

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/skiffhq/skiff/agent/config"
	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/internal/deepcopy"
)

// job is a snapshot of one entry's work, taken under the lock and done
// without it.
type job struct {
	uid        string
	version    uint64
	pod        *api.Pod
	status     *api.PodStatus
	terminated bool
	refresh    bool
	server     *api.Pod
}

// result is what a job learnt.
type result struct {
	server  *api.Pod // the server's copy after the job
	deleted bool     // the API pod's deletion was confirmed
	gone    bool     // the API pod no longer exists (or is another pod)
}

// syncDue does every job that is due, then records the outcomes.
func (m *Manager) syncDue(ctx context.Context) {
	now := m.clock.Now()
	var jobs []job
	var dels []struct {
		uid string
		d   mirrorDel
	}
	m.mu.Lock()
	for uid, e := range m.entries {
		if e.due.IsZero() || e.due.After(now) {
			continue
		}
		if !m.needsSyncLocked(e) {
			e.due = time.Time{} // nothing to do
			continue
		}
		jobs = append(jobs, job{uid: uid, version: e.version, pod: e.pod, status: e.status, terminated: e.terminated, refresh: e.refresh, server: e.server})
	}
	for uid, d := range m.mirrorDeletes {
		if !d.due.IsZero() && !d.due.After(now) {
			dels = append(dels, struct {
				uid string
				d   mirrorDel
			}{uid, *d})
		}
	}
	m.mu.Unlock()

	succeeded := false
	for _, j := range jobs {
		if ctx.Err() != nil {
			return
		}
		res, err := m.syncPod(ctx, j)
		m.finish(j, res, err)
		succeeded = succeeded || err == nil
	}
	for _, d := range dels {
		if ctx.Err() != nil {
			return
		}
		err := m.deleteMirror(ctx, d.d)
		m.mu.Lock()
		if cur, ok := m.mirrorDeletes[d.uid]; ok {
			if err == nil {
				delete(m.mirrorDeletes, d.uid)
			} else {
				cur.due = m.clock.Now().Add(cur.bo.Next())
			}
		}
		m.mu.Unlock()
		if err != nil {
			m.log.Warn("delete mirror pod; will retry", "pod", d.d.ns+"/"+d.d.name, "err", err)
		}
		succeeded = succeeded || err == nil
	}
	if succeeded {
		m.flushWaiting()
	}
}

func (m *Manager) needsSyncLocked(e *entry) bool {
	return e.refresh || e.status != nil && e.version != e.synced ||
		e.terminated && !e.deleted && e.version != e.synced
}

// finish records j's outcome in its entry, if the entry still exists.
func (m *Manager) finish(j job, res result, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.entries[j.uid]
	if !ok {
		return
	}
	now := m.clock.Now()
	if err != nil {
		e.due = now.Add(e.bo.Next())
		e.failing = true
		m.log.Warn("write pod status; will retry", "pod", j.pod.Namespace+"/"+j.pod.Name, "err", err)
		return
	}
	e.bo.Reset()
	e.failing = false
	e.refresh = false
	if res.server != nil {
		e.server = res.server
	}
	if res.deleted || res.gone {
		e.deleted = true
		e.server = nil
	}
	e.synced = j.version
	switch {
	case e.urgent > e.synced:
		e.due = now.Add(m.cfg.PhaseChangeDelay) // changed while we wrote
	case e.version != e.synced:
		e.due = now.Add(m.cfg.BatchDelay)
	default:
		e.due = time.Time{}
	}
}

// flushWaiting makes every backing-off entry due now: a write just
// worked, so the server is back.
func (m *Manager) flushWaiting() {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.clock.Now()
	for _, e := range m.entries {
		if !e.due.IsZero() && e.due.After(now) && e.version != e.synced {
			e.due = now
		}
	}
	for _, d := range m.mirrorDeletes {
		if d.due.After(now) {
			d.due = now
		}
	}
}

// syncPod brings the server's copy of j's pod (or mirror pod) to j's
// status, and confirms the deletion of a terminated API pod.
func (m *Manager) syncPod(ctx context.Context, j job) (result, error) {
	static := config.IsStaticPod(j.pod)
	ns, name := j.pod.Namespace, j.pod.Name
	cur := j.server
	if cur == nil || j.refresh {
		var err error
		if cur, err = m.getPod(ctx, ns, name); err != nil {
			return result{}, err
		}
	}
	for range maxConflictRetries {
		if static {
			var err error
			if cur, err = m.ensureMirror(ctx, j.pod, cur); err != nil {
				return result{}, err
			}
			if cur == nil {
				return result{}, nil // another pod holds the name: nothing to write
			}
		} else if cur == nil || cur.UID != j.pod.UID {
			return result{gone: true}, nil
		}
		if j.status != nil {
			merged := mergeStatus(cur.Status, *j.status)
			if !jsonEqual(merged, cur.Status) {
				next := *cur
				next.Status = merged
				out, err := m.cfg.Client.UpdateStatus(ctx, &next)
				if api.IsConflict(err) || invisible(err) {
					if cur, err = m.getPod(ctx, ns, name); err != nil {
						return result{}, err
					}
					continue
				}
				if err != nil {
					return result{}, fmt.Errorf("update status of pod %s/%s: %w", ns, name, err)
				}
				cur = out.(*api.Pod)
			}
		}
		if j.terminated && !static && (j.pod.DeletionTimestamp != nil || cur.DeletionTimestamp != nil) {
			err := m.forceDelete(ctx, cur)
			if api.IsConflict(err) {
				if cur, err = m.getPod(ctx, ns, name); err != nil {
					return result{}, err
				}
				continue
			}
			if err != nil {
				return result{}, err
			}
			return result{deleted: true}, nil
		}
		return result{server: cur}, nil
	}
	return result{}, fmt.Errorf("pod %s/%s: still conflicting after %d tries", ns, name, maxConflictRetries)
}

// invisible reports whether err says the node cannot see the pod: 404,
// or 403, which is what a node gets for a pod that does not exist (it
// cannot be bound to the node) or is bound to another node. Either way
// it is not this node's pod.
func invisible(err error) bool {
	return api.IsNotFound(err) || api.ReasonOf(err) == api.StatusReasonForbidden
}

// getPod reads a pod; a pod the node cannot see (see invisible) is nil
// with no error.
func (m *Manager) getPod(ctx context.Context, ns, name string) (*api.Pod, error) {
	obj, err := m.cfg.Client.Get(ctx, m.pods, ns, name)
	if invisible(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("get pod %s/%s: %w", ns, name, err)
	}
	p, ok := obj.(*api.Pod)
	if !ok {
		return nil, fmt.Errorf("get pod %s/%s: the server sent a %T", ns, name, obj)
	}
	return p, nil
}

// deleteBody is the DeleteOptions of a forced, preconditioned delete.
type deleteBody struct {
	GracePeriodSeconds int64 `json:"gracePeriodSeconds"`
	Preconditions      struct {
		UID             string `json:"uid,omitempty"`
		ResourceVersion string `json:"resourceVersion,omitempty"`
	} `json:"preconditions"`
}

// forceDelete removes pod from the server at once, only if it is still
// the same pod at the same version (a 409 otherwise). A pod already gone
// is not an error.
func (m *Manager) forceDelete(ctx context.Context, pod *api.Pod) error {
	var b deleteBody
	b.Preconditions.UID = pod.UID
	b.Preconditions.ResourceVersion = pod.ResourceVersion
	body, err := json.Marshal(b)
	if err != nil {
		return fmt.Errorf("delete pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	path := "/api/v1/namespaces/" + url.PathEscape(pod.Namespace) + "/pods/" + url.PathEscape(pod.Name)
	resp, err := m.cfg.Client.Do(ctx, http.MethodDelete, path, bytes.NewReader(body))
	if invisible(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("delete pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return resp.Body.Close()
}

// ensureMirror returns the mirror pod of static, given cur, the server's
// pod of that name (nil if none): a current mirror is kept, a stale one
// (another hash) or one being deleted is replaced, a missing one made.
// It returns nil with no error when a pod that is not a mirror holds the
// name: that pod is left alone.
func (m *Manager) ensureMirror(ctx context.Context, static, cur *api.Pod) (*api.Pod, error) {
	hash := config.StaticPodHash(static)
	if cur != nil {
		if !config.IsMirrorPod(cur) {
			m.log.Warn("a pod that is not a mirror pod has the static pod's name; its status is not written",
				"pod", cur.Namespace+"/"+cur.Name)
			return nil, nil
		}
		if cur.Annotations[api.MirrorPodAnnotation] == hash && cur.DeletionTimestamp == nil {
			return cur, nil
		}
		if err := m.forceDelete(ctx, cur); err != nil {
			return nil, fmt.Errorf("replace mirror pod: %w", err)
		}
	}
	// An AlreadyExists (a pod made since cur was read) is retried with
	// backoff like any other failure: the next try reads it first.
	obj, err := m.cfg.Client.Create(ctx, mirrorPodFor(static))
	if err != nil {
		return nil, fmt.Errorf("create mirror pod %s/%s: %w", static.Namespace, static.Name, err)
	}
	p, ok := obj.(*api.Pod)
	if !ok {
		return nil, fmt.Errorf("create mirror pod: the server sent a %T", obj)
	}
	return p, nil
}

// mirrorPodFor is the mirror pod of static: a copy bound to the same node,
// annotated with the static pod's hash, without UID, version or status.
func mirrorPodFor(static *api.Pod) *api.Pod {
	p := config.CopyPod(static)
	p.UID, p.ResourceVersion = "", ""
	p.CreationTimestamp = api.Time{}
	p.Status = api.PodStatus{}
	ann := make(map[string]string, len(p.Annotations)+1)
	for k, v := range p.Annotations {
		ann[k] = v
	}
	ann[api.MirrorPodAnnotation] = config.StaticPodHash(static)
	p.Annotations = ann
	return p
}

// deleteMirror deletes the mirror pod d names, if it is still the mirror
// of the static pod with d's hash.
func (m *Manager) deleteMirror(ctx context.Context, d mirrorDel) error {
	cur, err := m.getPod(ctx, d.ns, d.name)
	if err != nil || cur == nil {
		return err
	}
	if !config.IsMirrorPod(cur) || cur.Annotations[api.MirrorPodAnnotation] != d.hash {
		return nil // not ours (any more)
	}
	return m.forceDelete(ctx, cur)
}

// mergeStatus is desired with what the agent does not own kept from the
// server's status: conditions of other types (PodScheduled, …), the
// nominated node, and fields the agent left empty (QoS class, start
// time).
func mergeStatus(server, desired api.PodStatus) api.PodStatus {
	out := copyStatus(desired)
	if (server.Phase == api.PodFailed || server.Phase == api.PodSucceeded) && out.Phase != server.Phase {
		// A final phase never goes back (the server may have set it, as
		// for a lost node's pods): keep it and its reason.
		out.Phase, out.Reason, out.Message = server.Phase, server.Reason, server.Message
	}
	have := map[string]bool{}
	for _, c := range out.Conditions {
		have[c.Type] = true
	}
	for _, c := range server.Conditions {
		if !have[c.Type] {
			out.Conditions = append(out.Conditions, c)
		}
	}
	if out.NominatedNodeName == "" {
		out.NominatedNodeName = server.NominatedNodeName
	}
	if out.QOSClass == "" {
		out.QOSClass = server.QOSClass
	}
	if out.StartTime == nil {
		out.StartTime = server.StartTime
	}
	return out
}

// copyStatus deep-copies a status. It is compared only by its JSON
// (jsonEqual), which normalizes it as the server will (second precision,
// nil for empty), so the copy need not.
func copyStatus(s api.PodStatus) api.PodStatus {
	return *deepcopy.Of(&s)
}

func jsonEqual(a, b any) bool {
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(ja, jb)
}
