package proxy

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"sort"
	"sync"
	"time"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/api/client"
	"github.com/skiffhq/skiff/internal/atomicfile"
	"github.com/skiffhq/skiff/internal/backoff"
	"github.com/skiffhq/skiff/internal/clock"
)

// Snapshot is every Service and EndpointSlice of the cluster at one
// moment, sorted by namespace/name. Sinks must not modify it.
type Snapshot struct {
	Services []*api.Service       `json:"services"`
	Slices   []*api.EndpointSlice `json:"endpointSlices"`
}

// Sink takes each new Snapshot (the service proxy, the cluster DNS).
// Apply is called from one goroutine at a time; an error makes the
// Watcher apply the latest snapshot again later.
type Sink interface {
	Apply(snap *Snapshot) error
}

// SinkFunc adapts a function to Sink.
type SinkFunc func(*Snapshot) error

// Apply calls f.
func (f SinkFunc) Apply(s *Snapshot) error { return f(s) }

// checkpointVersion is written into the checkpoint; another is ignored.
const checkpointVersion = 1

type checkpointFile struct {
	Version int `json:"version"`
	Snapshot
}

// Watcher lists and watches Services and EndpointSlices in every
// namespace and hands the whole set to its sinks after every change
// (level-triggered, coalescing bursts). It checkpoints what it applied, and
// starts from the checkpoint, so the node keeps serving the last known
// Services while the server is away, across agent restarts too.
type Watcher struct {
	Client client.ListWatcher // *client.Client
	Sinks  []Sink
	// Checkpoint is the file the last snapshot is kept in
	// (<data-dir>/agent/services.json); "" keeps none.
	Checkpoint string
	Clock      clock.Clock  // default clock.Real
	Logger     *slog.Logger // default: discard

	mu       sync.Mutex
	services map[string]*api.Service
	slices   map[string]*api.EndpointSlice
	changed  chan struct{}
	// written is the SHA-256 of the checkpoint on disk (syncLoop's):
	// a snapshot that encodes the same is not written again (a relist,
	// a server that rewrote an object as it was), sparing the agent's
	// flash an fsync.
	written [sha256.Size]byte
}

// Run serves the sinks until ctx ends, then returns ctx's error. Watch
// failures are retried with a capped, jittered backoff; they are never
// fatal.
func (w *Watcher) Run(ctx context.Context) error {
	clk := clock.Or(w.Clock)
	log := w.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	w.services, w.slices = map[string]*api.Service{}, map[string]*api.EndpointSlice{}
	w.changed = make(chan struct{}, 1)
	if snap, raw, err := readCheckpoint(w.Checkpoint); err != nil {
		log.Warn("service checkpoint unreadable; starting without it", "err", err)
	} else if snap != nil {
		w.written = sha256.Sum256(raw)
		for _, s := range snap.Services {
			if s != nil {
				w.services[key(&s.ObjectMeta)] = s
			}
		}
		for _, s := range snap.Slices {
			if s != nil {
				w.slices[key(&s.ObjectMeta)] = s
			}
		}
		w.notify()
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for _, res := range []string{"services", "endpointslices"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.watchLoop(ctx, res, clk, log)
		}()
	}
	w.syncLoop(ctx, clk, log)
	return ctx.Err()
}

func key(m *api.ObjectMeta) string { return m.Namespace + "/" + m.Name }

func (w *Watcher) notify() {
	select {
	case w.changed <- struct{}{}:
	default:
	}
}

// syncLoop applies the latest snapshot after each change; a failed apply
// is retried after a backoff even without further changes.
func (w *Watcher) syncLoop(ctx context.Context, clk clock.Clock, log *slog.Logger) {
	var bo backoff.Backoff
	var retry <-chan time.Time
	var timer clock.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.changed:
		case <-retry:
		}
		retry = nil
		snap := w.snapshot()
		var errs []error
		for _, s := range w.Sinks {
			if err := s.Apply(snap); err != nil {
				errs = append(errs, err)
			}
		}
		if err := errors.Join(errs...); err != nil {
			d := bo.Next()
			log.Warn("service rules not applied; retrying", "err", err, "in", d)
			if timer != nil {
				timer.Stop()
			}
			timer = clk.NewTimer(d)
			retry = timer.C()
			continue
		}
		bo.Reset()
		if err := w.keepCheckpoint(snap); err != nil {
			log.Warn("service checkpoint not written", "err", err)
		}
	}
}

func (w *Watcher) snapshot() *Snapshot {
	w.mu.Lock()
	defer w.mu.Unlock()
	s := &Snapshot{Services: make([]*api.Service, 0, len(w.services)), Slices: make([]*api.EndpointSlice, 0, len(w.slices))}
	for _, v := range w.services {
		s.Services = append(s.Services, v)
	}
	for _, v := range w.slices {
		s.Slices = append(s.Slices, v)
	}
	sort.Slice(s.Services, func(i, j int) bool { return key(&s.Services[i].ObjectMeta) < key(&s.Services[j].ObjectMeta) })
	sort.Slice(s.Slices, func(i, j int) bool { return key(&s.Slices[i].ObjectMeta) < key(&s.Slices[j].ObjectMeta) })
	return s
}

