package local

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/skiffhq/skiff/agent"
	"github.com/skiffhq/skiff/agent/podclean"
	"github.com/skiffhq/skiff/agent/runtime/containerd"
	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/api/client"
	"github.com/skiffhq/skiff/internal/testenv"
)

// NodeName is the Node the cluster's agent registers.
const NodeName = "fault"

var (
	buildOnce sync.Once
	binDir    string
	binErr    error
)

// Binary builds the skiff binary once per test process and returns its
// path; RemoveBinary removes it (call it from TestMain).
func Binary(tb testing.TB) string {
	tb.Helper()
	buildOnce.Do(func() {
		if binDir, binErr = os.MkdirTemp("", "skiff-faults-bin-"); binErr != nil {
			return
		}
		cmd := exec.Command("go", "build", "-o", filepath.Join(binDir, "skiff"), "github.com/skiffhq/skiff/cmd/skiff")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			binErr = fmt.Errorf("go build skiff: %w\n%s", err, out)
		}
	})
	if binErr != nil {
		tb.Fatal(binErr)
	}
	return filepath.Join(binDir, "skiff")
}

// RemoveBinary removes what Binary built.
func RemoveBinary() {
	if binDir != "" {
		os.RemoveAll(binDir)
	}
}

// Options shape a Cluster.
type Options struct {
	// ServerArgs are extra `skiff server` flags.
	ServerArgs []string
	// AgentArgs are extra `skiff agent` flags (eviction thresholds, …).
	AgentArgs []string
	// AgentDataDir is the agent's --data-dir; "" makes a temporary one.
	// The disk-full scenario points it at a small filesystem.
	AgentDataDir string
}

// Cluster is a `skiff server` process on the host side of a veth and a
// `skiff agent` process inside a network namespace of the test's own,
// with a containerd daemon of the test's own. Both are real processes of
// the binary Binary builds, so that they can be killed and measured.
type Cluster struct {
	T testing.TB
	// Admin is an admin client of the server.
	Admin *client.Client
	// ServerDataDir is the server's --data-dir (state.db is under
	// server/).
	ServerDataDir string
	// AgentDataDir is the agent's --data-dir.
	AgentDataDir string
	// Containerd is the agent's containerd.
	Containerd *testenv.Containerd
	// CgroupRoot is the agent's --cgroup-root.
	CgroupRoot string
	// NS is the agent's network namespace's name (ip netns).
	NS string

	opts           Options
	hostIP, boxIP  string
	url, joinToken string
	server, agent  *Proc
}

// Proc is one child process.
type Proc struct {
	cmd    *exec.Cmd
	log    *bytes.Buffer
	mu     *sync.Mutex
	exited chan struct{}
	err    error
}

type lockedWriter struct {
	mu *sync.Mutex
	b  *bytes.Buffer
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func startProc(tb testing.TB, name string, args ...string) *Proc {
	tb.Helper()
	p := &Proc{log: &bytes.Buffer{}, mu: &sync.Mutex{}, exited: make(chan struct{})}
	p.cmd = exec.Command(name, args...)
	p.cmd.Stdout, p.cmd.Stderr = lockedWriter{p.mu, p.log}, lockedWriter{p.mu, p.log}
	if err := p.cmd.Start(); err != nil {
		tb.Fatalf("start %s: %v", name, err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.exited)
	}()
	return p
}

// Pid is the process id.
func (p *Proc) Pid() int { return p.cmd.Process.Pid }

// Log is what the process printed so far.
func (p *Proc) Log() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.log.String()
}

// Running reports whether the process has not exited.
func (p *Proc) Running() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// Kill sends SIGKILL and waits until the process is reaped.
func (p *Proc) Kill() {
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return
	}
	<-p.exited
}

// Stop sends SIGTERM, waits up to grace, then kills.
func (p *Proc) Stop(grace time.Duration) {
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		<-p.exited
		return
	}
	select {
	case <-p.exited:
	case <-time.After(grace):
		p.Kill()
	}
}

