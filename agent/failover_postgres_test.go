package agent_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skiffhq/skiff/agent"
	"github.com/skiffhq/skiff/agent/internal/agenttest"
	"github.com/skiffhq/skiff/agent/node"
	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/internal/clock"
	"github.com/skiffhq/skiff/internal/pgtest"
	"github.com/skiffhq/skiff/internal/testenv"
	"github.com/skiffhq/skiff/server"
)

// Environment of the server child process of the failover test.
const (
	serverChildDatastoreEnv = "SKIFF_AGENT_TEST_SERVER_DATASTORE"
	serverChildDirEnv       = "SKIFF_AGENT_TEST_SERVER_DIR"
	serverChildKeyEnv       = "SKIFF_AGENT_TEST_SERVER_KEY"
)

// TestPostgresServerChildProcess is not a test of its own: the failover
// test runs this test binary with only it selected and the environment
// set, to have a server it can kill -9. It serves (the API only) until
// killed and prints "READY <url>" once it listens.
func TestPostgresServerChildProcess(t *testing.T) {
	ds := os.Getenv(serverChildDatastoreEnv)
	if ds == "" {
		return
	}
	err := server.Run(context.Background(), server.Config{
		DataDir: os.Getenv(serverChildDirEnv), EncryptionKeyFile: os.Getenv(serverChildKeyEnv),
		Listen: "127.0.0.1:0", Datastore: ds, Clock: clock.Real{},
		DisableAgent: true, DisableScheduler: true, DisableControllers: true,
		Ready: func(i server.Info) { fmt.Printf("READY %s\n", i.URL) },
	})
	fmt.Fprintln(os.Stderr, "child server:", err)
	os.Exit(3)
}

// startServerProcess runs a server on ds in a child process and returns
// its URL and the process, which the test kills.
func startServerProcess(t *testing.T, ds, dir, keyFile string) (string, *exec.Cmd) {
	t.Helper()
	return testenv.StartChild(t, "TestPostgresServerChildProcess",
		serverChildDatastoreEnv+"="+ds, serverChildDirEnv+"="+dir, serverChildKeyEnv+"="+keyFile)
}

// TestPostgresAgentFailsOverWhenItsServerIsKilled: two servers on one
// PostgreSQL database, A a child process, B in this one; a real agent
// (its own containerd) lists A first, so it joins and works through A.
// A is killed with SIGKILL. The agent fails over to B: its running pod
// is untouched (same container, no restart), and a pod created through
// B afterwards runs.
func TestPostgresAgentFailsOverWhenItsServerIsKilled(t *testing.T) {
	cluster := pgtest.Start(t, pgtest.Options{})
	ds := cluster.Database(t)
	keyFile := filepath.Join(t.TempDir(), "encryption.key")
	urlA, childA := startServerProcess(t, ds, t.TempDir(), keyFile)
	b := agenttest.StartServerOn(t, ds, keyFile)
	ta := startTestAgentWith(t, b, nil, func(c *agent.Config) { c.Server = urlA + "," + b.Info.URL })
	agenttest.Eventually(t, "node registered", ta.running.Registered)
	// The agent's client uses the first server of its list until it fails.
	if cred, ok, err := node.LoadCredentials(filepath.Join(ta.cfg.DataDir, "agent")); err != nil || !ok || !strings.HasPrefix(cred.Server, urlA+",") {
		t.Fatalf("node.json server list = %q, %v, %v; want A first", cred.Server, ok, err)
	}

	b.CreatePod(busyboxPod("steady", "sleep 3600"))
	before := waitPod(t, b, "steady", "Running", phase(api.PodRunning)).Status.ContainerStatuses[0]

	killed := time.Now()
	if err := childA.Process.Kill(); err != nil { // SIGKILL
		t.Fatal(err)
	}
	b.CreatePod(busyboxPod("after", "sleep 3600"))
	waitPod(t, b, "after", "Running", phase(api.PodRunning))
	failover := time.Since(killed)
	t.Logf("server A killed; a pod created through B ran %v later", failover)

	time.Sleep(2 * time.Second) // let the agent act on anything it wrongly would
	after := waitPod(t, b, "steady", "Running", phase(api.PodRunning)).Status.ContainerStatuses[0]
	if after.ContainerID != before.ContainerID || after.RestartCount != 0 {
		t.Errorf("steady after the failover: container %s, %d restarts; want %s untouched", after.ContainerID, after.RestartCount, before.ContainerID)
	}
	if before.State.Running == nil || after.State.Running == nil || !after.State.Running.StartedAt.Equal(before.State.Running.StartedAt.Time) {
		t.Errorf("steady's container start changed across the failover: %+v then %+v", before.State.Running, after.State.Running)
	}
}
