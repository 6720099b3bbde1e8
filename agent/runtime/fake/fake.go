package fake

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/skiffhq/skiff/agent/runtime"
	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/internal/clock"
)

// Method names, as recorded in Call.Method and accepted by SetError.
const (
	MethodVersion         = "Version"
	MethodStatus          = "Status"
	MethodEnsureImage     = "EnsureImage"
	MethodImportImages    = "ImportImages"
	MethodListImages      = "ListImages"
	MethodRemoveImage     = "RemoveImage"
	MethodCreateSandbox   = "CreateSandbox"
	MethodRemoveSandbox   = "RemoveSandbox"
	MethodCreateContainer = "CreateContainer"
	MethodStartContainer  = "StartContainer"
	MethodStopContainer   = "StopContainer"
	MethodRemoveContainer = "RemoveContainer"
	MethodListPods        = "ListPods"
	MethodPodStatus       = "PodStatus"
	MethodEvents          = "Events"
)

// Call is one recorded call: the method and its main argument (an image
// ref, a pod UID or a container ID), plus the grace of a StopContainer.
type Call struct {
	Method string
	Arg    string
	Grace  time.Duration
}

// Pull is one image pull the fake performed, with the credentials given.
type Pull struct {
	Ref  string
	Auth []runtime.RegistryAuth
}

type container struct {
	status     runtime.ContainerStatus
	cfg        runtime.ContainerConfig
	ignoreTerm bool          // StopContainer waits the whole grace
	exited     chan struct{} // closed when the container exits
}

// Runtime is the in-memory runtime. Its zero value is not usable; call New.
// It is safe for concurrent use.
type Runtime struct {
	clock clock.Clock

	mu          sync.Mutex
	images      map[string]runtime.Image // by ref
	sandboxes   map[string]runtime.SandboxConfig
	cutShort    map[string]bool // sandboxes CutSandboxShort made
	containers  map[string]*container
	calls       []Call
	pulls       []Pull
	errs        map[string]error
	pullErrs    map[string]error
	ignoreTerm  map[string]bool // container name → ignores SIGTERM
	events      chan runtime.Event
	dropped     int
	startErrors map[string]error
	execFn      ExecFunc
}

var _ runtime.Runtime = (*Runtime)(nil)

// New returns an empty fake runtime on clock c. Its events channel holds
// 256 events; further events are dropped (counted by Dropped), as the
// Runtime contract allows.
func New(c clock.Clock) *Runtime {
	return &Runtime{
		clock:       clock.Or(c),
		images:      map[string]runtime.Image{},
		sandboxes:   map[string]runtime.SandboxConfig{},
		cutShort:    map[string]bool{},
		containers:  map[string]*container{},
		errs:        map[string]error{},
		pullErrs:    map[string]error{},
		ignoreTerm:  map[string]bool{},
		startErrors: map[string]error{},
		events:      make(chan runtime.Event, 256),
	}
}

// SetError makes every later call of method fail with err until it is
// set again; a nil err clears it.
func (r *Runtime) SetError(method string, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err == nil {
		delete(r.errs, method)
		return
	}
	r.errs[method] = err
}

// SetPullError makes pulls of ref fail (wrapped in runtime.ErrImagePull)
// until cleared with a nil err.
func (r *Runtime) SetPullError(ref string, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err == nil {
		delete(r.pullErrs, ref)
		return
	}
	r.pullErrs[ref] = err
}

// SetStartError makes StartContainer of containers named name fail with
// err (a nil err clears it).
func (r *Runtime) SetStartError(name string, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err == nil {
		delete(r.startErrors, name)
		return
	}
	r.startErrors[name] = err
}

// IgnoreSIGTERM makes containers named name ignore the stop signal:
// StopContainer then waits the full grace period on the clock before it
// kills them (exit code 137).
func (r *Runtime) IgnoreSIGTERM(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ignoreTerm[name] = true
}

// AddImage makes ref present, as if pulled before.
func (r *Runtime) AddImage(ref string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.images[ref] = r.imageLocked(ref)
}

// AddImageSized makes ref present with size bytes, as if pulled at
// created (tests of image garbage collection).
func (r *Runtime) AddImageSized(ref string, size int64, created time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	img := image(ref)
	img.Size, img.CreatedAt = size, created
	r.images[ref] = img
}

