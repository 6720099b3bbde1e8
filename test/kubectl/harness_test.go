package kubectl

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/skiffhq/skiff/server"
)

// installHint tells how to get kubectl when it is missing.
const installHint = `kubectl is not on PATH; this suite runs the real kubectl 1.32 against skiff.
Install it with: curl -LO https://dl.k8s.io/release/v1.32.4/bin/linux/amd64/kubectl && sudo install kubectl /usr/local/bin/
(or the Kubernetes apt repository's "kubectl" package; Debian's own "kubernetes-client" is 1.20 and too old).`

// commandTimeout bounds one kubectl run.
const commandTimeout = 30 * time.Second

// cluster is the one server the whole suite shares; tests isolate
// themselves by namespace and by unique node names.
type cluster struct {
	kubectl    string // absolute path of the binary
	kubeconfig string
	home       string // HOME for kubectl: its discovery and HTTP caches
	cancel     context.CancelFunc
	done       chan error
}

var (
	shared     *cluster
	sharedErr  error
	sharedOnce sync.Once

	// live is a second cluster whose controllers run, for the tests of
	// what they do (ReplicaSets, rollout undo, Jobs).
	live     *cluster
	liveErr  error
	liveOnce sync.Once
)

func TestMain(m *testing.M) {
	code := m.Run()
	for _, c := range []*cluster{shared, live} {
		if c == nil {
			continue
		}
		c.cancel()
		select {
		case err := <-c.done:
			if err != nil {
				fmt.Fprintf(os.Stderr, "server stopped with error: %v\n", err)
				code = 1
			}
		case <-time.After(30 * time.Second):
			fmt.Fprintln(os.Stderr, "server did not stop within 30s")
			code = 1
		}
		os.RemoveAll(filepath.Dir(c.home))
	}
	os.Exit(code)
}

// start returns the shared cluster, starting it on first use. A test that
// calls it fails when kubectl is missing or the server cannot start.
func start(t *testing.T) *cluster {
	t.Helper()
	sharedOnce.Do(func() { shared, sharedErr = startCluster(false) })
	if sharedErr != nil {
		t.Fatal(sharedErr)
	}
	return shared
}

// startLive returns the cluster with controllers, starting it on first
// use.
func startLive(t *testing.T) *cluster {
	t.Helper()
	liveOnce.Do(func() { live, liveErr = startCluster(true) })
	if liveErr != nil {
		t.Fatal(liveErr)
	}
	return live
}

func startCluster(controllers bool) (*cluster, error) {
	bin, err := exec.LookPath("kubectl")
	if err != nil {
		return nil, errors.New(installHint)
	}
	root, err := os.MkdirTemp("", "skiff-kubectl-e2e-")
	if err != nil {
		return nil, err
	}
	c := &cluster{kubectl: bin, home: filepath.Join(root, "home"), done: make(chan error, 1)}
	if err := os.Mkdir(c.home, 0o700); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	ready := make(chan server.Info, 1)
	go func() {
		c.done <- server.Run(ctx, server.Config{
			// The tests write the status the controllers would (and
			// count the objects they create), so none run here, but
			// in the live cluster.
			DataDir: filepath.Join(root, "data"), Listen: "127.0.0.1:0", DisableAgent: true, DisableControllers: !controllers,
			Ready: func(i server.Info) { ready <- i },
		})
	}()
	select {
	case info := <-ready:
		c.kubeconfig = info.KubeconfigPath
	case err := <-c.done:
		cancel()
		return nil, fmt.Errorf("server failed at start: %v", err)
	case <-time.After(30 * time.Second):
		cancel()
		return nil, errors.New("server did not become ready in 30s")
	}
	return c, nil
}

// result is what one kubectl run printed.
type result struct {
	stdout, stderr string
	err            error
}

// run runs kubectl with args and stdin (may be empty) and extra
// environment, and returns what it printed.
func (c *cluster) run(t *testing.T, stdin string, env []string, args ...string) result {
	t.Helper()
	r := c.exec(stdin, env, args...)
	if errors.Is(r.err, context.DeadlineExceeded) {
		t.Fatal(r.err)
	}
	return r
}

