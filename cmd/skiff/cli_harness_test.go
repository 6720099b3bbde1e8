package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"github.com/skiffhq/skiff/internal/testenv"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/api/client"
	"github.com/skiffhq/skiff/internal/clock"
	"github.com/skiffhq/skiff/server"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// cliHarness is a real server (server.Run on a real SQLite file, TLS on
// 127.0.0.1:0) driven by a fake clock, and the CLI run in-process against
// it with its own fake clock, so ages in tables are stable.
type cliHarness struct {
	t      *testing.T
	t0     time.Time   // the server clock's start
	srvClk *clock.Fake // the server's clock: creation timestamps
	cliClk *clock.Fake // the CLI's clock: ages are measured from it
	info   server.Info
	admin  *client.Client
	env    map[string]string
	dir    string // a scratch directory for manifests
	// names maps run-specific strings (token IDs) to stable stand-ins
	// for golden files.
	names map[string]string
}

func startCLIHarness(t *testing.T) *cliHarness {
	t.Helper()
	t0 := time.Now().UTC().Truncate(time.Second)
	h := &cliHarness{t: t, t0: t0, srvClk: clock.NewFake(t0), cliClk: clock.NewFake(t0.Add(10 * time.Minute)), dir: t.TempDir(), names: map[string]string{}}
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan server.Info, 1)
	done := make(chan error, 1)
	go func() {
		done <- server.Run(ctx, server.Config{DataDir: t.TempDir(), Listen: "127.0.0.1:0", Clock: h.srvClk, DisableScheduler: true, DisableControllers: true, DisableAgent: true, Ready: func(i server.Info) { ready <- i }})
	}()
	select {
	case h.info = <-ready:
	case err := <-done:
		cancel()
		t.Fatalf("server.Run failed at start: %v", err)
	case <-time.After(30 * time.Second):
		cancel()
		t.Fatal("server did not become ready in 30s")
	}
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("server.Run returned %v at shutdown", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("server.Run did not return within 30s of cancel")
		}
	})
	cfg, err := client.LoadConfig(h.info.ClientConfigPath)
	if err != nil {
		t.Fatal(err)
	}
	if h.admin, err = client.New(cfg); err != nil {
		t.Fatal(err)
	}
	h.env = map[string]string{client.EnvConfig: h.info.ClientConfigPath}
	return h
}

// result is what one CLI run produced.
type result struct {
	args           []string
	code           int
	stdout, stderr string
}

// run runs the CLI with args and empty stdin.
func (h *cliHarness) run(args ...string) result {
	h.t.Helper()
	return h.runStdin("", args...)
}

func (h *cliHarness) runStdin(stdin string, args ...string) result {
	h.t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), h.cliEnv(&out, &errb, stdin), args)
	return result{args: args, code: code, stdout: out.String(), stderr: errb.String()}
}

func (h *cliHarness) cliEnv(stdout, stderr interface{ Write([]byte) (int, error) }, stdin string) *cliEnv {
	return &cliEnv{stdout: stdout, stderr: stderr, stdin: strings.NewReader(stdin), getenv: func(k string) string { return h.env[k] }, clock: h.cliClk}
}

// apply creates the objects of a YAML stream through the admin client.
func (h *cliHarness) create(manifests string) {
	h.t.Helper()
	for _, doc := range api.SplitYAML([]byte(manifests)) {
		obj, err := api.DecodeObject(doc)
		if err != nil {
			h.t.Fatalf("fixture %s: %v", doc, err)
		}
		if _, err := h.admin.Create(context.Background(), obj); err != nil {
			h.t.Fatalf("create fixture %s: %v", obj.GetObjectMeta().Name, err)
		}
		if n, ok := obj.(*api.Node); ok {
			// The server's node IPAM writes spec.podCIDR right after a
			// Node appears; wait for it so resourceVersions in golden
			// files do not depend on who wins the race.
			h.waitPodCIDR(n.Name)
		}
	}
}

