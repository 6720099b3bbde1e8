package containerd

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skiffhq/skiff/agent/runtime"
	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/internal/testenv"
	"golang.org/x/sys/unix"
)

// harness is one real containerd (from testenv) with the busybox image
// imported, a Runtime on it, and a cgroup root of the test's own.
type harness struct {
	t      *testing.T
	ctx    context.Context
	rt     *Runtime
	cfg    Config
	image  string
	logDir string
	v2     bool
}

var podSeq atomic.Int64

// harnessPIDs is the pods' pids.max in the harness's Runtime.
const harnessPIDs = 256

func newHarness(t *testing.T) *harness {
	t.Helper()
	testenv.RequireBinaries(t)
	data := t.TempDir()
	cgRoot := fmt.Sprintf("/skiff-it-%d-%d", os.Getpid(), podSeq.Add(1))
	t.Cleanup(func() { cleanupHost(t, data, cgRoot) })
	socket := testenv.StartContainerd(t)
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Bound(50*time.Second))
	t.Cleanup(cancel)
	cfg := Config{Socket: socket, DataDir: data, CgroupRoot: cgRoot, Snapshotter: testenv.Snapshotter(), PodPIDsLimit: harnessPIDs}
	rt, err := New(ctx, cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { rt.Close() })
	tarPath, ref := testenv.BusyboxImage(t)
	f, err := os.Open(tarPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	imgs, err := rt.ImportImages(ctx, f)
	if err != nil {
		t.Fatalf("ImportImages: %v", err)
	}
	if len(imgs) != 1 || imgs[0].Ref != ref {
		t.Fatalf("ImportImages = %+v; want %s", imgs, ref)
	}
	h := &harness{t: t, ctx: ctx, rt: rt, cfg: cfg, image: ref, logDir: t.TempDir(), v2: rt.Cgroups().V2()}
	return h
}

// cleanupHost removes what containerd's cleanup does not: the netns
// mounts under data and the cgroup root in every hierarchy.
func cleanupHost(t *testing.T, data, cgRoot string) {
	ents, _ := os.ReadDir(filepath.Join(data, "netns"))
	for _, e := range ents {
		p := filepath.Join(data, "netns", e.Name())
		if err := unix.Unmount(p, unix.MNT_DETACH); err == nil {
			t.Logf("cleanup: unmounted leftover netns %s", p)
		}
	}
	testenv.RemoveCgroupRoot(t, cgRoot)
}

var uidSeq atomic.Int64

// sandbox creates a sandbox for a new pod.
func (h *harness) sandbox(hostNetwork bool, qos api.PodQOSClass, memLimit int64) runtime.Sandbox {
	h.t.Helper()
	uid := fmt.Sprintf("pod%d-%d", os.Getpid(), uidSeq.Add(1))
	sb, err := h.rt.CreateSandbox(h.ctx, runtime.SandboxConfig{
		PodUID: uid, PodName: "p" + uid, Namespace: "default", HostNetwork: hostNetwork, QOSClass: qos,
		CPURequestMilli: 500, CPULimitMilli: 1000, MemoryLimit: memLimit,
	})
	if err != nil {
		h.t.Fatalf("CreateSandbox: %v", err)
	}
	return sb
}

// config returns a container config running sh -c script in sb.
func (h *harness) config(sb runtime.Sandbox, name, script string) runtime.ContainerConfig {
	return runtime.ContainerConfig{
		PodUID: sb.PodUID, PodName: "p" + sb.PodUID, Namespace: "default", Name: name, Hash: "h1",
		Image: h.image, Command: []string{"sh", "-c", script},
		LogPath: filepath.Join(h.logDir, sb.PodUID, name+".log"), Sandbox: sb,
	}
}

// run creates and starts a container and returns its ID.
func (h *harness) run(cfg runtime.ContainerConfig) string {
	h.t.Helper()
	id, err := h.rt.CreateContainer(h.ctx, cfg)
	if err != nil {
		h.t.Fatalf("CreateContainer(%s): %v", cfg.Name, err)
	}
	if err := h.rt.StartContainer(h.ctx, id); err != nil {
		h.t.Fatalf("StartContainer(%s): %v", id, err)
	}
	return id
}

// status finds a container in ListPods.
func (h *harness) status(rt *Runtime, id string) (runtime.ContainerStatus, bool) {
	h.t.Helper()
	pods, err := rt.ListPods(h.ctx)
	if err != nil {
		h.t.Fatalf("ListPods: %v", err)
	}
	for _, p := range pods {
		for _, c := range p.Containers {
			if c.ID == id {
				return c, true
			}
		}
	}
	return runtime.ContainerStatus{}, false
}

// waitState polls ListPods (real I/O) until the container reaches state.
func (h *harness) waitState(id string, state runtime.ContainerState) runtime.ContainerStatus {
	h.t.Helper()
	deadline := time.Now().Add(testenv.Bound(20 * time.Second))
	for {
		st, ok := h.status(h.rt, id)
		if ok && st.State == state {
			return st
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("container %s is %q (found %v); want %q", id, st.State, ok, state)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitLog polls the log file until it contains want.
func (h *harness) waitLog(path, want string) string {
	h.t.Helper()
	deadline := time.Now().Add(testenv.Bound(20 * time.Second))
	for {
		b, _ := os.ReadFile(path)
		if strings.Contains(string(b), want) {
			return string(b)
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("log %s = %q; want it to contain %q", path, b, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// cgroupFile reads a control file of a cgroup path in a v1 controller's
// hierarchy (or the unified one).
func (h *harness) cgroupFile(controller, cgPath, file string) string {
	h.t.Helper()
	dir := filepath.Join("/sys/fs/cgroup", controller, cgPath)
	if h.v2 {
		dir = filepath.Join("/sys/fs/cgroup", cgPath)
	}
	b, err := os.ReadFile(filepath.Join(dir, file))
	if err != nil {
		h.t.Fatalf("read cgroup file: %v", err)
	}
	return strings.TrimSpace(string(b))
}
