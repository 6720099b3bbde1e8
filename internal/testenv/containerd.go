package testenv

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/namespaces"
	"golang.org/x/sys/unix"

	"github.com/skiffhq/skiff/agent/runtime/containerd/daemon"
)

// Snapshotter is the containerd snapshotter tests use: overlayfs when the
// kernel has it (ext4 and xfs hosts do), else native.
func Snapshotter() string {
	b, err := os.ReadFile("/proc/filesystems")
	if err == nil && strings.Contains(string(b), "\toverlay\n") {
		return "overlayfs"
	}
	return "native"
}

// RequireBinaries fails t unless containerd, its runc shim and runc are
// installed.
func RequireBinaries(t testing.TB) {
	t.Helper()
	for _, b := range []string{"containerd", "containerd-shim-runc-v2", "runc"} {
		if _, err := exec.LookPath(b); err != nil {
			t.Fatalf("%s is not installed: these tests need Debian's containerd and runc (apt-get install containerd runc, or make deps): %v", b, err)
		}
	}
	if os.Geteuid() != 0 {
		t.Fatal("these tests run containers and need root")
	}
}

// StartContainerd starts a containerd daemon of the test's own, in a
// short directory under /tmp (unix socket paths are limited to 107
// bytes), and returns its socket once it answers. At cleanup every task
// and container in every namespace is killed and deleted, the daemon is
// stopped, leftover shims of this daemon are killed, mounts under its
// directory are unmounted and the directory is removed.
func StartContainerd(t testing.TB) (socket string) {
	t.Helper()
	return StartContainerdDaemon(t).Socket
}

// Containerd is a containerd daemon of a test's own that the test can
// stop and start again on the same directory (its containers' shims, and
// so the containers, outlive the daemon, as they do on a real machine).
type Containerd struct {
	// Socket is the daemon's gRPC socket; it stays the same over restarts.
	Socket string
	// Dir is the daemon's directory (root/, state/, config, log).
	Dir string
	p   *daemon.Process
}

// StartContainerdDaemon is StartContainerd, returning the daemon so the
// test can restart it; cleanup is the same.
func StartContainerdDaemon(t testing.TB) *Containerd {
	t.Helper()
	RequireBinaries(t)
	dir, err := os.MkdirTemp("/tmp", "skiff-ctd-")
	if err != nil {
		t.Fatal(err)
	}
	c := &Containerd{Dir: dir}
	if err := c.start(); err != nil {
		os.RemoveAll(dir)
		t.Fatalf("start containerd: %v", err)
	}
	t.Cleanup(func() { cleanup(t, dir, c.p) })
	return c
}

func (c *Containerd) start() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p, err := daemon.Start(ctx, daemon.Config{Dir: c.Dir})
	if err != nil {
		return err
	}
	c.p, c.Socket = p, p.Socket
	return nil
}

// Restart stops the daemon (SIGTERM, then SIGKILL after grace) and
// starts it again on the same directory and socket.
func (c *Containerd) Restart(t testing.TB, grace time.Duration) {
	t.Helper()
	if err := c.p.Stop(grace); err != nil {
		t.Logf("stop containerd: %v", err)
	}
	if err := c.start(); err != nil {
		t.Fatalf("restart containerd: %v", err)
	}
}

// Pid is the daemon's process id.
func (c *Containerd) Pid() int { return c.p.Pid() }

func cleanup(t testing.TB, dir string, p *daemon.Process) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if c, err := client.New(p.Socket); err == nil {
		deleteAll(ctx, t, c)
		c.Close()
	}
	if err := p.Stop(10 * time.Second); err != nil {
		t.Errorf("stop containerd: %v", err)
	}
	killShims(t, p.Socket)
	unmountUnder(t, dir)
	if t.Failed() {
		if b, err := os.ReadFile(p.LogPath); err == nil {
			lines := strings.Split(strings.TrimSpace(string(b)), "\n")
			if len(lines) > 30 {
				lines = lines[len(lines)-30:]
			}
			t.Logf("containerd log (last lines):\n%s", strings.Join(lines, "\n"))
		}
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Errorf("remove %s: %v", dir, err)
	}
}

// deleteAll kills and deletes every task and container the daemon holds.
func deleteAll(ctx context.Context, t testing.TB, c *client.Client) {
	nss, err := c.NamespaceService().List(ctx)
	if err != nil {
		t.Errorf("cleanup: list namespaces: %v", err)
		return
	}
	for _, ns := range nss {
		nctx := namespaces.WithNamespace(ctx, ns)
		cs, err := c.Containers(nctx)
		if err != nil {
			t.Errorf("cleanup: list containers in %s: %v", ns, err)
			continue
		}
		for _, ctr := range cs {
			if task, err := ctr.Task(nctx, nil); err == nil {
				if _, err := task.Delete(nctx, client.WithProcessKill); err != nil {
					t.Logf("cleanup: delete task %s: %v", ctr.ID(), err)
				}
			}
			if err := ctr.Delete(nctx, client.WithSnapshotCleanup); err != nil {
				t.Logf("cleanup: delete container %s: %v", ctr.ID(), err)
			}
		}
	}
}

// killShims kills the shims whose command line names this daemon's
// socket (they outlive the daemon by design).
func killShims(t testing.TB, socket string) {
	for _, pid := range Shims(socket) {
		t.Logf("cleanup: killing leftover shim %d", pid)
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// Shims lists the pids of the containerd shims serving the daemon at
// socket (their command line names it with -address).
func Shims(socket string) []int {
	var pids []int
	for _, sh := range ShimProcesses(socket) {
		pids = append(pids, sh.Pid)
	}
	return pids
}

// Shim is one shim process: its pid and the -id it was started for (the
// first container of its group: a pod's shim carries the ID of the
// pod's first container).
type Shim struct {
	Pid int
	ID  string
}

// ShimProcesses lists the containerd shims serving the daemon at socket.
func ShimProcesses(socket string) []Shim {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []Shim
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(string(b), "\x00")
		if len(args) == 0 || !strings.HasPrefix(filepath.Base(args[0]), "containerd-shim") {
			continue
		}
		ours, id := false, ""
		for i, a := range args[:len(args)-1] {
			switch a {
			case "-address":
				ours = args[i+1] == socket
			case "-id":
				id = args[i+1]
			}
		}
		if ours {
			out = append(out, Shim{Pid: pid, ID: id})
		}
	}
	return out
}

// unmountUnder detaches every mount below dir, deepest first.
func unmountUnder(t testing.TB, dir string) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return
	}
	defer f.Close()
	var mounts []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) > 4 && strings.HasPrefix(fields[4], dir+"/") {
			mounts = append(mounts, fields[4])
		}
	}
	for i := len(mounts) - 1; i >= 0; i-- {
		if err := unix.Unmount(mounts[i], unix.MNT_DETACH); err != nil {
			t.Errorf("cleanup: unmount %s: %v", mounts[i], err)
		}
	}
}