func (r *Runtime) imageLocked(ref string) runtime.Image {
	img := image(ref)
	img.CreatedAt = r.clock.Now()
	return img
}

func image(ref string) runtime.Image {
	sum := sha256.Sum256([]byte(ref))
	return runtime.Image{Ref: ref, ID: "sha256:" + hex.EncodeToString(sum[:]), Size: 1 << 20}
}

// Calls returns a copy of the recorded calls, oldest first.
func (r *Runtime) Calls() []Call {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.calls)
}

// CallCount counts the recorded calls of method with argument arg (any
// argument when arg is "").
func (r *Runtime) CallCount(method, arg string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, c := range r.calls {
		if c.Method == method && (arg == "" || c.Arg == arg) {
			n++
		}
	}
	return n
}

// Pulls returns the pulls performed, oldest first.
func (r *Runtime) Pulls() []Pull {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.pulls)
}

// Dropped is how many events did not fit the events channel.
func (r *Runtime) Dropped() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.dropped
}

// Container returns the status and config of container id.
func (r *Runtime) Container(id string) (runtime.ContainerStatus, runtime.ContainerConfig, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.containers[id]
	if !ok {
		return runtime.ContainerStatus{}, runtime.ContainerConfig{}, false
	}
	return c.status, c.cfg, true
}

// HasSandbox reports whether pod uid has a sandbox.
func (r *Runtime) HasSandbox(uid string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.sandboxes[uid]
	return ok
}

// Exit makes running container id exit with code; oom marks it killed
// for memory. It emits ContainerDied (and ContainerOOM).
func (r *Runtime) Exit(id string, code int32, oom bool) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.containers[id]
	if !ok {
		return fmt.Errorf("exit %s: %w", id, runtime.ErrNotFound)
	}
	if c.status.State != runtime.StateRunning {
		return fmt.Errorf("exit %s: container is %s, not running", id, c.status.State)
	}
	reason := "Error"
	switch {
	case oom:
		reason = "OOMKilled"
		r.emitLocked(runtime.ContainerOOM, c)
	case code == 0:
		reason = "Completed"
	}
	r.exitLocked(c, code, reason)
	return nil
}

func (r *Runtime) exitLocked(c *container, code int32, reason string) {
	c.status.State = runtime.StateExited
	c.status.ExitCode = code
	c.status.Reason = reason
	c.status.FinishedAt = r.clock.Now()
	c.status.PID = 0
	close(c.exited)
	r.emitLocked(runtime.ContainerDied, c)
}

func (r *Runtime) emitLocked(t runtime.EventType, c *container) {
	select {
	case r.events <- runtime.Event{Type: t, PodUID: c.status.PodUID, ContainerID: c.status.ID}:
	default:
		r.dropped++
	}
}

// recordLocked records a call and returns the injected error of method.
func (r *Runtime) recordLocked(c Call) error {
	r.calls = append(r.calls, c)
	if err := r.errs[c.Method]; err != nil {
		return fmt.Errorf("fake %s: %w", c.Method, err)
	}
	return nil
}

// Version implements runtime.Runtime.
func (r *Runtime) Version(ctx context.Context) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.recordLocked(Call{Method: MethodVersion}); err != nil {
		return "", err
	}
	return "fake 1.0", nil
}

// Status implements runtime.Runtime.
func (r *Runtime) Status(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.recordLocked(Call{Method: MethodStatus})
}

// EnsureImage implements runtime.Runtime. Pulls succeed unless
// SetPullError names the ref.
func (r *Runtime) EnsureImage(ctx context.Context, ref string, policy api.PullPolicy, auth []runtime.RegistryAuth) (runtime.Image, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.recordLocked(Call{Method: MethodEnsureImage, Arg: ref}); err != nil {
		return runtime.Image{}, err
	}
	img, present := r.images[ref]
	switch policy {
	case api.PullNever:
		if !present {
			return runtime.Image{}, fmt.Errorf("image %s: %w", ref, runtime.ErrImageNeverPull)
		}
		return img, nil
	case api.PullIfNotPresent:
		if present {
			return img, nil
		}
	}
	r.pulls = append(r.pulls, Pull{Ref: ref, Auth: slices.Clone(auth)})
	if err := r.pullErrs[ref]; err != nil {
		return runtime.Image{}, fmt.Errorf("pull %s: %w: %w", ref, runtime.ErrImagePull, err)
	}
	img = r.imageLocked(ref)
	r.images[ref] = img
	return img, nil
}

