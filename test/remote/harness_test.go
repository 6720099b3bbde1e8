package remote

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vishvananda/netns"

	"github.com/skiffhq/skiff/agent"
	"github.com/skiffhq/skiff/agent/network"
	"github.com/skiffhq/skiff/agent/podclean"
	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/api/client"
	"github.com/skiffhq/skiff/internal/testenv"
	"github.com/skiffhq/skiff/server"
)

// box is a server and one agent behind a firewall, with kubectl set up
// to talk to the server.
type box struct {
	t          testing.TB
	kubectl    string
	kubeconfig string
	// clientConfig is the skiff CLI's config (admin).
	clientConfig string
	home         string
	nsPath       string // the agent's network namespace
	hostIP       string // the server's side of the veth
	boxIP        string // the agent's side
	admin        *client.Client
	agent        *agent.Agent
	// agentPID is the agent's process with startBoxWith(external).
	agentPID int
	// serverLog holds the server's log lines.
	serverLog *syncBuffer
}

// syncBuffer is a bytes.Buffer safe for concurrent use.
type syncBuffer = testenv.SyncBuffer

// startBox builds the firewalled box and waits until the agent's node is
// registered and its tunnel is open.
func startBox(t testing.TB) *box {
	t.Helper()
	return startBoxWith(t, false)
}

