package eviction

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/skiffhq/skiff/agent/cgroups"
	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/internal/testenv"
)

// TestIntegrationMemoryNotifierWakesOnRealCgroup arms the notifier on
// this host's real hierarchy, under a cgroup root of the test's own, and
// runs a process that eats memory in a pod cgroup limited to 48 MiB. On
// cgroup v1 the usage threshold (capacity 64 MiB less 32 MiB) is crossed
// on the way; on cgroup v2 the pod meets its memory.max, is OOM-killed,
// and memory.events of the pods' root (and the PSI trigger) wake the
// notifier. Arming the node-level signal must work too: on v2 the
// hierarchy's root has no memory.events and its pressure is
// /proc/pressure/memory's.
func TestIntegrationMemoryNotifierWakesOnRealCgroup(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("this test needs root to create cgroups")
	}
	root := fmt.Sprintf("/skiff-notify-%d", os.Getpid())
	cg, err := cgroups.New(root)
	if err != nil {
		t.Fatalf("cgroups.New: %v", err)
	}
	t.Cleanup(func() { testenv.RemoveCgroupRoot(t, root) })
	p, err := cg.EnsurePod(api.PodQOSBurstable, "eater", cgroups.PodResources(0, 0, 48*mi))
	if err != nil {
		t.Fatalf("EnsurePod: %v", err)
	}
	n, err := NewMemoryNotifier(cg)
	if err != nil {
		t.Fatalf("NewMemoryNotifier: %v", err)
	}
	defer n.Close()
	if err := n.Arm(SignalMemoryAvailable, 1<<40, 100*mi); err != nil {
		t.Errorf("Arm(%s) = %v; want armed", SignalMemoryAvailable, err)
	}
	if err := n.Arm(SignalAllocatableMemoryAvailable, 64*mi, 32*mi); err != nil {
		t.Fatalf("Arm(%s) = %v; want armed", SignalAllocatableMemoryAvailable, err)
	}
	drain(n.C())

	procs := filepath.Join("/sys/fs/cgroup", p, "cgroup.procs")
	if !cg.V2() {
		procs = filepath.Join("/sys/fs/cgroup/memory", p, "cgroup.procs")
	}
	eater := exec.Command("/bin/busybox", "sh", "-c",
		`echo $$ > "$1" && a=0123456789abcdef && while :; do a="$a$a"; done`, "eater", procs)
	if err := eater.Start(); err != nil {
		t.Fatalf("start the eater (busybox-static): %v", err)
	}
	exited := make(chan struct{}) // closed when the eater is reaped
	var waitErr error
	go func() { waitErr = eater.Wait(); close(exited) }()
	defer func() {
		_ = eater.Process.Kill()
		<-exited
	}()
	// On v2 the eater is usually reaped before the notifier's goroutine
	// has passed the news on: its end is no verdict, only the timeout is.
	select {
	case <-n.C():
	case <-time.After(30 * time.Second):
		ev, _ := os.ReadFile(filepath.Join("/sys/fs/cgroup", root, "memory.events"))
		state := "still running"
		select {
		case <-exited:
			state = fmt.Sprint(waitErr)
		default:
		}
		t.Fatalf("the notifier did not fire within 30s of the eater starting (eater: %s); memory.events of %s: %q", state, root, ev)
	}
	if !cg.V2() {
		return
	}
	select {
	case <-exited:
	case <-time.After(30 * time.Second):
		t.Fatal("the eater was not OOM-killed at its 48 MiB memory.max")
	}
	if k, err := cg.OOMKills(p); err != nil || k == 0 {
		t.Errorf("OOMKills(%s) = %d, %v; want the eater's kill counted", p, k, err)
	}
	// The events file was read again after each change: a quiet cgroup
	// must not keep waking the notifier.
	drain(n.C())
	select {
	case <-n.C():
		drain(n.C())
		select {
		case <-n.C():
			t.Error("the notifier keeps firing on a quiet cgroup")
		case <-time.After(time.Second):
		}
	case <-time.After(time.Second):
	}
}

func drain(c <-chan struct{}) {
	for {
		select {
		case <-c:
		default:
			return
		}
	}
}
