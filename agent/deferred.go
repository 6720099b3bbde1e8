package agent

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/skiffhq/skiff/agent/kubelet"
	"github.com/skiffhq/skiff/agent/status"
	"github.com/skiffhq/skiff/agent/volumes"
	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/api/client"
)

// deferredStatus is the kubelet's status manager before the agent has
// joined its server (first boot with the server away: static pods run
// anyway). It keeps the latest status of each pod and hands everything
// to the real manager once attached.
type deferredStatus struct {
	mu     sync.Mutex
	real   kubelet.StatusManager
	latest map[string]pendingStatus // by pod UID
}

type pendingStatus struct {
	pod        *api.Pod
	status     api.PodStatus
	terminated bool
}

func newDeferredStatus() *deferredStatus {
	return &deferredStatus{latest: map[string]pendingStatus{}}
}

// attach hands over to m, replaying what was kept.
func (d *deferredStatus) attach(m kubelet.StatusManager) {
	d.mu.Lock()
	pending := d.latest
	d.real, d.latest = m, nil
	d.mu.Unlock()
	for _, p := range pending {
		m.SetPodStatus(p.pod, p.status)
		if p.terminated {
			m.PodTerminated(p.pod)
		}
	}
}

func (d *deferredStatus) SetPodStatus(pod *api.Pod, st api.PodStatus) {
	d.mu.Lock()
	if d.real == nil {
		p := d.latest[string(pod.UID)]
		d.latest[string(pod.UID)] = pendingStatus{pod: pod, status: st, terminated: p.terminated}
		d.mu.Unlock()
		return
	}
	m := d.real
	d.mu.Unlock()
	m.SetPodStatus(pod, st)
}

func (d *deferredStatus) PodTerminated(pod *api.Pod) {
	d.mu.Lock()
	if d.real == nil {
		p := d.latest[string(pod.UID)]
		p.pod, p.terminated = pod, true
		d.latest[string(pod.UID)] = p
		d.mu.Unlock()
		return
	}
	m := d.real
	d.mu.Unlock()
	m.PodTerminated(pod)
}

func (d *deferredStatus) RemovePod(uid string) {
	d.mu.Lock()
	if d.real == nil {
		delete(d.latest, uid)
		d.mu.Unlock()
		return
	}
	m := d.real
	d.mu.Unlock()
	m.RemovePod(uid)
}

// errNotJoined is what secrets and configmaps give before the agent has
// joined: the pods that need them wait (CreateContainerConfigError).
var errNotJoined = errors.New("the agent has not joined its server yet")

// objectGetter adapts the object cache to the kubelet: a missing or
// forbidden object wraps volumes.ErrObjectNotFound, so optional
// references work; before the agent joined, every lookup fails.
type objectGetter struct {
	mu   sync.Mutex
	real kubelet.ObjectGetter
}

func (o *objectGetter) attach(g kubelet.ObjectGetter) {
	o.mu.Lock()
	o.real = g
	o.mu.Unlock()
}

func (o *objectGetter) get() (kubelet.ObjectGetter, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.real == nil {
		return nil, errNotJoined
	}
	return o.real, nil
}

func notFound(kind, ns, name string, err error) error {
	if api.IsNotFound(err) || api.IsForbidden(err) {
		return fmt.Errorf("%s %s/%s: %w: %w", kind, ns, name, volumes.ErrObjectNotFound, err)
	}
	return err
}

func (o *objectGetter) GetSecret(ctx context.Context, ns, name string) (*api.Secret, error) {
	g, err := o.get()
	if err != nil {
		return nil, err
	}
	s, err := g.GetSecret(ctx, ns, name)
	return s, notFound("secret", ns, name, err)
}

// GetPersistentVolumeClaim reads a claim when the real getter can.
func (o *objectGetter) GetPersistentVolumeClaim(ctx context.Context, ns, name string) (*api.PersistentVolumeClaim, error) {
	g, err := o.get()
	if err != nil {
		return nil, err
	}
	cg, ok := g.(volumes.ClaimGetter)
	if !ok {
		return nil, fmt.Errorf("persistentvolumeclaim %s/%s: this agent cannot read claims", ns, name)
	}
	c, err := cg.GetPersistentVolumeClaim(ctx, ns, name)
	return c, notFound("persistentvolumeclaim", ns, name, err)
}

// GetPersistentVolume reads a volume when the real getter can.
func (o *objectGetter) GetPersistentVolume(ctx context.Context, name string) (*api.PersistentVolume, error) {
	g, err := o.get()
	if err != nil {
		return nil, err
	}
	vg, ok := g.(volumes.VolumeGetter)
	if !ok {
		return nil, fmt.Errorf("persistentvolume %s: this agent cannot read volumes", name)
	}
	v, err := vg.GetPersistentVolume(ctx, name)
	return v, notFound("persistentvolume", "", name, err)
}

func (o *objectGetter) GetConfigMap(ctx context.Context, ns, name string) (*api.ConfigMap, error) {
	g, err := o.get()
	if err != nil {
		return nil, err
	}
	c, err := g.GetConfigMap(ctx, ns, name)
	return c, notFound("configmap", ns, name, err)
}

// deferredRecorder drops the eviction manager's events until the agent
// has joined and has a Recorder.
type deferredRecorder struct {
	mu   sync.Mutex
	real *status.Recorder
}

func (d *deferredRecorder) attach(r *status.Recorder) {
	d.mu.Lock()
	d.real = r
	d.mu.Unlock()
}

func (d *deferredRecorder) get() *status.Recorder {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.real
}

func (d *deferredRecorder) Eventf(pod *api.Pod, typ, reason, format string, args ...any) {
	if r := d.get(); r != nil {
		r.Eventf(pod, typ, reason, format, args...)
	}
}

func (d *deferredRecorder) NodeEventf(typ, reason, format string, args ...any) {
	if r := d.get(); r != nil {
		r.NodeEventf(typ, reason, format, args...)
	}
}

// volumeChecker asks the server whether a PersistentVolume exists (a
// node may read the volumes pinned to it, and learns that others are
// gone).
type volumeChecker struct{ c *client.Client }

func (v volumeChecker) VolumeExists(ctx context.Context, name string) (bool, error) {
	res, ok := api.LookupResource("persistentvolumes")
	if !ok {
		return false, errors.New("persistentvolumes not registered")
	}
	_, err := v.c.Get(ctx, res, "", name)
	switch {
	case err == nil:
		return true, nil
	case api.IsNotFound(err):
		return false, nil
	}
	return false, err
}
