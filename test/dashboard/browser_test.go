package dashboard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/api/client"
	"github.com/skiffhq/skiff/internal/clock"
	"github.com/skiffhq/skiff/server"
)

// browserTimeout bounds the whole browser session.
const browserTimeout = 90 * time.Second

// waitTimeout bounds one wait for the page to show something.
const waitTimeout = 15 * time.Second

// findChromium returns Debian's chromium, or fails the test saying how to
// get it.
func findChromium(t testing.TB) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if _, err := os.Stat("/usr/bin/chromium"); err == nil {
		return "/usr/bin/chromium"
	}
	t.Fatal("chromium is not installed; `make test` installs it (or: sudo apt-get install -y chromium)")
	return ""
}

// artifactDir is where screenshots go.
func artifactDir(t *testing.T) string {
	t.Helper()
	dir := t.ArtifactDir()
	if base := os.Getenv("SKIFF_ARTIFACTS"); base != "" {
		dir = filepath.Join(base, "dashboard")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// testServer is a real, quiet server (no scheduler, controllers or local
// agent) on a fake clock, which only drives the server's own loops (the
// usage sampler); the browser keeps real time. It can be stopped and
// started again on the same address and data.
type testServer struct {
	t      testing.TB
	dir    string
	listen string
	clk    *clock.Fake
	info   server.Info
	cancel context.CancelFunc
	done   chan error
	// controllers runs the server's controllers (Deployment, Job, …).
	controllers bool
}

func startServer(t testing.TB, clk *clock.Fake) (*testServer, *client.Client) {
	t.Helper()
	return startServerWith(t, &testServer{clk: clk})
}

// startServerWith starts s, as startServer does, with s's options.
func startServerWith(t testing.TB, s *testServer) (*testServer, *client.Client) {
	t.Helper()
	s.t, s.dir, s.listen = t, t.TempDir(), "127.0.0.1:0"
	s.start()
	t.Cleanup(s.stop)
	cfg, err := client.LoadConfig(s.info.ClientConfigPath)
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s, c
}

func (s *testServer) start() {
	s.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan server.Info, 1)
	s.done, s.cancel = make(chan error, 1), cancel
	go func() {
		s.done <- server.Run(ctx, server.Config{DataDir: s.dir, Listen: s.listen, DisableScheduler: true, DisableControllers: !s.controllers, DisableAgent: true, Clock: s.clk,
			Ready: func(i server.Info) { ready <- i }})
	}()
	select {
	case s.info = <-ready:
		s.listen = s.info.Addr.String()
	case err := <-s.done:
		cancel()
		s.cancel = nil
		s.t.Fatalf("server.Run failed at start: %v", err)
	case <-time.After(30 * time.Second):
		cancel()
		s.t.Fatal("server did not become ready in 30s")
	}
}

func (s *testServer) stop() {
	s.t.Helper()
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

// startBrowser starts headless chromium that may reach only 127.0.0.1,
// with a fresh profile, and collects the page's uncaught exceptions.
func startBrowser(t testing.TB, chromium string) (context.Context, func() []string) {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
		// The server's certificate is from its own new CA.
		chromedp.IgnoreCertErrors,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("no-first-run", true),
		// Nothing but the test's server: every other name fails to resolve.
		chromedp.Flag("host-resolver-rules", "MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(allocCtx)
	ctx, cancelTimeout := context.WithTimeout(ctx, browserTimeout)
	t.Cleanup(func() { cancelTimeout(); cancelCtx(); cancelAlloc() })
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	var mu sync.Mutex
	var problems []string
	messages := chromedp.Console(ctx)
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			if m.IsException() { // failed requests the test provokes are log entries, not exceptions
				mu.Lock()
				problems = append(problems, fmt.Sprintf("%s:%d %s", m.URL, m.Line+1, m))
				mu.Unlock()
			}
		}
	}()
	return ctx, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), problems...)
	}
}

// page wraps the browser context with helpers that fail the test.
type page struct {
	t   *testing.T
	ctx context.Context
	dir string
}

func (p *page) do(what string, actions ...chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, waitTimeout)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		p.t.Fatalf("%s: %v", what, err)
	}
}

// text returns the text of the first element matching sel, once visible.
func (p *page) text(sel string) string {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, waitTimeout)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel), chromedp.NodeVisible))
	if err != nil {
		p.t.Fatalf("read %s: %v", sel, err)
	}
	return s
}

