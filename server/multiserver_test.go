package server

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/internal/clock"
	"github.com/skiffhq/skiff/internal/pgtest"
	"github.com/skiffhq/skiff/internal/testenv"
)

// Environment of the server child: its datastore and data dir.
const (
	childDatastoreEnv = "SKIFF_SERVER_CHILD_DATASTORE"
	childDataDirEnv   = "SKIFF_SERVER_CHILD_DATA_DIR"
	childKeyFileEnv   = "SKIFF_SERVER_CHILD_KEY_FILE"
)

// TestPostgresServerChild is not a test of its own: the multi-server
// test runs the test binary with only this test selected and the
// environment set, to have a server it can kill -9. It serves until
// killed and prints "READY <url>" once it listens.
func TestPostgresServerChild(t *testing.T) {
	ds := os.Getenv(childDatastoreEnv)
	if ds == "" {
		return
	}
	err := Run(context.Background(), Config{
		DataDir: os.Getenv(childDataDirEnv), Listen: "127.0.0.1:0", Datastore: ds, Clock: clock.Real{},
		EncryptionKeyFile: os.Getenv(childKeyFileEnv),
		DisableAgent:      true, DisableControllers: true,
		Ready: func(i Info) { fmt.Printf("READY %s\n", i.URL) },
	})
	fmt.Fprintln(os.Stderr, "child server:", err)
	os.Exit(3)
}

// remote is an API client of one server, trusting its data dir's CA.
type remote struct {
	t      *testing.T
	url    string
	token  string
	client *http.Client
}

func newRemote(t *testing.T, url, dataDir string) *remote {
	t.Helper()
	caPEM, err := os.ReadFile(filepath.Join(dataDir, "server", tlsDirName, "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	tok, err := os.ReadFile(filepath.Join(dataDir, "server", adminTokenName))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	return &remote{t: t, url: url, token: strings.TrimSpace(string(tok)), client: &http.Client{
		Timeout:   10 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}},
	}}
}