// ImportImages implements runtime.Runtime: each non-empty line of the
// reader is an image ref.
func (r *Runtime) ImportImages(ctx context.Context, rd io.Reader) ([]runtime.Image, error) {
	b, err := io.ReadAll(rd)
	if err != nil {
		return nil, fmt.Errorf("read images: %w", err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.recordLocked(Call{Method: MethodImportImages}); err != nil {
		return nil, err
	}
	var out []runtime.Image
	for _, line := range strings.Fields(string(b)) {
		img := image(line)
		r.images[line] = img
		out = append(out, img)
	}
	return out, nil
}

// ListImages implements runtime.Runtime.
func (r *Runtime) ListImages(ctx context.Context) ([]runtime.Image, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.recordLocked(Call{Method: MethodListImages}); err != nil {
		return nil, err
	}
	out := make([]runtime.Image, 0, len(r.images))
	for _, img := range r.images {
		out = append(out, img)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Ref < out[j].Ref })
	return out, nil
}

// RemoveImage implements runtime.Runtime.
func (r *Runtime) RemoveImage(ctx context.Context, ref string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.recordLocked(Call{Method: MethodRemoveImage, Arg: ref}); err != nil {
		return err
	}
	delete(r.images, ref)
	return nil
}

func sandboxOf(cfg runtime.SandboxConfig) runtime.Sandbox {
	s := runtime.Sandbox{PodUID: cfg.PodUID, CgroupParent: "/skiff/" + strings.ToLower(string(cfg.QOSClass)) + "/pod" + cfg.PodUID}
	if !cfg.HostNetwork {
		s.NetNSPath = "/run/netns/skiff-" + cfg.PodUID
	}
	return s
}

// CreateSandbox implements runtime.Runtime.
func (r *Runtime) CreateSandbox(ctx context.Context, cfg runtime.SandboxConfig) (runtime.Sandbox, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.recordLocked(Call{Method: MethodCreateSandbox, Arg: cfg.PodUID}); err != nil {
		return runtime.Sandbox{}, err
	}
	if cfg.PodUID == "" {
		return runtime.Sandbox{}, fmt.Errorf("create sandbox: %w: empty pod uid", runtime.ErrInvalidConfig)
	}
	if old, ok := r.sandboxes[cfg.PodUID]; ok && !r.cutShort[cfg.PodUID] {
		return sandboxOf(old), nil
	}
	delete(r.cutShort, cfg.PodUID)
	r.sandboxes[cfg.PodUID] = cfg
	return sandboxOf(cfg), nil
}

// CutSandboxShort leaves the sandbox of cfg as an agent killed inside
// CreateSandbox leaves it: its record, no cgroup, no network namespace
// (ListPods shows a Sandbox with the pod UID only). CreateSandbox
// completes it.
func (r *Runtime) CutSandboxShort(cfg runtime.SandboxConfig) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sandboxes[cfg.PodUID] = cfg
	r.cutShort[cfg.PodUID] = true
}

// SandboxConfig returns the config pod uid's sandbox was created with.
func (r *Runtime) SandboxConfig(uid string) (runtime.SandboxConfig, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	cfg, ok := r.sandboxes[uid]
	return cfg, ok
}

// RemoveSandbox implements runtime.Runtime. It fails while the pod still
// has containers, to catch callers that skip removing them.
func (r *Runtime) RemoveSandbox(ctx context.Context, podUID string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.recordLocked(Call{Method: MethodRemoveSandbox, Arg: podUID}); err != nil {
		return err
	}
	for _, c := range r.containers {
		if c.status.PodUID == podUID {
			return fmt.Errorf("remove sandbox %s: container %s still exists", podUID, c.status.ID)
		}
	}
	delete(r.sandboxes, podUID)
	return nil
}
