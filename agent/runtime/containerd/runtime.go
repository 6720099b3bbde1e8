package containerd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/namespaces"
	"github.com/containerd/errdefs"

	"github.com/skiffhq/skiff/agent/cgroups"
	"github.com/skiffhq/skiff/agent/runtime"
	"github.com/skiffhq/skiff/internal/clock"
)

// Config configures a Runtime.
type Config struct {
	// Socket is containerd's gRPC socket (required).
	Socket string
	// Namespace is the containerd namespace; "" means "skiff".
	Namespace string
	// DataDir is the agent's runtime state directory (required): network
	// namespaces are bind-mounted under DataDir/netns, sandbox records
	// kept under DataDir/sandboxes.
	DataDir string
	// CgroupRoot is the pod cgroups' root; "" means "/skiff".
	CgroupRoot string
	// PodPIDsLimit is each pod cgroup's pids.max; 0 means no limit.
	PodPIDsLimit int64
	// Cgroups overrides the pod cgroup manager (tests); nil makes one on
	// this host's hierarchy under CgroupRoot.
	Cgroups *cgroups.Manager
	// Snapshotter is the containerd snapshotter; "" means "overlayfs".
	Snapshotter string
	// Logger defaults to discarding.
	Logger *slog.Logger
	// Clock times stop grace periods and stamps start times; nil means
	// the wall clock.
	Clock clock.Clock
}

// Validate checks c and fills its defaults.
func (c *Config) Validate() error {
	if c.Socket == "" {
		return errors.New("containerd runtime: socket is required")
	}
	if c.DataDir == "" || !filepath.IsAbs(c.DataDir) {
		return fmt.Errorf("containerd runtime: data dir %q must be an absolute path", c.DataDir)
	}
	if c.Namespace == "" {
		c.Namespace = "skiff"
	}
	if c.CgroupRoot == "" {
		c.CgroupRoot = "/skiff"
	}
	if c.PodPIDsLimit < 0 {
		return fmt.Errorf("containerd runtime: pod PIDs limit %d must not be negative", c.PodPIDsLimit)
	}
	if c.Snapshotter == "" {
		c.Snapshotter = "overlayfs"
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	c.Clock = clock.Or(c.Clock)
	return nil
}

// Runtime is runtime.Runtime on containerd. It is safe for concurrent
// use; the agent serialises work on one pod.
type Runtime struct {
	client *client.Client
	ns     string
	snap   string
	data   string
	cg     *cgroups.Manager
	pids   int64 // each pod cgroup's pids.max; 0: none
	log    *slog.Logger
	clock  clock.Clock

	// reaping serialises, per container, recording a dead task's exit
	// facts and deleting it, so two callers never record different
	// facts; different containers are reaped in parallel (a churning node
	// deletes many pods at once, and a dead task keeps its shim until it
	// is reaped).
	reaping keyMutex

	mu      sync.Mutex
	podOf   map[string]string // container ID → pod UID, for events
	oomSeen map[string]bool   // container IDs with a TaskOOM event
}

var _ runtime.Runtime = (*Runtime)(nil)

// New connects to containerd per cfg. It does not wait for the daemon:
// Status tells whether it answers.
func New(ctx context.Context, cfg Config) (*Runtime, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cg := cfg.Cgroups
	if cg == nil {
		var err error
		if cg, err = cgroups.New(cfg.CgroupRoot); err != nil {
			return nil, fmt.Errorf("containerd runtime: %w", err)
		}
	}
	for _, d := range []string{netnsDir(cfg.DataDir), recordDir(cfg.DataDir)} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("containerd runtime: %w", err)
		}
	}
	c, err := client.New(cfg.Socket, client.WithDefaultNamespace(cfg.Namespace), client.WithTimeout(10*time.Second))
	if err != nil {
		return nil, fmt.Errorf("containerd runtime: connect %s: %w", cfg.Socket, err)
	}
	return &Runtime{
		client: c, ns: cfg.Namespace, snap: cfg.Snapshotter, data: cfg.DataDir, cg: cg, pids: cfg.PodPIDsLimit,
		log: cfg.Logger, clock: cfg.Clock,
		podOf: map[string]string{}, oomSeen: map[string]bool{},
	}, nil
}

