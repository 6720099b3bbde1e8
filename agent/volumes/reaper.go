package volumes

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/skiffhq/skiff/internal/clock"
)

// VolumeChecker tells whether a PersistentVolume still exists.
type VolumeChecker interface {
	VolumeExists(ctx context.Context, name string) (bool, error)
}

// DefaultReapInterval is how often a Reaper looks for volumes that were
// deleted.
const DefaultReapInterval = 10 * time.Second

// Reaper removes the local-path directories (<volume>_<ns>_<claim>
// under Dir) whose PersistentVolume no longer exists: the server deletes
// the volume of a deleted claim whose reclaim policy is Delete, and only
// the node holds the data. A volume it cannot check is left alone.
type Reaper struct {
	Dir      string
	Volumes  VolumeChecker
	Clock    clock.Clock
	Interval time.Duration // DefaultReapInterval when zero
	Logger   *slog.Logger
}

// Run sweeps at start and every Interval until ctx ends.
func (r *Reaper) Run(ctx context.Context) {
	clk := clock.Or(r.Clock)
	iv := r.Interval
	if iv <= 0 {
		iv = DefaultReapInterval
	}
	t := clk.NewTicker(iv)
	defer t.Stop()
	for {
		if _, err := r.Sweep(ctx); err != nil && ctx.Err() == nil && r.Logger != nil {
			r.Logger.Warn("local-path volume sweep", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		}
	}
}

// Sweep removes the directories of deleted volumes once and returns
// their names.
func (r *Reaper) Sweep(ctx context.Context) ([]string, error) {
	entries, err := os.ReadDir(r.Dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read volumes dir: %w", err)
	}
	var removed []string
	var errs []error
	for _, e := range entries {
		vol, _, ok := strings.Cut(e.Name(), "_")
		if !e.IsDir() || !ok || !strings.HasPrefix(vol, "pvc-") {
			continue
		}
		exists, err := r.Volumes.VolumeExists(ctx, vol)
		if err != nil {
			errs = append(errs, fmt.Errorf("check volume %s: %w", vol, err))
			continue
		}
		if exists {
			continue
		}
		if err := os.RemoveAll(filepath.Join(r.Dir, e.Name())); err != nil {
			errs = append(errs, fmt.Errorf("remove volume %s: %w", e.Name(), err))
			continue
		}
		if r.Logger != nil {
			r.Logger.Info("removed the directory of a deleted volume", "volume", vol, "dir", e.Name())
		}
		removed = append(removed, e.Name())
	}
	return removed, errors.Join(errs...)
}
