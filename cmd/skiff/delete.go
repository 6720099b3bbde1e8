package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/api/client"
)

var deleteHelp = cmdHelp{
	usage: "skiff delete KIND NAME... [-n NS] [--grace-period N] [--wait=false] [--timeout D]\n  skiff delete KIND/NAME...",
	about: `Delete objects by kind and name.

A pod is deleted gracefully: its agent stops it within its grace period,
then it disappears. By default delete waits until every object is gone;
--wait=false returns once the deletion is accepted, and --grace-period=0
removes a pod at once without waiting for its agent.`,
	examples: `  skiff delete pod web
  skiff delete deploy/web ds/logger -n edge
  skiff delete pod stuck --grace-period=0`,
}

// defaultDeleteTimeout bounds --wait unless --timeout says otherwise:
// the default pod grace period (30s) plus time for the agent to notice.
const defaultDeleteTimeout = 90 * time.Second

// target is one object named on the command line.
type target struct {
	res  api.ResourceInfo
	name string
}

func runDelete(ctx context.Context, env *cliEnv, args []string) error {
	fs := newFlagSet("delete")
	var f clientFlags
	f.register(fs, true)
	grace := fs.Int64("grace-period", -1, "seconds a pod gets to stop; -1 keeps its own, 0 removes it at once")
	wait := fs.Bool("wait", true, "wait until the objects are gone")
	timeout := fs.Duration("timeout", defaultDeleteTimeout, "how long --wait waits")
	ignoreNotFound := fs.Bool("ignore-not-found", false, "treat a missing object as deleted")
	pos, err := parseArgs(env, fs, deleteHelp, args)
	if err != nil {
		return err
	}
	targets, err := parseTargets("delete", pos)
	if err != nil {
		return err
	}
	if *timeout <= 0 {
		return usageError{fmt.Sprintf("--timeout %v must be positive", *timeout)}
	}
	c, _, err := f.client(env)
	if err != nil {
		return err
	}
	var opts client.DeleteOptions
	if *grace >= 0 {
		opts.GracePeriodSeconds = grace
	}
	ns := f.ns()
	failed := false
	var deleted []target
	for _, t := range targets {
		err := c.Delete(ctx, t.res, ns, t.name, opts)
		switch {
		case err == nil:
			fmt.Fprintf(env.stdout, "%s %q deleted\n", kindName(t.res), t.name)
			deleted = append(deleted, t)
		case api.IsNotFound(err) && *ignoreNotFound:
		default:
			printError(env, err)
			failed = true
		}
	}
	if *wait && len(deleted) > 0 {
		wctx, cancel := context.WithTimeout(ctx, *timeout)
		defer cancel()
		for _, t := range deleted {
			err := waitGone(wctx, c, t.res, ns, t.name)
			if err == nil {
				continue
			}
			if ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
				err = fmt.Errorf("timed out after %v waiting for the deletion of %s %q", *timeout, kindName(t.res), t.name)
			}
			return err
		}
	}
	if failed {
		return errReported
	}
	return nil
}

// parseTargets parses the arguments of cmd, "KIND NAME..." or "KIND/NAME...".
func parseTargets(cmd string, pos []string) ([]target, error) {
	if len(pos) == 0 {
		return nil, usageError{fmt.Sprintf("you must specify the kind and name of what to %s\nSee 'skiff %s -h'.", cmd, cmd)}
	}
	var out []target
	if strings.Contains(pos[0], "/") {
		for _, p := range pos {
			kind, name, ok := strings.Cut(p, "/")
			if !ok || name == "" {
				return nil, usageError{fmt.Sprintf("%q: when the first argument is KIND/NAME, every argument must be", p)}
			}
			res, err := lookupKind(kind)
			if err != nil {
				return nil, err
			}
			out = append(out, target{res, name})
		}
		return out, nil
	}
	res, err := lookupKind(pos[0])
	if err != nil {
		return nil, err
	}
	if len(pos) == 1 {
		return nil, usageError{fmt.Sprintf("give the names of the %s to %s\nSee 'skiff %s -h'.", res.Resource, cmd, cmd)}
	}
	for _, name := range pos[1:] {
		out = append(out, target{res, name})
	}
	return out, nil
}

// waitGone returns once res/name no longer exists, watching for its
// DELETED event; it fails when ctx ends first.
func waitGone(ctx context.Context, c *client.Client, res api.ResourceInfo, ns, name string) error {
	if !res.Namespaced {
		ns = client.NamespaceAll
	}
	opts := client.ListOptions{FieldSelector: "metadata.name=" + name}
	for {
		objs, rv, err := c.List(ctx, res, ns, opts)
		if err != nil {
			return err
		}
		if len(objs) == 0 {
			return nil
		}
		w, err := c.Watch(ctx, res, ns, client.WatchOptions{ListOptions: opts, ResourceVersion: rv})
		if client.IsGone(err) {
			continue
		}
		if err != nil {
			return err
		}
		gone, err := waitDeletedEvent(w)
		w.Close()
		switch {
		case gone:
			return nil
		case ctx.Err() != nil:
			return ctx.Err()
		case errors.Is(err, io.EOF), client.IsGone(err):
			// The stream ended or its version was compacted: look again.
		default:
			return err
		}
	}
}

// waitDeletedEvent reads w until a DELETED event (true) or an error.
func waitDeletedEvent(w *client.Watcher) (bool, error) {
	for {
		ev, err := w.Next()
		if err != nil {
			return false, err
		}
		if ev.Type == api.Deleted {
			return true, nil
		}
	}
}
