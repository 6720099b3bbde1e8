package agentload

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/api/client"
	"github.com/skiffhq/skiff/internal/testenv"
)

// skiffBin is the binary TestMain builds once; agentBin is a copy of it
// (another file, so other page-cache pages) the agent runs from, as on a
// node that runs no server.
var skiffBin, agentBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "skiff-agentload-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	skiffBin = filepath.Join(dir, "skiff")
	cmd := exec.Command("go", "build", "-o", skiffBin, "github.com/skiffhq/skiff/cmd/skiff")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "agentload: build skiff: %v\n%s", err, out)
		os.Exit(1)
	}
	agentBin = filepath.Join(dir, "skiff-agent")
	if err := copySynced(skiffBin, agentBin); err != nil {
		fmt.Fprintf(os.Stderr, "agentload: copy skiff: %v\n", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// copySynced copies the executable src to dst and syncs it, so that its
// pages in the page cache are clean, as an installed binary's are.
func copySynced(src, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func freePort(tb testing.TB) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer ln.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	return port
}

// cluster is a `skiff server --disable-agent` process and a `skiff
// agent` process joined to it, with its own containerd.
type cluster struct {
	tb       testing.TB
	admin    *client.Client
	agent    *exec.Cmd
	cgroup   string
	agentDir string
	socket   string // the test containerd's
}

func start(tb testing.TB) *cluster {
	tb.Helper()
	dir := tb.TempDir()
	c := &cluster{tb: tb, cgroup: "/skiff-bench-" + filepath.Base(filepath.Dir(dir)), agentDir: filepath.Join(dir, "a")}
	// Cleanups run last-in first-out: the cgroups go after the test
	// containerd has killed the containers in them.
	tb.Cleanup(c.removeCgroups)
	// The agent makes the default pod network (bridge skiff0, table ip
	// skiff) on this host; remove it afterwards unless it was there before.
	if exec.Command("ip", "link", "show", "skiff0").Run() != nil {
		tb.Cleanup(func() {
			exec.Command("ip", "link", "del", "skiff0").Run()
			exec.Command("ip", "link", "del", "skiff.vxlan").Run()
			exec.Command("nft", "delete", "table", "ip", "skiff").Run()
		})
	}
	socket := testenv.StartContainerd(tb)
	c.socket = socket
	tar, _ := testenv.BusyboxImage(tb)
	port := freePort(tb)
	run := func(bin, name string, args ...string) *exec.Cmd {
		logf, err := os.Create(filepath.Join(dir, name+".log"))
		if err != nil {
			tb.Fatal(err)
		}
		cmd := exec.Command(bin, args...)
		cmd.Stdout, cmd.Stderr = logf, logf
		if err := cmd.Start(); err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() {
			cmd.Process.Kill()
			cmd.Wait()
			logf.Close()
		})
		return cmd
	}
	run(skiffBin, "server", "server", "--disable-agent", "--config", "", "--data-dir", filepath.Join(dir, "s"), "--listen", "127.0.0.1:"+port)
	cfgPath := filepath.Join(dir, "s", "server", "skiff.yaml")
	var cfg client.Config
	waitFor(tb, 60*time.Second, "server config", func() bool {
		var err error
		cfg, err = client.LoadConfig(cfgPath)
		return err == nil
	})
	admin, err := client.New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	c.admin = admin
	tok, err := os.ReadFile(filepath.Join(dir, "s", "server", "join.token"))
	if err != nil {
		tb.Fatal(err)
	}
	images := filepath.Join(c.agentDir, "agent", "images")
	if err := os.MkdirAll(images, 0o700); err != nil {
		tb.Fatal(err)
	}
	b, _ := os.ReadFile(tar)
	if err := os.WriteFile(filepath.Join(images, "busybox.tar"), b, 0o600); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(c.cleanup)
	c.agent = run(agentBin, "agent", "agent", "--config", "", "--server", cfg.Server, "--token", strings.TrimSpace(string(tok)),
		"--data-dir", c.agentDir, "--node-name", "bench", "--containerd", socket, "--cgroup-root", c.cgroup,
		"--node-ip", "127.0.0.1", "--agent-listen", "127.0.0.1:0", "--log-level", "warn")
	nodes, _ := api.LookupResource("nodes")
	waitFor(tb, 60*time.Second, "node Ready", func() bool {
		obj, err := admin.Get(context.Background(), nodes, "", "bench")
		if err != nil {
			return false
		}
		for _, cond := range obj.(*api.Node).Status.Conditions {
			if cond.Type == api.NodeReady && cond.Status == api.ConditionTrue {
				return true
			}
		}
		return false
	})
	return c
}

func waitFor(tb testing.TB, d time.Duration, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// cleanup stops the agent and unmounts the pods' network namespaces;
// the test containerd's cleanup kills the containers, then
// removeCgroups runs.
func (c *cluster) cleanup() {
	c.agent.Process.Kill()
	c.agent.Wait()
	matches, _ := filepath.Glob(filepath.Join(c.agentDir, "agent", "netns", "*"))
	for _, m := range matches {
		exec.Command("umount", m).Run()
	}
}

// removeCgroups removes the pods' cgroups under the agent's root.
func (c *cluster) removeCgroups() { testenv.RemoveCgroupRoot(c.tb, c.cgroup) }

// rss is the agent process's resident set in bytes.
func (c *cluster) rss() float64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(c.agent.Process.Pid) + "/status")
	if err != nil {
		c.tb.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseFloat(strings.Fields(v)[0], 64)
			return kb * 1024
		}
	}
	c.tb.Fatal("no VmRSS")
	return 0
}

