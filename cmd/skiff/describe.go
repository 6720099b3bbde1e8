package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/api/client"
	"github.com/skiffhq/skiff/cmd/skiff/internal/printers"
)

var describeHelp = cmdHelp{
	usage: "skiff describe KIND [NAME...] [-n NS] [-l SELECTOR]\n  skiff describe KIND/NAME...",
	about: `Show objects in detail, followed by the events about them.

Without a name, every object of KIND in the namespace (matching -l) is
described. A node is shown with the pods bound to it and the resources
they request.`,
	examples: `  skiff describe pod web-7d4b9c-x2k8p
  skiff describe node edge-1
  skiff describe deploy -l app=web`,
}

func runDescribe(ctx context.Context, env *cliEnv, args []string) error {
	fs := newFlagSet("describe")
	var f clientFlags
	f.register(fs, true)
	selector := fs.String("selector", "", "label selector, when no name is given")
	fs.StringVar(selector, "l", "", "shorthand for --selector")
	pos, err := parseArgs(env, fs, describeHelp, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return usageError{"you must specify the kind of object to describe: one of " + kindList() + "\nSee 'skiff describe -h'."}
	}
	var targets []target
	if len(pos) > 1 || strings.Contains(pos[0], "/") {
		if targets, err = parseTargets("describe", pos); err != nil {
			return err
		}
	}
	c, _, err := f.client(env)
	if err != nil {
		return err
	}
	d := &describeRun{env: env, c: c, ns: f.ns()}
	if targets == nil {
		res, err := lookupKind(pos[0])
		if err != nil {
			return err
		}
		ns := client.NamespaceAll
		if res.Namespaced {
			ns = f.ns()
		}
		objs, _, err := c.List(ctx, res, ns, client.ListOptions{LabelSelector: *selector})
		if err != nil {
			return err
		}
		if len(objs) == 0 {
			if res.Namespaced {
				fmt.Fprintf(env.stderr, "No resources found in %s namespace.\n", f.ns())
			} else {
				fmt.Fprintln(env.stderr, "No resources found")
			}
			return nil
		}
		for _, obj := range objs {
			if err := d.describe(ctx, obj); err != nil {
				return err
			}
		}
		return nil
	}
	failed := false
	for _, t := range targets {
		obj, err := c.Get(ctx, t.res, f.ns(), t.name)
		if err != nil {
			printError(env, err)
			failed = true
			continue
		}
		if err := d.describe(ctx, obj); err != nil {
			return err
		}
	}
	if failed {
		return errReported
	}
	return nil
}

// describeRun prints objects one after another, a blank line between.
type describeRun struct {
	env *cliEnv
	c   *client.Client
	ns  string
	n   int // objects printed so far
}

func (d *describeRun) describe(ctx context.Context, obj api.Object) error {
	var events []api.Event
	switch obj.(type) {
	case *api.Secret, *api.Event: // described without events, as kubectl does
	default:
		var err error
		if events, err = objectEvents(ctx, d.c, obj); err != nil {
			return err
		}
	}
	var b strings.Builder
	if d.n > 0 {
		b.WriteString("\n")
	}
	d.n++
	now := d.env.now()
	if n, ok := obj.(*api.Node); ok {
		pods, err := nodePods(ctx, d.c, n.Name)
		if err != nil {
			return err
		}
		if err := printers.DescribeNode(&b, n, pods, events, now); err != nil {
			return err
		}
	} else if err := printers.Describe(&b, obj, events, now); err != nil {
		return err
	}
	_, err := io.WriteString(d.env.stdout, b.String())
	return err
}

// objectEvents lists the events whose involvedObject is obj.
func objectEvents(ctx context.Context, c *client.Client, obj api.Object) ([]api.Event, error) {
	res, ok := api.ResourceOf(obj)
	evRes, ok2 := api.LookupResource("events")
	if !ok || !ok2 {
		return nil, fmt.Errorf("describe: %T is not a kind skiff serves", obj)
	}
	m := obj.GetObjectMeta()
	sel := []string{"involvedObject.name=" + m.Name, "involvedObject.kind=" + res.Kind}
	ns := client.NamespaceAll
	if res.Namespaced {
		ns = m.Namespace
		sel = append(sel, "involvedObject.namespace="+m.Namespace)
	}
	objs, _, err := c.List(ctx, evRes, ns, client.ListOptions{FieldSelector: strings.Join(sel, ",")})
	if err != nil {
		return nil, fmt.Errorf("list events of %s %s: %w", res.Singular, m.Name, err)
	}
	events := make([]api.Event, 0, len(objs))
	for _, o := range objs {
		if e, ok := o.(*api.Event); ok {
			events = append(events, *e)
		}
	}
	return events, nil // printers.Describe orders them by last timestamp
}

// nodePods lists the pods bound to node that have not terminated.
func nodePods(ctx context.Context, c *client.Client, node string) ([]api.Pod, error) {
	podRes, ok := api.LookupResource("pods")
	if !ok {
		return nil, fmt.Errorf("describe: pods are not served")
	}
	objs, _, err := c.List(ctx, podRes, client.NamespaceAll, client.ListOptions{FieldSelector: "spec.nodeName=" + node})
	if err != nil {
		return nil, fmt.Errorf("list pods of node %s: %w", node, err)
	}
	var pods []api.Pod
	for _, o := range objs {
		p, ok := o.(*api.Pod)
		if !ok || p.Status.Phase == api.PodSucceeded || p.Status.Phase == api.PodFailed {
			continue
		}
		pods = append(pods, *p)
	}
	return pods, nil
}