// Start builds the namespace, starts containerd, the server and the
// agent, and waits until the agent's Node is Ready. Everything is torn
// down at the end of the test.
func Start(tb testing.TB, opts Options) *Cluster {
	tb.Helper()
	testenv.RequireBinaries(tb)
	bin := Binary(tb)
	c := &Cluster{T: tb, opts: opts, ServerDataDir: tb.TempDir(), AgentDataDir: opts.AgentDataDir}
	if c.AgentDataDir == "" {
		c.AgentDataDir = tb.TempDir()
	}
	c.makeNetwork()
	c.Containerd = testenv.StartContainerdDaemon(tb)

	port := freePort(tb)
	args := append([]string{"server", "--disable-agent", "--config", "", "--data-dir", c.ServerDataDir,
		"--listen", c.hostIP + ":" + port, "--tls-san", c.hostIP, "--log-level", "warn"}, opts.ServerArgs...)
	c.server = startProc(tb, bin, args...)
	tb.Cleanup(func() {
		c.server.Stop(30 * time.Second)
		if tb.Failed() {
			tb.Logf("skiff server output (tail):\n%s", tail(c.server.Log(), 40))
		}
	})
	cfgPath := filepath.Join(c.ServerDataDir, "server", "skiff.yaml")
	Eventually(tb, 60*time.Second, "server ready", func() bool {
		if !c.server.Running() {
			tb.Fatalf("skiff server exited: %v\n%s", c.server.err, c.server.Log())
		}
		if c.Admin == nil {
			cc, err := client.LoadConfig(cfgPath)
			if err != nil {
				return false
			}
			if c.Admin, err = client.New(cc); err != nil {
				tb.Fatal(err)
			}
		}
		resp, err := c.Admin.Do(context.Background(), "GET", "/readyz", nil)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})
	c.url = "https://" + c.hostIP + ":" + port
	tok, err := os.ReadFile(filepath.Join(c.ServerDataDir, "server", "join.token"))
	if err != nil {
		tb.Fatal(err)
	}
	c.joinToken = strings.TrimSpace(string(tok))

	// The busybox image, side-loaded from the agent's image directory.
	tar, _ := testenv.BusyboxImage(tb)
	img, err := os.ReadFile(tar)
	if err != nil {
		tb.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(c.AgentDataDir, "agent", "images"), 0o700); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(c.AgentDataDir, "agent", "images", "busybox.tar"), img, 0o600); err != nil {
		tb.Fatal(err)
	}
	c.CgroupRoot = "/skiff-fl-" + c.NS[len(c.NS)-6:]
	tb.Cleanup(c.removePods) // runs after the agent's own cleanup
	c.StartAgent()
	c.WaitNodeReady(90 * time.Second)
	return c
}

// StartAgent starts `skiff agent` (again) in the namespace.
func (c *Cluster) StartAgent() {
	tb := c.T
	tb.Helper()
	if c.agent != nil && c.agent.Running() {
		tb.Fatal("StartAgent: the agent is running")
	}
	args := append([]string{"--net=/run/netns/" + c.NS, Binary(tb), "agent", "--config", "",
		"--server", c.url, "--token", c.joinToken, "--node-name", NodeName, "--data-dir", c.AgentDataDir,
		"--containerd", c.Containerd.Socket, "--cgroup-root", c.CgroupRoot, "--node-ip", c.boxIP,
		"--agent-listen", "127.0.0.1:0", "--log-level", "info"}, c.opts.AgentArgs...)
	first := c.agent == nil
	c.agent = startProc(tb, "nsenter", args...)
	if first {
		tb.Cleanup(func() {
			c.agent.Stop(30 * time.Second)
			if tb.Failed() {
				tb.Logf("skiff agent output (tail):\n%s", tail(c.agent.Log(), 60))
				if dir := os.Getenv("SKIFF_FAULTS_LOGDIR"); dir != "" {
					p := filepath.Join(dir, c.NS+"-agent.log")
					if err := os.WriteFile(p, []byte(c.agent.Log()), 0o644); err == nil {
						tb.Logf("the agent's whole output is in %s", p)
					}
				}
			}
		})
	}
}

