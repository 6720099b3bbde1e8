package main

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/skiffhq/skiff/api/client"
)

var portForwardHelp = cmdHelp{
	usage: "skiff port-forward POD|deploy/NAME|ds/NAME [LOCAL:]REMOTE... [--address ADDR] [-n NS]",
	about: `Forward local ports to ports of a pod, until interrupted.

Connections to LOCAL on this machine reach REMOTE on the pod's loopback,
through the server and the tunnel the pod's agent keeps open. LOCAL 0 (or
":REMOTE") picks a free port; a lone REMOTE uses the same port locally.`,
	examples: `  skiff port-forward web-7d4b9c-x2k8p 8080:80
  skiff port-forward web-7d4b9c-x2k8p :5432`,
}

func runPortForward(ctx context.Context, env *cliEnv, args []string) error {
	fs := newFlagSet("port-forward")
	var f clientFlags
	f.register(fs, true)
	address := fs.String("address", "127.0.0.1", "local address to listen on")
	pos, err := parseArgs(env, fs, portForwardHelp, args)
	if err != nil {
		return err
	}
	if len(pos) < 2 {
		return usageError{"expected a pod and at least one port\nSee 'skiff port-forward -h'."}
	}
	type pair struct{ local, remote int }
	var pairs []pair
	for _, spec := range pos[1:] {
		l, r, found := strings.Cut(spec, ":")
		if !found {
			r = l
		}
		remote, err := strconv.Atoi(r)
		if err != nil || remote < 1 || remote > 65535 {
			return usageError{fmt.Sprintf("port %q: the remote port must be 1-65535", spec)}
		}
		local := 0
		if l != "" {
			if local, err = strconv.Atoi(l); err != nil || local < 0 || local > 65535 {
				return usageError{fmt.Sprintf("port %q: the local port must be 0-65535", spec)}
			}
		}
		pairs = append(pairs, pair{local, remote})
	}
	c, _, err := f.client(env)
	if err != nil {
		return err
	}
	pod, err := resolvePod(ctx, c, f.ns(), pos[0], env.stderr)
	if err != nil {
		return err
	}
	var ports []client.ForwardedPort
	for _, p := range pairs {
		l, err := net.Listen("tcp", net.JoinHostPort(*address, strconv.Itoa(p.local)))
		if err != nil {
			for _, fp := range ports {
				fp.Listener.Close()
			}
			return fmt.Errorf("listen on port %d: %w", p.local, err)
		}
		ports = append(ports, client.ForwardedPort{Listener: l, Remote: p.remote})
	}
	for _, p := range ports {
		fmt.Fprintf(env.stdout, "Forwarding from %s -> %d\n", p.Listener.Addr(), p.Remote)
	}
	return c.PortForward(ctx, f.ns(), pod, ports, func(err error) { fmt.Fprintf(env.stderr, "error: %v\n", err) })
}
