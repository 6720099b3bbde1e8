package faults

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vishvananda/netns"

	"github.com/skiffhq/skiff/agent"
	"github.com/skiffhq/skiff/agent/network"
	"github.com/skiffhq/skiff/agent/podclean"
	"github.com/skiffhq/skiff/api/client"
	"github.com/skiffhq/skiff/internal/clock"
	"github.com/skiffhq/skiff/internal/testenv"
	"github.com/skiffhq/skiff/server"
)

// long reports whether the long form runs (make test-faults).
func long() bool { return os.Getenv("SKIFF_FAULTS_LONG") == "1" }

// timing is how fast a cluster notices a silent node. The short form
// beats every second and gives up on a node after 5 s, its pods after 5
// s more; the long form keeps the production defaults (10 s, 40 s, 60 s).
type timing struct {
	heartbeat, grace, eviction time.Duration
}

func defaultTiming() timing {
	if long() {
		return timing{heartbeat: 10 * time.Second, grace: server.DefaultNodeMonitorGrace, eviction: server.DefaultPodEvictionTimeout}
	}
	return timing{heartbeat: time.Second, grace: 5 * time.Second, eviction: 5 * time.Second}
}

// cluster is a server host and agent hosts, each a network namespace.
type cluster struct {
	t      *testing.T
	id     string
	timing timing
	srv    *serverHost
	admin  *client.Client
	hosts  []*agentHost
	// writes are the objects the test created and the server
	// acknowledged; checkInvariants reads each back.
	writesMu sync.Mutex
	writes   []writeRecord
	// static names (namespace/name) the pods agents run from files.
	static map[string]bool
}

// serverHost is the server's namespace and the server running in it.
type serverHost struct {
	nsName, nsPath string
	dataDir        string
	port           int
	sans           []string
	stop           func() // stops the running server and waits for it
	logs           *syncBuffer
}

// agentHost is one agent's namespace, its link to the server host and
// the agent.
type agentHost struct {
	c              *cluster
	name           string // node name
	nsName, nsPath string
	ip, serverIP   string // the two ends of the link
	cfg            agent.Config
	running        *agent.Agent
	stop           func()
	logs           *syncBuffer
	// delay, when positive, holds every byte the agent sends or receives
	// over its connections to the server that long (the link's latency).
	delay *delaySetting
}

// newCluster makes the server host and n agent hosts and starts the
// server (not the agents: see startAgent). Every namespace, link and
// process is removed when the test ends.
func newCluster(t *testing.T, n int, tm timing) *cluster {
	t.Helper()
	testenv.RequireBinaries(t)
	r := make([]byte, 3)
	if _, err := rand.Read(r); err != nil {
		t.Fatal(err)
	}
	c := &cluster{t: t, id: hex.EncodeToString(r), timing: tm, static: map[string]bool{}}
	c.srv = &serverHost{dataDir: t.TempDir(), logs: &syncBuffer{}}
	c.srv.nsName, c.srv.nsPath = makeNS(t, "skfs-"+c.id)
	for i := range n {
		h := &agentHost{c: c, name: fmt.Sprintf("node-%c", 'a'+i), logs: &syncBuffer{}, delay: &delaySetting{}}
		h.nsName, h.nsPath = makeNS(t, fmt.Sprintf("skf%c-%s", 'a'+i, c.id))
		h.serverIP, h.ip = fmt.Sprintf("10.77.%d.1", i+1), fmt.Sprintf("10.77.%d.2", i+1)
		link := fmt.Sprintf("to-%c", 'a'+i)
		run(t, "ip", "-n", c.srv.nsName, "link", "add", link, "type", "veth", "peer", "name", "eth0", "netns", h.nsName)
		run(t, "ip", "-n", c.srv.nsName, "addr", "add", h.serverIP+"/24", "dev", link)
		run(t, "ip", "-n", c.srv.nsName, "link", "set", link, "up")
		run(t, "ip", "-n", h.nsName, "addr", "add", h.ip+"/24", "dev", "eth0")
		run(t, "ip", "-n", h.nsName, "link", "set", "eth0", "up")
		c.srv.sans = append(c.srv.sans, h.serverIP)
		c.hosts = append(c.hosts, h)
	}
	c.startServer()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("server log (tail):\n%s", tail(c.srv.logs.String(), 60))
			for _, h := range c.hosts {
				t.Logf("agent %s log (tail):\n%s", h.name, tail(h.logs.String(), 60))
			}
		}
	})
	return c
}

