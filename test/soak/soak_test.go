package soak

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"image/png"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/api/client"
	"github.com/skiffhq/skiff/internal/testenv"
	"github.com/skiffhq/skiff/test/faults/local"
)

func TestMain(m *testing.M) {
	code := m.Run()
	local.RemoveBinary()
	os.Exit(code)
}

// minSamples is the fewest samples a run charts.
const minSamples = 5

// settings are the soak's knobs, from the environment (make soak sets
// them): SKIFF_SOAK_DURATION (default 20s, the short form in go test),
// SKIFF_SOAK_RATE pod creates per second (10), SKIFF_SOAK_OUT where
// soak.csv and soak.png go (a temporary directory), SKIFF_SOAK_EVENT_TTL
// the server's --event-ttl (its default, 1h, when unset).
type settings struct {
	duration, interval, lifetime time.Duration
	rate                         float64
	out                          string
	eventTTL                     string
}

func loadSettings(t *testing.T) settings {
	s := settings{duration: 20 * time.Second, rate: 10, lifetime: 5 * time.Second}
	if v := os.Getenv("SKIFF_SOAK_DURATION"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			t.Fatalf("SKIFF_SOAK_DURATION=%q: want a positive duration such as 1h", v)
		}
		s.duration = d
	}
	if v := os.Getenv("SKIFF_SOAK_RATE"); v != "" {
		r, err := strconv.ParseFloat(v, 64)
		if err != nil || r <= 0 || r > 100 {
			t.Fatalf("SKIFF_SOAK_RATE=%q: want creates per second, 0 < rate <= 100", v)
		}
		s.rate = r
	}
	if v := os.Getenv("SKIFF_SOAK_EVENT_TTL"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < time.Minute {
			t.Fatalf("SKIFF_SOAK_EVENT_TTL=%q: want a duration of at least 1m, such as 10m", v)
		}
		s.eventTTL = d.String()
	}
	s.interval = min(max(s.duration/120, 2*time.Second), 30*time.Second)
	s.out = os.Getenv("SKIFF_SOAK_OUT")
	if s.out == "" {
		s.out = t.TempDir()
	}
	// Set-up and tear-down take a few minutes at most on a busy box.
	margin := 3 * time.Minute
	if s.duration >= 10*time.Minute {
		margin = 10 * time.Minute
	}
	if dl, ok := t.Deadline(); ok && time.Until(dl) < s.duration+margin {
		t.Fatalf("the test deadline (-timeout) leaves %v; the soak needs %v and %v to set up and tear down", time.Until(dl).Round(time.Second), s.duration, margin)
	}
	return s
}

// TestSoak churns pods on a real server and agent (see the package
// comment) and samples their storage, memory and goroutines.
func TestSoak(t *testing.T) {
	cfg := loadSettings(t)
	opts := local.Options{AgentArgs: []string{"--max-pods", "250", "--log-level", "warn"}}
	if cfg.eventTTL != "" {
		opts.ServerArgs = []string{"--event-ttl", cfg.eventTTL}
	}
	c := local.Start(t, opts)
	ctx := context.Background()
	for _, name := range []string{"soak-a", "soak-b"} {
		if err := c.Admin.DoJSON(ctx, "POST", "/apis/apps/v1/namespaces/default/deployments", deployment(name, 2), nil); err != nil {
			t.Fatalf("create deployment %s: %v", name, err)
		}
	}
	t.Logf("soak: %v at %.0f creates/s (and as many deletes), pods live %v, sampling every %v; output in %s",
		cfg.duration, cfg.rate, cfg.lifetime, cfg.interval, cfg.out)

	ch := &churn{c: c, rate: cfg.rate, lifetime: cfg.lifetime}
	// The churn lasts the duration and until minSamples are in: on a
	// loaded box one sample can take seconds, and a short run of few
	// samples would chart nothing. The sampler ends it, at the latest a
	// minute past the duration.
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); ch.run(runCtx) }()
	go func() { defer wg.Done(); scale(runCtx, t, c) }()
	var samples []Sample
	start := time.Now()
	tick := time.NewTicker(cfg.interval)
	for {
		s, err := sample(ctx, c, time.Since(start))
		if err != nil {
			t.Errorf("sample: %v", err)
		} else {
			s.Created, s.Deleted = ch.counts()
			samples = append(samples, s)
			t.Logf("%6.0fs db %.1f MiB wal %.1f MiB rss server %.1f agent %.1f MiB goroutines server %d agent %d pods %d running %d shims %d created %d",
				s.At.Seconds(), float64(s.DBBytes)/mib, float64(s.WALBytes)/mib, float64(s.ServerRSS)/mib, float64(s.AgentRSS)/mib,
				s.ServerGoroutines, s.AgentGoroutines, s.Pods, s.Containers, s.Shims, s.Created)
		}
		// The sample after the churn ends makes the last of minSamples.
		if el := time.Since(start); el >= cfg.duration && (len(samples) >= minSamples-1 || el >= cfg.duration+time.Minute) {
			break
		}
		<-tick.C
	}
	stop()
	ran := time.Since(start)
	tick.Stop()
	wg.Wait()
	if s, err := sample(ctx, c, time.Since(start)); err == nil {
		s.Created, s.Deleted = ch.counts()
		samples = append(samples, s)
	}

	created, deleted := ch.counts()
	t.Logf("churn: %d created, %d deleted (%.1f creates/s), %d failed requests, %d creates skipped at the cap",
		created, deleted, float64(created)/ran.Seconds(), ch.failed(), ch.skipped())
	stats := Summarise(samples)
	t.Logf("summary (start is after the first %.0f%% of the run):\n%s", Warmup*100, FormatSummary(stats))
	writeOutputs(t, cfg.out, samples)

	if want := int(cfg.rate * cfg.duration.Seconds() / 2); created < want {
		t.Errorf("created %d pods, fewer than half the target %d", created, want)
	}
	if f := ch.failed(); f*100 > created+deleted {
		t.Errorf("%d of %d churn requests failed (over 1%%)", f, created+deleted)
	}
	if cfg.duration >= 10*time.Minute {
		for _, p := range Growth(samples) {
			t.Error(p)
		}
	}

	// Tear down, then nothing may be left on the machine.
	for _, name := range []string{"soak-a", "soak-b"} {
		if err := c.Admin.DoJSON(ctx, "DELETE", "/apis/apps/v1/namespaces/default/deployments/"+name, nil, nil); err != nil {
			t.Errorf("delete deployment %s: %v", name, err)
		}
	}
	ch.deleteAll(ctx, t)
	st := c.CheckInvariants(testenv.Bound(3 * time.Minute))
	if len(st.Want) != 0 {
		local.Eventually(t, 3*time.Minute, "every soak pod gone", func() bool {
			s, err := c.Snapshot(ctx)
			return err == nil && len(s.Want) == 0 && len(s.Problems(false)) == 0
		})
	}
}

