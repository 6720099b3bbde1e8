package agentload

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

var idleFor = flag.Duration("agentload.idle", 30*time.Second, "how long BenchmarkAgentIdleRSS lets the agent idle with its pods before reading its RSS")

// procStatusKB reads the named fields (VmRSS, RssAnon, RssFile, …) of
// /proc/<pid>/status, in kB.
func procStatusKB(tb testing.TB, pid int, fields ...string) map[string]float64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		tb.Fatal(err)
	}
	out := map[string]float64{}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		for _, f := range fields {
			if k == f {
				kb, err := strconv.ParseFloat(strings.Fields(v)[0], 64)
				if err != nil {
					tb.Fatal(err)
				}
				out[f] = kb
			}
		}
	}
	return out
}

// BenchmarkAgentIdleRSS measures a real `skiff agent` joined to a real
// server with three running pods, after -agentload.idle of idling: its
// RSS, split into anonymous memory (heap, stacks, written data) and
// file-backed pages (the binary's text and read-only data faulted in).
// The goal is an idle agent ≤ 25 MB. The agent runs from its own
// copy of the binary (its own page-cache pages, as on a node without a
// server), and drops its start-up pages 15 s after going online.
func BenchmarkAgentIdleRSS(b *testing.B) {
	for i := 0; i < b.N; i++ {
		c := start(b)
		ctx, cancel := context.WithCancel(context.Background())
		seen := c.watchRunning(ctx)
		for j := 0; j < 3; j++ {
			c.runOne(ctx, b, seen, fmt.Sprintf("idle-%d", j))
		}
		time.Sleep(*idleFor)
		st := procStatusKB(b, c.agent.Process.Pid, "VmRSS", "RssAnon", "RssFile")
		b.ReportMetric(st["VmRSS"]/1024, "RSS-MB")
		b.ReportMetric(st["RssAnon"]/1024, "RssAnon-MB")
		b.ReportMetric(st["RssFile"]/1024, "RssFile-MB")
		cancel()
	}
}
