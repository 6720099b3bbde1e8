package qemuarm

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"database/sql"
	"debug/elf"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/api/client"

	_ "modernc.org/sqlite" // setRevision edits the stopped server's file
)

// target is one foreign platform: how Go builds for it, which qemu-user
// emulator runs it and what its ELF header and /version must say.
type target struct {
	name     string   // subtest name
	goenv    []string // GOARCH and friends
	emulator string   // Debian's qemu-user-static binary
	machine  elf.Machine
	class    elf.Class
	platform string // /version's platform
}

var targets = []target{
	{"armv7", []string{"GOARCH=arm", "GOARM=7"}, "qemu-arm-static", elf.EM_ARM, elf.ELFCLASS32, "linux/arm"},
	{"arm64", []string{"GOARCH=arm64"}, "qemu-aarch64-static", elf.EM_AARCH64, elf.ELFCLASS64, "linux/arm64"},
}

// Emulated start-up and requests are 10 to 30 times slower than native;
// these bound them generously without letting a hang run on.
const (
	readyTimeout   = 90 * time.Second
	requestTimeout = 30 * time.Second
	stopTimeout    = 30 * time.Second
)

// TestServerCreatesPodUnderQEMURealBinary is the server smoke test on
// each foreign platform: the real binary, the real SQLite file, HTTPS with
// the admin token.
func TestServerCreatesPodUnderQEMURealBinary(t *testing.T) {
	for _, tg := range targets {
		t.Run(tg.name, func(t *testing.T) {
			emu, err := exec.LookPath(tg.emulator)
			if err != nil {
				t.Fatalf("%s is not on PATH: install Debian's qemu-user-static (make deps does)", tg.emulator)
			}
			bin := build(t, tg)
			data := t.TempDir()

			s := start(t, emu, bin, data)
			var v struct{ Platform string }
			s.json(t, "GET", "/version", "", http.StatusOK, &v)
			if v.Platform != tg.platform {
				t.Fatalf("/version platform = %q; want %q (is the emulated binary the one serving?)", v.Platform, tg.platform)
			}
			created := createAndCheckPod(t, s)
			checkCLI(t, emu, bin, filepath.Join(data, "server", "skiff.yaml"))
			s.stop(t)

			// The pod is in the SQLite file, not only in memory. The
			// restarted server continues past revision 2^32, where a
			// 32-bit int would wrap.
			setRevision(t, filepath.Join(data, "server", "state.db"), bigRevision)
			s = start(t, emu, bin, data)
			var again api.Pod
			s.json(t, "GET", "/api/v1/namespaces/default/pods/web", "", http.StatusOK, &again)
			if again.UID != created.UID || again.Spec.Containers[0].Resources.Limits["memory"].String() != "3Gi" {
				t.Errorf("after restart GET web = uid %s memory %v; want uid %s memory 3Gi",
					again.UID, again.Spec.Containers[0].Resources.Limits["memory"], created.UID)
			}
			checkBigRevisions(t, s)
			s.stop(t)
		})
	}
}

// podJSON is the pod the test creates. Its sizes are past 2^31 (3Gi of
// memory, 100Gi of ephemeral storage) and its activeDeadlineSeconds is
// the largest valid one, where a 32-bit int would overflow or truncate.
const podJSON = `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web","labels":{"app":"web"}},
 "spec":{"activeDeadlineSeconds":2147483647,"containers":[{"name":"web","image":"busybox",
  "resources":{"requests":{"cpu":"250m","memory":"3Gi"},"limits":{"memory":"3Gi","ephemeral-storage":"100Gi"}}}]}}`

