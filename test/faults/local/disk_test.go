package local

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/skiffhq/skiff/api"
)

// TestAgentDiskFull puts the agent's data dir on a 48 MiB tmpfs the test
// mounts and runs a pod that fills it through an emptyDir until writes
// fail with ENOSPC. The agent must keep running, report DiskPressure
// (condition and taint), evict the filler, and recover: the condition
// clears, the quiet pod that ran beside it still runs, and new pods
// start again.
func TestAgentDiskFull(t *testing.T) {
	dir := t.TempDir()
	Run(t, "mount", "-t", "tmpfs", "-o", "size=48m,mode=0755", "tmpfs", dir)
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Logf("umount %s: %v %s; detaching it", dir, err, out)
			_ = exec.Command("umount", "-l", dir).Run()
		}
	})
	c := Start(t, Options{AgentDataDir: dir, AgentArgs: []string{
		"--eviction-hard", "nodefs.available<20%,imagefs.available<20%",
		"--eviction-pressure-transition-period", "5s",
	}})
	ctx := context.Background()
	keeper := createPods(t, c, "keeper", 1)
	waitRunning(t, c, keeper)

	filler := sleeper("filler")
	filler.Spec.Volumes = []api.Volume{{Name: "data", VolumeSource: api.VolumeSource{EmptyDir: &api.EmptyDirVolumeSource{}}}}
	filler.Spec.Containers[0].VolumeMounts = []api.VolumeMount{{Name: "data", MountPath: "/data"}}
	filler.Spec.Containers[0].Command = []string{"sh", "-c", "dd if=/dev/zero of=/data/fill bs=1M count=100; exec sleep 3600"}
	if _, err := c.Admin.Create(ctx, filler); err != nil {
		t.Fatal(err)
	}

	pods, _ := api.LookupResource("pods")
	nodes, _ := api.LookupResource("nodes")
	pressure := func() (cond string, tainted bool) {
		obj, err := c.Admin.Get(ctx, nodes, "", NodeName)
		if err != nil {
			return "", false
		}
		n := obj.(*api.Node)
		for _, cd := range n.Status.Conditions {
			if cd.Type == "DiskPressure" {
				cond = string(cd.Status)
			}
		}
		for _, tn := range n.Spec.Taints {
			tainted = tainted || tn.Key == "node.kubernetes.io/disk-pressure"
		}
		return cond, tainted
	}
	sawPressure, sawTaint := false, false
	Eventually(t, 90*time.Second, "the filler evicted", func() bool {
		if !c.Agent().Running() {
			t.Fatalf("the agent exited with its disk full:\n%s", tail(c.Agent().Log(), 40))
		}
		cond, tainted := pressure()
		sawPressure, sawTaint = sawPressure || cond == "True", sawTaint || tainted
		obj, err := c.Admin.Get(ctx, pods, "default", "filler")
		if err != nil {
			return false
		}
		p := obj.(*api.Pod)
		return p.Status.Phase == api.PodFailed && p.Status.Reason == "Evicted"
	})
	if !sawPressure {
		t.Error("the node never reported DiskPressure=True while its disk was full")
	}
	if !sawTaint {
		t.Error("the node never had the disk-pressure taint while its disk was full")
	}

	// Recovery: the filler's emptyDir goes, the condition clears.
	Eventually(t, 90*time.Second, "DiskPressure back to False and the taint gone", func() bool {
		cond, tainted := pressure()
		return cond == "False" && !tainted
	})
	if !c.Agent().Running() {
		t.Fatalf("the agent exited:\n%s", tail(c.Agent().Log(), 40))
	}
	obj, err := c.Admin.Get(ctx, pods, "default", keeper[0])
	if err != nil {
		t.Fatal(err)
	}
	if p := obj.(*api.Pod); p.Status.Phase != api.PodRunning {
		t.Errorf("the quiet pod is %s (%s) after the disk filled; want it still Running", p.Status.Phase, p.Status.Reason)
	}
	after := createPods(t, c, "after", 2)
	waitRunning(t, c, after)
	st := c.CheckInvariants(60 * time.Second)
	if st.RunningCount() != 3 {
		t.Errorf("%d containers run; want the keeper and the two new pods", st.RunningCount())
	}
	if out := Run(t, "df", "-k", dir); !strings.Contains(out, "tmpfs") {
		t.Errorf("df %s: %s", dir, out)
	}
	noRestarts(t, c, append(keeper, after...), "the disk filled")
	deleteAndCheck(t, c, append(append(keeper, after...), "filler"))
}
