package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/skiffhq/skiff/api/client"
	"github.com/skiffhq/skiff/internal/clock"
)

// command is one subcommand of skiff.
type command struct {
	summary string
	run     func(ctx context.Context, env *cliEnv, args []string) error
}

// cliEnv is what a command may touch of the outside world; tests replace it.
type cliEnv struct {
	stdout, stderr io.Writer
	stdin          io.Reader
	getenv         func(string) string
	// clock gives the time ages are measured from; nil means the wall
	// clock.
	clock clock.Clock
}

// now is the current time of env's clock.
func (e *cliEnv) now() time.Time { return clock.Or(e.clock).Now() }

func commands() map[string]command {
	cmds := map[string]command{
		"version":  {"print version, commit and Go version", runVersion},
		"server":   {"run the control plane and a local agent", runServer},
		"agent":    {"join a machine to a cluster and run its pods", runAgent},
		"token":    {"create, list and delete join tokens", runToken},
		"get":      {"list or show objects", runGet},
		"apply":    {"create or update objects from YAML or JSON", runApply},
		"delete":   {"delete objects", runDelete},
		"logs":     {"print a container's logs", runLogs},
		"describe": {"show an object and its events", runDescribe},
		"images":   {"side-load image tarballs into the local agent", runImages},
		"check":    {"preflight checks for this machine", runCheck},
	}
	// Reaching into a container, through its agent's tunnel.
	cmds["exec"] = command{"run a command in a container", runExec}
	cmds["port-forward"] = command{"forward local ports to a pod", runPortForward}
	cmds["cp"] = command{"copy files to and from a container", runCp}
	return cmds
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, &cliEnv{stdout: os.Stdout, stderr: os.Stderr, stdin: os.Stdin, getenv: os.Getenv, clock: clock.Real{}}, os.Args[1:])
	stop()
	os.Exit(code)
}

// run executes one skiff command line and returns the process exit code:
// 0 on success, 1 when the command failed, 2 for usage errors. Errors
// from the server print as kubectl prints them (formatError).
func run(ctx context.Context, env *cliEnv, args []string) int {
	cmds := commands()
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(env.stdout, cmds)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	c, ok := cmds[args[0]]
	if !ok {
		fmt.Fprintf(env.stderr, "skiff: unknown command %q\n", args[0])
		usage(env.stderr, cmds)
		return 2
	}
	if err := c.run(ctx, env, args[1:]); err != nil {
		if errors.Is(err, errHelp) {
			return 0
		}
		// A remote command's exit code becomes skiff's, as with kubectl.
		if ee := (*client.ExitError)(nil); errors.As(err, &ee) {
			return ee.Code
		}
		if !errors.Is(err, errReported) {
			printError(env, err)
		}
		if errors.As(err, new(usageError)) {
			return 2
		}
		return 1
	}
	return 0
}

// usageError is a command-line mistake (exit code 2).
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usage(w io.Writer, cmds map[string]command) {
	names := make([]string, 0, len(cmds))
	for n := range cmds {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	b.WriteString("skiff: a small container orchestrator for edge fleets\n\nUsage: skiff <command> [flags]\n\nCommands:\n")
	width := 9
	for _, n := range names {
		width = max(width, len(n))
	}
	for _, n := range names {
		fmt.Fprintf(&b, "  %-*s %s\n", width, n, cmds[n].summary)
	}
	b.WriteString("\nRun 'skiff <command> -h' for a command's flags.\n")
	io.WriteString(w, b.String())
}
