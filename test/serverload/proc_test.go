package serverload

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// skiffBin is the binary TestMain builds once for the whole run.
var skiffBin string

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	// Many streams need many descriptors; the server inherits the limit.
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err == nil && lim.Cur < lim.Max {
		lim.Cur = lim.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
			fmt.Fprintf(os.Stderr, "serverload: raise the file limit: %v\n", err)
		}
	}
	dir, err := os.MkdirTemp("", "skiff-serverload-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	skiffBin = filepath.Join(dir, "skiff")
	// go test puts its own go first on PATH.
	cmd := exec.Command("go", "build", "-o", skiffBin, "github.com/skiffhq/skiff/cmd/skiff")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "serverload: build skiff: %v\n%s", err, out)
		return 1
	}
	return m.Run()
}

// serverProc is one `skiff server` child process on a data dir.
type serverProc struct {
	tb      testing.TB
	dataDir string
	logPath string
	url     string
	token   string
	caPool  *x509.CertPool
	cmd     *exec.Cmd
	exited  chan struct{} // closed once the process is reaped
	waitErr error         // what Wait returned; read after exited
}

// startServer starts `skiff server --disable-agent` on dataDir and a free
// loopback port and returns once /readyz answers 200. The process is
// killed at the end of the test if still running.
func startServer(tb testing.TB, dataDir string) *serverProc {
	tb.Helper()
	port := freePort(tb)
	logf, err := os.CreateTemp(tb.TempDir(), "server-*.log")
	if err != nil {
		tb.Fatal(err)
	}
	defer logf.Close()
	p := &serverProc{tb: tb, dataDir: dataDir, logPath: logf.Name(), url: "https://127.0.0.1:" + port, exited: make(chan struct{})}
	p.cmd = exec.Command(skiffBin, "server", "--disable-agent", "--config", "", "--data-dir", dataDir, "--listen", "127.0.0.1:"+port)
	p.cmd.Stdout, p.cmd.Stderr = logf, logf
	if err := p.cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	go func() {
		p.waitErr = p.cmd.Wait()
		close(p.exited)
	}()
	tb.Cleanup(func() {
		p.cmd.Process.Kill()
		<-p.exited
	})
	p.waitReady(60 * time.Second)
	return p
}

// freePort returns a loopback port that was free a moment ago.
func freePort(tb testing.TB) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer ln.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	return port
}

// waitReady polls for the CA and the admin token on disk, then for
// /readyz, failing with the server's log if it exits or takes too long.
func (p *serverProc) waitReady(timeout time.Duration) {
	p.tb.Helper()
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	var last error
	var c *http.Client
	for {
		select {
		case <-p.exited:
			p.tb.Fatalf("skiff server exited during start-up: %v\n%s", p.waitErr, p.logTail())
		case <-tick.C:
		}
		if time.Now().After(deadline) {
			p.tb.Fatalf("skiff server not ready within %v (last: %v)\n%s", timeout, last, p.logTail())
		}
		if c == nil {
			if last = p.loadCredentials(); last != nil {
				continue
			}
			c = p.client(1)
			defer c.CloseIdleConnections()
		}
		resp, err := c.Get(p.url + "/readyz")
		if err != nil {
			last = err
			continue
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			return
		}
		last = fmt.Errorf("/readyz = %d", resp.StatusCode)
	}
}

// loadCredentials reads the admin token and the CA the server wrote.
func (p *serverProc) loadCredentials() error {
	tok, err := os.ReadFile(filepath.Join(p.dataDir, "server", "admin.token"))
	if err != nil {
		return err
	}
	caPEM, err := os.ReadFile(filepath.Join(p.dataDir, "server", "tls", "ca.crt"))
	if err != nil {
		return err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return errors.New("tls/ca.crt holds no certificate")
	}
	p.token, p.caPool = strings.TrimSpace(string(tok)), pool
	return nil
}