// createAndCheckPod creates the pod, reads it back, checks that the server
// refuses an invalid one and waits for the scheduler's verdict.
func createAndCheckPod(t *testing.T, s *serverProc) api.Pod {
	t.Helper()
	const pods = "/api/v1/namespaces/default/pods"
	if code, _ := s.do(t, "GET", pods, "", false); code != http.StatusUnauthorized {
		t.Errorf("GET %s without a token = %d; want 401", pods, code)
	}
	var created api.Pod
	s.json(t, "POST", pods, podJSON, http.StatusCreated, &created)
	if created.UID == "" || created.ResourceVersion == "" || created.CreationTimestamp.IsZero() {
		t.Fatalf("created pod has uid %q resourceVersion %q creationTimestamp %v; want all set", created.UID, created.ResourceVersion, created.CreationTimestamp)
	}
	var got api.Pod
	s.json(t, "GET", pods+"/web", "", http.StatusOK, &got)
	c := got.Spec.Containers[0]
	// The scheduler may already have written the pod's status, so the
	// resourceVersion is the created one or later.
	crv, _ := strconv.ParseInt(created.ResourceVersion, 10, 64)
	if grv, err := strconv.ParseInt(got.ResourceVersion, 10, 64); got.UID != created.UID || err != nil || grv < crv {
		t.Errorf("GET web = uid %s rv %s; want the created uid %s at rv %s or later", got.UID, got.ResourceVersion, created.UID, created.ResourceVersion)
	}
	mem, disk := c.Resources.Limits["memory"], c.Resources.Limits["ephemeral-storage"]
	if mem.Value() != 3<<30 || disk.Value() != 100<<30 {
		t.Errorf("GET web limits memory %d ephemeral-storage %d; want %d and %d", mem.Value(), disk.Value(), int64(3<<30), int64(100<<30))
	}
	if d := got.Spec.ActiveDeadlineSeconds; d == nil || *d != 2147483647 {
		t.Errorf("GET web activeDeadlineSeconds = %v; want 2147483647", d)
	}
	if got.Status.QOSClass != api.PodQOSBurstable {
		t.Errorf("GET web qosClass = %q; want %q (defaulted on create)", got.Status.QOSClass, api.PodQOSBurstable)
	}

	// Validation runs on the foreign platform too: one past the largest
	// activeDeadlineSeconds, and a container without an image.
	bad := strings.Replace(strings.Replace(podJSON, `"web"}`, `"bad"}`, 1), "2147483647", "2147483648", 1)
	bad = strings.Replace(bad, `"image":"busybox",`, "", 1)
	code, body := s.do(t, "POST", pods, bad, true)
	for _, want := range []string{`"field":"spec.activeDeadlineSeconds"`, `"field":"spec.containers[0].image"`} {
		if code != http.StatusUnprocessableEntity || !strings.Contains(string(body), want) {
			t.Errorf("POST invalid pod = %d %s; want 422 naming %s", code, body, want)
		}
	}
	if code, _ := s.do(t, "GET", pods+"/bad", "", true); code != http.StatusNotFound {
		t.Errorf("GET refused pod = %d; want 404 (nothing stored)", code)
	}

	// With no nodes the scheduler says so on the pod.
	deadline := time.Now().Add(readyTimeout)
	for {
		s.json(t, "GET", pods+"/web", "", http.StatusOK, &got)
		if cond := scheduledCondition(&got); cond != nil && cond.Status == api.ConditionFalse && cond.Reason == "Unschedulable" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("pod web has no PodScheduled=False Unschedulable condition after %v: %+v\n%s", readyTimeout, got.Status.Conditions, s.logTail())
		}
		time.Sleep(200 * time.Millisecond)
	}
	return created
}

// checkCLI runs the emulated `skiff get pods` with the server's client
// config: the client side (TLS, the token, the table printer) on the
// foreign platform.
func checkCLI(t *testing.T, emu, bin, clientConfig string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, emu, bin, "get", "pods", "--client-config", clientConfig)
	cmd.Env = []string{"HOME=" + t.TempDir(), "PATH=" + os.Getenv("PATH")}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("emulated skiff get pods: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "NAME") || !strings.HasPrefix(lines[1], "web ") || !strings.Contains(lines[1], "Pending") {
		t.Errorf("emulated skiff get pods printed:\n%s\nwant the header and web, Pending", out)
	}
}

// bigRevision is past 2^32; bigRevision - 2^32 is what a 32-bit int
// holding it would wrap to.
const bigRevision = int64(1)<<32 + 100

// setRevision sets the store's revision counter in the stopped server's
// SQLite file.
func setRevision(t *testing.T, path string, rev int64) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec("UPDATE meta SET value = ? WHERE key = 'revision'", rev); err != nil {
		t.Fatalf("set revision in %s: %v", path, err)
	}
}

// checkBigRevisions creates a pod past revision 2^32 and checks that its
// resourceVersion comes back whole and that an update carrying the
// wrapped value is refused with 409.
func checkBigRevisions(t *testing.T, s *serverProc) {
	t.Helper()
	const pods = "/api/v1/namespaces/default/pods"
	var p api.Pod
	s.json(t, "POST", pods, strings.Replace(podJSON, `"name":"web"`, `"name":"big"`, 1), http.StatusCreated, &p)
	rv, err := strconv.ParseInt(p.ResourceVersion, 10, 64)
	if err != nil || rv <= bigRevision {
		t.Fatalf("pod created after revision %d has resourceVersion %q; want a larger one", bigRevision, p.ResourceVersion)
	}
	var list api.PodList
	s.json(t, "GET", pods, "", http.StatusOK, &list)
	// The scheduler may have written since, so the list is at or past it.
	if lrv, err := strconv.ParseInt(list.ResourceVersion, 10, 64); err != nil || lrv < rv || len(list.Items) != 2 {
		t.Errorf("LIST = %d pods at resourceVersion %q; want 2 at %d or later", len(list.Items), list.ResourceVersion, rv)
	}
	p.Labels["wrapped"] = "yes"
	p.ResourceVersion = strconv.FormatInt(rv-1<<32, 10)
	b, err := json.Marshal(&p)
	if err != nil {
		t.Fatal(err)
	}
	if code, body := s.do(t, "PUT", pods+"/big", string(b), true); code != http.StatusConflict {
		t.Errorf("PUT big with resourceVersion %s (the wrapped %d) = %d %s; want 409", p.ResourceVersion, rv, code, body)
	}
}

