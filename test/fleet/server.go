package fleet

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/skiffhq/skiff/api/client"
)

// BuildSkiff builds ./cmd/skiff (static, as released) into dir and
// returns the binary's path. It runs `go` from PATH.
func BuildSkiff(ctx context.Context, dir string) (string, error) {
	bin := filepath.Join(dir, "skiff")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/skiffhq/skiff/cmd/skiff")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build skiff: %w\n%s", err, out)
	}
	return bin, nil
}

// RaiseFileLimit lifts RLIMIT_NOFILE (child processes inherit it) to at
// least want when the process may (root may raise the hard limit), else
// the soft limit to the hard one: every agent holds a connection, and
// the server one per agent. It returns the soft limit now in force.
func RaiseFileLimit(want uint64) (uint64, error) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0, fmt.Errorf("read the file limit: %w", err)
	}
	if lim.Max < want {
		up := syscall.Rlimit{Cur: want, Max: want}
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &up); err == nil {
			return want, nil
		}
	}
	if lim.Cur < lim.Max {
		lim.Cur = lim.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
			return 0, fmt.Errorf("raise the file limit: %w", err)
		}
	}
	return lim.Cur, nil
}

// Server is one `skiff server --disable-agent` child process on a data
// dir and a loopback address.
type Server struct {
	Bin     string
	DataDir string
	Addr    string // 127.0.0.1:port
	URL     string // https://Addr
	LogPath string

	// Credentials the server wrote on its first start.
	CA         []byte
	AdminToken string
	JoinToken  string

	cmd     *exec.Cmd
	exited  chan struct{}
	waitErr error
	started atomic.Int64 // unix nanos: when cmd was started
}

// StartServer starts bin as a server on dataDir, listening on addr
// (127.0.0.1:0 picks a free port, kept across Restart), and returns once
// /readyz answers 200, or fails after timeout with the log's tail.
func StartServer(bin, dataDir, addr string, timeout time.Duration) (*Server, error) {
	if addr == "" || strings.HasSuffix(addr, ":0") {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("pick a port: %w", err)
		}
		addr = ln.Addr().String()
		if err := ln.Close(); err != nil {
			return nil, fmt.Errorf("pick a port: %w", err)
		}
	}
	s := &Server{Bin: bin, DataDir: dataDir, Addr: addr, URL: "https://" + addr, LogPath: filepath.Join(dataDir, "server.log")}
	return s, s.start(timeout)
}

func (s *Server) start(timeout time.Duration) error {
	if err := os.MkdirAll(s.DataDir, 0o700); err != nil {
		return err
	}
	logf, err := os.OpenFile(s.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer logf.Close()
	// A /10 holds 16 384 nodes' /24s: a fleet of 10 000 is set up as an
	// operator must set it up (the default /16 holds 256; the others
	// would wait for a pod CIDR).
	s.cmd = exec.Command(s.Bin, "server", "--disable-agent", "--config", "", "--data-dir", s.DataDir, "--listen", s.Addr,
		"--cluster-cidr", "10.64.0.0/10")
	s.cmd.Stdout, s.cmd.Stderr = logf, logf
	s.exited = make(chan struct{})
	if err := s.cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", s.Bin, err)
	}
	s.started.Store(time.Now().UnixNano())
	go func() {
		s.waitErr = s.cmd.Wait()
		close(s.exited)
	}()
	return s.waitReady(timeout)
}

// Restart stops the server (SIGTERM) and starts it again on the same
// data dir and address.
func (s *Server) Restart(timeout time.Duration) error {
	if err := s.Stop(timeout); err != nil {
		return err
	}
	return s.start(timeout)
}

// Started is when the running server process was started.
// It may be called while the server restarts.
func (s *Server) Started() time.Time { return time.Unix(0, s.started.Load()) }

// Pid is the server process's id.
func (s *Server) Pid() int { return s.cmd.Process.Pid }

// waitReady polls for the credentials on disk, then /readyz.
func (s *Server) waitReady(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	var last error
	var hc *http.Client
	for {
		select {
		case <-s.exited:
			return fmt.Errorf("skiff server exited during start-up: %v\n%s", s.waitErr, s.LogTail())
		case <-tick.C:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("skiff server not ready within %v (last: %v)\n%s", timeout, last, s.LogTail())
		}
		if hc == nil {
			if last = s.loadCredentials(); last != nil {
				continue
			}
			pool := x509.NewCertPool()
			pool.AppendCertsFromPEM(s.CA)
			tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}
			defer tr.CloseIdleConnections()
			hc = &http.Client{Transport: tr, Timeout: 5 * time.Second}
		}
		resp, err := hc.Get(s.URL + "/readyz")
		if err != nil {
			last = err
			continue
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			return nil
		}
		last = fmt.Errorf("/readyz = %d", resp.StatusCode)
	}
}

