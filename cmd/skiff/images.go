package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/skiffhq/skiff/agent"
	"github.com/skiffhq/skiff/agent/runtime"
	"github.com/skiffhq/skiff/agent/runtime/containerd"
	"github.com/skiffhq/skiff/agent/runtime/containerd/daemon"
	"github.com/skiffhq/skiff/server"
)

// runImages is `skiff images import FILE...`: it side-loads OCI-layout or
// docker-archive tarballs into the containerd the local agent uses, in
// its namespace, and prints each image's ref.
func runImages(ctx context.Context, env *cliEnv, args []string) error {
	if len(args) == 0 || args[0] != "import" {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help") {
			fmt.Fprintln(env.stdout, "Usage: skiff images import [--containerd SOCKET] [--data-dir DIR] FILE...")
			return nil
		}
		return usageError{"usage: skiff images import [--containerd SOCKET] [--data-dir DIR] FILE..."}
	}
	fs := flag.NewFlagSet("images import", flag.ContinueOnError)
	fs.SetOutput(env.stderr)
	socket := fs.String("containerd", "", "containerd socket (default "+agent.DefaultContainerd+", else the agent's own under <data-dir>/agent/containerd)")
	dataDir := fs.String("data-dir", server.DefaultDataDir, "the agent's state directory")
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return usageError{err.Error()}
	}
	if fs.NArg() == 0 {
		return usageError{"skiff images import needs at least one FILE (an OCI or docker image tarball)"}
	}
	dir, err := filepath.Abs(*dataDir)
	if err != nil {
		return usageError{err.Error()}
	}
	sock, err := agentSocket(*socket, agent.DefaultContainerd, dir)
	if err != nil {
		return err
	}
	// Only the client: an import creates nothing under the data dir (it
	// may not be this machine's agent's) nor any cgroup.
	rt, err := containerd.NewImages(containerd.Config{Socket: sock, Namespace: agent.Namespace})
	if err != nil {
		return err
	}
	defer rt.Close()
	return importFiles(ctx, rt, fs.Args(), env.stdout)
}

// agentSocket picks the containerd socket: the one given (made
// absolute: containerd's client takes a relative path for a URL and
// refuses it); else the system's when it answers; else the managed one
// a `skiff agent` with this data dir started.
func agentSocket(given, system, dataDir string) (string, error) {
	if given != "" {
		return filepath.Abs(given)
	}
	if socketAnswers(system) {
		return system, nil
	}
	dcfg := daemon.Config{Dir: filepath.Join(dataDir, "agent", "containerd"), Binary: "containerd"}
	if err := dcfg.Validate(); err != nil {
		return "", err
	}
	if socketAnswers(dcfg.Socket) {
		return dcfg.Socket, nil
	}
	return "", fmt.Errorf("no containerd answers at %s or at %s (the agent's own): start containerd or skiff, or give --containerd", system, dcfg.Socket)
}

func socketAnswers(socket string) bool {
	c, err := net.DialTimeout("unix", socket, time.Second)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// imageImporter is the part of the runtime `images import` uses.
type imageImporter interface {
	ImportImages(ctx context.Context, rd io.Reader) ([]runtime.Image, error)
}

// importFiles imports each file in turn, printing every image's ref; it
// stops at the first file that fails, naming it.
func importFiles(ctx context.Context, imp imageImporter, files []string, out io.Writer) error {
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			return err
		}
		imgs, err := imp.ImportImages(ctx, f)
		f.Close()
		if err != nil {
			return fmt.Errorf("import %s: %w", name, err)
		}
		for _, img := range imgs {
			fmt.Fprintf(out, "imported %s (%s)\n", img.Ref, img.ID)
		}
	}
	return nil
}
