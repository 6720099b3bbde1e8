package remote

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestRemoteBoxBehindFirewall runs kubectl against a box that accepts no
// inbound connection: everything goes through the tunnel it dialled.
func TestRemoteBoxBehindFirewall(t *testing.T) {
	b := startBox(t)

	t.Run("inbound is dropped", func(t *testing.T) {
		l, err := listenIn(b.nsPath, b.boxIP+":0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				c.Close()
			}
		}()
		if c, err := dialIn(b.nsPath)(context.Background(), "tcp", l.Addr().String()); err != nil {
			t.Fatalf("dial inside the box: %v", err)
		} else {
			c.Close()
		}
		if c, err := net.DialTimeout("tcp", l.Addr().String(), time.Second); err == nil {
			c.Close()
			t.Fatalf("dialled %s from outside the box: the firewall lets connections in", l.Addr())
		}
	})

	b.runPod("talker", "i=0; while true; do i=$((i+1)); echo line $i; sleep 0.2; done")

	t.Run("logs -f", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cmd := b.kubectlCmd(ctx, nil, "logs", "-f", "talker")
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
		sc := bufio.NewScanner(out)
		first, n := "", 0
		for sc.Scan() && n < 100 {
			if first == "" {
				first = sc.Text()
			}
			n++
			// Lines written after kubectl started prove it follows.
			if n > 15 {
				return
			}
		}
		t.Fatalf("logs -f gave %d lines (first %q): %v", n, first, sc.Err())
	})

	t.Run("exec exit code", func(t *testing.T) {
		r := b.run("", nil, "exec", "talker", "--", "sh", "-c", "echo out; echo err >&2; exit 3")
		if r.code != 3 || r.stdout != "out\n" || !strings.Contains(r.stderr, "err") {
			t.Fatalf("kubectl exec sh -c 'exit 3': code %d, stdout %q, stderr %q; want 3, \"out\\n\", err", r.code, r.stdout, r.stderr)
		}
		if got := b.ok("", "exec", "talker", "--", "true"); got != "" {
			t.Fatalf("exec true printed %q", got)
		}
		// Every session is in the server's log: who, where, what.
		want := `msg=exec identity=admin namespace=default pod=talker container=main command="[sh -c echo out; echo err >&2; exit 3]"`
		if log := b.serverLog.String(); !strings.Contains(log, want) {
			t.Fatalf("the server log lacks %s:\n%s", want, log)
		}
	})

	t.Run("exec stdin", func(t *testing.T) {
		in := strings.Repeat("hello through the tunnel\n", 5000)
		got := b.ok(in, "exec", "-i", "talker", "--", "wc", "-c")
		if strings.TrimSpace(got) != "125000" {
			t.Fatalf("exec -i wc -c of %d bytes = %q", len(in), got)
		}
	})
}

// TestRemoteStreams covers the interactive verbs: exec -it with a
// terminal, cp both ways, port-forward over both protocols, attach and
// debug.
func TestRemoteStreams(t *testing.T) {
	b := startBox(t)
	b.runPod("web", "mkdir -p /www && echo 'hello from the box' > /www/index.html && exec httpd -f -p 8080 -h /www")

	t.Run("exec -it", func(t *testing.T) {
		master, slave, err := openPTY(31, 101)
		if err != nil {
			t.Fatal(err)
		}
		defer master.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cmd := b.kubectlCmd(ctx, nil, "exec", "-it", "web", "--", "sh")
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
		// A terminal answers: its size is the pty's, and tty names it.
		fmt.Fprint(master, "stty size; tty; echo answer=$((6*7))\n")
		time.Sleep(500 * time.Millisecond)
		fmt.Fprint(master, "exit 5\n")
		err = cmd.Wait()
		master.Close()
		<-readDone
		got := out.String()
		if cmd.ProcessState.ExitCode() != 5 {
			t.Errorf("exec -it sh; exit 5: kubectl exited %d (%v); output:\n%s", cmd.ProcessState.ExitCode(), err, got)
		}
		for _, want := range []string{"31 101", "/dev/pts/", "answer=42"} {
			if !strings.Contains(got, want) {
				t.Errorf("exec -it output lacks %q:\n%s", want, got)
			}
		}
	})

	t.Run("cp both ways", func(t *testing.T) {
		dir := t.TempDir()
		src := filepath.Join(dir, "up.txt")
		body := strings.Repeat("copied into the box\n", 3000)
		if err := os.WriteFile(src, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		b.ok("", "cp", src, "web:/tmp/up.txt")
		if got := b.ok("", "exec", "web", "--", "wc", "-c", "/tmp/up.txt"); !strings.HasPrefix(strings.TrimSpace(got), fmt.Sprint(len(body))) {
			t.Fatalf("after cp to the pod, wc -c = %q; want %d", got, len(body))
		}
		back := filepath.Join(dir, "down.txt")
		b.ok("", "cp", "web:/tmp/up.txt", back)
		got, err := os.ReadFile(back)
		if err != nil || string(got) != body {
			t.Fatalf("cp from the pod: %d bytes, %v; want %d bytes, the same", len(got), err, len(body))
		}
	})

	for _, tc := range []struct {
		name string
		env  []string
	}{
		{"port-forward websocket", nil},
		{"port-forward spdy", []string{"KUBECTL_PORT_FORWARD_WEBSOCKETS=false"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			port := b.portForward(t, tc.env, "pod/web", "8080")
			for i := range 3 {
				body := httpGet(t, "127.0.0.1:"+port, "/index.html")
				if !strings.Contains(body, "hello from the box") {
					t.Fatalf("GET %d through port-forward = %q", i, body)
				}
			}
		})
	}

	t.Run("attach", func(t *testing.T) {
		b.runPod("ticker", "i=0; while true; do i=$((i+1)); echo tick $i; sleep 0.2; done")
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cmd := b.kubectlCmd(ctx, nil, "attach", "ticker")
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
		sc := bufio.NewScanner(out)
		n := 0
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "tick ") {
				n++
			}
			if n == 3 {
				return
			}
		}
		t.Fatalf("attach gave %d ticks: %v", n, sc.Err())
	})

	t.Run("debug is refused clearly", func(t *testing.T) {
		r := b.run("", nil, "debug", "web", "--image=busybox", "--", "true")
		if r.err == nil || strings.Contains(r.stderr, "panic") || !strings.Contains(r.stderr, "ephemeral containers") {
			t.Fatalf("kubectl debug: %v\nstdout: %s\nstderr: %s", r.err, r.stdout, r.stderr)
		}
	})
}

// portForward starts kubectl port-forward target 0:port and returns the
// local port once it forwards; the command stops when the test ends.
func (b *box) portForward(t testing.TB, env []string, target, port string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := b.kubectlCmd(ctx, env, "port-forward", target, "0:"+port)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); _ = cmd.Wait() })
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("port-forward ended: %s", stderr.String())
			}
			// "Forwarding from 127.0.0.1:43567 -> 8080"
			if rest, ok := strings.CutPrefix(l, "Forwarding from 127.0.0.1:"); ok {
				local, _, _ := strings.Cut(rest, " ")
				go func() {
					for range lines {
					}
				}()
				return local
			}
		case <-timeout:
			t.Fatalf("port-forward did not start in 30s: %s", stderr.String())
		}
	}
}

// httpGet fetches path from addr with a bare HTTP/1.0 request.
func httpGet(t testing.TB, addr, path string) string {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(c, "GET %s HTTP/1.0\r\n\r\n", path)
	b, err := io.ReadAll(c)
	if err != nil {
		t.Fatalf("GET %s: %v (read %q)", path, err, b)
	}
	return string(b)
}