// watchLoop keeps one resource's cache current: list, then watch. A
// watch that ends or fails is resumed from the last version it saw after
// a back-off, as client-go's reflector does, so a server restart costs
// every agent a watch and not a list of every Service and EndpointSlice;
// only a version the server no longer has (410) makes it list again.
func (w *Watcher) watchLoop(ctx context.Context, resource string, clk clock.Clock, log *slog.Logger) {
	res, ok := api.LookupResource(resource)
	if !ok {
		log.Error("service watcher: unknown resource", "resource", resource)
		return
	}
	var bo backoff.Backoff
	rv := "" // "": list first
	list := func(ctx context.Context) (string, error) { return w.list(ctx, res) }
	watch := func(ctx context.Context, rv string) (string, int, error) { return w.watch(ctx, res, rv) }
	for ctx.Err() == nil {
		var listed, progressed bool
		var err error
		rv, listed, progressed, err = client.ListThenWatch(ctx, rv, list, watch)
		if ctx.Err() != nil {
			return
		}
		if progressed {
			bo.Reset()
		}
		if client.IsGone(err) {
			rv = ""
			if !listed {
				log.Info("service watcher: watch expired; listing again", "resource", resource)
				continue // at once, unless a fresh list was just too old
			}
		}
		d := bo.Next()
		log.Warn("service watcher: watch restarts", "resource", resource, "err", err, "in", d, "resume", rv != "")
		if !clock.Sleep(ctx, clk, d) {
			return
		}
	}
}

// list replaces the resource's cache with a list; it returns the list's
// version.
func (w *Watcher) list(ctx context.Context, res api.ResourceInfo) (string, error) {
	objs, rv, err := w.Client.List(ctx, res, "", client.ListOptions{})
	if err != nil {
		return "", fmt.Errorf("list %s: %w", res.Resource, err)
	}
	w.mu.Lock()
	switch res.Resource {
	case "services":
		w.services = map[string]*api.Service{}
		for _, o := range objs {
			if s, ok := o.(*api.Service); ok {
				w.services[key(&s.ObjectMeta)] = s
			}
		}
	default:
		w.slices = map[string]*api.EndpointSlice{}
		for _, o := range objs {
			if s, ok := o.(*api.EndpointSlice); ok {
				w.slices[key(&s.ObjectMeta)] = s
			}
		}
	}
	w.mu.Unlock()
	w.notify()
	return rv, nil
}

// watch follows changes from rv until the watch ends; it returns the
// last version seen (where to resume), how many events came, and why it
// ended (never nil).
func (w *Watcher) watch(ctx context.Context, res api.ResourceInfo, rv string) (string, int, error) {
	wt, err := w.Client.Watch(ctx, res, "", client.WatchOptions{ResourceVersion: rv})
	if err != nil {
		return rv, 0, fmt.Errorf("watch %s: %w", res.Resource, err)
	}
	defer wt.Close()
	for n := 0; ; n++ {
		ev, err := wt.Next()
		if err != nil {
			return wt.ResourceVersion(), n, fmt.Errorf("watch %s: %w", res.Resource, err)
		}
		w.mu.Lock()
		switch o := ev.Object.(type) {
		case *api.Service:
			if ev.Type == api.Deleted {
				delete(w.services, key(&o.ObjectMeta))
			} else {
				w.services[key(&o.ObjectMeta)] = o
			}
		case *api.EndpointSlice:
			if ev.Type == api.Deleted {
				delete(w.slices, key(&o.ObjectMeta))
			} else {
				w.slices[key(&o.ObjectMeta)] = o
			}
		}
		w.mu.Unlock()
		w.notify()
	}
}

// ReadCheckpoint reads a snapshot written by a Watcher; a missing file
// (or path "") is nil, nil.
func ReadCheckpoint(path string) (*Snapshot, error) {
	snap, _, err := readCheckpoint(path)
	return snap, err
}

// readCheckpoint is ReadCheckpoint, also returning the file's bytes.
func readCheckpoint(path string) (*Snapshot, []byte, error) {
	if path == "" {
		return nil, nil, nil
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("read service checkpoint: %w", err)
	}
	var f checkpointFile
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, nil, fmt.Errorf("service checkpoint %s: %w", path, err)
	}
	if f.Version != checkpointVersion {
		return nil, nil, fmt.Errorf("service checkpoint %s: version %d, want %d", path, f.Version, checkpointVersion)
	}
	return &f.Snapshot, b, nil
}

// keepCheckpoint writes snap to the checkpoint unless the file already
// holds it.
func (w *Watcher) keepCheckpoint(snap *Snapshot) error {
	if w.Checkpoint == "" {
		return nil
	}
	b, err := encodeCheckpoint(snap)
	if err != nil {
		return err
	}
	sum := sha256.Sum256(b)
	if sum == w.written {
		return nil
	}
	if err := replaceCheckpoint(w.Checkpoint, b); err != nil {
		return err
	}
	w.written = sum
	return nil
}

func encodeCheckpoint(snap *Snapshot) ([]byte, error) {
	b, err := json.Marshal(checkpointFile{Version: checkpointVersion, Snapshot: *snap})
	if err != nil {
		return nil, fmt.Errorf("encode service checkpoint: %w", err)
	}
	return b, nil
}

func replaceCheckpoint(path string, b []byte) error {
	if err := os.MkdirAll(dirOf(path), 0o700); err != nil {
		return fmt.Errorf("service checkpoint dir: %w", err)
	}
	if err := atomicfile.Replace(path, b, 0o600); err != nil {
		return fmt.Errorf("write service checkpoint: %w", err)
	}
	return nil
}

func dirOf(p string) string {
	for i := len(p) - 1; i >= 0; i-- {
		if p[i] == '/' {
			return p[:i]
		}
	}
	return "."
}