func pod(name string) *api.Pod {
	return &api.Pod{
		TypeMeta:   api.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: api.ObjectMeta{Name: name, Namespace: "default"},
		Spec: api.PodSpec{TerminationGracePeriodSeconds: ptr(int64(0)), Containers: []api.Container{{
			Name: "main", Image: "skiff.test/busybox:latest", ImagePullPolicy: api.PullIfNotPresent,
			Command: []string{"sleep", "3600"},
		}}},
	}
}

func ptr[T any](v T) *T { return &v }

// runningTimes watches pods and records when each first reports Running.
type runningTimes struct {
	mu   sync.Mutex
	seen map[string]time.Time
}

func (c *cluster) watchRunning(ctx context.Context) *runningTimes {
	rt := &runningTimes{seen: map[string]time.Time{}}
	pods, _ := api.LookupResource("pods")
	w, err := c.admin.Watch(ctx, pods, "default", client.WatchOptions{})
	if err != nil {
		c.tb.Fatal(err)
	}
	go func() {
		defer w.Close()
		for {
			ev, err := w.Next()
			if err != nil {
				return
			}
			p, ok := ev.Object.(*api.Pod)
			if !ok || p.Status.Phase != api.PodRunning {
				continue
			}
			rt.mu.Lock()
			if _, ok := rt.seen[p.Name]; !ok {
				rt.seen[p.Name] = time.Now()
			}
			rt.mu.Unlock()
		}
	}()
	return rt
}

func (r *runningTimes) at(name string) (time.Time, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	t, ok := r.seen[name]
	return t, ok
}

func percentile(d []time.Duration, p float64) time.Duration {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[int(float64(len(s)-1)*p)]
}

// BenchmarkAgent measures, on one real agent process with its own
// containerd and the busybox image side-loaded: idle RSS; create →
// Running latency over 50 pods created one after another; RSS with 20
// pods; and the time until 100 pods created at once all run.
func BenchmarkAgent(b *testing.B) {
	for i := 0; i < b.N; i++ {
		c := start(b)
		ctx, cancel := context.WithCancel(context.Background())
		time.Sleep(5 * time.Second) // let start-up garbage be collected
		b.ReportMetric(c.rss()/(1<<20), "idle-RSS-MB")

		seen := c.watchRunning(ctx)
		var lat []time.Duration
		for j := 0; j < 50; j++ {
			name := fmt.Sprintf("seq-%d", j)
			t0 := time.Now()
			if _, err := c.admin.Create(ctx, pod(name)); err != nil {
				b.Fatal(err)
			}
			waitFor(b, 60*time.Second, name+" Running", func() bool { _, ok := seen.at(name); return ok })
			t1, _ := seen.at(name)
			lat = append(lat, t1.Sub(t0))
			if j == 19 {
				time.Sleep(3 * time.Second)
				b.ReportMetric(c.rss()/(1<<20), "RSS-20-pods-MB")
			}
		}
		b.ReportMetric(float64(percentile(lat, 0.5).Milliseconds()), "create-to-running-p50-ms")
		b.ReportMetric(float64(percentile(lat, 0.99).Milliseconds()), "create-to-running-p99-ms")

		pods, _ := api.LookupResource("pods")
		for j := 0; j < 50; j++ {
			if err := c.admin.Delete(ctx, pods, "default", fmt.Sprintf("seq-%d", j), client.DeleteOptions{}); err != nil {
				b.Fatal(err)
			}
		}
		waitFor(b, 120*time.Second, "sequential pods gone", func() bool {
			l, _, err := c.admin.List(ctx, pods, "default", client.ListOptions{})
			return err == nil && len(l) == 0
		})
		t0 := time.Now()
		var wg sync.WaitGroup
		for j := 0; j < 100; j++ {
			wg.Add(1)
			go func(j int) {
				defer wg.Done()
				if _, err := c.admin.Create(ctx, pod(fmt.Sprintf("burst-%d", j))); err != nil {
					b.Error(err)
				}
			}(j)
		}
		wg.Wait()
		waitFor(b, 180*time.Second, "100 pods Running", func() bool {
			for j := 0; j < 100; j++ {
				if _, ok := seen.at(fmt.Sprintf("burst-%d", j)); !ok {
					return false
				}
			}
			return true
		})
		b.ReportMetric(time.Since(t0).Seconds(), "100-pods-running-s")
		b.ReportMetric(c.rss()/(1<<20), "RSS-100-pods-MB")
		cancel()
	}
}
