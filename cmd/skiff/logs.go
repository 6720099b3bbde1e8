package main

import (
	"context"
	"fmt"
	"io"

	"github.com/skiffhq/skiff/api/client"
)

var logsHelp = cmdHelp{
	usage: "skiff logs POD|deploy/NAME|ds/NAME [-c CONTAINER] [-f] [--tail N] [-n NS]",
	about: `Print the log of a container of a pod.

The server fetches it from the agent of the pod's node, through the
tunnel the agent keeps open. For deploy/NAME or ds/NAME it picks one of
the workload's pods (a running one, the newest). -c is needed only
when the pod has more than one container; -f keeps following new lines
until interrupted.`,
	examples: `  skiff logs web-7d4b9c-x2k8p
  skiff logs web-7d4b9c-x2k8p -c sidecar --tail 20 -f
  skiff logs deploy/web -f`,
}

func runLogs(ctx context.Context, env *cliEnv, args []string) error {
	fs := newFlagSet("logs")
	var f clientFlags
	f.register(fs, true)
	var opts client.LogOptions
	fs.StringVar(&opts.Container, "container", "", "container name")
	fs.StringVar(&opts.Container, "c", "", "shorthand for --container")
	fs.BoolVar(&opts.Follow, "follow", false, "keep printing new lines")
	fs.BoolVar(&opts.Follow, "f", false, "shorthand for --follow")
	tail := fs.Int64("tail", -1, "lines from the end to start with; -1 prints the whole log")
	pos, err := parseArgs(env, fs, logsHelp, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageError{"expected exactly one pod name\nSee 'skiff logs -h'."}
	}
	if *tail < -1 {
		return usageError{fmt.Sprintf("--tail %d: want -1 (all) or a count", *tail)}
	}
	if *tail >= 0 {
		opts.TailLines = tail
	}
	c, _, err := f.client(env)
	if err != nil {
		return err
	}
	pod, err := resolvePod(ctx, c, f.ns(), pos[0], env.stderr)
	if err != nil {
		return err
	}
	rc, err := c.Logs(ctx, f.ns(), pod, opts)
	if err != nil {
		return err
	}
	defer rc.Close()
	if _, err := io.Copy(env.stdout, rc); err != nil {
		if ctx.Err() != nil {
			return nil // interrupted while following
		}
		return fmt.Errorf("read log of pod %s: %w", pod, err)
	}
	return nil
}
