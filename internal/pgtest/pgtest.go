package pgtest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx"
)

// BinDir holds Debian's PostgreSQL 15 server binaries.
const BinDir = "/usr/lib/postgresql/15/bin"

// Cluster is a private PostgreSQL cluster. Its methods are safe for
// concurrent use.
type Cluster struct {
	// Dir holds the data directory, the Unix socket and the server log.
	Dir string
	// Port is the loopback TCP port (and the socket's number).
	Port int

	uid, gid int
	fsync    bool
	dbs      atomic.Int64

	mu  sync.Mutex
	cmd *exec.Cmd // the running postmaster; nil when stopped
}

// Options configures a cluster.
type Options struct {
	// Fsync keeps PostgreSQL's fsync on (benchmarks of durable writes);
	// tests leave it off, since they kill skiff, not PostgreSQL.
	Fsync bool
}

// Start runs a new cluster for tb and removes it when tb ends.
func Start(tb testing.TB, opts Options) *Cluster {
	tb.Helper()
	c, err := New(opts)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := c.Remove(); err != nil {
			tb.Errorf("remove PostgreSQL cluster: %v", err)
		}
	})
	return c
}

// New creates and starts a cluster; the caller must Remove it (TestMain).
func New(opts Options) (*Cluster, error) {
	if _, err := os.Stat(filepath.Join(BinDir, "postgres")); err != nil {
		return nil, fmt.Errorf("PostgreSQL 15 is not installed (apt-get install postgresql, or make deps): %w", err)
	}
	if os.Geteuid() != 0 {
		return nil, errors.New("pgtest runs initdb as the postgres user and needs root")
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("the postgres user is missing (apt-get install postgresql): %w", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	dir, err := os.MkdirTemp("/tmp", "skiff-pg-")
	if err != nil {
		return nil, err
	}
	c := &Cluster{Dir: dir, uid: uid, gid: gid, fsync: opts.Fsync}
	if err := c.init(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	if err := c.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return c, nil
}

func (c *Cluster) init() error {
	if err := os.Chown(c.Dir, c.uid, c.gid); err != nil {
		return err
	}
	if err := os.Chmod(c.Dir, 0o700); err != nil {
		return err
	}
	port, err := freePort()
	if err != nil {
		return err
	}
	c.Port = port
	cmd := c.command(filepath.Join(BinDir, "initdb"), "-D", c.dataDir(), "-U", "postgres",
		"--auth=trust", "-E", "UTF8", "--no-sync", "--locale=C")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("initdb: %w: %s", err, out)
	}
	return nil
}

func (c *Cluster) dataDir() string { return filepath.Join(c.Dir, "data") }

func (c *Cluster) command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.Dir = c.Dir
	cmd.Env = []string{"LC_ALL=C", "PATH=/usr/bin:/bin"}
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Credential: &syscall.Credential{Uid: uint32(c.uid), Gid: uint32(c.gid)},
		Setpgid:    true,
	}
	return cmd
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// Start starts the server (again, after Stop or Kill) and waits until it
// accepts connections.
func (c *Cluster) Start() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cmd != nil {
		return nil
	}
	fsync := "off"
	if c.fsync {
		fsync = "on"
	}
	logf, err := os.OpenFile(filepath.Join(c.Dir, "server.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd := c.command(filepath.Join(BinDir, "postgres"), "-D", c.dataDir(),
		"-k", c.Dir, "-p", strconv.Itoa(c.Port), "-c", "listen_addresses=127.0.0.1",
		"-c", "fsync="+fsync, "-c", "max_connections=200", "-c", "shared_buffers=64MB",
		"-c", "log_min_messages=warning")
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start postgres: %w", err)
	}
	c.cmd = cmd
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		err := c.ping(ctx)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			log, _ := os.ReadFile(filepath.Join(c.Dir, "server.log"))
			return fmt.Errorf("postgres did not start: %w\n%s", err, log)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (c *Cluster) ping(ctx context.Context) error {
	db, err := sql.Open("pgx", c.url("postgres"))
	if err != nil {
		return err
	}
	defer db.Close()
	pctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	return db.PingContext(pctx)
}

// Stop shuts the server down (fast shutdown: sessions are ended).
func (c *Cluster) Stop() error { return c.stop(syscall.SIGINT) }

// Kill ends the server with SIGKILL, as a crash would.
func (c *Cluster) Kill() error { return c.stop(syscall.SIGKILL) }

func (c *Cluster) stop(sig syscall.Signal) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cmd == nil {
		return nil
	}
	cmd := c.cmd
	c.cmd = nil
	// The process group: the postmaster and its backends.
	if err := syscall.Kill(-cmd.Process.Pid, sig); err != nil {
		return fmt.Errorf("signal postgres: %w", err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); err != nil {
			return err
		}
		<-done
	}
	if sig == syscall.SIGKILL {
		// Backends of a killed postmaster exit on their own; the lock
		// file keeps a restart from racing them.
		_ = os.Remove(filepath.Join(c.dataDir(), "postmaster.pid")) //nolint:errcheck // absent after a clean stop
	}
	return nil
}

// Remove stops the server and deletes the cluster's directory.
func (c *Cluster) Remove() error {
	err := c.Stop()
	return errors.Join(err, os.RemoveAll(c.Dir))
}

// url returns a connection URL for database db over the Unix socket.
func (c *Cluster) url(db string) string {
	q := url.Values{}
	q.Set("host", c.Dir)
	q.Set("port", strconv.Itoa(c.Port))
	q.Set("sslmode", "disable")
	return (&url.URL{Scheme: "postgres", User: url.User("postgres"), Path: "/" + db, RawQuery: q.Encode()}).String()
}

// TCPURL returns a connection URL for database db over loopback TCP.
func (c *Cluster) TCPURL(db string) string {
	return (&url.URL{Scheme: "postgres", User: url.User("postgres"), Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(c.Port)),
		Path: "/" + db, RawQuery: "sslmode=disable"}).String()
}

// URL returns a connection URL for database db over the Unix socket.
func (c *Cluster) URL(db string) string { return c.url(db) }

// NewDatabase creates an empty database and returns its name.
func (c *Cluster) NewDatabase() (string, error) {
	name := fmt.Sprintf("skiff_%d", c.dbs.Add(1))
	db, err := sql.Open("pgx", c.url("postgres"))
	if err != nil {
		return "", err
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := db.ExecContext(ctx, "CREATE DATABASE "+name); err != nil {
		return "", fmt.Errorf("create database %s: %w", name, err)
	}
	return name, nil
}

// Database creates a database for tb and returns its URL (Unix socket).
func (c *Cluster) Database(tb testing.TB) string {
	tb.Helper()
	name, err := c.NewDatabase()
	if err != nil {
		tb.Fatal(err)
	}
	return c.url(name)
}
