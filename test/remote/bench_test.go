package remote

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skiffhq/skiff/api/client"
)

// BenchmarkRemote measures the tunnel end to end on the firewalled box
// (one run each; -benchtime 1x):
//   - exec: `kubectl exec pod -- true`, process start to exit, p50/p99;
//   - echo: one line through an open exec session running cat, p50/p99;
//   - portforward: a 256 MiB HTTP download through kubectl port-forward
//     and through skiff's client, against the same download straight
//     from the pod's IP inside the box, in one run;
//   - sessions: the RSS of an agent process (skiff agent, run in the
//     box) before and with 100 exec sessions open.
func BenchmarkRemote(b *testing.B) {
	b.Run("exec", func(b *testing.B) {
		box := startBox(b)
		box.runPod("sleeper", "exec sleep 3600")
		var ds []time.Duration
		for range 30 {
			start := time.Now()
			box.ok("", "exec", "sleeper", "--", "true")
			ds = append(ds, time.Since(start))
		}
		reportPercentiles(b, "exec", ds)
		// What a kubectl run costs without exec: start, discovery cache,
		// one GET.
		ds = ds[:0]
		for range 30 {
			start := time.Now()
			box.ok("", "get", "pod", "sleeper", "-o", "name")
			ds = append(ds, time.Since(start))
		}
		reportPercentiles(b, "get", ds)
	})
	b.Run("echo", func(b *testing.B) {
		box := startBox(b)
		box.runPod("sleeper", "exec sleep 3600")
		ds := echoLatencies(b, box, 1000)
		reportPercentiles(b, "echo", ds)
	})
	b.Run("portforward", func(b *testing.B) {
		box := startBox(b)
		box.runPod("big", "mkdir -p /www && dd if=/dev/zero of=/www/big bs=1M count=256 2>/dev/null && exec httpd -f -p 8080 -h /www")
		pod := box.waitPod("big")
		direct := func() (float64, error) {
			return download(func() (net.Conn, error) {
				return dialIn(box.nsPath)(context.Background(), "tcp", pod.Status.PodIP+":8080")
			})
		}
		// The file is written before httpd starts.
		eventually(b, 60*time.Second, "httpd serving /big", func() bool {
			c, err := dialIn(box.nsPath)(context.Background(), "tcp", pod.Status.PodIP+":8080")
			if err == nil {
				c.Close()
			}
			return err == nil
		})
		kubectlPort := box.portForward(b, nil, "pod/big", "8080")
		viaKubectl := func() (float64, error) {
			return download(func() (net.Conn, error) { return net.Dial("tcp", "127.0.0.1:"+kubectlPort) })
		}
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go box.admin.PortForward(ctx, "default", "big", []client.ForwardedPort{{Listener: l, Remote: 8080}}, nil)
		viaSkiff := func() (float64, error) {
			return download(func() (net.Conn, error) { return net.Dial("tcp", l.Addr().String()) })
		}
		kubectlPID := findProcess(b, "port-forward", "pod/big")
		cpu0, self0 := cpuSeconds(b, kubectlPID), cpuSeconds(b, os.Getpid())
		mbps, err := viaKubectl()
		if err != nil {
			b.Fatal(err)
		}
		cpu1, self1 := cpuSeconds(b, kubectlPID), cpuSeconds(b, os.Getpid())
		// CPU per GiB moved: kubectl's, and this process's (server and
		// agent, both ends of the tunnel).
		b.ReportMetric((cpu1-cpu0)*4, "kubectl-cpu-s/GiB")
		b.ReportMetric((self1-self0)*4, "server+agent-cpu-s/GiB")
		b.Logf("kubectl port-forward: %.0f MB/s", mbps)
		best := map[string]float64{}
		for range 3 {
			for name, f := range map[string]func() (float64, error){"direct": direct, "kubectl": viaKubectl, "skiff": viaSkiff} {
				mbps, err := f()
				if err != nil {
					b.Fatalf("%s download: %v", name, err)
				}
				best[name] = max(best[name], mbps)
			}
		}
		b.ReportMetric(best["direct"], "direct-MB/s")
		b.ReportMetric(best["kubectl"], "kubectl-pf-MB/s")
		b.ReportMetric(best["skiff"], "skiff-pf-MB/s")
		b.ReportMetric(best["kubectl"]/best["direct"], "kubectl-ratio")
		b.ReportMetric(best["skiff"]/best["direct"], "skiff-ratio")
	})
	b.Run("sessions", func(b *testing.B) {
		benchSessions(b, 100)
	})
}

func reportPercentiles(b *testing.B, name string, ds []time.Duration) {
	slices.Sort(ds)
	p := func(q float64) float64 { return float64(ds[int(q*float64(len(ds)-1))].Microseconds()) / 1000 }
	b.ReportMetric(p(0.5), name+"-p50-ms")
	b.ReportMetric(p(0.99), name+"-p99-ms")
	b.ReportMetric(float64(ds[len(ds)-1].Microseconds())/1000, name+"-max-ms")
}

// lineWriter signals every write.
type lineWriter struct{ ch chan []byte }

func (w lineWriter) Write(p []byte) (int, error) {
	w.ch <- bytes.Clone(p)
	return len(p), nil
}