// do sends a request; err is a transport failure (a dead server).
func (r *remote) do(method, path, body string) (int, []byte, error) {
	req, err := http.NewRequest(method, r.url+path, strings.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+r.token)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := r.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

func (r *remote) must(method, path, body string, want int) []byte {
	r.t.Helper()
	code, b, err := r.do(method, path, body)
	if err != nil || code != want {
		r.t.Fatalf("%s %s = %d %s, %v; want %d", method, path, code, bytes.TrimSpace(b), err, want)
	}
	return b
}

func (r *remote) podNode(name string) string {
	r.t.Helper()
	var p api.Pod
	if err := json.Unmarshal(r.must("GET", "/api/v1/namespaces/default/pods/"+name, "", 200), &p); err != nil {
		r.t.Fatal(err)
	}
	return p.Spec.NodeName
}

// startChildServer runs a server in a child process and returns its
// client and the process, which the test kills. keyFile is its
// --encryption-key-file: the servers of one datastore share one.
func startChildServer(t *testing.T, ds, dataDir, keyFile string) (*remote, *exec.Cmd) {
	t.Helper()
	u, cmd := testenv.StartChild(t, "TestPostgresServerChild",
		childDatastoreEnv+"="+ds, childDataDirEnv+"="+dataDir, childKeyFileEnv+"="+keyFile)
	return newRemote(t, u, dataDir), cmd
}

// TestPostgresTwoServersKillLeader runs two servers on one PostgreSQL
// database: A in a child process (the first, so the leader), B in this
// one. They share one CA and admin token; a pod created through B is
// scheduled by A. Under a load of writes through both, A is killed with
// SIGKILL: no acknowledged write is lost, B takes the lease within 5 s
// and schedules a new pod.
func TestPostgresTwoServersKillLeader(t *testing.T) {
	cluster := pgtest.Start(t, pgtest.Options{})
	ds := cluster.Database(t)
	dirA := t.TempDir()
	keyFile := filepath.Join(t.TempDir(), "encryption.key")
	a, childA := startChildServer(t, ds, dirA, keyFile)

	now := time.Now().UTC().Format(time.RFC3339)
	a.must("POST", "/api/v1/nodes", `{"apiVersion":"v1","kind":"Node","metadata":{"name":"edge-1"}}`, 201)
	a.must("PUT", "/api/v1/nodes/edge-1/status", fmt.Sprintf(`{"apiVersion":"v1","kind":"Node","metadata":{"name":"edge-1"},`+
		`"status":{"capacity":{"cpu":"2","memory":"1Gi","pods":"100"},"allocatable":{"cpu":"2","memory":"1Gi","pods":"100"},`+
		`"conditions":[{"type":"Ready","status":"True","lastHeartbeatTime":%q}]}}`, now), 200)
	pod := func(name string) string {
		return `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"` + name + `"},"spec":{"containers":[{"name":"c","image":"busybox"}]}}`
	}
	waitBound := func(r *remote, name string, within time.Duration) time.Duration {
		t.Helper()
		start := time.Now()
		for r.podNode(name) != "edge-1" {
			if time.Since(start) > within {
				t.Fatalf("pod %s not bound within %v", name, within)
			}
			time.Sleep(20 * time.Millisecond)
		}
		return time.Since(start)
	}
	a.must("POST", "/api/v1/namespaces/default/pods", pod("p1"), 201)
	waitBound(a, "p1", 20*time.Second)

	b := startHarnessWith(t, "", nil, func(c *Config) { c.Datastore, c.EncryptionKeyFile, c.Clock = ds, keyFile, clock.Real{} })
	if ca := b.readFile("tls/ca.crt"); ca != readFileT(t, filepath.Join(dirA, "server/tls/ca.crt")) {
		t.Fatal("the servers present different CAs")
	}
	rb := newRemote(t, b.info.URL, b.dir)
	if rb.token != a.token {
		t.Fatal("the servers have different admin tokens")
	}
	if b.joinToken() != strings.TrimSpace(readFileT(t, filepath.Join(dirA, "server", joinTokenName))) {
		t.Fatal("the servers have different default join tokens")
	}
	if b.readFile(serviceAccountKeyName) != readFileT(t, filepath.Join(dirA, "server", serviceAccountKeyName)) {
		t.Fatal("the servers have different service account signing keys: a token one issues would not work on the other")
	}
	rb.must("POST", "/api/v1/namespaces/default/pods", pod("p2"), 201)
	waitBound(rb, "p2", 20*time.Second) // scheduled by A, the leader

	// Load: writers on both servers record every acknowledged create.
	var acked sync.Map
	var stop atomic.Bool
	var wg sync.WaitGroup
	for i, r := range []*remote{a, a, rb, rb} {
		wg.Go(func() {
			for n := 0; !stop.Load(); n++ {
				name := fmt.Sprintf("w%d-%d", i, n)
				code, _, err := r.do("POST", "/api/v1/namespaces/default/configmaps",
					`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"`+name+`"},"data":{"k":"v"}}`)
				if err == nil && code == 201 {
					acked.Store(name, true)
				}
				if err != nil {
					time.Sleep(10 * time.Millisecond) // A is dead: its writers idle
				}
			}
		})
	}
	time.Sleep(500 * time.Millisecond)
	killed := time.Now()
	if err := childA.Process.Kill(); err != nil { // SIGKILL
		t.Fatal(err)
	}
	rb.must("POST", "/api/v1/namespaces/default/pods", pod("p3"), 201)
	waitBound(rb, "p3", 5*time.Second+5*time.Second)
	failover := time.Since(killed)
	time.Sleep(300 * time.Millisecond)
	stop.Store(true)
	wg.Wait()
	t.Logf("leader killed; a pod created right after was bound by the new leader %v later", failover)
	if failover > 6*time.Second {
		t.Errorf("failover took %v; want the new leader within 5s", failover)
	}
	n := 0
	acked.Range(func(k, _ any) bool {
		n++
		if code, body, err := rb.do("GET", "/api/v1/namespaces/default/configmaps/"+k.(string), ""); err != nil || code != 200 {
			t.Errorf("acknowledged create %s lost: %d %s %v", k, code, body, err)
		}
		return true
	})
	if n < 10 {
		t.Errorf("only %d writes acknowledged; the load did not run", n)
	}
	t.Logf("%d acknowledged writes present after kill -9 of the leader", n)
}

func readFileT(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