// makeNS adds a network namespace with its loopback up, deleted (with
// every link in it) when the test ends.
func makeNS(t *testing.T, name string) (string, string) {
	t.Helper()
	run(t, "ip", "netns", "add", name)
	t.Cleanup(func() {
		if out, err := exec.Command("ip", "netns", "del", name).CombinedOutput(); err != nil {
			t.Errorf("ip netns del %s: %v: %s", name, err, out)
		}
	})
	run(t, "ip", "-n", name, "link", "set", "lo", "up")
	return name, filepath.Join("/run/netns", name)
}

// startServer runs the server inside the server host's namespace (its
// listener is made there), on the port it had before if it ran already.
func (c *cluster) startServer() {
	t := c.t
	t.Helper()
	cfg := server.Config{
		DataDir: c.srv.dataDir, Listen: fmt.Sprintf("0.0.0.0:%d", c.srv.port), TLSSANs: c.srv.sans,
		NodeMonitorGrace: c.timing.grace, PodEvictionTimeout: c.timing.eviction,
		Logger: slog.New(slog.NewTextHandler(c.srv.logs, &slog.HandlerOptions{Level: slog.LevelInfo})),
	}
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan server.Info, 1)
	done := make(chan error, 1)
	cfg.Ready = func(i server.Info) { ready <- i }
	go func() {
		runtime.LockOSThread() // never unlocked: the thread dies with the goroutine
		if err := enterNS(c.srv.nsPath); err != nil {
			done <- err
			return
		}
		done <- server.Run(ctx, cfg)
	}()
	var info server.Info
	select {
	case info = <-ready:
	case err := <-done:
		cancel()
		t.Fatalf("server: %v", err)
	case <-time.After(60 * time.Second):
		cancel()
		t.Fatal("server not ready in 60s")
	}
	var once sync.Once
	c.srv.stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("server: %v", err)
				}
			case <-time.After(60 * time.Second):
				t.Error("server did not stop in 60s")
			}
		})
	}
	t.Cleanup(c.srv.stop)
	u, err := url.Parse(info.URL)
	if err != nil {
		t.Fatal(err)
	}
	if _, p, err := net.SplitHostPort(u.Host); err == nil {
		fmt.Sscan(p, &c.srv.port) //nolint:errcheck // checked below
	}
	if c.srv.port == 0 {
		t.Fatalf("no port in the server's URL %s", info.URL)
	}
	if c.admin == nil {
		ccfg, err := client.LoadConfig(info.ClientConfigPath)
		if err != nil {
			t.Fatal(err)
		}
		// The test reaches the server from inside its namespace, at the
		// address of its first link.
		ccfg.Server = fmt.Sprintf("https://%s:%d", c.hosts[0].serverIP, c.srv.port)
		ccfg.DialContext = dialIn(c.srv.nsPath, nil)
		if c.admin, err = client.New(ccfg); err != nil {
			t.Fatal(err)
		}
	}
}

// stopServer stops the server (its data stays for startServer).
func (c *cluster) stopServer() { c.srv.stop() }

