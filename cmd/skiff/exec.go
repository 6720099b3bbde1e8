package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/skiffhq/skiff/api/client"
)

var execHelp = cmdHelp{
	usage: "skiff exec POD|deploy/NAME|ds/NAME [-c CONTAINER] [-i] [-t] [-n NS] -- COMMAND [ARG...]",
	about: `Run a command in a running container of a pod.

The server relays the session to the pod's agent through the tunnel the
agent keeps open, so this works for boxes behind NAT and firewalls. -i
sends stdin to the command, -t gives it a terminal (stdin must be one).
skiff exits with the command's exit code.`,
	examples: `  skiff exec web-7d4b9c-x2k8p -- cat /etc/hostname
  skiff exec -it web-7d4b9c-x2k8p -- sh`,
}

func runExec(ctx context.Context, env *cliEnv, args []string) error {
	fs := newFlagSet("exec")
	var f clientFlags
	f.register(fs, true)
	container := fs.String("container", "", "container name")
	fs.StringVar(container, "c", "", "shorthand for --container")
	stdin := fs.Bool("stdin", false, "pass stdin to the command")
	fs.BoolVar(stdin, "i", false, "shorthand for --stdin")
	tty := fs.Bool("tty", false, "allocate a terminal")
	fs.BoolVar(tty, "t", false, "shorthand for --tty")
	it := fs.Bool("it", false, "shorthand for -i -t")
	pos, err := parseArgs(env, fs, execHelp, args)
	if err != nil {
		return err
	}
	if *it {
		*stdin, *tty = true, true
	}
	if len(pos) < 2 {
		return usageError{"expected a pod and a command: skiff exec POD -- COMMAND [ARG...]\nSee 'skiff exec -h'."}
	}
	c, _, err := f.client(env)
	if err != nil {
		return err
	}
	pod, err := resolvePod(ctx, c, f.ns(), pos[0], env.stderr)
	if err != nil {
		return err
	}
	o := client.ExecOptions{Container: *container, Command: pos[1:], Stdout: env.stdout, Stderr: env.stderr}
	if *stdin {
		o.Stdin = env.stdin
	}
	if *tty {
		restore, resize, err := rawTerminal(ctx, env.stdin)
		if err != nil {
			fmt.Fprintf(env.stderr, "Unable to use a TTY: %v\n", err)
		} else {
			defer restore()
			o.TTY, o.Resize = true, resize
		}
	}
	return c.Exec(ctx, f.ns(), pod, o)
}

// rawTerminal puts the terminal on in (a tty) into raw mode and reports
// its size now and on every SIGWINCH; restore undoes both.
func rawTerminal(ctx context.Context, in io.Reader) (restore func(), resize <-chan client.TermSize, err error) {
	f, ok := in.(*os.File)
	if !ok {
		return nil, nil, fmt.Errorf("stdin is not a terminal")
	}
	fd := int(f.Fd())
	undo, err := makeRaw(fd)
	if err != nil {
		return nil, nil, err
	}
	ch := make(chan client.TermSize, 1)
	send := func() {
		if w, h, err := termSize(fd); err == nil {
			select {
			case ch <- client.TermSize{Width: w, Height: h}:
			default:
			}
		}
	}
	send()
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGWINCH)
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		for {
			select {
			case <-sig:
				send()
			case <-ctx.Done():
				return
			}
		}
	}()
	return func() {
		cancel()
		signal.Stop(sig)
		undo()
	}, ch, nil
}