// echoLatencies opens one exec session running cat and times n lines
// sent and echoed back.
func echoLatencies(b *testing.B, box *box, n int) []time.Duration {
	pr, pw := io.Pipe()
	out := lineWriter{ch: make(chan []byte, 16)}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- box.admin.Exec(ctx, "default", "sleeper", client.ExecOptions{Command: []string{"cat"}, Stdin: pr, Stdout: out})
	}()
	var ds []time.Duration
	for i := range n + 20 {
		msg := []byte(strconv.Itoa(i) + "\n")
		start := time.Now()
		if _, err := pw.Write(msg); err != nil {
			b.Fatal(err)
		}
		var got []byte
		for !bytes.Equal(got, msg) {
			select {
			case p := <-out.ch:
				got = append(got, p...)
			case err := <-done:
				b.Fatalf("session ended: %v", err)
			case <-time.After(10 * time.Second):
				b.Fatalf("echo %d: nothing back in 10s (got %q)", i, got)
			}
		}
		if i >= 20 { // warm-up
			ds = append(ds, time.Since(start))
		}
	}
	pw.Close()
	if err := <-done; err != nil {
		b.Fatalf("cat: %v", err)
	}
	return ds
}

// download GETs /big over a fresh connection and returns MB/s.
func download(dial func() (net.Conn, error)) (float64, error) {
	c, err := dial()
	if err != nil {
		return 0, err
	}
	defer c.Close()
	start := time.Now()
	if _, err := io.WriteString(c, "GET /big HTTP/1.0\r\n\r\n"); err != nil {
		return 0, err
	}
	n, err := io.CopyBuffer(io.Discard, c, make([]byte, 256<<10))
	if err != nil {
		return 0, err
	}
	if n < 256<<20 {
		return 0, fmt.Errorf("read %d bytes; want 256 MiB", n)
	}
	return float64(n) / (1 << 20) / time.Since(start).Seconds(), nil
}

// benchSessions runs skiff agent as a process inside the box and reports
// its RSS idle, with n exec sessions open (each running cat, waiting on
// stdin), and after they closed.
func benchSessions(b *testing.B, n int) {
	box := startBoxWith(b, true)
	box.runPod("sleeper", "exec sleep 3600")
	// One session first: the tunnel is open and the code paths warm.
	eventually(b, 60*time.Second, "an exec through the agent process", func() bool {
		return box.run("", nil, "exec", "sleeper", "--", "true").err == nil
	})
	time.Sleep(2 * time.Second)
	idle := rssKiB(b, box.agentPID)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	writers := make([]*io.PipeWriter, n)
	opened := make(chan struct{}, n)
	errs := make(chan error, n)
	for i := range n {
		pr, pw := io.Pipe()
		writers[i] = pw
		wg.Add(1)
		go func() {
			defer wg.Done()
			out := lineWriter{ch: make(chan []byte, 4)}
			go func() {
				<-out.ch
				opened <- struct{}{}
				for range out.ch {
				}
			}()
			if err := box.admin.Exec(ctx, "default", "sleeper", client.ExecOptions{Command: []string{"cat"}, Stdin: pr, Stdout: out}); err != nil && ctx.Err() == nil {
				errs <- err
			}
			close(out.ch)
		}()
		if _, err := pw.Write([]byte("hi\n")); err != nil {
			b.Fatal(err)
		}
	}
	for range n {
		select {
		case <-opened:
		case err := <-errs:
			b.Fatalf("a session failed: %v", err)
		case <-time.After(60 * time.Second):
			b.Fatal("sessions did not all open in 60s")
		}
	}
	time.Sleep(2 * time.Second)
	open := rssKiB(b, box.agentPID)
	for _, w := range writers {
		w.Close()
	}
	wg.Wait()
	time.Sleep(5 * time.Second)
	after := rssKiB(b, box.agentPID)
	b.ReportMetric(float64(idle)/1024, "idle-RSS-MiB")
	b.ReportMetric(float64(open)/1024, "100-sessions-RSS-MiB")
	b.ReportMetric(float64(open-idle)/float64(n), "KiB/session")
	b.ReportMetric(float64(after)/1024, "after-RSS-MiB")
}

// rssKiB is the resident set of process pid.
func rssKiB(b *testing.B, pid int) int {
	s, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	for _, l := range strings.Split(string(s), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			kib, err := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			if err != nil {
				b.Fatal(err)
			}
			return kib
		}
	}
	b.Fatalf("no VmRSS for pid %d", pid)
	return 0
}

// findProcess returns the pid of the one process whose command line
// holds every word (a kubectl the benchmark started).
func findProcess(b *testing.B, words ...string) int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		b.Fatal(err)
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmd, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil {
			continue
		}
		all := true
		for _, w := range words {
			all = all && bytes.Contains(cmd, []byte(w))
		}
		if all && bytes.Contains(cmd, []byte("kubectl")) {
			return pid
		}
	}
	b.Fatalf("no process with %v", words)
	return 0
}

// cpuSeconds is the user and system CPU time process pid has used.
func cpuSeconds(b *testing.B, pid int) float64 {
	s, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	// Fields after the command name, which is in parentheses.
	f := strings.Fields(string(s[bytes.LastIndexByte(s, ')')+2:]))
	utime, _ := strconv.ParseFloat(f[11], 64)
	stime, _ := strconv.ParseFloat(f[12], 64)
	return (utime + stime) / 100 // USER_HZ
}
