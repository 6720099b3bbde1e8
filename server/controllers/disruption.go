package controllers

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"time"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/api/labels"
	"github.com/skiffhq/skiff/storage"
)

// DisruptionController writes each PodDisruptionBudget's status (expected
// and healthy pods, disruptions allowed) from the pods it selects, for
// kubectl get pdb; the eviction API computes the same numbers itself at
// the moment it decides.
type DisruptionController struct {
	cfg   Config
	in    *Informers
	queue *Queue
}

func newDisruptionController(cfg Config, in *Informers) *DisruptionController {
	c := &DisruptionController{cfg: cfg, in: in, queue: NewQueue(cfg.Clock)}
	in.PodDisruptionBudgets.AddHandler(func(_, cur api.Object) {
		if cur != nil {
			c.queue.Add(KeyOf(cur))
		}
	})
	in.Pods.AddHandler(func(old, cur api.Object) {
		o := cur
		if o == nil {
			o = old
		}
		if o == nil {
			return
		}
		ns := o.GetObjectMeta().Namespace
		for _, b := range in.PodDisruptionBudgets.List() {
			if b.GetObjectMeta().Namespace == ns {
				c.queue.Add(KeyOf(b))
			}
		}
	})
	return c
}

func (c *DisruptionController) worker() *worker {
	return &worker{name: "disruption", queue: c.queue, sync: c.sync}
}

func (c *DisruptionController) sync(ctx context.Context, key string) (time.Duration, error) {
	obj := c.in.PodDisruptionBudgets.Get(key)
	if obj == nil {
		return 0, nil
	}
	b := obj.(*api.PodDisruptionBudget)
	expected, healthy := 0, 0
	if b.Spec.Selector != nil {
		sel, err := b.Spec.Selector.AsSelector()
		if err != nil {
			return 0, nil // validation keeps these out; nothing to count
		}
		for _, o := range c.in.Pods.List() {
			p := o.(*api.Pod)
			if p.Namespace != b.Namespace || !active(p) || !sel.Matches(labels.Set(p.Labels)) {
				continue
			}
			expected++
			if r, _ := podReady(p); r {
				healthy++
			}
		}
	}
	d := api.ComputeDisruptionBudget(b, expected, healthy)
	st := b.Status
	st.ObservedGeneration = b.Generation
	st.ExpectedPods, st.CurrentHealthy, st.DesiredHealthy, st.DisruptionsAllowed = d.Expected, d.Healthy, d.Desired, d.Allowed
	if reflect.DeepEqual(st, b.Status) {
		return 0, nil
	}
	cp := *b
	cp.Status = st
	if err := c.cfg.Store.Update(ctx, &cp); err != nil {
		if errors.Is(err, storage.ErrNotFound) {
			return 0, nil
		}
		return 0, fmt.Errorf("update status of poddisruptionbudget %s: %w", key, err)
	}
	c.in.PodDisruptionBudgets.Assume(&cp)
	return 0, nil
}