// background starts kubectl with args and returns a channel that gets
// what it printed. A run that does not finish in commandTimeout is
// killed and reported in the result's err: it cannot end the test from
// the goroutine (t.Fatal there would leave the channel empty and the
// test waiting on it until the package's timeout).
func (c *cluster) background(args ...string) <-chan result {
	done := make(chan result, 1)
	go func() { done <- c.exec("", nil, args...) }()
	return done
}

// exec runs kubectl; a run killed after commandTimeout has an err that
// wraps context.DeadlineExceeded.
func (c *cluster) exec(stdin string, env []string, args ...string) result {
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.kubectl, args...)
	cmd.Env = append([]string{"HOME=" + c.home, "KUBECONFIG=" + c.kubeconfig, "PATH=" + os.Getenv("PATH")}, env...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ctx.Err() != nil {
		err = fmt.Errorf("kubectl %s: did not finish in %v (%w); stderr: %s", strings.Join(args, " "), commandTimeout, ctx.Err(), errb.String())
	}
	return result{stdout: out.String(), stderr: errb.String(), err: err}
}

// ok runs kubectl and fails the test unless it succeeds; it returns stdout.
func (c *cluster) ok(t *testing.T, args ...string) string {
	t.Helper()
	r := c.run(t, "", nil, args...)
	if r.err != nil {
		t.Fatalf("kubectl %s: %v\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.err, r.stdout, r.stderr)
	}
	return r.stdout
}

// apply runs kubectl with manifest on stdin (args such as "apply", "-f", "-").
func (c *cluster) stdinOK(t *testing.T, manifest string, args ...string) string {
	t.Helper()
	r := c.run(t, manifest, nil, args...)
	if r.err != nil {
		t.Fatalf("kubectl %s: %v\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.err, r.stdout, r.stderr)
	}
	return r.stdout
}

// fails runs kubectl, requires it to fail, and returns stderr.
func (c *cluster) fails(t *testing.T, stdin string, args ...string) string {
	t.Helper()
	r := c.run(t, stdin, nil, args...)
	if r.err == nil {
		t.Fatalf("kubectl %s succeeded; want an error\nstdout: %s", strings.Join(args, " "), r.stdout)
	}
	return r.stderr
}

var nonName = regexp.MustCompile(`[^a-z0-9-]+`)

// namespace creates a namespace named after the test and returns it.
func (c *cluster) namespace(t *testing.T) string {
	t.Helper()
	ns := strings.Trim(nonName.ReplaceAllString(strings.ToLower(t.Name()), "-"), "-")
	if len(ns) > 50 {
		ns = strings.TrimRight(ns[:50], "-")
	}
	c.stdinOK(t, `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"`+ns+`"}}`, "create", "-f", "-")
	return ns
}

// header returns the first line of out with runs of spaces folded, so it
// compares with a header written with single spaces.
func header(out string) string {
	line, _, _ := strings.Cut(out, "\n")
	return strings.Join(strings.Fields(line), " ")
}

// rows returns the lines of out after the header, each folded as header.
func rows(out string) []string {
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	var rs []string
	for _, l := range lines[1:] {
		rs = append(rs, strings.Join(strings.Fields(l), " "))
	}
	return rs
}

// decode parses JSON or YAML output into a generic map.
func decode(t *testing.T, out string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := yaml.Unmarshal([]byte(out), &m); err != nil {
		t.Fatalf("output is not JSON or YAML: %v\n%s", err, out)
	}
	return m
}

// field returns the value at a dotted path of m ("metadata.name"), or nil.
func field(m map[string]any, path string) any {
	var v any = m
	for _, k := range strings.Split(path, ".") {
		mm, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = mm[k]
	}
	return v
}

// eventually polls check (which runs kubectl, real I/O) until it returns
// "" or the deadline passes, then fails with its last answer.
func eventually(t *testing.T, what string, check func() string) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		msg := check()
		if msg == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %s", what, msg)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