// statusSays waits for the detail page's status to contain want and
// returns what it says when it never does. Waiting for the text itself
// (not for any text, then reading it) holds while the dashboard redraws
// the view on live data, which replaces the status element.
func (p *page) statusSays(want string) (got string, ok bool) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, waitTimeout)
	defer cancel()
	xp := fmt.Sprintf(`//p[@id="detail-status" and contains(., %q)]`, want)
	if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.Search(xp))); err == nil {
		return want, true
	}
	return p.text("#detail-status"), false
}

// go navigates inside the page by its hash route, as a link click does.
func (p *page) goTo(route, waitFor string) {
	p.t.Helper()
	p.do("open "+route, chromedp.Evaluate[chromedp.Void](fmt.Sprintf("location.hash = %q", route)), chromedp.WaitVisible(chromedp.CSS(waitFor)))
}

// click clicks the element matching sel once it is visible. It clicks
// from the page's side: the dashboard redraws a view when live data
// changes, which can swap a node between a protocol-level lookup and the
// click.
func (p *page) click(sel string) {
	p.t.Helper()
	p.do("click "+sel, chromedp.WaitVisible(chromedp.CSS(sel)), chromedp.Evaluate[chromedp.Void](fmt.Sprintf("document.querySelector(%q).click()", sel)))
}

// setValue fills a form field the way typing does (an input event).
func (p *page) setValue(sel, value string) {
	p.t.Helper()
	js := fmt.Sprintf(`(() => { const el = document.querySelector(%q); el.value = %s; el.dispatchEvent(new Event("input", {bubbles: true})); })()`, sel, mustJSON(value))
	p.do("fill "+sel, chromedp.Evaluate[chromedp.Void](js))
}

func (p *page) screenshot(name string) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, waitTimeout)
	defer cancel()
	buf, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		p.t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.WriteFile(filepath.Join(p.dir, name+".png"), buf, 0o644); err != nil {
		p.t.Fatal(err)
	}
}

func (p *page) colorScheme(scheme string) {
	p.t.Helper()
	_, err := chromedp.Call(p.ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}}})
	if err != nil {
		p.t.Fatalf("emulate %s: %v", scheme, err)
	}
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // strings always marshal
	}
	return string(b)
}

// create decodes a manifest and creates it through the API, as a user's
// script would, with no help from the page.
func create(t *testing.T, c *client.Client, manifest string) {
	t.Helper()
	obj, err := api.DecodeObject([]byte(manifest))
	if err != nil {
		t.Fatalf("fixture: %v", err)
	}
	if _, err := c.Create(context.Background(), obj); err != nil {
		t.Fatalf("create %s: %v", obj.GetObjectMeta().Name, err)
	}
}

