package controllers

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/internal/clock"
	"github.com/skiffhq/skiff/internal/uid"
	"github.com/skiffhq/skiff/storage"
)

// Indexes of the service and slice informers.
const (
	indexByNamespace = "namespace"
	indexByService   = "service"
)

func byNamespace(obj api.Object) []string { return []string{obj.GetObjectMeta().Namespace} }

func slicesByService(obj api.Object) []string {
	m := obj.GetObjectMeta()
	if n := m.Labels[api.LabelServiceName]; n != "" && m.Labels[api.LabelManagedBy] == api.EndpointSliceController {
		return []string{m.Namespace + "/" + n}
	}
	return nil
}

// EndpointsController keeps, for every Service with a selector, an
// Endpoints object and EndpointSlices listing the pods it selects, as
// Kubernetes' endpoints and endpointslice controllers do. Its decisions
// are planSlices and desiredEndpoints; it writes through the store.
type EndpointsController struct {
	store    *storage.Store
	clk      clock.Clock
	services *Informer
	slices   *Informer
	pods     *Informer
	queue    *Queue
}

func newEndpointsController(cfg Config, in *Informers) *EndpointsController {
	c := &EndpointsController{store: cfg.Store, clk: cfg.Clock, services: in.Services, slices: in.EndpointSlices, pods: in.Pods, queue: NewQueue(cfg.Clock)}
	in.Services.AddHandler(func(old, cur api.Object) {
		for _, o := range []api.Object{old, cur} {
			if o != nil {
				c.queue.Add(KeyOf(o))
			}
		}
	})
	in.EndpointSlices.AddHandler(func(old, cur api.Object) {
		for _, o := range []api.Object{old, cur} {
			if o == nil {
				continue
			}
			for _, k := range slicesByService(o) {
				c.queue.Add(k)
			}
		}
	})
	in.Pods.AddHandler(func(old, cur api.Object) {
		// A pod change matters to the Services selecting it before or
		// after the change.
		for _, o := range []api.Object{old, cur} {
			if o == nil {
				continue
			}
			p := o.(*api.Pod)
			for _, so := range c.services.ByIndex(indexByNamespace, p.Namespace) {
				if selectsPod(so.(*api.Service), p) {
					c.queue.Add(KeyOf(so))
				}
			}
		}
	})
	return c
}

func (c *EndpointsController) worker() *worker {
	return &worker{name: "endpoints", queue: c.queue, sync: c.sync}
}

// Queue returns the controller's work queue (for the test harness).
func (c *EndpointsController) Queue() *Queue { return c.queue }

// Sync reconciles the Service key (namespace/name) once; the test harness
// calls it directly.
func (c *EndpointsController) Sync(ctx context.Context, key string) error {
	_, err := c.sync(ctx, key)
	return err
}

func (c *EndpointsController) sync(ctx context.Context, key string) (time.Duration, error) {
	existing := c.serviceSlices(key)
	obj := c.services.Get(key)
	if obj == nil {
		return 0, c.removeAll(ctx, key, existing)
	}
	svc := obj.(*api.Service)
	if len(svc.Spec.Selector) == 0 || svc.Spec.Type == api.ServiceTypeExternalName {
		// Not ours: a Service without a selector has endpoints its
		// owner writes. Slices we made for it before are removed.
		return 0, c.deleteSlices(ctx, existing)
	}
	var pods []*api.Pod
	for _, o := range c.pods.ByIndex(indexByNamespace, svc.Namespace) {
		pods = append(pods, o.(*api.Pod))
	}
	eps := serviceEndpoints(svc, pods)
	if err := c.writeEndpoints(ctx, desiredEndpoints(svc, eps)); err != nil {
		return 0, err
	}
	plan := planSlices(svc, eps, existing)
	var errs []error
	for _, s := range plan.update {
		if err := c.store.Update(ctx, s); err != nil {
			errs = append(errs, fmt.Errorf("update endpointslice %s/%s: %w", s.Namespace, s.Name, err))
			continue
		}
		c.slices.Assume(s)
	}
	for _, s := range plan.create {
		if err := c.createSlice(ctx, s); err != nil {
			errs = append(errs, err)
		}
	}
	errs = append(errs, c.deleteSlices(ctx, plan.delete))
	return 0, errors.Join(errs...)
}