// startBoxWith is startBox; with external, the agent runs as its own
// process (skiff agent, inside the box's namespace) rather than in the
// test's, so that its memory can be measured.
func startBoxWith(t testing.TB, external bool) *box {
	t.Helper()
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Fatal("kubectl 1.32 is not on PATH (see test/kubectl's doc for how to install it)")
	}
	testenv.RequireBinaries(t)
	b := &box{t: t, kubectl: kubectl, home: t.TempDir(), serverLog: &syncBuffer{}}
	b.makeNetwork()

	// The server, on the host's side of the veth.
	sctx, stopServer := context.WithCancel(context.Background())
	ready := make(chan server.Info, 1)
	done := make(chan error, 1)
	go func() {
		done <- server.Run(sctx, server.Config{DataDir: t.TempDir(), Listen: b.hostIP + ":0", TLSSANs: []string{b.hostIP},
			Logger: slog.New(slog.NewTextHandler(b.serverLog, nil)),
			Ready:  func(i server.Info) { ready <- i }})
	}()
	var info server.Info
	select {
	case info = <-ready:
	case err := <-done:
		stopServer()
		t.Fatalf("server: %v", err)
	case <-time.After(30 * time.Second):
		stopServer()
		t.Fatal("server not ready in 30s")
	}
	t.Cleanup(func() {
		stopServer()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("server: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("server did not stop in 30s")
		}
	})
	b.kubeconfig, b.clientConfig = info.KubeconfigPath, info.ClientConfigPath
	ccfg, err := client.LoadConfig(info.ClientConfigPath)
	if err != nil {
		t.Fatal(err)
	}
	if b.admin, err = client.New(ccfg); err != nil {
		t.Fatal(err)
	}

	// The agent, with its own containerd and the busybox image.
	socket := testenv.StartContainerd(t)
	tar, _ := testenv.BusyboxImage(t)
	dataDir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dataDir, "agent", "images"), 0o700); err != nil {
		t.Fatal(err)
	}
	img, err := os.ReadFile(tar)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dataDir, "agent", "images", "busybox.tar"), img, 0o600); err != nil {
		t.Fatal(err)
	}
	tok, err := os.ReadFile(info.JoinTokenPath)
	if err != nil {
		t.Fatal(err)
	}
	id := filepath.Base(b.nsPath)
	cfg := agent.Config{
		Server: info.URL, Token: strings.TrimSpace(string(tok)), NodeName: "box", DataDir: dataDir,
		Containerd: socket, CgroupRoot: "/skiff-test-" + id, NodeIP: b.boxIP, Listen: "127.0.0.1:0",
		Network: func(c *network.Config) {
			c.Bridge, c.Table, c.NoOverlay, c.HostNetNS = "skb"+id[len(id)-6:], "skifftest"+id[len(id)-6:], true, b.nsPath
		},
		DialContext: dialIn(b.nsPath),
	}
	if external {
		b.startAgentProcess(cfg)
		return b
	}
	actx, stopAgent := context.WithCancel(context.Background())
	agentReady := make(chan *agent.Agent, 1)
	agentDone := make(chan error, 1)
	cfg.Ready = func(a *agent.Agent) { agentReady <- a }
	t.Cleanup(func() { podclean.RemovePods(t, cfg) })
	go func() { agentDone <- agent.Run(actx, cfg) }()
	select {
	case b.agent = <-agentReady:
	case err := <-agentDone:
		stopAgent()
		t.Fatalf("agent: %v", err)
	case <-time.After(30 * time.Second):
		stopAgent()
		t.Fatal("agent not ready in 30s")
	}
	t.Cleanup(func() {
		stopAgent()
		select {
		case err := <-agentDone:
			if err != nil {
				t.Errorf("agent: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("agent did not stop in 30s")
		}
	})
	eventually(t, 60*time.Second, "node registered and tunnel open", func() bool { return b.agent.Registered() && b.agent.TunnelConnected() })
	return b
}

// startAgentProcess runs `skiff agent` with cfg's settings inside the
// box's namespace (its pod network gets the default bridge and table
// names, which live in that namespace only), and waits until its node is
// Ready and an exec goes through its tunnel.
func (b *box) startAgentProcess(cfg agent.Config) {
	t := b.t
	conf := filepath.Join(cfg.DataDir, "config.yaml")
	if err := os.WriteFile(conf, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, "nsenter", "--net="+b.nsPath, skiffBinary(t), "agent",
		"--server", cfg.Server, "--token", cfg.Token, "--node-name", cfg.NodeName, "--data-dir", cfg.DataDir,
		"--containerd", cfg.Containerd, "--cgroup-root", cfg.CgroupRoot, "--node-ip", cfg.NodeIP,
		"--agent-listen", "127.0.0.1:0", "--config", conf, "--log-level", "info")
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 30 * time.Second
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	b.agentPID = cmd.Process.Pid
	t.Cleanup(func() { podclean.RemovePods(t, cfg) })
	t.Cleanup(func() {
		cancel()
		if err := cmd.Wait(); err != nil && !errors.Is(err, context.Canceled) && !strings.Contains(err.Error(), "signal: terminated") {
			t.Logf("skiff agent: %v\n%s", err, logs.String())
		}
		if t.Failed() {
			t.Logf("skiff agent output:\n%s", logs.String())
		}
	})
	nodes, _ := api.LookupResource("nodes")
	eventually(t, 60*time.Second, "node registered", func() bool {
		_, err := b.admin.Get(context.Background(), nodes, "", cfg.NodeName)
		return err == nil
	})
}

// makeNetwork makes the box's namespace, the veth to it and the
// firewall that drops every connection into it.
func (b *box) makeNetwork() {
	t := b.t
	r := make([]byte, 4)
	_, _ = rand.Read(r)
	id := hex.EncodeToString(r[:3])
	name := "skrm-" + id
	run(t, "ip", "netns", "add", name)
	t.Cleanup(func() {
		if out, err := exec.Command("ip", "netns", "del", name).CombinedOutput(); err != nil {
			t.Errorf("ip netns del %s: %v: %s", name, err, out)
		}
	})
	b.nsPath = filepath.Join("/run/netns", name)
	host := "skrm" + id
	b.hostIP, b.boxIP = fmt.Sprintf("198.18.%d.1", r[3]), fmt.Sprintf("198.18.%d.2", r[3])
	run(t, "ip", "link", "add", host, "type", "veth", "peer", "name", "eth0", "netns", name)
	t.Cleanup(func() { _ = exec.Command("ip", "link", "del", host).Run() })
	run(t, "ip", "addr", "add", b.hostIP+"/30", "dev", host)
	run(t, "ip", "link", "set", host, "up")
	run(t, "ip", "-n", name, "addr", "add", b.boxIP+"/30", "dev", "eth0")
	run(t, "ip", "-n", name, "link", "set", "eth0", "up")
	run(t, "ip", "-n", name, "link", "set", "lo", "up")
	rules := `table inet skrm_firewall {
	chain input {
		type filter hook input priority filter; policy drop;
		iif "lo" accept
		ct state established,related accept
	}
}
`
	cmd := exec.Command("ip", "netns", "exec", name, "nft", "-f", "-")
	cmd.Stdin = strings.NewReader(rules)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("nft in %s: %v: %s", name, err, out)
	}
}

