package agenttest

import (
	"context"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/api/client"
	"github.com/skiffhq/skiff/internal/clock"
	"github.com/skiffhq/skiff/internal/testenv"
	"github.com/skiffhq/skiff/server"
)

// Server is a real skiff server in a temporary data dir. Stop and Start
// restart it on the same data dir and the same address, so clients made
// before keep working.
type Server struct {
	t      testing.TB
	Dir    string
	Info   server.Info
	listen string
	cancel context.CancelFunc
	done   chan error
	// Admin is a client with the admin token.
	Admin *client.Client
	cfg   client.Config
	// datastore is the server's --datastore; "" for SQLite in Dir.
	datastore string
	// keyFile is its --encryption-key-file; "" for the one in Dir.
	keyFile string
}

// StartServer starts a server (with its scheduler disabled) and stops it
// when the test ends.
func StartServer(t testing.TB) *Server {
	t.Helper()
	return StartServerOn(t, "", "")
}

// StartServerOn is StartServer on a datastore URL (a PostgreSQL database
// several servers share); "" is the server's own SQLite file. keyFile is
// the --encryption-key-file, which servers sharing a database must share
// ("": the server's own).
func StartServerOn(t testing.TB, datastore, keyFile string) *Server {
	t.Helper()
	s := &Server{t: t, Dir: t.TempDir(), listen: "127.0.0.1:0", datastore: datastore, keyFile: keyFile}
	s.Start()
	cfg, err := client.LoadConfig(s.Info.ClientConfigPath)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Timeout = 10 * time.Second
	s.cfg = cfg
	if s.Admin, err = client.New(cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	return s
}

// Start runs the server; it is running when Start returns.
func (s *Server) Start() {
	s.t.Helper()
	if s.cancel != nil {
		s.t.Fatal("agenttest: server already running")
	}
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan server.Info, 1)
	done := make(chan error, 1)
	go func() {
		done <- server.Run(ctx, server.Config{DataDir: s.Dir, Listen: s.listen, Datastore: s.datastore, EncryptionKeyFile: s.keyFile, DisableScheduler: true, Ready: func(i server.Info) { ready <- i }})
	}()
	select {
	case s.Info = <-ready:
	case err := <-done:
		cancel()
		s.t.Fatalf("server.Run failed at start: %v", err)
	case <-time.After(30 * time.Second):
		cancel()
		s.t.Fatal("server did not become ready in 30s")
	}
	s.listen = s.Info.Addr.String()
	s.cancel, s.done = cancel, done
}

// Stop stops the server if it runs.
func (s *Server) Stop() {
	if s.cancel == nil {
		return
	}
	s.cancel()
	s.cancel = nil
	select {
	case err := <-s.done:
		if err != nil {
			s.t.Errorf("server.Run returned %v at shutdown", err)
		}
	case <-time.After(30 * time.Second):
		s.t.Error("server.Run did not return within 30s of cancel")
	}
}

// NodeClient joins node with the server's join token and returns a
// client holding the node credential.
func (s *Server) NodeClient(node string) *client.Client {
	s.t.Helper()
	c, err := client.New(s.NodeConfig(node))
	if err != nil {
		s.t.Fatal(err)
	}
	return c
}

// NodeConfig joins node with the server's join token and returns the
// client configuration holding the node credential.
func (s *Server) NodeConfig(node string) client.Config {
	s.t.Helper()
	tok, err := os.ReadFile(s.Info.JoinTokenPath)
	if err != nil {
		s.t.Fatal(err)
	}
	var resp server.JoinResponse
	req := server.JoinRequest{Token: strings.TrimSpace(string(tok)), NodeName: node}
	if err := s.Admin.DoJSON(context.Background(), http.MethodPost, "/api/v1/join", req, &resp); err != nil {
		s.t.Fatalf("join %s: %v", node, err)
	}
	cfg := s.cfg
	cfg.Token = resp.NodeCredential
	return cfg
}

// Pods is the pods resource.
func Pods() api.ResourceInfo {
	res, _ := api.LookupResource("pods")
	return res
}

// Pod returns a minimal pod bound to node.
func Pod(name, node string) *api.Pod {
	return &api.Pod{
		ObjectMeta: api.ObjectMeta{Name: name, Namespace: "default"},
		Spec:       api.PodSpec{NodeName: node, Containers: []api.Container{{Name: "c", Image: "busybox"}}},
	}
}

// CreatePod creates pod with the admin client and returns the stored pod.
func (s *Server) CreatePod(pod *api.Pod) *api.Pod {
	s.t.Helper()
	out, err := s.Admin.Create(context.Background(), pod)
	if err != nil {
		s.t.Fatalf("create pod %s: %v", pod.Name, err)
	}
	return out.(*api.Pod)
}

// GetPod reads a pod with the admin client; nil when it does not exist.
func (s *Server) GetPod(ns, name string) *api.Pod {
	s.t.Helper()
	out, err := s.Admin.Get(context.Background(), Pods(), ns, name)
	if api.IsNotFound(err) {
		return nil
	}
	if err != nil {
		s.t.Fatalf("get pod %s/%s: %v", ns, name, err)
	}
	return out.(*api.Pod)
}

// Eventually polls cond every 10ms until it holds, failing the test after
// 20s. It is for waiting on real I/O (the server), never on time.
func Eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(testenv.Bound(20 * time.Second))
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Pump advances clk by step whenever something waits on it, until cond
// holds, failing the test after 20s of real time. It is for loops that
// wait on real I/O (the server) between their clock waits.
func Pump(t testing.TB, clk *clock.Fake, step time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		if clk.Waiters() > 0 {
			clk.Advance(step)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
