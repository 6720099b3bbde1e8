package local

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/containerd/containerd/api/services/tasks/v1"
	tasktypes "github.com/containerd/containerd/api/types/task"
	ctdclient "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/namespaces"

	"github.com/skiffhq/skiff/agent"
	"github.com/skiffhq/skiff/agent/runtime"
	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/api/client"
	"github.com/skiffhq/skiff/internal/testenv"
)

// State is what the machine holds, side by side with what the API says
// it should hold.
type State struct {
	// Want are the UIDs of the API's live pods bound to the node (not
	// terminal, not being deleted), by UID, as namespace/name.
	Want map[string]string
	// Running counts running containers by pod UID and container name.
	Running map[string]map[string]int
	// Sandboxes are the pod UIDs containerd holds a sandbox or a
	// container for.
	Sandboxes map[string]bool
	// Cgroups are the pod UIDs with a cgroup under the agent's root.
	Cgroups map[string]bool
	// Veths counts the pod veths in the agent's namespace (eth0, the
	// link to the host, aside).
	Veths int
	// IDs are the running containers' IDs by pod UID.
	IDs map[string][]string
	// NoVeth are the live pods (namespace/name) without a host veth.
	NoVeth []string
	// Shims are the IDs the agent's containerd's shim processes were
	// started for (a pod's first container: "<pod uid>-<name>-<n>").
	Shims []string
}

// vethName is agent/network's host-side veth name of pod uid.
func vethName(uid string) string {
	sum := sha256.Sum256([]byte(uid))
	return "skv" + hex.EncodeToString(sum[:])[:11]
}

// Containers reads the running containers and sandboxes only.
func (c *Cluster) Containers(ctx context.Context) (*State, error) {
	s := &State{Running: map[string]map[string]int{}, IDs: map[string][]string{}, Sandboxes: map[string]bool{}}
	return s, c.readContainerd(ctx, s)
}

// readContainerd fills Running and Sandboxes, reading only: the
// runtime's ListPods would reap exited tasks under the agent. Sandboxes
// are the agent's sandbox records and netns files plus the pods of its
// containers.
func (c *Cluster) readContainerd(ctx context.Context, s *State) error {
	cl, err := ctdclient.New(c.Containerd.Socket)
	if err != nil {
		return fmt.Errorf("containerd: %w", err)
	}
	defer cl.Close()
	nctx := namespaces.WithNamespace(ctx, agent.Namespace)
	// One List carries every container's labels; the task states are
	// then asked for side by side. containerd 1.6 answers a task Get
	// from the task's shim, and a shim still starting its container
	// holds the answer for up to its 2 s state timeout: one at a time, a
	// churning node's fifty pods took a sample 5 to 17 s.
	cs, err := cl.ContainerService().List(nctx)
	if err != nil {
		return fmt.Errorf("list containers: %w", err)
	}
	var (
		mu  sync.Mutex
		wg  sync.WaitGroup
		sem = make(chan struct{}, 16)
	)
	for _, ct := range cs {
		uid := ct.Labels[runtime.LabelPodUID]
		if uid == "" {
			continue
		}
		s.Sandboxes[uid] = true
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			resp, err := cl.TaskService().Get(nctx, &tasks.GetRequest{ContainerID: ct.ID})
			if err != nil || resp.Process == nil || resp.Process.Status != tasktypes.Status_RUNNING {
				return // no task (created or reaped), or not running
			}
			name := ct.Labels[runtime.LabelContainerName]
			mu.Lock()
			defer mu.Unlock()
			if s.Running[uid] == nil {
				s.Running[uid] = map[string]int{}
			}
			s.Running[uid][name]++
			s.IDs[uid] = append(s.IDs[uid], ct.ID)
		}()
	}
	wg.Wait()
	for _, ids := range s.IDs {
		sort.Strings(ids)
	}
	for _, dir := range []string{"sandboxes", "netns"} {
		ents, err := os.ReadDir(filepath.Join(c.AgentDataDir, "agent", dir))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		for _, e := range ents {
			if uid, ok := strings.CutSuffix(e.Name(), ".json"); ok || dir == "netns" {
				if dir == "netns" {
					uid = e.Name()
				}
				if !strings.HasSuffix(uid, ".tmp") {
					s.Sandboxes[uid] = true
				}
			}
		}
	}
	return nil
}

