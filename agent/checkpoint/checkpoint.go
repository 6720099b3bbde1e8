package checkpoint

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/internal/atomicfile"
	"github.com/skiffhq/skiff/internal/clock"
)

// FileName is the checkpoint's name inside its directory.
const FileName = "pods.json"

// DefaultDebounce is how long Save waits for more changes before writing.
const DefaultDebounce = time.Second

// formatVersion is written into the file; another version is not read.
const formatVersion = 1

// file is the checkpoint's JSON shape.
type file struct {
	Version int        `json:"version"`
	Pods    []*api.Pod `json:"pods"`
}

// Config configures a Store.
type Config struct {
	// Dir holds the checkpoint: <data-dir>/agent/checkpoint. It is made
	// (0700) on the first write.
	Dir string
	// Debounce is the quiet time before a write. Default DefaultDebounce.
	Debounce time.Duration
	// Clock times the debounce. Default clock.Real.
	Clock clock.Clock
	// Logger. Default slog.Default().
	Logger *slog.Logger
}

// Validate reports what is wrong with c.
func (c Config) Validate() error {
	if c.Dir == "" {
		return errors.New("checkpoint: a directory is required")
	}
	if c.Debounce < 0 {
		return fmt.Errorf("checkpoint: negative debounce %v", c.Debounce)
	}
	return nil
}

// Store persists the API source's pods. Save may be called from any
// goroutine; Run writes, debounced, and must be running for saves to
// reach the disk. Each write replaces the file atomically, so a crash
// leaves the old checkpoint or the new one, never a torn file.
type Store struct {
	path     string
	debounce time.Duration
	clock    clock.Clock
	log      *slog.Logger
	notify   chan struct{}

	mu      sync.Mutex
	pending []byte // the latest unwritten content, nil when none
}

// New returns a Store for cfg.
func New(cfg Config) (*Store, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	d := cfg.Debounce
	if d == 0 {
		d = DefaultDebounce
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	return &Store{path: filepath.Join(cfg.Dir, FileName), debounce: d, clock: clock.Or(cfg.Clock), log: log, notify: make(chan struct{}, 1)}, nil
}

// Path is the checkpoint file's path.
func (s *Store) Path() string { return s.path }

// Load reads the checkpoint. A missing file gives no pods; an unreadable,
// corrupt or foreign file is logged and gives no pods (the server will
// send the truth when it answers), as do pods without a UID.
func (s *Store) Load() []*api.Pod {
	data, err := os.ReadFile(s.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		s.log.Warn("checkpoint ignored: cannot read it", "file", s.path, "err", err)
		return nil
	}
	var f file
	if err := json.Unmarshal(data, &f); err != nil {
		s.log.Warn("checkpoint ignored: corrupt", "file", s.path, "err", err)
		return nil
	}
	if f.Version != formatVersion {
		s.log.Warn("checkpoint ignored: unknown format version", "file", s.path, "version", f.Version)
		return nil
	}
	pods := make([]*api.Pod, 0, len(f.Pods))
	for _, p := range f.Pods {
		if p == nil || p.UID == "" || p.Name == "" {
			s.log.Warn("checkpoint: pod without name or UID skipped", "file", s.path)
			continue
		}
		api.SetTypeMeta(p)
		pods = append(pods, p)
	}
	return pods
}

// Save records pods as the checkpoint's next content and returns at once;
// Run writes it after the debounce. Save encodes pods before it returns
// and keeps no reference to them. It implements config.Checkpointer.
func (s *Store) Save(pods []*api.Pod) {
	if pods == nil {
		pods = []*api.Pod{}
	}
	data, err := json.Marshal(file{Version: formatVersion, Pods: pods})
	if err != nil {
		s.log.Error("checkpoint: encode pods", "err", err)
		return
	}
	s.mu.Lock()
	s.pending = data
	s.mu.Unlock()
	select {
	case s.notify <- struct{}{}:
	default:
	}
}

// Run writes saved content, at most once per debounce period, until ctx
// ends; then it writes what is still pending and returns ctx's error.
func (s *Store) Run(ctx context.Context) error {
	for {
		select {
		case <-ctx.Done():
			if err := s.Flush(); err != nil {
				s.log.Error("checkpoint: final write", "err", err)
			}
			return ctx.Err()
		case <-s.notify:
		}
		// Let a burst of changes settle into one write.
		clock.Sleep(ctx, s.clock, s.debounce)
		if err := s.Flush(); err != nil {
			s.log.Error("checkpoint: write", "err", err)
		}
	}
}

// Flush writes pending content now. On failure the content stays pending
// for the next Save or Flush.
func (s *Store) Flush() error {
	s.mu.Lock()
	data := s.pending
	s.pending = nil
	s.mu.Unlock()
	if data == nil {
		return nil
	}
	err := os.MkdirAll(filepath.Dir(s.path), 0o700)
	if err == nil {
		err = atomicfile.Replace(s.path, data, 0o600)
	}
	if err != nil {
		s.mu.Lock()
		if s.pending == nil {
			s.pending = data
		}
		s.mu.Unlock()
		return fmt.Errorf("write checkpoint: %w", err)
	}
	return nil
}