// serviceSlices returns the slices this controller made for key.
func (c *EndpointsController) serviceSlices(key string) []*api.EndpointSlice {
	objs := c.slices.ByIndex(indexByService, key)
	out := make([]*api.EndpointSlice, 0, len(objs))
	for _, o := range objs {
		out = append(out, o.(*api.EndpointSlice))
	}
	return out
}

func (c *EndpointsController) createSlice(ctx context.Context, s *api.EndpointSlice) error {
	s.UID = uid.New()
	s.CreationTimestamp = api.NewTime(c.clk.Now())
	s.Generation = 1
	api.SetTypeMeta(s)
	api.SetDefaults(s)
	var err error
	for range 5 {
		s.Name = s.GenerateName + randomSuffix()
		if err = c.store.Create(ctx, s); err == nil {
			c.slices.Assume(s)
			return nil
		}
		if !errors.Is(err, storage.ErrExists) {
			break
		}
	}
	return fmt.Errorf("create endpointslice for %s/%s: %w", s.Namespace, s.GenerateName, err)
}

func (c *EndpointsController) deleteSlices(ctx context.Context, ss []*api.EndpointSlice) error {
	var errs []error
	for _, s := range ss {
		out, err := c.store.Delete(ctx, "endpointslices", s.Namespace, s.Name, s.ResourceVersion)
		switch {
		case errors.Is(err, storage.ErrNotFound):
		case err != nil:
			errs = append(errs, fmt.Errorf("delete endpointslice %s/%s: %w", s.Namespace, s.Name, err))
		default:
			c.slices.AssumeDeleted(s, revisionOf(out))
		}
	}
	return errors.Join(errs...)
}

// removeAll deletes the Endpoints and slices of a Service that is gone.
func (c *EndpointsController) removeAll(ctx context.Context, key string, slices []*api.EndpointSlice) error {
	ns, name := splitKey(key)
	err := c.deleteSlices(ctx, slices)
	if _, derr := c.store.Delete(ctx, "endpoints", ns, name, ""); derr != nil && !errors.Is(derr, storage.ErrNotFound) {
		err = errors.Join(err, fmt.Errorf("delete endpoints %s: %w", key, derr))
	}
	return err
}

// writeEndpoints creates or updates want unless the stored one already
// holds its subsets and labels.
func (c *EndpointsController) writeEndpoints(ctx context.Context, want *api.Endpoints) error {
	_, err := c.store.GuaranteedUpdate(ctx, "endpoints", want.Namespace, want.Name, func(cur api.Object) (api.Object, error) {
		e := cur.(*api.Endpoints)
		if semanticJSONEqual(e.Subsets, want.Subsets) && equalLabels(e.Labels, want.Labels) {
			return e, nil
		}
		e.Subsets, e.Labels = want.Subsets, want.Labels
		return e, nil
	})
	if errors.Is(err, storage.ErrNotFound) {
		want.UID = uid.New()
		want.CreationTimestamp = api.NewTime(c.clk.Now())
		want.Generation = 1
		api.SetTypeMeta(want)
		api.SetDefaults(want)
		err = c.store.Create(ctx, want)
		if errors.Is(err, storage.ErrExists) {
			return fmt.Errorf("create endpoints %s/%s: %w", want.Namespace, want.Name, storage.ErrConflict)
		}
	}
	if err != nil {
		return fmt.Errorf("write endpoints %s/%s: %w", want.Namespace, want.Name, err)
	}
	return nil
}

func splitKey(key string) (ns, name string) {
	for i := 0; i < len(key); i++ {
		if key[i] == '/' {
			return key[:i], key[i+1:]
		}
	}
	return "", key
}

// semanticJSONEqual reports whether a and b encode to the same JSON.
func semanticJSONEqual(a, b any) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(x, y)
}
