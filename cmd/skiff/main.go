package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
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
}

func commands() map[string]command {
	return map[string]command{
		"version":  {"print version, commit and Go version", runVersion},
		"server":   {"run the control plane and a local agent", runServer},
		"agent":    {"join a machine to a cluster and run its pods", notYet("agent", 5)},
		"token":    {"create, list and delete join tokens", notYet("token", 3)},
		"get":      {"list or show objects", notYet("get", 3)},
		"apply":    {"create or update objects from YAML or JSON", notYet("apply", 3)},
		"delete":   {"delete an object", notYet("delete", 3)},
		"logs":     {"print a container's logs", notYet("logs", 3)},
		"describe": {"show an object and its events", notYet("describe", 3)},
		"images":   {"side-load image tarballs into the local agent", notYet("images", 5)},
		"check":    {"preflight checks for this machine", notYet("check", 10)},
	}
}

// errNotYet marks a command that this build does not have yet.
type errNotYet struct {
	name  string
	issue int
}

func (e errNotYet) Error() string {
	return fmt.Sprintf("skiff %s is not available in this build yet (tracked in issue %d)", e.name, e.issue)
}

func notYet(name string, issue int) func(context.Context, *cliEnv, []string) error {
	return func(context.Context, *cliEnv, []string) error { return errNotYet{name, issue} }
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, &cliEnv{stdout: os.Stdout, stderr: os.Stderr, stdin: os.Stdin, getenv: os.Getenv}, os.Args[1:])
	stop()
	os.Exit(code)
}

// run executes one skiff command line and returns the process exit code:
// 0 on success, 1 when the command failed, 2 for usage errors.
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
		fmt.Fprintf(env.stderr, "error: %v\n", err)
		if _, usageErr := err.(usageError); usageErr {
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
	for _, n := range names {
		fmt.Fprintf(&b, "  %-9s %s\n", n, cmds[n].summary)
	}
	b.WriteString("\nRun 'skiff <command> -h' for a command's flags.\n")
	io.WriteString(w, b.String())
}