func TestDashboardInRealBrowser(t *testing.T) {
	chromium := findChromium(t)
	start := time.Now()
	clk := clock.NewFake(time.Now())
	srv, admin := startServer(t, clk)
	info := srv.info
	token, err := os.ReadFile(info.AdminTokenPath)
	if err != nil {
		t.Fatal(err)
	}
	ctx, problems := startBrowser(t, chromium)
	p := &page{t: t, ctx: ctx, dir: artifactDir(t)}
	t.Logf("screenshots in %s", p.dir)

	// Log in with a wrong token first: refused, and nothing else shown.
	p.do("open the dashboard", chromedp.Navigate(info.URL+"/"), chromedp.WaitVisible(chromedp.CSS("#token")))
	p.screenshot("01-login")
	p.do("log in with a wrong token", chromedp.SendKeys(chromedp.CSS("#token"), "not-the-token"), chromedp.Click(chromedp.CSS("#login-submit")))
	if got := p.text("#login-error"); !strings.Contains(got, "not valid") {
		t.Errorf("login with a wrong token says %q; want it to be refused", got)
	}
	p.setValue("#token", "")
	p.do("log in", chromedp.SendKeys(chromedp.CSS("#token"), strings.TrimSpace(string(token))), chromedp.Click(chromedp.CSS("#login-submit")),
		chromedp.WaitVisible(chromedp.CSS(`#conn[data-state="live"]`)), chromedp.WaitVisible(chromedp.CSS("#node-counts")))
	if url, err := chromedp.Run(ctx, chromedp.Location()); err != nil || strings.Contains(url, strings.TrimSpace(string(token))) {
		t.Errorf("page URL %q (%v) holds the token", url, err)
	}

	// A node appears on the nodes page the moment it is created, and turns
	// Ready when it heartbeats: no reload.
	p.goTo("#/nodes", "main h1")
	create(t, admin, `{"apiVersion":"v1","kind":"Node","metadata":{"name":"edge-1","labels":{"site":"pump-4"}}}`)
	p.do("see node edge-1 appear", chromedp.WaitVisible(chromedp.CSS(`a[href="#/nodes/edge-1"]`)))
	nodes, _ := api.LookupResource("nodes")
	hb := time.Now().UTC().Format(time.RFC3339)
	if _, err := admin.PatchStatus(context.Background(), nodes, "", "edge-1", client.MergePatchType, []byte(`{"status":{
		"allocatable":{"cpu":"2","memory":"2Gi","pods":"110"},"capacity":{"cpu":"2","memory":"2Gi","pods":"110"},
		"nodeInfo":{"kubeletVersion":"skiff-test","osImage":"Debian","architecture":"arm64"},
		"conditions":[{"type":"Ready","status":"True","lastHeartbeatTime":"`+hb+`"},{"type":"MemoryPressure","status":"False","lastHeartbeatTime":"`+hb+`"}]}}`)); err != nil {
		t.Fatal(err)
	}
	p.do("see edge-1 turn Ready", chromedp.WaitVisible(chromedp.Search(`//tr[td/a[@href="#/nodes/edge-1"]]//span[contains(@class,"badge") and text()="Ready"]`)))

	// A pod appears on the workloads page the moment it is created.
	p.goTo("#/workloads", "#ns-filter")
	create(t, admin, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web-1","namespace":"default"},
		"spec":{"nodeName":"edge-1","containers":[{"name":"web","image":"nginx:1.27","resources":{"requests":{"cpu":"500m","memory":"256Mi"}}}]}}`)
	p.do("see pod web-1 appear", chromedp.WaitVisible(chromedp.CSS(`a[href="#/pods/default/web-1"]`)))
	p.screenshot("02-workloads")

	// Two usage samples on the server's clock (a minute and a half apart:
	// the sampler's phase), for the node page's chart. The sampler runs
	// on its own goroutine: step the clock until it has caught up.
	var usage server.NodeUsage
	for deadline := time.Now().Add(20 * time.Second); len(usage.Samples) < 2; {
		if time.Now().After(deadline) {
			t.Fatalf("edge-1 has %d usage samples 20s after the clock was stepped; want 2", len(usage.Samples))
		}
		clk.Advance(time.Minute)
		if err := admin.DoJSON(context.Background(), "GET", "/api/v1/skiff/nodes/edge-1/usage", nil, &usage); err != nil {
			t.Fatal(err)
		}
	}

	// The agent's measured usage: two reports 15 s apart (the admin may
	// report for any node), 7.5 CPU-seconds in between is 500m.
	// web-1's container used 3.75 CPU-seconds in them: 250m.
	pods, _ := api.LookupResource("pods")
	web1, err := admin.Get(context.Background(), pods, "default", "web-1")
	if err != nil {
		t.Fatal(err)
	}
	at := clk.Now().UTC()
	for i, cpu := range []uint64{0, 7_500_000_000} {
		ctr := api.ContainerUsage{Name: "web", CPUUsageNanos: cpu / 2, MemoryWorkingSet: 100 << 20}
		rep := api.UsageReport{Time: at.Add(time.Duration(i) * 15 * time.Second), Node: api.NodeUsage{CPUUsageNanos: cpu, MemoryWorkingSet: 512 << 20},
			Pods: []api.PodUsage{{Namespace: "default", Name: "web-1", UID: web1.GetObjectMeta().UID, CPUUsageNanos: cpu / 2, MemoryWorkingSet: 100 << 20, Containers: []api.ContainerUsage{ctr}}}}
		if err := admin.DoJSON(context.Background(), "POST", "/api/v1/skiff/nodes/edge-1/stats", rep, nil); err != nil {
			t.Fatal(err)
		}
	}

	// Overview counts follow.
	p.goTo("#/", "#node-counts")
	if got := p.text("#node-counts"); !strings.Contains(got, "1\nReady") && !strings.Contains(got, "1Ready") && !strings.Contains(got, "1 Ready") {
		t.Errorf("overview node counts %q; want 1 Ready", got)
	}
	p.screenshot("03-overview-light")

	// Node and pod pages.
	p.goTo("#/nodes/edge-1", "figure.chart polyline.cpu")
	if got := p.text("main"); !strings.Contains(got, "site=pump-4") || !strings.Contains(got, "web-1") {
		t.Errorf("node page lacks its label or its pod:\n%s", got)
	}
	p.do("see measured usage", chromedp.WaitVisible(chromedp.CSS("#cpu-used")))
	if got := p.text("#measured"); !strings.Contains(got, "500m / 2") || !strings.Contains(got, "512Mi / 2Gi") {
		t.Errorf("node page measured usage %q; want CPU 500m / 2 and memory 512Mi / 2Gi", got)
	}
	p.screenshot("04-node")
	// Cordon it from the page: the API has it, and the page shows it.
	p.click("#cordon")
	p.do("see edge-1 cordoned", chromedp.WaitVisible(chromedp.Search(`//button[@id="cordon" and text()="Uncordon"]`)))
	n, err := admin.Get(context.Background(), nodes, "", "edge-1")
	if err != nil || !n.(*api.Node).Spec.Unschedulable {
		t.Errorf("after Cordon on the page, edge-1 unschedulable = %v (%v); want true", err == nil && n.(*api.Node).Spec.Unschedulable, err)
	}
	p.goTo("#/pods/default/web-1", "#log-start")
	p.do("see web-1's measured use", chromedp.WaitVisible(chromedp.Search(`//span[@class="use-cpu" and text()="250m / 500m / —"]`)))
	// Waited for, not read once: a live re-render may replace the row
	// between the wait above and a read (the read then saw "").
	p.do("see web-1's measured memory", chromedp.WaitVisible(chromedp.Search(`//span[@class="use-memory" and text()="100Mi / 256Mi / —"]`)))
	p.click("#log-start")
	p.do("see the log's error", chromedp.WaitVisible(chromedp.CSS("#log-output.error")))

	// The console: a shell over the exec WebSocket, typed into.
	startStandInAgent(t, info, "edge-1", "web-1")
	p.click("#console-start")
	p.do("see the shell connect", chromedp.WaitVisible(chromedp.CSS("#console .term-grid")),
		chromedp.WaitVisible(chromedp.Search(`//span[@id="console-status" and starts-with(text(), "Connected")]`)))
	p.typeInto("#console textarea.term-input", "echo answer=$((6*7))")
	p.do("see its answer", chromedp.WaitVisible(chromedp.Search(`//div[@class="term-grid"]/div[contains(., "answer=42")]`)))
	p.screenshot("05-pod")
	p.typeInto("#console textarea.term-input", "exit")
	p.do("see the shell end", chromedp.WaitVisible(chromedp.Search(`//span[@id="console-status" and text()="The shell exited."]`)))

	// Create a pod from pasted YAML.
	p.goTo("#/apply", "#yaml")
	p.setValue("#yaml", "# from the dashboard\napiVersion: v1\nkind: Pod\nmetadata:\n  name: pasted\n  labels:\n    app: pasted\nspec:\n  nodeName: edge-1\n  containers:\n  - name: main\n    image: busybox:1.36\n    command: [\"sleep\", \"3600\"]\n")
	p.click("#apply-submit")
	p.do("see the pod applied", chromedp.WaitVisible(chromedp.CSS("#apply-results li.ok")))
	if got := p.text("#apply-results"); !strings.Contains(got, "Pod pasted: created") {
		t.Errorf("apply result %q; want Pod pasted: created", got)
	}
	// pods is the pods resource (looked up above).
	if _, err := admin.Get(context.Background(), pods, "default", "pasted"); err != nil {
		t.Errorf("the pod applied from the page is not in the API: %v", err)
	}

	// A bad one shows the field the API names.
	p.setValue("#yaml", "apiVersion: v1\nkind: Pod\nmetadata:\n  name: broken\nspec:\n  containers:\n  - name: main\n")
	p.click("#apply-submit")
	p.do("see the bad pod refused", chromedp.WaitVisible(chromedp.CSS("#apply-results li.bad code.field")))
	if got := p.text("#apply-results li.bad code.field"); got != "spec.containers[0].image" {
		t.Errorf("validation error names field %q; want spec.containers[0].image", got)
	}
	p.screenshot("06-apply-error")
	var notFound *api.StatusError
	if _, err := admin.Get(context.Background(), pods, "default", "broken"); !errors.As(err, &notFound) || notFound.Status.Code != 404 {
		t.Errorf("get the bad pod: %v; want 404: it must not have been created", err)
	}

	// The same page in dark mode, and at a phone's width.
	p.colorScheme("dark")
	p.goTo("#/", "#node-counts")
	p.screenshot("07-overview-dark")
	p.do("phone width", chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile, chromedp.EmulateScale(2)))
	p.goTo("#/nodes", `a[href="#/nodes/edge-1"]`)
	p.screenshot("08-nodes-phone-dark")
	p.colorScheme("light")
	p.goTo("#/workloads", `a[href="#/pods/default/pasted"]`)
	p.screenshot("09-workloads-phone-light")

	// The server goes away: the page says so, then reconnects by itself
	// when it is back, and live updates flow again without a reload.
	srv.stop()
	p.do("see the connection lost", chromedp.WaitVisible(chromedp.CSS(`#conn[data-state="lost"]`)))
	p.screenshot("10-connection-lost")
	srv.start()
	p.do("see the connection back", chromedp.WaitVisible(chromedp.CSS(`#conn[data-state="live"]`)))
	create(t, admin, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"after-restart","namespace":"default"},"spec":{"containers":[{"name":"c","image":"busybox"}]}}`)
	p.do("see a pod created after the restart", chromedp.WaitVisible(chromedp.CSS(`a[href="#/pods/default/after-restart"]`)))

	// Scale a Deployment through its dialog.
	create(t, admin, `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"default"},
		"spec":{"replicas":1,"selector":{"matchLabels":{"app":"web"}},"template":{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"name":"c","image":"nginx"}]}}}}`)
	p.click(`button[aria-label="Scale default/web"]`)
	p.setValue("#scale-replicas", "3")
	p.click(`dialog button[type="submit"]`)
	p.do("see the dialog close", chromedp.WaitNotVisible(chromedp.CSS("#scale-replicas")))
	deploys, _ := api.LookupResource("deployments")
	if d, err := admin.Get(context.Background(), deploys, "default", "web"); err != nil || d.(*api.Deployment).Spec.Replicas == nil || *d.(*api.Deployment).Spec.Replicas != 3 {
		t.Errorf("after scaling to 3 on the page: %v, %v; want spec.replicas 3", d, err)
	}

	// Delete a pod, after confirming.
	p.goTo("#/pods/default/after-restart", "#delete-pod")
	p.click("#delete-pod")
	p.click("#confirm-ok")
	p.do("see the pod go", chromedp.WaitVisible(chromedp.Search(`//p[contains(., "does not exist")]`)))

	// Create a join token and see the command line to copy.
	p.goTo("#/join", "#token-create")
	p.setValue("#token-desc", "pump station 4")
	p.click("#token-create")
	cmd := p.text("#join-cmd")
	if !strings.HasPrefix(cmd, "skiff agent --server "+info.URL+" --token SKF1.") {
		t.Errorf("join command %q; want skiff agent --server %s --token SKF1.…", cmd, info.URL)
	}
	p.screenshot("11-join-phone")

	// Log out: the token is gone and the login form is back.
	p.click("#logout")
	p.do("see the login form", chromedp.WaitVisible(chromedp.CSS("#token")))
	if left, err := chromedp.Run(ctx, chromedp.Evaluate[string](`sessionStorage.getItem("skiff.token") || ""`)); err != nil || left != "" {
		t.Errorf("after logout sessionStorage holds %q (%v); want nothing", left, err)
	}

	for _, pr := range problems() {
		t.Errorf("page error: %s", pr)
	}
	t.Logf("browser test took %v", time.Since(start).Round(time.Millisecond))
}