// writeOutputs writes soak.csv and soak.png and checks the PNG reads
// back.
func writeOutputs(t *testing.T, dir string, samples []Sample) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var csvBuf bytes.Buffer
	if err := WriteCSV(&csvBuf, samples); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "soak.csv"), csvBuf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	var pngBuf bytes.Buffer
	if err := png.Encode(&pngBuf, Render(Charts(samples), 2)); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "soak.png"), pngBuf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(pngBuf.Bytes()))
	if err != nil {
		t.Fatalf("soak.png does not decode: %v", err)
	}
	if b := img.Bounds(); b.Dx() != 2*panelW || b.Dy() != 2*panelH {
		t.Errorf("soak.png is %v", b)
	}
	if rows := strings.Count(csvBuf.String(), "\n"); rows != len(samples)+1 || len(samples) < minSamples {
		t.Errorf("soak.csv has %d lines for %d samples (want at least %d)", rows, len(samples), minSamples)
	}
	t.Logf("wrote %s and %s", filepath.Join(dir, "soak.csv"), filepath.Join(dir, "soak.png"))
}

// sample reads every figure once.
func sample(ctx context.Context, c *local.Cluster, at time.Duration) (Sample, error) {
	s := Sample{At: at}
	db := filepath.Join(c.ServerDataDir, "server", "state.db")
	if fi, err := os.Stat(db); err == nil {
		s.DBBytes = fi.Size()
	}
	if fi, err := os.Stat(db + "-wal"); err == nil {
		s.WALBytes = fi.Size()
	}
	var err error
	if s.ServerRSS, err = rss(c.Server().Pid()); err != nil {
		return s, err
	}
	if s.AgentRSS, err = rss(c.Agent().Pid()); err != nil {
		return s, err
	}
	if s.ServerGoroutines, err = goroutines(ctx, c.Admin, "/metrics"); err != nil {
		return s, fmt.Errorf("server: %w", err)
	}
	if s.AgentGoroutines, err = goroutines(ctx, c.Admin, "/api/v1/nodes/"+local.NodeName+"/proxy/metrics"); err != nil {
		return s, fmt.Errorf("agent: %w", err)
	}
	st, err := c.Snapshot(ctx)
	if err != nil {
		return s, err
	}
	s.Pods, s.Containers = len(st.Want), st.RunningCount()
	s.Shims = len(testenv.Shims(c.Containerd.Socket))
	return s, nil
}

// rss is a process's resident set from /proc, in bytes.
func rss(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("no VmRSS in /proc/%d/status", pid)
}

// goroutines reads go_goroutines from a Prometheus text page.
func goroutines(ctx context.Context, c *client.Client, path string) (int, error) {
	resp, err := c.Do(ctx, "GET", path, nil)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return 0, fmt.Errorf("GET %s: %s", path, resp.Status)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "go_goroutines "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return int(f), err
		}
	}
	return 0, fmt.Errorf("GET %s: no go_goroutines", path)
}

// scale sets each Deployment to 1 to 6 replicas every 15 s.
func scale(ctx context.Context, t *testing.T, c *local.Cluster) {
	deps, _ := api.LookupResource("deployments")
	tick := time.NewTicker(15 * time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		for _, name := range []string{"soak-a", "soak-b"} {
			body := fmt.Sprintf(`{"spec":{"replicas":%d}}`, 1+rand.IntN(6))
			if _, err := c.Admin.Patch(ctx, deps, "default", name, client.MergePatchType, []byte(body)); err != nil && ctx.Err() == nil {
				t.Errorf("scale %s: %v", name, err)
			}
		}
	}
}

func deployment(name string, replicas int) map[string]any {
	return map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": name, "namespace": "default"},
		"spec": map[string]any{
			"replicas": replicas,
			"selector": map[string]any{"matchLabels": map[string]any{"app": name}},
			"template": map[string]any{
				"metadata": map[string]any{"labels": map[string]any{"app": name}},
				"spec": map[string]any{
					"terminationGracePeriodSeconds": 0,
					"containers": []any{map[string]any{"name": "main", "image": testenv.BusyboxRef,
						"imagePullPolicy": "Never", "command": []string{"sleep", "3600"}}},
				},
			},
		},
	}
}