func run(t testing.TB, name string, args ...string) {
	t.Helper()
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}

// dialIn dials from inside the network namespace at path: the socket is
// made on a thread switched into it, and keeps the namespace.
func dialIn(path string) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		target, err := netns.GetFromPath(path)
		if err != nil {
			return nil, err
		}
		defer target.Close()
		type result struct {
			c   net.Conn
			err error
		}
		ch := make(chan result, 1)
		go func() {
			runtime.LockOSThread() // never unlocked: the thread dies with the goroutine
			if err := netns.Set(target); err != nil {
				ch <- result{nil, err}
				return
			}
			c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
			ch <- result{c, err}
		}()
		r := <-ch
		return r.c, r.err
	}
}

// listenIn listens on addr inside the namespace at path.
func listenIn(path, addr string) (net.Listener, error) {
	target, err := netns.GetFromPath(path)
	if err != nil {
		return nil, err
	}
	defer target.Close()
	type result struct {
		l   net.Listener
		err error
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		if err := netns.Set(target); err != nil {
			ch <- result{nil, err}
			return
		}
		l, err := net.Listen("tcp", addr)
		ch <- result{l, err}
	}()
	r := <-ch
	return r.l, r.err
}

// eventually polls cond every 50 ms until it holds or d passes.
func eventually(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// result is one kubectl run.
type result struct {
	stdout, stderr string
	code           int
	err            error
}

// kubectlCmd is a kubectl command ready to start.
func (b *box) kubectlCmd(ctx context.Context, env []string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, b.kubectl, args...)
	cmd.Env = append([]string{"HOME=" + b.home, "KUBECONFIG=" + b.kubeconfig, "PATH=" + os.Getenv("PATH")}, env...)
	return cmd
}

// run runs kubectl with stdin to its end, for at most 60 s.
func (b *box) run(stdin string, env []string, args ...string) result {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := b.kubectlCmd(ctx, env, args...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ctx.Err() != nil {
		b.t.Fatalf("kubectl %s: did not finish in 60s; stdout: %s; stderr: %s", strings.Join(args, " "), out.String(), errb.String())
	}
	return result{stdout: out.String(), stderr: errb.String(), code: cmd.ProcessState.ExitCode(), err: err}
}

// ok runs kubectl and fails the test unless it succeeds.
func (b *box) ok(stdin string, args ...string) string {
	b.t.Helper()
	r := b.run(stdin, nil, args...)
	if r.err != nil {
		b.t.Fatalf("kubectl %s: %v\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.err, r.stdout, r.stderr)
	}
	return r.stdout
}

// runPod creates a busybox pod running script on the box and waits
// until it runs.
func (b *box) runPod(name, script string) {
	b.t.Helper()
	manifest := fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: %s, namespace: default}
spec:
  nodeName: box
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: %s
    imagePullPolicy: Never
    command: ["sh", "-c", %q]
`, name, testenv.BusyboxRef, script)
	b.ok(manifest, "apply", "-f", "-")
	b.waitPod(name)
}

// waitPod waits until pod name runs.
func (b *box) waitPod(name string) *api.Pod {
	b.t.Helper()
	pods, _ := api.LookupResource("pods")
	var pod *api.Pod
	eventually(b.t, 60*time.Second, "pod "+name+" running", func() bool {
		obj, err := b.admin.Get(context.Background(), pods, "default", name)
		if err != nil {
			return false
		}
		pod = obj.(*api.Pod)
		return pod.Status.Phase == api.PodRunning
	})
	return pod
}
