package remote

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/skiffhq/skiff/internal/testenv"
)

var (
	skiffOnce sync.Once
	skiffBin  string
	skiffErr  error
)

// skiffBinary builds the skiff binary once per test process.
func skiffBinary(t testing.TB) string {
	t.Helper()
	skiffOnce.Do(func() {
		dir, err := os.MkdirTemp("", "skiff-remote-bin-")
		if err != nil {
			skiffErr = err
			return
		}
		skiffBin = filepath.Join(dir, "skiff")
		out, err := exec.Command("go", "build", "-o", skiffBin, "github.com/skiffhq/skiff/cmd/skiff").CombinedOutput()
		if err != nil {
			skiffErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if skiffErr != nil {
		t.Fatal(skiffErr)
	}
	return skiffBin
}

func (b *box) skiffCmd(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, skiffBinary(b.t), args...)
	cmd.Env = []string{"HOME=" + b.home, "SKIFF_CONFIG=" + b.clientConfig, "PATH=" + os.Getenv("PATH")}
	return cmd
}

// skiff runs the skiff CLI with stdin, for at most 60 s.
func (b *box) skiff(stdin string, args ...string) result {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := b.skiffCmd(ctx, args...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ctx.Err() != nil {
		b.t.Fatalf("skiff %s: did not finish in 60s; stderr: %s", strings.Join(args, " "), errb.String())
	}
	return result{stdout: out.String(), stderr: errb.String(), code: cmd.ProcessState.ExitCode(), err: err}
}

// TestSkiffCLIRemote drives skiff exec, cp, port-forward and logs of
// workloads against the firewalled box.
func TestSkiffCLIRemote(t *testing.T) {
	skiffBinary(t)
	b := startBox(t)
	b.runPod("web", "mkdir -p /www && echo 'served by skiff' > /www/index.html && exec httpd -f -p 8080 -h /www")

	t.Run("exec", func(t *testing.T) {
		r := b.skiff("", "exec", "web", "--", "sh", "-c", "echo out; echo err >&2; exit 4")
		if r.code != 4 || r.stdout != "out\n" || r.stderr != "err\n" {
			t.Fatalf("skiff exec exit 4: code %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
		}
		r = b.skiff("abc\n", "exec", "-i", "web", "--", "cat")
		if r.code != 0 || r.stdout != "abc\n" {
			t.Fatalf("skiff exec -i cat: code %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
		}
		r = b.skiff("", "exec", "nope", "--", "true")
		if r.code != 1 || !strings.Contains(r.stderr, `pods "nope" not found`) {
			t.Fatalf("skiff exec in a missing pod: code %d, stderr %q", r.code, r.stderr)
		}
	})

	t.Run("exec -it", func(t *testing.T) {
		master, slave, err := openPTY(27, 91)
		if err != nil {
			t.Fatal(err)
		}
		defer master.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cmd := b.skiffCmd(ctx, "exec", "-it", "web", "--", "sh")
		cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		slave.Close()
		var out strings.Builder
		readDone := make(chan struct{})
		go func() {
			defer close(readDone)
			buf := make([]byte, 4096)
			for {
				n, err := master.Read(buf)
				out.Write(buf[:n])
				if err != nil {
					return
				}
			}
		}()
		fmt.Fprint(master, "stty size; echo answer=$((6*7))\r")
		time.Sleep(500 * time.Millisecond)
		fmt.Fprint(master, "exit 6\r")
		_ = cmd.Wait()
		master.Close()
		<-readDone
		got := out.String()
		if code := cmd.ProcessState.ExitCode(); code != 6 {
			t.Errorf("skiff exec -it sh; exit 6: exit code %d; output:\n%s", code, got)
		}
		// In raw mode the local terminal does not echo: what shows came
		// from the remote terminal, whose size is the local one.
		for _, want := range []string{"27 91", "answer=42"} {
			if !strings.Contains(got, want) {
				t.Errorf("skiff exec -it output lacks %q:\n%s", want, got)
			}
		}
	})

	t.Run("cp", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.MkdirAll(filepath.Join(dir, "up", "sub"), 0o755); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, "up", "a.txt"), []byte("alpha\n"), 0o644)
		os.WriteFile(filepath.Join(dir, "up", "sub", "b.txt"), []byte(strings.Repeat("beta\n", 10000)), 0o644)
		if r := b.skiff("", "cp", filepath.Join(dir, "up"), "web:/tmp/tree"); r.err != nil {
			t.Fatalf("skiff cp to the pod: %v %s", r.err, r.stderr)
		}
		if r := b.skiff("", "exec", "web", "--", "cat", "/tmp/tree/a.txt"); r.stdout != "alpha\n" {
			t.Fatalf("after cp, a.txt in the pod = %q (%s)", r.stdout, r.stderr)
		}
		if r := b.skiff("", "cp", "web:/tmp/tree", filepath.Join(dir, "down")); r.err != nil {
			t.Fatalf("skiff cp from the pod: %v %s", r.err, r.stderr)
		}
		got, err := os.ReadFile(filepath.Join(dir, "down", "sub", "b.txt"))
		if err != nil || len(got) != 50000 {
			t.Fatalf("round trip of sub/b.txt: %d bytes, %v; want 50000", len(got), err)
		}
	})

	t.Run("port-forward", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		cmd := b.skiffCmd(ctx, "port-forward", "pod/web", ":8080")
		out, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { cancel(); _ = cmd.Wait() }()
		sc := bufio.NewScanner(out)
		if !sc.Scan() {
			t.Fatalf("port-forward printed nothing: %v", sc.Err())
		}
		rest, ok := strings.CutPrefix(sc.Text(), "Forwarding from ")
		addr, _, _ := strings.Cut(rest, " ")
		if !ok {
			t.Fatalf("port-forward printed %q", sc.Text())
		}
		for range 3 {
			if body := httpGet(t, addr, "/index.html"); !strings.Contains(body, "served by skiff") {
				t.Fatalf("GET through skiff port-forward = %q", body)
			}
		}
	})

	t.Run("logs of workloads", func(t *testing.T) {
		for _, kind := range []string{"Deployment", "DaemonSet"} {
			name := strings.ToLower(kind)
			manifest := fmt.Sprintf(`apiVersion: apps/v1
kind: %s
metadata: {name: %s, namespace: default}
spec:
  selector: {matchLabels: {app: %s}}
  template:
    metadata: {labels: {app: %s}}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: main
        image: %s
        imagePullPolicy: Never
        command: ["sh", "-c", "echo hello from the %s; exec sleep 3600"]
`, kind, name, name, name, testenv.BusyboxRef, name)
			b.ok(manifest, "apply", "-f", "-")
		}
		for _, tc := range []struct{ ref, want string }{
			{"deploy/deployment", "hello from the deployment"},
			{"ds/daemonset", "hello from the daemonset"},
		} {
			eventually(t, 90*time.Second, "skiff logs "+tc.ref, func() bool {
				r := b.skiff("", "logs", tc.ref)
				return r.err == nil && strings.Contains(r.stdout, tc.want)
			})
		}
		r := b.skiff("", "logs", "svc/nope")
		if r.code == 0 {
			t.Fatalf("skiff logs svc/nope succeeded: %s", r.stdout)
		}
	})
}

// TestMain removes the skiff binary built for the suite.
func TestMain(m *testing.M) {
	code := m.Run()
	if skiffBin != "" {
		os.RemoveAll(filepath.Dir(skiffBin))
	}
	os.Exit(code)
}
