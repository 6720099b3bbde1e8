package podclean

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/skiffhq/skiff/agent"
	"github.com/skiffhq/skiff/agent/runtime/containerd"
	"github.com/skiffhq/skiff/internal/testenv"
)

// RemovePods stops and removes every pod cfg's agent left in its
// containerd (containers, then the sandbox with its network namespace,
// a bind mount under the data dir), then the agent's cgroup root. It
// reports failures on tb and goes on, so one stuck container does not
// leave the rest behind.
func RemovePods(tb testing.TB, cfg agent.Config) {
	tb.Helper()
	ctx := context.Background()
	rt, err := containerd.New(ctx, containerd.Config{Socket: cfg.Containerd, Namespace: agent.Namespace,
		DataDir: filepath.Join(cfg.DataDir, "agent"), CgroupRoot: cfg.CgroupRoot})
	if err != nil {
		tb.Errorf("cleanup: %v", err)
		return
	}
	defer rt.Close()
	pods, err := rt.ListPods(ctx)
	if err != nil {
		tb.Errorf("cleanup: %v", err)
		return
	}
	for _, p := range pods {
		for _, c := range p.Containers {
			if err := rt.StopContainer(ctx, c.ID, 0); err != nil {
				tb.Errorf("cleanup: stop %s: %v", c.ID, err)
			}
			if err := rt.RemoveContainer(ctx, c.ID); err != nil {
				tb.Errorf("cleanup: remove %s: %v", c.ID, err)
			}
		}
		if err := rt.RemoveSandbox(ctx, p.UID); err != nil {
			tb.Errorf("cleanup: sandbox of %s: %v", p.Name, err)
		}
	}
	testenv.RemoveCgroupRoot(tb, cfg.CgroupRoot)
}
