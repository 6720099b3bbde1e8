package config

import (
	"path/filepath"
	"testing"

	"github.com/skiffhq/skiff/agent/internal/agenttest"
	"github.com/skiffhq/skiff/api/client"
	"github.com/skiffhq/skiff/internal/pgtest"
)

// TestAPISourceFailsOverBetweenServersPostgres: two servers share one
// PostgreSQL database; the agent's client lists both. When the server it
// watches through stops, the source moves to the other one and resumes
// its watch from its resourceVersion: the pods it has stay (no REMOVE, no
// relist) and a pod bound later arrives.
func TestAPISourceFailsOverBetweenServersPostgres(t *testing.T) {
	cluster := pgtest.Start(t, pgtest.Options{})
	ds := cluster.Database(t)
	keyFile := filepath.Join(t.TempDir(), "encryption.key") // the servers share one
	a := agenttest.StartServerOn(t, ds, keyFile)
	b := agenttest.StartServerOn(t, ds, keyFile)
	cfg := a.NodeConfig("n1")
	cfg.Server = a.Info.URL + "," + b.Info.URL
	nc, err := client.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	a.CreatePod(agenttest.Pod("a", "n1"))
	sink, clk := startAPISource(t, nc)
	expectUpdate(t, sink.Merger, "ADD api a")

	a.Stop()
	b.CreatePod(agenttest.Pod("b", "n1"))
	var got []string
	pumpUntil(t, clk, testBackoffMax, "the pod bound after the failover", func() bool {
		select {
		case u := <-sink.Updates():
			got = append(got, describe(u)...)
		default:
		}
		return len(got) >= 1
	})
	if got[0] != "ADD api b" {
		t.Fatalf("after the failover: %q; want ADD api b", got)
	}
	if n := sink.sets.Load(); n != 1 {
		t.Errorf("the source set its whole state %d times; want 1 (the watch resumed, no relist)", n)
	}
	if c := nc.Server(); c != b.Info.URL {
		t.Errorf("client uses %s; want %s", c, b.Info.URL)
	}
	if got := drain(sink.Merger); len(got) != 0 {
		t.Errorf("extra updates %q", got)
	}
}