// Images is what NewImages gives: a Runtime's image import, and Close.
type Images interface {
	ImportImages(ctx context.Context, rd io.Reader) ([]runtime.Image, error)
	Close() error
}

// NewImages connects to containerd for image commands only (`skiff
// images import`): unlike New it needs no data dir and creates nothing on
// the host, neither directories nor cgroups. cfg's DataDir, CgroupRoot,
// PodPIDsLimit and Cgroups are ignored.
func NewImages(cfg Config) (Images, error) {
	cfg.DataDir = "/" // Validate wants one; nothing here uses it
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	c, err := client.New(cfg.Socket, client.WithDefaultNamespace(cfg.Namespace), client.WithTimeout(10*time.Second))
	if err != nil {
		return nil, fmt.Errorf("containerd runtime: connect %s: %w", cfg.Socket, err)
	}
	return &Runtime{client: c, ns: cfg.Namespace, snap: cfg.Snapshotter, log: cfg.Logger, clock: cfg.Clock}, nil
}

// Close closes the connection to containerd. Containers keep running.
func (r *Runtime) Close() error { return r.client.Close() }

// Cgroups is the pod cgroup manager the Runtime uses (the eviction
// manager reads pod memory through it).
func (r *Runtime) Cgroups() *cgroups.Manager { return r.cg }

func (r *Runtime) nsctx(ctx context.Context) context.Context {
	return namespaces.WithNamespace(ctx, r.ns)
}

// Version returns "containerd <version>".
func (r *Runtime) Version(ctx context.Context) (string, error) {
	v, err := r.client.Version(r.nsctx(ctx))
	if err != nil {
		return "", translate("version", err)
	}
	return "containerd " + v.Version, nil
}

// Status is nil when containerd answers its health check within 5s.
func (r *Runtime) Status(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	ok, err := r.client.IsServing(r.nsctx(ctx))
	if err != nil {
		return fmt.Errorf("containerd is not answering: %w", err)
	}
	if !ok {
		return errors.New("containerd is not serving")
	}
	return nil
}

// translate is the one place containerd's errors become skiff's: it
// wraps err with op and, where containerd's error has a meaning callers
// branch on, the runtime sentinel (runtime.ErrNotFound, …) or the
// context error, keeping containerd's own error in the chain too, so
// errors.Is works for both.
func translate(op string, err error) error {
	switch {
	case err == nil:
		return nil
	case errdefs.IsNotFound(err):
		return fmt.Errorf("%s: %w: %w", op, runtime.ErrNotFound, err)
	case errdefs.IsAlreadyExists(err):
		return fmt.Errorf("%s: %w: %w", op, runtime.ErrAlreadyExists, err)
	case errdefs.IsInvalidArgument(err):
		return fmt.Errorf("%s: %w: %w", op, runtime.ErrInvalidConfig, err)
	case errdefs.IsUnavailable(err):
		return fmt.Errorf("%s: %w: %w", op, runtime.ErrUnavailable, err)
	case errdefs.IsCanceled(err) && !errors.Is(err, context.Canceled):
		return fmt.Errorf("%s: %w: %w", op, context.Canceled, err)
	case errdefs.IsDeadlineExceeded(err) && !errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("%s: %w: %w", op, context.DeadlineExceeded, err)
	}
	return fmt.Errorf("%s: %w", op, err)
}

func (r *Runtime) rememberPod(id, uid string) {
	r.mu.Lock()
	r.podOf[id] = uid
	r.mu.Unlock()
}

func (r *Runtime) forget(id string) {
	r.mu.Lock()
	delete(r.podOf, id)
	delete(r.oomSeen, id)
	r.mu.Unlock()
}