// client returns a new HTTPS client with a transport of its own that
// trusts only the server's CA and speaks HTTP/2, so all its requests
// share one TLS connection (conns > 1 allows more idle HTTP/1 ones).
func (p *serverProc) client(conns int) *http.Client {
	return &http.Client{Transport: &http.Transport{
		TLSClientConfig:     &tls.Config{RootCAs: p.caPool, MinVersion: tls.VersionTLS12},
		ForceAttemptHTTP2:   true,
		MaxIdleConnsPerHost: conns,
	}}
}

// request builds a request to the server with the admin token.
func (p *serverProc) request(ctx context.Context, method, path, contentType string, body []byte) *http.Request {
	req, err := http.NewRequestWithContext(ctx, method, p.url+path, bytes.NewReader(body))
	if err != nil {
		p.tb.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+p.token)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	return req
}

// do sends a request and returns code and body; a transport error is
// returned as is.
func (p *serverProc) do(ctx context.Context, c *http.Client, method, path, contentType string, body []byte) (int, []byte, error) {
	resp, err := c.Do(p.request(ctx, method, path, contentType, body))
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// mustDo is do that fails the test unless the answer is want.
func (p *serverProc) mustDo(c *http.Client, method, path, contentType string, body []byte, want int) []byte {
	p.tb.Helper()
	code, b, err := p.do(context.Background(), c, method, path, contentType, body)
	if err != nil || code != want {
		p.tb.Fatalf("%s %s = %d %s, %v; want %d", method, path, code, b, err, want)
	}
	return b
}

// kill sends SIGKILL and waits for the process to be reaped.
func (p *serverProc) kill() {
	p.tb.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
		p.tb.Fatal(err)
	}
	<-p.exited
}

// stop sends SIGTERM and requires a clean exit within 30 s.
func (p *serverProc) stop() {
	p.tb.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		p.tb.Fatal(err)
	}
	select {
	case <-p.exited:
		if p.waitErr != nil {
			p.tb.Fatalf("skiff server exited with %v after SIGTERM\n%s", p.waitErr, p.logTail())
		}
	case <-time.After(30 * time.Second):
		p.tb.Fatalf("skiff server still running 30s after SIGTERM\n%s", p.logTail())
	}
}

// logTail returns the end of the server's log, for failure messages.
func (p *serverProc) logTail() string {
	b, _ := os.ReadFile(p.logPath)
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// procStats is what /proc says about the server process.
type procStats struct {
	rssKB, hwmKB int64 // VmRSS, VmHWM
	cpuTicks     int64 // utime + stime, in USER_HZ ticks
}

// userHZ is the unit of /proc/<pid>/stat times; 100 on every Linux ABI
// Go supports.
const userHZ = 100

// stats reads /proc/<pid>/status and /proc/<pid>/stat.
func (p *serverProc) stats() procStats {
	p.tb.Helper()
	pid := strconv.Itoa(p.cmd.Process.Pid)
	var s procStats
	status, err := os.ReadFile("/proc/" + pid + "/status")
	if err != nil {
		p.tb.Fatal(err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		switch k {
		case "VmRSS":
			s.rssKB = parseKB(p.tb, v)
		case "VmHWM":
			s.hwmKB = parseKB(p.tb, v)
		}
	}
	stat, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		p.tb.Fatal(err)
	}
	// Fields after the command name, which ends at the last ')'; utime
	// and stime are fields 14 and 15 of the whole line.
	i := bytes.LastIndexByte(stat, ')')
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 13 {
		p.tb.Fatalf("short /proc/%s/stat: %q", pid, stat)
	}
	for _, x := range f[11:13] {
		n, err := strconv.ParseInt(x, 10, 64)
		if err != nil {
			p.tb.Fatalf("/proc/%s/stat: %v", pid, err)
		}
		s.cpuTicks += n
	}
	return s
}

func parseKB(tb testing.TB, v string) int64 {
	n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
	if err != nil {
		tb.Fatalf("parse %q: %v", v, err)
	}
	return n
}

// cpuPercent is the CPU the process used between a and b over wall time
// d, as a percentage of one core.
func cpuPercent(a, b procStats, d time.Duration) float64 {
	return float64(b.cpuTicks-a.cpuTicks) / userHZ / d.Seconds() * 100
}