func scheduledCondition(p *api.Pod) *api.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == api.PodScheduled {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

// build cross-compiles ./cmd/skiff for tg and checks the ELF header, so
// the test cannot pass by running a native binary.
func build(t *testing.T, tg target) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "skiff-"+tg.name)
	// go test puts its own go first on PATH.
	cmd := exec.Command("go", "build", "-trimpath", "-o", bin, "github.com/skiffhq/skiff/cmd/skiff")
	cmd.Env = append(append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux"), tg.goenv...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build for %s: %v\n%s", tg.name, err, out)
	}
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.Machine != tg.machine || f.Class != tg.class {
		t.Fatalf("%s is %v %v; want %v %v", bin, f.Machine, f.Class, tg.machine, tg.class)
	}
	return bin
}

// serverProc is one emulated `skiff server` process.
type serverProc struct {
	cmd     *exec.Cmd
	logPath string
	url     string
	token   string
	http    *http.Client
	exited  chan struct{}
	waitErr error // what Wait returned; read after exited
}

// start runs `emu bin server --disable-agent` on data and 127.0.0.1:0 and
// returns once /readyz answers 200, with the URL, CA and admin token read
// from the skiff.yaml the server writes after it listens.
func start(t *testing.T, emu, bin, data string) *serverProc {
	t.Helper()
	logf, err := os.CreateTemp(t.TempDir(), "server-*.log")
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	cfgPath := filepath.Join(data, "server", "skiff.yaml")
	os.Remove(cfgPath) // a restart rewrites it with the new port
	s := &serverProc{logPath: logf.Name(), exited: make(chan struct{})}
	s.cmd = exec.Command(emu, bin, "server", "--disable-agent", "--config", "", "--data-dir", data, "--listen", "127.0.0.1:0")
	s.cmd.Stdout, s.cmd.Stderr = logf, logf
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		s.waitErr = s.cmd.Wait()
		close(s.exited)
	}()
	t.Cleanup(func() {
		s.cmd.Process.Kill()
		<-s.exited
	})

	deadline := time.Now().Add(readyTimeout)
	var last error
	for {
		select {
		case <-s.exited:
			t.Fatalf("emulated skiff server exited during start-up: %v\n%s", s.waitErr, s.logTail())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("emulated skiff server not ready within %v (last: %v)\n%s", readyTimeout, last, s.logTail())
		}
		if s.http == nil {
			if last = s.loadConfig(cfgPath); last != nil {
				continue
			}
		}
		var code int
		if code, last = s.try("/readyz"); last == nil && code == http.StatusOK {
			return s
		} else if last == nil {
			last = fmt.Errorf("/readyz = %d", code)
		}
	}
}

// loadConfig reads the server's client config; it fails until the server
// has written it.
func (s *serverProc) loadConfig(path string) error {
	cfg, err := client.LoadConfig(path)
	if err != nil {
		return err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(cfg.CAData) {
		return fmt.Errorf("%s holds no CA certificate", path)
	}
	s.url, s.token = cfg.Server, cfg.Token
	if !strings.HasPrefix(s.url, "https://127.0.0.1:") {
		return fmt.Errorf("server URL %q is not loopback", s.url)
	}
	s.http = &http.Client{Timeout: requestTimeout, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
	}}
	return nil
}

func (s *serverProc) try(path string) (int, error) {
	resp, err := s.http.Get(s.url + path)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// do sends one request, with the admin token when auth is set, and
// returns the status code and body.
func (s *serverProc) do(t *testing.T, method, path, body string, auth bool) (int, []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, s.url+path, bytes.NewReader([]byte(body)))
	if err != nil {
		t.Fatal(err)
	}
	if auth {
		req.Header.Set("Authorization", "Bearer "+s.token)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := s.http.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", method, path, err, s.logTail())
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read body: %v", method, path, err)
	}
	return resp.StatusCode, b
}

// json sends an authenticated request, requires status want and decodes
// the answer into out.
func (s *serverProc) json(t *testing.T, method, path, body string, want int, out any) {
	t.Helper()
	code, b := s.do(t, method, path, body, true)
	if code != want {
		t.Fatalf("%s %s = %d %s; want %d", method, path, code, b, want)
	}
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("%s %s: decode %s: %v", method, path, b, err)
	}
}

// stop sends SIGTERM (qemu passes it to the emulated process) and
// requires a clean exit.
func (s *serverProc) stop(t *testing.T) {
	t.Helper()
	s.http.CloseIdleConnections()
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.exited:
		if s.waitErr != nil {
			t.Fatalf("emulated skiff server exited with %v after SIGTERM; want 0\n%s", s.waitErr, s.logTail())
		}
	case <-time.After(stopTimeout):
		t.Fatalf("emulated skiff server did not stop within %v of SIGTERM\n%s", stopTimeout, s.logTail())
	}
}

// logTail returns the end of the server's log for failure messages.
func (s *serverProc) logTail() string {
	b, _ := os.ReadFile(s.logPath)
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}
