package apiserver

import (
	"context"
	"fmt"
	"net/http"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/api/labels"
	"github.com/skiffhq/skiff/storage"
)

// This file holds the PodDisruptionBudget check of the eviction API: an
// eviction that would leave fewer healthy pods than a budget wants is
// refused with 429, which kubectl drain retries.

// podHealthy reports whether p counts as healthy for a budget: not being
// deleted, not finished, and Ready.
func podHealthy(p *api.Pod) bool {
	if p.DeletionTimestamp != nil || p.Status.Phase == api.PodSucceeded || p.Status.Phase == api.PodFailed {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == api.PodReady {
			return c.Status == api.ConditionTrue
		}
	}
	return false
}

// budgetPods counts the pods of ns that b selects and are not being
// deleted or finished (expected), and how many of them are healthy.
func budgetPods(b *api.PodDisruptionBudget, pods []api.Object) (expected, healthy int, err error) {
	if b.Spec.Selector == nil {
		return 0, 0, nil
	}
	sel, err := b.Spec.Selector.AsSelector()
	if err != nil {
		return 0, 0, fmt.Errorf("selector of poddisruptionbudget %s: %w", b.Name, err)
	}
	for _, o := range pods {
		p := o.(*api.Pod)
		if !sel.Matches(labels.Set(p.Labels)) || p.DeletionTimestamp != nil || p.Status.Phase == api.PodSucceeded || p.Status.Phase == api.PodFailed {
			continue
		}
		expected++
		if podHealthy(p) {
			healthy++
		}
	}
	return expected, healthy, nil
}

// checkDisruptionBudget refuses evicting pod when a budget that selects
// it would be broken. More than one budget for a pod is refused, as
// Kubernetes refuses it.
func (s *Server) checkDisruptionBudget(ctx context.Context, pod *api.Pod) error {
	budgets, _, err := s.store.List(ctx, "poddisruptionbudgets", storage.ListOptions{Namespace: pod.Namespace})
	if err != nil {
		return err
	}
	var match []*api.PodDisruptionBudget
	for _, o := range budgets {
		b := o.(*api.PodDisruptionBudget)
		if b.Spec.Selector == nil {
			continue
		}
		sel, err := b.Spec.Selector.AsSelector()
		if err == nil && sel.Matches(labels.Set(pod.Labels)) {
			match = append(match, b)
		}
	}
	switch len(match) {
	case 0:
		return nil
	case 1:
	default:
		return api.NewStatusError(http.StatusInternalServerError, api.StatusReasonInternalError,
			"This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.")
	}
	b := match[0]
	pods, _, err := s.store.List(ctx, "pods", storage.ListOptions{Namespace: pod.Namespace})
	if err != nil {
		return err
	}
	expected, healthy, err := budgetPods(b, pods)
	if err != nil {
		return err
	}
	d := api.ComputeDisruptionBudget(b, expected, healthy)
	if !podHealthy(pod) {
		// An unhealthy pod serves nothing: it may go when the budget
		// is met (IfHealthyBudget) or always (AlwaysAllow).
		if p := b.Spec.UnhealthyPodEvictionPolicy; (p != nil && *p == api.AlwaysAllow) || d.Healthy >= d.Desired {
			return nil
		}
	} else if d.Allowed > 0 {
		return nil
	}
	e := api.NewStatusError(http.StatusTooManyRequests, api.StatusReasonTooManyRequests, "Cannot evict pod as it would violate the pod's disruption budget.")
	e.Status.Details = &api.StatusDetails{Causes: []api.StatusCause{{Type: "DisruptionBudget",
		Message: fmt.Sprintf("The disruption budget %s needs %d healthy pods and has %d currently", b.Name, d.Desired, d.Healthy)}}}
	return e
}