// loadCredentials reads the CA and the admin and join tokens the server
// wrote under <data-dir>/server.
func (s *Server) loadCredentials() error {
	dir := filepath.Join(s.DataDir, "server")
	ca, err := os.ReadFile(filepath.Join(dir, "tls", "ca.crt"))
	if err != nil {
		return err
	}
	admin, err := os.ReadFile(filepath.Join(dir, "admin.token"))
	if err != nil {
		return err
	}
	join, err := os.ReadFile(filepath.Join(dir, "join.token"))
	if err != nil {
		return err
	}
	if !bytes.Contains(ca, []byte("BEGIN CERTIFICATE")) {
		return errors.New("tls/ca.crt holds no certificate")
	}
	s.CA, s.AdminToken, s.JoinToken = ca, strings.TrimSpace(string(admin)), strings.TrimSpace(string(join))
	return nil
}

// Admin returns an API client with the admin token.
func (s *Server) Admin() (*client.Client, error) {
	return client.New(client.Config{Server: s.URL, CAData: s.CA, Token: s.AdminToken, Timeout: 2 * time.Minute})
}

// Stop sends SIGTERM and waits up to timeout for a clean exit, then
// kills.
func (s *Server) Stop(timeout time.Duration) error {
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("stop the server: %w", err)
	}
	select {
	case <-s.exited:
		if s.waitErr != nil {
			return fmt.Errorf("skiff server exited with %w after SIGTERM\n%s", s.waitErr, s.LogTail())
		}
		return nil
	case <-time.After(timeout):
		s.Kill()
		return fmt.Errorf("skiff server still running %v after SIGTERM (killed)\n%s", timeout, s.LogTail())
	}
}

// Kill sends SIGKILL and waits for the process to be reaped.
func (s *Server) Kill() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	if err := s.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		return // already gone
	}
	<-s.exited
}

// LogTail is the end of the server's log, for error messages.
func (s *Server) LogTail() string {
	b, err := os.ReadFile(s.LogPath)
	if err != nil {
		return err.Error()
	}
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// ProcStats is what /proc says about a process.
type ProcStats struct {
	At       time.Time
	RSSKB    int64 // VmRSS
	HWMKB    int64 // VmHWM
	CPUTicks int64 // utime + stime, in USER_HZ ticks
	Threads  int64
	FDs      int // open descriptors
	Sockets  int // of them, sockets
}

// userHZ is the unit of /proc/<pid>/stat times; 100 on every Linux ABI
// Go supports.
const userHZ = 100

// Stats reads the server's /proc/<pid>/{status,stat,fd}.
func (s *Server) Stats() (ProcStats, error) { return ReadProcStats(s.Pid()) }

// ReadProcStats reads /proc/<pid>/{status,stat,fd}.
func ReadProcStats(pid int) (ProcStats, error) {
	st := ProcStats{At: time.Now()}
	dir := "/proc/" + strconv.Itoa(pid)
	status, err := os.ReadFile(dir + "/status")
	if err != nil {
		return st, err
	}
	for line := range strings.SplitSeq(string(status), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		v = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
		switch k {
		case "VmRSS":
			st.RSSKB, err = strconv.ParseInt(v, 10, 64)
		case "VmHWM":
			st.HWMKB, err = strconv.ParseInt(v, 10, 64)
		case "Threads":
			st.Threads, err = strconv.ParseInt(v, 10, 64)
		}
		if err != nil {
			return st, fmt.Errorf("%s/status %s: %w", dir, k, err)
		}
	}
	stat, err := os.ReadFile(dir + "/stat")
	if err != nil {
		return st, err
	}
	// utime and stime are fields 14 and 15; the command name before them
	// ends at the last ')'.
	f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
	if len(f) < 13 {
		return st, fmt.Errorf("short %s/stat", dir)
	}
	for _, x := range f[11:13] {
		n, err := strconv.ParseInt(x, 10, 64)
		if err != nil {
			return st, fmt.Errorf("%s/stat: %w", dir, err)
		}
		st.CPUTicks += n
	}
	fds, err := os.ReadDir(dir + "/fd")
	if err != nil {
		return st, err
	}
	st.FDs = len(fds)
	for _, fd := range fds {
		if t, err := os.Readlink(dir + "/fd/" + fd.Name()); err == nil && strings.HasPrefix(t, "socket:") {
			st.Sockets++
		}
	}
	return st, nil
}

// CPUPercent is the CPU used between a and b as a percentage of one core.
func CPUPercent(a, b ProcStats) float64 {
	d := b.At.Sub(a.At).Seconds()
	if d <= 0 {
		return 0
	}
	return float64(b.CPUTicks-a.CPUTicks) / userHZ / d * 100
}
