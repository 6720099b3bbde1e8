package controllers

import (
	"time"

	"github.com/skiffhq/skiff/api"
)

// podGroups is a Deployment's pods split by revision: those of the
// current template (new) and the rest (old). The counts cover active pods
// (not being deleted, not finished) only.
type podGroups struct {
	hash               string
	newPods, oldPods   []*api.Pod
	newReady, oldReady int
	newAvail, oldAvail int
	// oldTerminating counts old pods being deleted that have not stopped.
	oldTerminating int
	// oldAvailable says, for each of oldPods, whether it is available.
	// (A map by name cost a Deployment of 10 000 pods a map of 10 000
	// entries built twice a sync, and it syncs on every pod's change.)
	oldAvailable []bool
	// wait is the soonest a ready pod becomes available (minReadySeconds),
	// zero when none is waiting.
	wait time.Duration
}

// groupPods splits pods by whether their pod-template-hash is hash.
func groupPods(pods []*api.Pod, hash string, minReady time.Duration, now time.Time) podGroups {
	g := podGroups{hash: hash}
	for _, p := range pods {
		isNew := p.Labels[LabelPodTemplateHash] == hash
		if !active(p) {
			if !isNew && p.DeletionTimestamp != nil && !finished(p) {
				g.oldTerminating++
			}
			continue
		}
		ready, _ := podReady(p)
		avail, left := podAvailable(p, minReady, now)
		if left > 0 && (g.wait == 0 || left < g.wait) {
			g.wait = left
		}
		if isNew {
			g.newPods = append(g.newPods, p)
			g.newReady += b2i(ready)
			g.newAvail += b2i(avail)
		} else {
			g.oldPods = append(g.oldPods, p)
			g.oldAvailable = append(g.oldAvailable, avail)
			g.oldReady += b2i(ready)
			g.oldAvail += b2i(avail)
		}
	}
	return g
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// desiredReplicas is d's spec.replicas (1 when unset, as defaulted).
func desiredReplicas(d *api.Deployment) int {
	if d.Spec.Replicas == nil {
		return 1
	}
	return int(*d.Spec.Replicas)
}

// rollingBounds resolves maxSurge (rounded up) and maxUnavailable
// (rounded down) against the desired replicas, as Kubernetes does; when
// both come to zero, maxUnavailable is 1 so a rollout can progress. For
// Recreate both are zero.
func rollingBounds(d *api.Deployment) (surge, unavailable int) {
	if d.Spec.Strategy.Type == api.RecreateDeploymentStrategyType {
		return 0, 0
	}
	desired := desiredReplicas(d)
	surgeV, unavailV := api.FromString("25%"), api.FromString("25%")
	if ru := d.Spec.Strategy.RollingUpdate; ru != nil {
		if ru.MaxSurge != nil {
			surgeV = *ru.MaxSurge
		}
		if ru.MaxUnavailable != nil {
			unavailV = *ru.MaxUnavailable
		}
	}
	surge, err := surgeV.ScaledValue(desired, true)
	if err != nil {
		surge = 0
	}
	unavailable, err = unavailV.ScaledValue(desired, false)
	if err != nil {
		unavailable = 0
	}
	if surge == 0 && unavailable == 0 {
		unavailable = 1
	}
	return surge, unavailable
}

// rolloutPlan is one reconcile step of a Deployment: how many pods of
// the current template to create and which pods to delete.
type rolloutPlan struct {
	create int
	delete []*api.Pod
}

// planRollout decides the next step towards d's spec from its pods. It is
// level-triggered: called again after every change, it moves the
// Deployment one bounded step at a time.
//
// RollingUpdate keeps at most replicas+maxSurge pods and at least
// replicas-maxUnavailable available ones: it creates new pods up to the
// surge, deletes old pods that are not available (they serve nothing)
// and then as many available old pods as the availability floor allows.
// Recreate deletes every old pod, waits until they have stopped, then
// creates the new ones.
func planRollout(d *api.Deployment, g podGroups) rolloutPlan {
	desired := desiredReplicas(d)
	var plan rolloutPlan
	if d.Spec.Strategy.Type == api.RecreateDeploymentStrategyType && len(g.oldPods)+g.oldTerminating > 0 {
		plan.delete = append(plan.delete, g.oldPods...)
		return plan
	}
	if len(g.oldPods) == 0 {
		switch n := len(g.newPods); {
		case n < desired:
			plan.create = desired - n
		case n > desired:
			plan.delete = pickForDeletion(g.newPods, n-desired)
		}
		return plan
	}

	surge, maxUnavailable := rollingBounds(d)
	total := len(g.newPods) + len(g.oldPods)
	if len(g.newPods) < desired && total < desired+surge {
		plan.create = min(desired+surge-total, desired-len(g.newPods))
	}
	if len(g.newPods) > desired {
		plan.delete = pickForDeletion(g.newPods, len(g.newPods)-desired)
		total -= len(g.newPods) - desired
	}

	minAvailable := desired - maxUnavailable
	newUnavailable := len(g.newPods) - g.newAvail
	budget := total - minAvailable - newUnavailable
	if budget <= 0 {
		return plan
	}
	var unavailableOld, availableOld []*api.Pod
	for i, p := range g.oldPods {
		if g.oldAvailable[i] {
			availableOld = append(availableOld, p)
		} else {
			unavailableOld = append(unavailableOld, p)
		}
	}
	// Unavailable old pods first: deleting them costs no availability.
	cleaned := pickForDeletion(unavailableOld, min(budget, len(unavailableOld)))
	plan.delete = append(plan.delete, cleaned...)
	budget -= len(cleaned)
	// Then available old pods, down to the availability floor.
	if n := min(budget, g.newAvail+g.oldAvail-minAvailable, len(availableOld)); n > 0 {
		plan.delete = append(plan.delete, pickForDeletion(availableOld, n)...)
	}
	return plan
}

// pickForDeletion returns the n pods of pods to delete first, leaving
// pods unchanged.
func pickForDeletion(pods []*api.Pod, n int) []*api.Pod {
	if n <= 0 {
		return nil
	}
	c := append([]*api.Pod(nil), pods...)
	rankForDeletion(c)
	return c[:min(n, len(c))]
}