// patchStatus merge-patches the status of one object.
func (h *cliHarness) patchStatus(kind, ns, name, patch string) {
	h.t.Helper()
	res, ok := api.LookupResource(kind)
	if !ok {
		h.t.Fatalf("no kind %q", kind)
	}
	if _, err := h.admin.PatchStatus(context.Background(), res, ns, name, client.MergePatchType, []byte(patch)); err != nil {
		h.t.Fatalf("patch status of %s %s: %v", kind, name, err)
	}
}

// ts is the RFC 3339 form of t0+d, for fixtures.
func (h *cliHarness) ts(d time.Duration) string { return h.t0.Add(d).Format(time.RFC3339) }

// writeFile writes a manifest into the scratch directory and returns its path.
func (h *cliHarness) writeFile(name, content string) string {
	h.t.Helper()
	p := filepath.Join(h.dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		h.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		h.t.Fatal(err)
	}
	return p
}

var (
	uidRE     = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	rfc3339RE = regexp.MustCompile(`\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z`)
	rfc1123RE = regexp.MustCompile(`[A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} [+-]\d{4}`)
	tokenRE   = regexp.MustCompile(`SKF1\.[0-9a-f]+\.([0-9a-z]+)\.[0-9A-Za-z_-]+`)
	portRE    = regexp.MustCompile(`127\.0\.0\.1:\d+`)
)

// scrub replaces what differs between runs: UIDs, timestamps (as offsets
// from t0), join tokens, the server port and the scratch directory.
func (h *cliHarness) scrub(s string) string {
	s = strings.ReplaceAll(s, h.dir, "$DIR")
	s = tokenRE.ReplaceAllStringFunc(s, func(m string) string {
		id := tokenRE.FindStringSubmatch(m)[1]
		if n, ok := h.names[id]; ok {
			id = n
		}
		return "SKF1.<hash>." + id + ".<secret>"
	})
	for from, to := range h.names {
		s = strings.ReplaceAll(s, from, to)
	}
	s = uidRE.ReplaceAllString(s, "<uid>")
	s = portRE.ReplaceAllString(s, "127.0.0.1:<port>")
	s = rfc3339RE.ReplaceAllStringFunc(s, func(m string) string {
		t, err := time.Parse(time.RFC3339Nano, m)
		if err != nil {
			return m
		}
		return "<t0" + offset(t.Sub(h.t0)) + ">"
	})
	return rfc1123RE.ReplaceAllStringFunc(s, func(m string) string {
		t, err := time.Parse(time.RFC1123Z, m)
		if err != nil {
			return m
		}
		return "<t0" + offset(t.Sub(h.t0)) + ">"
	})
}

func offset(d time.Duration) string {
	switch {
	case d == 0:
		return ""
	case d < 0:
		return d.String()
	}
	return "+" + d.String()
}

// golden compares r, scrubbed, with testdata/<name>.golden (rewritten
// with -update).
func (h *cliHarness) golden(name string, r result) {
	h.t.Helper()
	got := h.scrub(fmt.Sprintf("$ skiff %s\nexit: %d\n--- stdout\n%s--- stderr\n%s", strings.Join(r.args, " "), r.code, r.stdout, r.stderr))
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			h.t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			h.t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		h.t.Fatalf("%v (run with -update to create it)", err)
	}
	if got != string(want) {
		h.t.Errorf("skiff %s: output differs from %s\n--- got\n%s\n--- want\n%s", strings.Join(r.args, " "), path, got, want)
	}
}

// syncBuffer is a bytes.Buffer safe for concurrent use.
type syncBuffer = testenv.SyncBuffer

// waitFor polls cond (real I/O of a concurrent command) until it holds,
// failing the test after 20s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitPodCIDR waits until the server's IPAM has given node its podCIDR.
func (h *cliHarness) waitPodCIDR(node string) {
	h.t.Helper()
	nodes, _ := api.LookupResource("nodes")
	deadline := time.Now().Add(10 * time.Second)
	for {
		obj, err := h.admin.Get(context.Background(), nodes, "", node)
		if err == nil && obj.(*api.Node).Spec.PodCIDR != "" {
			return
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("node %s got no podCIDR: %v", node, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