// TestDashboardViewerTokenInRealBrowser logs in with a service account
// token bound to the view role in one namespace: the dashboard shows that
// namespace's workloads and hides every action the token may not do.
func TestDashboardViewerTokenInRealBrowser(t *testing.T) {
	chromium := findChromium(t)
	clk := clock.NewFake(time.Now())
	srv, admin := startServer(t, clk)
	info := srv.info
	for _, m := range []string{
		`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"team"}}`,
		`{"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"alice","namespace":"team"}}`,
		`{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"RoleBinding","metadata":{"name":"alice-view","namespace":"team"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"view"},"subjects":[{"kind":"ServiceAccount","name":"alice","namespace":"team"}]}`,
		`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"mine","namespace":"team"},"spec":{"containers":[{"name":"c","image":"busybox"}]}}`,
		`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"theirs","namespace":"default"},"spec":{"containers":[{"name":"c","image":"busybox"}]}}`,
		`{"apiVersion":"v1","kind":"Secret","metadata":{"name":"creds","namespace":"team"},"stringData":{"key":"viewer-must-not-see"}}`,
		`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"team"},"spec":{"selector":{"matchLabels":{"a":"b"}},"template":{"metadata":{"labels":{"a":"b"}},"spec":{"containers":[{"name":"c","image":"busybox"}]}}}}`,
	} {
		create(t, admin, m)
	}
	resp, err := admin.Do(context.Background(), "POST", "/api/v1/namespaces/team/serviceaccounts/alice/token", strings.NewReader(`{"spec":{}}`))
	if err != nil {
		t.Fatal(err)
	}
	var tr api.TokenRequest
	err = json.NewDecoder(resp.Body).Decode(&tr)
	resp.Body.Close()
	if err != nil || tr.Status.Token == "" {
		t.Fatalf("token request: %v", err)
	}

	ctx, problems := startBrowser(t, chromium)
	p := &page{t: t, ctx: ctx, dir: artifactDir(t)}
	p.do("open the dashboard", chromedp.Navigate(info.URL+"/"), chromedp.WaitVisible(chromedp.CSS("#token")))
	// An admin's namespace choice, remembered by this browser, must not
	// hide the viewer's own namespace.
	p.do("remember another namespace", chromedp.Evaluate[chromedp.Void](`localStorage.setItem("skiff.ns", "default")`))
	p.do("log in as a viewer", chromedp.SendKeys(chromedp.CSS("#token"), tr.Status.Token), chromedp.Click(chromedp.CSS("#login-submit")),
		chromedp.WaitVisible(chromedp.CSS("#node-counts")))
	if who := p.text("#who"); !strings.Contains(who, "system:serviceaccount:team:alice") || !strings.Contains(who, "namespace team") {
		t.Errorf("the header names %q; want the service account and its namespace", who)
	}
	nav := p.text("#nav")
	for _, hidden := range []string{"Add node", "Apply YAML", "Nodes"} {
		if strings.Contains(nav, hidden) {
			t.Errorf("the viewer's navigation %q offers %q", nav, hidden)
		}
	}
	p.goTo("#/workloads", `a[href="#/pods/team/mine"]`)
	p.screenshot("viewer-workloads")
	body := p.text("main")
	if strings.Contains(body, "theirs") {
		t.Errorf("the viewer sees a pod of another namespace:\n%s", body)
	}
	n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("main button.danger, button[aria-label^='Scale']").length`))
	if err != nil || n != 0 {
		t.Errorf("the viewer is offered %d delete or scale buttons (%v); want none", n, err)
	}
	// The view role reads no Secrets: the list and the editor say so, and
	// show no value; and the editor cannot save what the token may not write.
	p.goTo("#/secrets", "main p.error")
	if got := p.text("main p.error"); !strings.Contains(got, "may not list Secrets") {
		t.Errorf("the viewer's Secrets page says %q; want that the token may not list them", got)
	}
	p.goTo("#/edit/secrets/team/creds", "main p.error")
	if html, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.documentElement.outerHTML`)); err != nil || strings.Contains(html, "viewer-must-not-see") || strings.Contains(html, "dmlld2VyLW11c3Qtbm90LXNlZQ") {
		t.Errorf("a secret value reached the viewer's page (%v)", err)
	}
	p.goTo("#/edit/deployments/team/web", "#edit-yaml")
	p.do("see the YAML", chromedp.Poll[chromedp.Void](`document.querySelector("#edit-yaml").value.includes("kind: Deployment")`, chromedp.WithPollingTimeout(waitTimeout)))
	p.click("#edit-save")
	p.do("see the save refused", chromedp.WaitVisible(chromedp.CSS("#edit-result p.error")))
	if got := p.text("#edit-result"); !strings.Contains(got, "cannot update") {
		t.Errorf("the viewer's save says %q; want it refused", got)
	}
	p.goTo("#/pods/team/mine", "main h1")
	if n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("#delete-pod").length`)); err != nil || n != 0 {
		t.Errorf("the viewer is offered to delete the pod (%d, %v)", n, err)
	}
	if got := problems(); len(got) > 0 {
		t.Errorf("uncaught exceptions in the page: %q", got)
	}
}
