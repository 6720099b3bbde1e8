package preflight

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
)

// TestGatherRealMachine runs Gather on this machine: the facts every
// Linux test machine has, a port this test holds reported busy, and the
// data directory probed without leaving anything behind.
func TestGatherRealMachine(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	free, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	freeAddr := free.Addr().String()
	free.Close()
	dir := t.TempDir()
	f := Gather(context.Background(), Settings{
		DataDir:    dir,
		Containerd: filepath.Join(dir, "no.sock"),
		Ports:      []Port{{Flag: "listen", Addr: busy.Addr().String()}, {Flag: "agent-listen", Addr: freeAddr}},
	})
	if _, _, ok := kernelVersion(f.KernelRelease); !ok {
		t.Errorf("KernelRelease = %q; want a version", f.KernelRelease)
	}
	if f.CgroupVersion == 0 || len(f.CgroupControllers) == 0 {
		t.Errorf("cgroups = v%d %q (%v); want a version and controllers", f.CgroupVersion, f.CgroupControllers, f.CgroupErr)
	}
	// On a unified hierarchy (make test-vm's VM, and the platforms
	// skiff runs on) the version is 2 and the controllers are the
	// root's cgroup.controllers.
	var st syscall.Statfs_t
	if err := syscall.Statfs("/sys/fs/cgroup", &st); err == nil && st.Type == 0x63677270 { // CGROUP2_SUPER_MAGIC
		for _, c := range []string{"cpu", "memory", "pids"} {
			if f.CgroupVersion != 2 || !slices.Contains(f.CgroupControllers, c) {
				t.Errorf("cgroups = v%d %q on a unified hierarchy; want v2 with %s", f.CgroupVersion, f.CgroupControllers, c)
			}
		}
	}
	if f.NetlinkErr != nil {
		t.Errorf("NetlinkErr = %v; want nil", f.NetlinkErr)
	}
	if f.SocketAnswers {
		t.Errorf("SocketAnswers for a missing socket = true")
	}
	if len(f.Ports) != 2 || !errors.Is(f.Ports[0].Err, syscall.EADDRINUSE) || f.Ports[1].Err != nil {
		t.Errorf("Ports = %+v; want the held one in use and the other free", f.Ports)
	}
	if !f.DataDirExists || f.DataDirErr != nil {
		t.Errorf("data dir exists, err = %v, %v; want true, nil", f.DataDirExists, f.DataDirErr)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("Gather left %d files in the data dir", len(entries))
	}
	if f.MemTotal <= 0 || f.MemAvailable <= 0 || f.MemAvailable > f.MemTotal {
		t.Errorf("memory = %d of %d (%v); want 0 < available <= total", f.MemAvailable, f.MemTotal, f.MemErr)
	}
	if f.NodeFS.Err != nil || f.NodeFS.Capacity <= 0 || f.NodeFS.Path != dir {
		t.Errorf("NodeFS = %+v; want the data dir's filesystem", f.NodeFS)
	}
	// The managed containerd's root does not exist yet: its nearest
	// existing parent is measured.
	if f.ImageFS.Err != nil || f.ImageFS.Path != dir {
		t.Errorf("ImageFS = %+v; want measured at %s", f.ImageFS, dir)
	}
	// A data dir that cannot be created: its parent is a file.
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if exists, err := writable(filepath.Join(file, "skiff")); exists || !errors.Is(err, syscall.ENOTDIR) {
		t.Errorf("writable(under a file) = %v, %v; want false, ENOTDIR", exists, err)
	}
}