// Agent is the current agent process.
func (c *Cluster) Agent() *Proc { return c.agent }

// Server is the server process.
func (c *Cluster) Server() *Proc { return c.server }

// WaitNodeReady waits until the Node's Ready condition is True.
func (c *Cluster) WaitNodeReady(d time.Duration) {
	c.T.Helper()
	nodes, _ := api.LookupResource("nodes")
	Eventually(c.T, d, "node Ready", func() bool {
		if !c.agent.Running() {
			c.T.Fatalf("skiff agent exited: %v\n%s", c.agent.err, tail(c.agent.Log(), 60))
		}
		obj, err := c.Admin.Get(context.Background(), nodes, "", NodeName)
		if err != nil {
			return false
		}
		for _, cond := range obj.(*api.Node).Status.Conditions {
			if cond.Type == "Ready" {
				return cond.Status == "True"
			}
		}
		return false
	})
}

// makeNetwork makes the agent's namespace and the veth to it.
func (c *Cluster) makeNetwork() {
	tb := c.T
	r := make([]byte, 4)
	_, _ = rand.Read(r)
	id := hex.EncodeToString(r[:3])
	c.NS = "skfl-" + id
	Run(tb, "ip", "netns", "add", c.NS)
	tb.Cleanup(func() {
		if out, err := exec.Command("ip", "netns", "del", c.NS).CombinedOutput(); err != nil {
			tb.Errorf("ip netns del %s: %v: %s", c.NS, err, out)
		}
	})
	host := "skfl" + id
	c.hostIP, c.boxIP = fmt.Sprintf("198.19.%d.1", r[3]), fmt.Sprintf("198.19.%d.2", r[3])
	Run(tb, "ip", "link", "add", host, "type", "veth", "peer", "name", "eth0", "netns", c.NS)
	tb.Cleanup(func() { _ = exec.Command("ip", "link", "del", host).Run() })
	Run(tb, "ip", "addr", "add", c.hostIP+"/30", "dev", host)
	Run(tb, "ip", "link", "set", host, "up")
	Run(tb, "ip", "-n", c.NS, "addr", "add", c.boxIP+"/30", "dev", "eth0")
	Run(tb, "ip", "-n", c.NS, "link", "set", "eth0", "up")
	Run(tb, "ip", "-n", c.NS, "link", "set", "lo", "up")
}

// Runtime opens the agent's containerd as the agent sees it.
func (c *Cluster) Runtime(ctx context.Context) (*containerd.Runtime, error) {
	return containerd.New(ctx, containerd.Config{Socket: c.Containerd.Socket, Namespace: agent.Namespace,
		DataDir: filepath.Join(c.AgentDataDir, "agent"), CgroupRoot: c.CgroupRoot})
}

// removePods stops and removes what the agent's pods left in containerd
// and the cgroup root.
func (c *Cluster) removePods() {
	podclean.RemovePods(c.T, agent.Config{Containerd: c.Containerd.Socket, DataDir: c.AgentDataDir, CgroupRoot: c.CgroupRoot})
}

// Eventually polls cond every 100 ms until it holds or d (scaled by
// testenv.Bound) passes.
func Eventually(tb testing.TB, d time.Duration, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(testenv.Bound(d))
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out after %v waiting for %s", testenv.Bound(d), what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Run runs a command and fails tb unless it succeeds.
func Run(tb testing.TB, name string, args ...string) string {
	tb.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		tb.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

func freePort(tb testing.TB) string {
	tb.Helper()
	// Any port free on loopback is as good on the veth address, which
	// nothing else uses.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()[strings.LastIndex(l.Addr().String(), ":")+1:]
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