// Snapshot reads the API, containerd, the cgroup tree and the namespace.
func (c *Cluster) Snapshot(ctx context.Context) (*State, error) {
	s := &State{Want: map[string]string{}, Running: map[string]map[string]int{}, IDs: map[string][]string{}, Sandboxes: map[string]bool{}, Cgroups: map[string]bool{}}
	pods, _ := api.LookupResource("pods")
	objs, _, err := c.Admin.List(ctx, pods, "", client.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list pods: %w", err)
	}
	for _, o := range objs {
		p := o.(*api.Pod)
		if p.Spec.NodeName != NodeName || p.DeletionTimestamp != nil || p.Status.Phase == api.PodSucceeded || p.Status.Phase == api.PodFailed {
			continue
		}
		s.Want[string(p.UID)] = p.Namespace + "/" + p.Name
	}
	if err := c.readContainerd(ctx, s); err != nil {
		return nil, err
	}
	for _, sh := range testenv.ShimProcesses(c.Containerd.Socket) {
		s.Shims = append(s.Shims, sh.ID)
	}
	if s.Cgroups, err = podCgroups(c.CgroupRoot); err != nil {
		return nil, err
	}
	out, err := exec.CommandContext(ctx, "ip", "-n", c.NS, "-o", "link", "show", "type", "veth").CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("ip link in %s: %w: %s", c.NS, err, out)
	}
	links := string(out)
	for _, l := range strings.Split(strings.TrimSpace(links), "\n") {
		if l != "" && !strings.Contains(l, " eth0@") {
			s.Veths++
		}
	}
	for uid, name := range s.Want {
		if !strings.Contains(links, " "+vethName(uid)+"@") {
			s.NoVeth = append(s.NoVeth, name)
		}
	}
	sort.Strings(s.NoVeth)
	return s, nil
}

// podCgroups lists the pod UIDs with a cgroup under root (cgroup v2, or
// v1's memory hierarchy).
func podCgroups(root string) (map[string]bool, error) {
	base := filepath.Join("/sys/fs/cgroup", root)
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err != nil {
		base = filepath.Join("/sys/fs/cgroup/memory", root)
	}
	uids := map[string]bool{}
	for _, pattern := range []string{"pod*", "*/pod*"} {
		m, err := filepath.Glob(filepath.Join(base, pattern))
		if err != nil {
			return nil, err
		}
		for _, d := range m {
			if fi, err := os.Stat(d); err == nil && fi.IsDir() {
				uids[strings.TrimPrefix(filepath.Base(d), "pod")] = true
			}
		}
	}
	return uids, nil
}

// Problems lists every broken invariant: a live pod without exactly one
// running copy of each container (a crashed container counts as missing
// unless allowMissing), a container running twice, containerd, cgroup or
// veth state of a pod the API no longer has (an orphan), or fewer veths
// than pods (every pod here has its own network).
func (s *State) Problems(allowMissing bool) []string {
	var out []string
	for uid, name := range s.Want {
		if len(s.Running[uid]) == 0 && !allowMissing {
			out = append(out, fmt.Sprintf("pod %s (%s) runs no container", name, uid))
		}
	}
	for uid, byName := range s.Running {
		for ct, n := range byName {
			if n > 1 {
				out = append(out, fmt.Sprintf("pod %s container %s runs %d times", uid, ct, n))
			}
		}
	}
	orphans := func(what string, have map[string]bool) {
		for uid := range have {
			if _, ok := s.Want[uid]; !ok {
				out = append(out, fmt.Sprintf("orphan %s of pod %s", what, uid))
			}
		}
	}
	orphans("containerd pod", s.Sandboxes)
	orphans("cgroup", s.Cgroups)
	for _, id := range s.Shims {
		live := false
		for uid := range s.Want {
			live = live || strings.HasPrefix(id, uid+"-")
		}
		if !live {
			// A shim outlives its pod when containerd lost its task:
			// its process (and perhaps a container in it) runs on.
			out = append(out, fmt.Sprintf("orphan shim %s (no live pod)", id))
		}
	}
	if s.Veths != len(s.Want) {
		out = append(out, fmt.Sprintf("%d pod veths for %d pods", s.Veths, len(s.Want)))
	}
	if len(s.NoVeth) > 0 {
		out = append(out, fmt.Sprintf("pods without a veth: %v", s.NoVeth))
	}
	sort.Strings(out)
	return out
}

// RunningCount is how many containers run in all.
func (s *State) RunningCount() int {
	n := 0
	for _, byName := range s.Running {
		for _, k := range byName {
			n += k
		}
	}
	return n
}

// CheckInvariants waits up to d for the machine to match the API with
// no invariant broken, and fails the test with the problems left if it
// does not. It returns the final state.
func (c *Cluster) CheckInvariants(d time.Duration) *State {
	c.T.Helper()
	var last *State
	var problems []string
	deadline := time.Now().Add(d)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		s, err := c.Snapshot(ctx)
		cancel()
		if err != nil {
			problems = []string{err.Error()}
		} else {
			last, problems = s, s.Problems(false)
		}
		if len(problems) == 0 {
			return last
		}
		if time.Now().After(deadline) {
			c.T.Fatalf("invariants still broken after %v:\n%s%s", d, strings.Join(problems, "\n"), c.diagnose(last))
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// diagnose describes the network of the pods without a veth.
func (c *Cluster) diagnose(s *State) string {
	if s == nil || len(s.NoVeth) == 0 {
		return ""
	}
	var b strings.Builder
	state, _ := os.ReadFile(filepath.Join(c.AgentDataDir, "agent", "network", "state.json"))
	for uid, name := range s.Want {
		if !slices.Contains(s.NoVeth, name) {
			continue
		}
		out, err := exec.Command("nsenter", "--net="+filepath.Join(c.AgentDataDir, "agent", "netns", uid), "ip", "-o", "addr").CombinedOutput()
		fmt.Fprintf(&b, "\n%s (%s): in the network state: %v; its netns: %v\n%s", name, uid, strings.Contains(string(state), uid), err, out)
	}
	return b.String()
}
