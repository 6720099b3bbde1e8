package node_test

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skiffhq/skiff/agent/node"
	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/api/client"
	"github.com/skiffhq/skiff/internal/clock"
	"github.com/skiffhq/skiff/server"
)

// startServer runs a real server (no scheduler, no local agent) and
// returns its info and an admin client.
func startServer(t *testing.T) (server.Info, *client.Client) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan server.Info, 1)
	done := make(chan error, 1)
	go func() {
		done <- server.Run(ctx, server.Config{DataDir: t.TempDir(), Listen: "127.0.0.1:0", DisableScheduler: true, DisableAgent: true, Ready: func(i server.Info) { ready <- i }})
	}()
	var info server.Info
	select {
	case info = <-ready:
	case err := <-done:
		cancel()
		t.Fatalf("server: %v", err)
	case <-time.After(30 * time.Second):
		cancel()
		t.Fatal("server not ready in 30s")
	}
	t.Cleanup(func() {
		cancel()
		<-done
	})
	cfg, err := client.LoadConfig(info.ClientConfigPath)
	if err != nil {
		t.Fatal(err)
	}
	admin, err := client.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return info, admin
}

// joinedClient joins as name and returns a client with its credential.
func joinedClient(t *testing.T, info server.Info, name string) *client.Client {
	t.Helper()
	cred, err := node.Join(context.Background(), node.JoinConfig{Server: info.URL, Token: joinToken(t, info), NodeName: name, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	nc, err := client.New(cred.ClientConfig())
	if err != nil {
		t.Fatal(err)
	}
	return nc
}

func joinToken(t *testing.T, info server.Info) string {
	t.Helper()
	b, err := os.ReadFile(info.JoinTokenPath)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

func TestJoinKeepsAndReusesCredentials(t *testing.T) {
	info, _ := startServer(t)
	ctx := context.Background()
	dir := t.TempDir()
	tok := joinToken(t, info)
	cred, err := node.Join(ctx, node.JoinConfig{Server: info.URL, Token: tok, NodeName: "edge-1", Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if cred.Credential == "" || cred.NodeName != "edge-1" {
		t.Fatalf("credentials %v", cred)
	}
	if strings.Contains(cred.String(), cred.Credential) {
		t.Fatal("String shows the credential")
	}
	st, err := os.Stat(filepath.Join(dir, node.CredentialsFile))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("credentials file: %v, mode %v", err, st.Mode())
	}
	ca, _ := os.ReadFile(info.CAPath)
	kept, _ := os.ReadFile(filepath.Join(dir, node.CAFile))
	if string(ca) != string(kept) {
		t.Fatal("kept CA differs from the server's")
	}
	// A second start with no token reuses what is kept.
	again, err := node.Join(ctx, node.JoinConfig{Server: info.URL, NodeName: "edge-1", Dir: dir})
	if err != nil || again.Credential != cred.Credential {
		t.Fatalf("rejoin from disk: %v, same=%v", err, again.Credential == cred.Credential)
	}
	// A different machine cannot take the name with the join token alone.
	_, err = node.Join(ctx, node.JoinConfig{Server: info.URL, Token: tok, NodeName: "edge-1", Dir: t.TempDir()})
	if !api.IsForbidden(err) {
		t.Fatalf("impersonating join: got %v, want 403", err)
	}
}

func TestJoinRejectsWrongCAHash(t *testing.T) {
	info, _ := startServer(t)
	tok := joinToken(t, info)
	parts := strings.Split(tok, ".")
	parts[1] = strings.Repeat("0", 64)
	_, err := node.Join(context.Background(), node.JoinConfig{Server: info.URL, Token: strings.Join(parts, "."), NodeName: "n", Dir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "does not match") {
		t.Fatalf("got %v", err)
	}
	if strings.Contains(err.Error(), parts[3]) {
		t.Fatal("error shows the token secret")
	}
	for _, bad := range []string{"", "SKF1.abc", "SKF2." + strings.Repeat("a", 64) + ".i.s", "SKF1." + strings.Repeat("z", 64) + ".i.s"} {
		if _, err := node.ParseJoinToken(bad); err == nil {
			t.Errorf("ParseJoinToken(%q) accepted", bad)
		}
	}
}

type fakeRuntime struct{ down error }

func (f *fakeRuntime) Version(context.Context) (string, error) { return "containerd 1.6.20", nil }
func (f *fakeRuntime) Status(context.Context) error            { return f.down }

func fixedInfo(context.Context) (node.SystemInfo, error) {
	return node.SystemInfo{Hostname: "h", CPUs: 4, MemoryBytes: 8 << 30, DiskBytes: 100 << 30, Kernel: "6.1.0", OSImage: "Debian GNU/Linux 12 (bookworm)", OS: "linux", Arch: "arm64", IPs: []string{"192.0.2.10", "fd00::10"}}, nil
}

func TestRegistrarRegistersAndHeartbeats(t *testing.T) {
	info, admin := startServer(t)
	ctx := context.Background()
	nc := joinedClient(t, info, "edge-2")
	reserved, err := node.ParseResourceList("cpu=500m,memory=1Gi")
	if err != nil {
		t.Fatal(err)
	}
	clk := clock.NewFake(time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC))
	rt := &fakeRuntime{}
	r := node.NewRegistrar(node.Config{
		API: nc, NodeName: "edge-2", Labels: map[string]string{"site": "barn"}, SystemReserved: reserved, MaxPods: 20,
		Info: fixedInfo, Runtime: rt, AgentPort: 10250, AgentCertSHA256: "ab12", Clock: clk,
		Images: func(context.Context) ([]api.ContainerImage, error) {
			return []api.ContainerImage{{Names: []string{"skiff.test/busybox:latest"}, SizeBytes: 1 << 20}}, nil
		},
	})
	if err := r.SyncOnce(ctx); err != nil {
		t.Fatal(err)
	}
	nodes, _ := api.LookupResource("nodes")
	obj, err := admin.Get(ctx, nodes, "", "edge-2")
	if err != nil {
		t.Fatal(err)
	}
	n := obj.(*api.Node)
	if n.Labels["site"] != "barn" || n.Labels[node.LabelArch] != "arm64" || n.Labels[node.LabelHostname] != "edge-2" {
		t.Errorf("labels %v", n.Labels)
	}
	if n.Annotations[node.AnnotationAgentCert] != "ab12" {
		t.Errorf("annotations %v", n.Annotations)
	}
	alloc := n.Status.Allocatable
	if cpu := alloc[api.ResourceCPU]; cpu.MilliValue() != 3500 {
		t.Errorf("allocatable cpu %v, want 3500m", cpu.String())
	}
	if mem := alloc[api.ResourceMemory]; mem.Value() != 7<<30 {
		t.Errorf("allocatable memory %v, want 7Gi", mem.String())
	}
	if pods := n.Status.Capacity[api.ResourcePods]; pods.Value() != 20 {
		t.Errorf("pods capacity %v", pods.String())
	}
	if n.Status.NodeInfo.ContainerRuntimeVersion != "containerd 1.6.20" || n.Status.DaemonEndpoints.KubeletEndpoint.Port != 10250 {
		t.Errorf("node info %+v endpoints %+v", n.Status.NodeInfo, n.Status.DaemonEndpoints)
	}
	if a := n.Status.Addresses; len(a) != 3 || a[1].Address != "192.0.2.10" || a[2].Address != "fd00::10" {
		t.Errorf("addresses %+v; want the hostname and both InternalIPs, IPv4 first", a)
	}
	if len(n.Status.Images) != 1 {
		t.Errorf("images %v", n.Status.Images)
	}
	if c := cond(n, api.NodeReady); c == nil || c.Status != api.ConditionTrue {
		t.Fatalf("Ready %+v", c)
	}
	// The runtime goes down: the next heartbeat says NotReady, with a
	// new transition time.
	rt.down = errors.New("connection refused")
	clk.Advance(10 * time.Second)
	if err := r.SyncOnce(ctx); err != nil {
		t.Fatal(err)
	}
	obj, _ = admin.Get(ctx, nodes, "", "edge-2")
	c := cond(obj.(*api.Node), api.NodeReady)
	if c == nil || c.Status != api.ConditionFalse || c.Reason != "RuntimeUnhealthy" || !c.LastTransitionTime.Time.Equal(clk.Now().Truncate(time.Second)) {
		t.Fatalf("after runtime down: %+v", c)
	}
	// The node may not register a Node by another name.
	other := &api.Node{TypeMeta: api.TypeMeta{APIVersion: "v1", Kind: "Node"}, ObjectMeta: api.ObjectMeta{Name: "edge-3"}}
	if _, err := nc.Create(ctx, other); !api.IsForbidden(err) {
		t.Fatalf("create another node: %v", err)
	}
	// Deleted by an admin: the next sync registers it again.
	if err := admin.Delete(ctx, nodes, "", "edge-2", client.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := r.SyncOnce(ctx); !api.IsNotFound(err) {
		t.Fatalf("heartbeat after delete: %v", err)
	}
	if err := r.SyncOnce(ctx); err != nil {
		t.Fatalf("re-register: %v", err)
	}
	if _, err := admin.Get(ctx, nodes, "", "edge-2"); err != nil {
		t.Fatal(err)
	}
}

func cond(n *api.Node, typ string) *api.NodeCondition {
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == typ {
			return &n.Status.Conditions[i]
		}
	}
	return nil
}

func TestParseFlags(t *testing.T) {
	if _, err := node.ParseResourceList("cpu=1,gpu=2"); err == nil {
		t.Error("unknown resource accepted")
	}
	if _, err := node.ParseResourceList("memory=-1Gi"); err == nil {
		t.Error("negative accepted")
	}
	if l, err := node.ParseLabels("a=b, zone=eu-1"); err != nil || l["zone"] != "eu-1" {
		t.Errorf("labels %v %v", l, err)
	}
	if _, err := node.ParseLabels("bad key=v"); err == nil {
		t.Error("bad label key accepted")
	}
	if _, err := node.ParseLabels("novalue"); err == nil {
		t.Error("label without = accepted")
	}
	// NodeRestriction: the server would refuse these from the node.
	if _, err := node.ParseLabels("node-role.kubernetes.io/control-plane="); err == nil {
		t.Error("a node-role label accepted for the node to set on itself")
	}
	if l, err := node.ParseLabels("topology.kubernetes.io/zone=z1,node.kubernetes.io/pool=a"); err != nil || len(l) != 2 {
		t.Errorf("allowed self-labels = %v, %v", l, err)
	}
}

func TestReadSystemInfo(t *testing.T) {
	si, err := node.ReadSystemInfo(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if si.CPUs < 1 || si.MemoryBytes == 0 || si.DiskBytes == 0 || si.Kernel == "" || si.Arch == "" {
		t.Fatalf("%+v", si)
	}
}

// TestRegistrarSendsLightHeartbeatsWhenNothingChanged: once registered,
// a heartbeat with unchanged conditions is the lightweight call (the
// stored Node is not written); a change, and the 5-minute snapshot, are
// full status writes.
func TestRegistrarSendsLightHeartbeatsWhenNothingChanged(t *testing.T) {
	info, admin := startServer(t)
	ctx := context.Background()
	nc := joinedClient(t, info, "edge-l")
	clk := clock.NewFake(time.Now())
	rt := &fakeRuntime{}
	r := node.NewRegistrar(node.Config{API: nc, NodeName: "edge-l", MaxPods: 10, Info: fixedInfo, Runtime: rt, Clock: clk})
	if err := r.SyncOnce(ctx); err != nil {
		t.Fatal(err)
	}
	nodes, _ := api.LookupResource("nodes")
	rv := func() string {
		obj, err := admin.Get(ctx, nodes, "", "edge-l")
		if err != nil {
			t.Fatal(err)
		}
		return obj.GetObjectMeta().ResourceVersion
	}
	lastBeat := func() time.Time {
		var u struct {
			LastHeartbeat *time.Time `json:"lastHeartbeat"`
		}
		if err := admin.DoJSON(ctx, "GET", "/api/v1/skiff/nodes/edge-l/usage", nil, &u); err != nil || u.LastHeartbeat == nil {
			t.Fatalf("usage: %v %+v", err, u)
		}
		return *u.LastHeartbeat
	}
	// The server's IPAM controller writes the new Node's pod CIDR on its
	// own: wait for that write, or it may land between rv0 and the beat.
	deadline := time.Now().Add(10 * time.Second)
	for {
		obj, err := admin.Get(ctx, nodes, "", "edge-l")
		if err != nil {
			t.Fatal(err)
		}
		if obj.(*api.Node).Spec.PodCIDR != "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the server gave edge-l no pod CIDR in 10 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	rv0, beat0 := rv(), lastBeat()
	clk.Advance(10 * time.Second)
	if err := r.SyncOnce(ctx); err != nil {
		t.Fatal(err)
	}
	if rv() != rv0 {
		t.Fatal("an unchanged heartbeat wrote the Node")
	}
	if !lastBeat().After(beat0) {
		t.Fatal("the lightweight heartbeat was not recorded")
	}
	// A change is written at once.
	rt.down = errors.New("gone")
	clk.Advance(10 * time.Second)
	if err := r.SyncOnce(ctx); err != nil {
		t.Fatal(err)
	}
	rv1 := rv()
	if rv1 == rv0 {
		t.Fatal("a condition change was not written")
	}
	// And a full write every 5 minutes even with nothing new (counted by
	// the server's request metrics: its own clock decides what it
	// stores).
	patches := func() string {
		resp, err := admin.Do(ctx, "GET", "/metrics", nil)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		for _, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(line, `skiff_http_requests_total{resource="nodes/status",verb="patch",code="200"}`) {
				return line
			}
		}
		return ""
	}
	p0 := patches()
	clk.Advance(4 * time.Minute)
	if err := r.SyncOnce(ctx); err != nil {
		t.Fatal(err)
	}
	if p := patches(); p != p0 {
		t.Fatalf("a full write before the snapshot was due: %s → %s", p0, p)
	}
	clk.Advance(2 * time.Minute)
	if err := r.SyncOnce(ctx); err != nil {
		t.Fatal(err)
	}
	if p := patches(); p == p0 {
		t.Fatal("no full write after 6 minutes")
	}
}

// FuzzParseJoinToken: no token panics, and one accepted has a 64-digit
// lower-case CA hash.
func FuzzParseJoinToken(f *testing.F) {
	f.Add("SKF1." + strings.Repeat("ab", 32) + ".id.secret")
	f.Add("SKF1...")
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		jt, err := node.ParseJoinToken(s)
		if err != nil {
			return
		}
		if len(jt.CAHash) != 64 || strings.ToLower(jt.CAHash) != jt.CAHash {
			t.Fatalf("accepted %q with CA hash %q", s, jt.CAHash)
		}
	})
}

// TestJoinWithServerListSkipsADeadServer: --server lists a dead server
// first; the join goes through the live one, node.json keeps the whole
// list, and the node's client fails over to the live server.
func TestJoinWithServerListSkipsADeadServer(t *testing.T) {
	info, _ := startServer(t)
	dead, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadURL := "https://" + dead.Addr().String()
	dead.Close()
	list := deadURL + "," + info.URL
	dir := t.TempDir()
	cred, err := node.Join(context.Background(), node.JoinConfig{Server: list, Token: joinToken(t, info), NodeName: "edge-1", Dir: dir})
	if err != nil {
		t.Fatalf("Join(%s) = %v; want nil", list, err)
	}
	kept, ok, err := node.LoadCredentials(dir)
	if err != nil || !ok || kept.Server != list {
		t.Fatalf("node.json server = %q, %v, %v; want %q", kept.Server, ok, err, list)
	}
	nc, err := client.New(cred.ClientConfig())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := nc.Do(ctx, "GET", "/api/v1/nodes/edge-1", nil); err == nil {
		t.Fatal("first request through the dead server succeeded")
	}
	resp, err := nc.Do(ctx, "GET", "/version", nil)
	if err != nil {
		t.Fatalf("request after failover = %v; want it served by %s", err, info.URL)
	}
	resp.Body.Close()
}

// TestJoinTokenServerListJoinsAndIsKept: --server names only a dead
// server, the join token lists the live one: the join goes through the
// token's server, node.json keeps both (--server's first), a restart
// without the token reuses the credential with the whole list, and the
// node's client fails over to the token's server. The same token without
// its list (an old token) still joins when --server names a live server.
func TestJoinTokenServerListJoinsAndIsKept(t *testing.T) {
	info, _ := startServer(t)
	dead, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadURL := "https://" + dead.Addr().String()
	dead.Close()
	tok, err := client.JoinTokenWithServers(joinToken(t, info), []string{info.URL})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	dir := t.TempDir()
	cred, err := node.Join(ctx, node.JoinConfig{Server: deadURL, Token: tok, NodeName: "edge-1", Dir: dir})
	if err != nil {
		t.Fatalf("Join(--server %s, token listing %s) = %v; want a join through the token's server", deadURL, info.URL, err)
	}
	want := deadURL + "," + info.URL
	if kept, ok, err := node.LoadCredentials(dir); err != nil || !ok || kept.Server != want {
		t.Fatalf("node.json server = %q, %v, %v; want %q", kept.Server, ok, err, want)
	}
	again, err := node.Join(ctx, node.JoinConfig{Server: deadURL, NodeName: "edge-1", Dir: dir})
	if err != nil || again.Credential != cred.Credential || again.Server != want {
		t.Fatalf("restart without the token = %v, %v; want the kept credential and list %q", again, err, want)
	}
	nc, err := client.New(again.ClientConfig())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := nc.Do(ctx, "GET", "/version", nil); err == nil {
		t.Fatal("first request through the dead server succeeded")
	}
	resp, err := nc.Do(ctx, "GET", "/version", nil)
	if err != nil {
		t.Fatalf("request after failover = %v; want it served by the token's server %s", err, info.URL)
	}
	resp.Body.Close()

	// An old token (no list) keeps working.
	if _, err := node.Join(ctx, node.JoinConfig{Server: info.URL, Token: joinToken(t, info), NodeName: "edge-2", Dir: t.TempDir()}); err != nil {
		t.Fatalf("Join with a token without a server list = %v", err)
	}
}

// TestJoinRetriesAfterALostAnswer: the credential an agent proposes is
// kept (0600) before any attempt and proposed again by every retry;
// when an earlier attempt reached the server but its answer was lost,
// the retry is let in with that credential (not refused as a second
// machine), and once joined the proposal file is gone.
func TestJoinRetriesAfterALostAnswer(t *testing.T) {
	info, _ := startServer(t)
	ctx := context.Background()
	dir, tok := t.TempDir(), joinToken(t, info)
	// Two attempts while the server cannot be reached.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "https://" + ln.Addr().String()
	ln.Close()
	var proposed string
	for i := range 2 {
		if _, err := node.Join(ctx, node.JoinConfig{Server: dead, Token: tok, NodeName: "edge-7", Dir: dir, Timeout: time.Second}); err == nil {
			t.Fatal("Join with the server away succeeded")
		}
		b, err := os.ReadFile(filepath.Join(dir, node.ProposedFile))
		if err != nil {
			t.Fatal(err)
		}
		st, _ := os.Stat(filepath.Join(dir, node.ProposedFile))
		if st.Mode().Perm() != 0o600 || !strings.HasPrefix(string(b), "SKN1.edge-7.") {
			t.Fatalf("proposal file mode %v, %d bytes; want 0600 and an SKN1.edge-7. credential", st.Mode(), len(b))
		}
		if i == 1 && strings.TrimSpace(string(b)) != proposed {
			t.Fatal("the second attempt proposed another credential")
		}
		proposed = strings.TrimSpace(string(b))
	}
	// An attempt the server took whose answer never came back: the
	// server holds the proposal as edge-7's credential.
	ca, err := os.ReadFile(info.CAPath)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := client.New(client.Config{Server: info.URL, CAData: ca})
	if err != nil {
		t.Fatal(err)
	}
	if err := raw.DoJSON(ctx, "POST", "/api/v1/join", map[string]string{"token": tok, "nodeName": "edge-7", "nodeCredential": proposed}, nil); err != nil {
		t.Fatalf("the lost attempt: %v", err)
	}
	cred, err := node.Join(ctx, node.JoinConfig{Server: info.URL, Token: tok, NodeName: "edge-7", Dir: dir})
	if err != nil {
		t.Fatalf("retry after the lost answer: %v; want it let in", err)
	}
	if cred.Credential != proposed {
		t.Fatal("the retry got another credential than the one it proposed")
	}
	if _, err := os.Stat(filepath.Join(dir, node.ProposedFile)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("proposal file after the join: %v; want it removed", err)
	}
	// Another machine, with its own proposal, is still refused.
	if _, err := node.Join(ctx, node.JoinConfig{Server: info.URL, Token: tok, NodeName: "edge-7", Dir: t.TempDir()}); !api.IsForbidden(err) {
		t.Fatalf("second machine's join = %v; want 403", err)
	}
}
