package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/api/client"
)

// resolvePod turns POD, pod/NAME, deploy/NAME or ds/NAME into one pod's
// name: for a workload, one of its pods, running ones first, newest
// first (kubectl's choice), saying which on stderr when there are
// several.
func resolvePod(ctx context.Context, c *client.Client, ns, ref string, stderr io.Writer) (string, error) {
	kind, name, ok := strings.Cut(ref, "/")
	if !ok {
		return ref, nil
	}
	if name == "" {
		return "", usageError{fmt.Sprintf("%q: want KIND/NAME", ref)}
	}
	res, found := api.LookupResource(strings.ToLower(kind))
	if !found {
		return "", usageError{fmt.Sprintf("%q: unknown kind %q", ref, kind)}
	}
	if res.Resource == "pods" {
		return name, nil
	}
	obj, err := c.Get(ctx, res, ns, name)
	if err != nil {
		return "", err
	}
	var sel *api.LabelSelector
	switch o := obj.(type) {
	case *api.Deployment:
		sel = o.Spec.Selector
	case *api.DaemonSet:
		sel = o.Spec.Selector
	default:
		return "", usageError{fmt.Sprintf("%q: only pods, deployments and daemonsets name pods here", ref)}
	}
	s, err := sel.AsSelector()
	if err != nil {
		return "", fmt.Errorf("%s: selector: %w", ref, err)
	}
	pods, _ := api.LookupResource("pods")
	objs, _, err := c.List(ctx, pods, ns, client.ListOptions{LabelSelector: s.String()})
	if err != nil {
		return "", err
	}
	var list []*api.Pod
	for _, o := range objs {
		if p, ok := o.(*api.Pod); ok && p.DeletionTimestamp == nil {
			list = append(list, p)
		}
	}
	if len(list) == 0 {
		return "", fmt.Errorf("%s has no pods", ref)
	}
	sort.SliceStable(list, func(i, j int) bool {
		ri, rj := list[i].Status.Phase == api.PodRunning, list[j].Status.Phase == api.PodRunning
		if ri != rj {
			return ri
		}
		return list[j].CreationTimestamp.Time.Before(list[i].CreationTimestamp.Time)
	})
	if len(list) > 1 {
		fmt.Fprintf(stderr, "Found %d pods, using pod/%s\n", len(list), list[0].Name)
	}
	return list[0].Name, nil
}
