package remote

import (
	"bufio"
	"context"
	"net"
	"strings"
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
	})

	t.Run("exec stdin", func(t *testing.T) {
		in := strings.Repeat("hello through the tunnel\n", 5000)
		got := b.ok(in, "exec", "-i", "talker", "--", "wc", "-c")
		if strings.TrimSpace(got) != "125000" {
			t.Fatalf("exec -i wc -c of %d bytes = %q", len(in), got)
		}
	})
}