// startAgent runs h's agent: its own containerd, the busybox image
// side-loaded, its pod network in h's namespace and every connection to
// the server dialled from there. adjust may change the config first.
func (h *agentHost) startAgent(adjust func(*agent.Config)) {
	t := h.c.t
	t.Helper()
	if h.cfg.DataDir == "" {
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
		tok, err := os.ReadFile(filepath.Join(h.c.srv.dataDir, "server", "join.token"))
		if err != nil {
			t.Fatal(err)
		}
		short := h.c.id + h.name[len(h.name)-1:]
		h.cfg = agent.Config{
			Server: fmt.Sprintf("https://%s:%d", h.serverIP, h.c.srv.port), Token: strings.TrimSpace(string(tok)),
			NodeName: h.name, DataDir: dataDir, Containerd: socket, CgroupRoot: "/skiff-fault-" + short,
			NodeIP: h.ip, Listen: "127.0.0.1:0", NodeStatusInterval: h.c.timing.heartbeat,
			Network: func(n *network.Config) {
				n.Bridge, n.Table, n.NoOverlay, n.HostNetNS = "skf"+short, "skifffault"+short, true, h.nsPath
			},
			DialContext: dialIn(h.nsPath, h.delay),
			Logger:      slog.New(slog.NewTextHandler(h.logs, &slog.HandlerOptions{Level: slog.LevelInfo})),
		}
		cfg := h.cfg
		t.Cleanup(func() { podclean.RemovePods(t, cfg) })
	}
	cfg := h.cfg
	if adjust != nil {
		adjust(&cfg)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan *agent.Agent, 1)
	done := make(chan error, 1)
	cfg.Ready = func(a *agent.Agent) { ready <- a }
	go func() { done <- agent.Run(ctx, cfg) }()
	select {
	case h.running = <-ready:
	case err := <-done:
		cancel()
		t.Fatalf("agent %s: %v", h.name, err)
	case <-time.After(60 * time.Second):
		cancel()
		t.Fatalf("agent %s not ready in 60s", h.name)
	}
	var once sync.Once
	h.stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil && !errors.Is(err, context.Canceled) {
					t.Errorf("agent %s: %v", h.name, err)
				}
			case <-time.After(60 * time.Second):
				t.Errorf("agent %s did not stop in 60s", h.name)
			}
		})
	}
	t.Cleanup(h.stop)
}

// startAgents starts every agent and waits until each node is Ready.
func (c *cluster) startAgents() {
	for _, h := range c.hosts {
		h.startAgent(nil)
	}
	for _, h := range c.hosts {
		c.waitNodeReady(h.name, true, time.Minute)
	}
}

// offsetClock is the wall clock shifted by a fixed offset: a machine
// whose clock is wrong.
type offsetClock struct {
	clock.Real
	offset time.Duration
}

func (o offsetClock) Now() time.Time { return time.Now().Add(o.offset) }

// enterNS switches the calling thread into the namespace at path.
func enterNS(path string) error {
	target, err := netns.GetFromPath(path)
	if err != nil {
		return fmt.Errorf("open netns %s: %w", path, err)
	}
	defer target.Close()
	if err := netns.Set(target); err != nil {
		return fmt.Errorf("enter netns %s: %w", path, err)
	}
	return nil
}

// dialIn dials from inside the network namespace at path (the socket is
// made on a thread switched into it, and keeps the namespace); with d,
// the connection is delayed by d's setting.
func dialIn(path string, d *delaySetting) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		type result struct {
			c   net.Conn
			err error
		}
		ch := make(chan result, 1)
		go func() {
			runtime.LockOSThread() // never unlocked: the thread dies with the goroutine
			if err := enterNS(path); err != nil {
				ch <- result{nil, err}
				return
			}
			c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
			ch <- result{c, err}
		}()
		r := <-ch
		if r.err != nil || d == nil {
			return r.c, r.err
		}
		return newDelayConn(r.c, d), nil
	}
}

func run(t *testing.T, name string, args ...string) {
	t.Helper()
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}

// syncBuffer is a bytes.Buffer safe for concurrent use.
type syncBuffer = testenv.SyncBuffer

// tail is the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
