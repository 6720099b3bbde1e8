package storage

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"
)

// DefaultReserveBytes is the default size of the space reserve.
const DefaultReserveBytes = 8 << 20

// reserveSuffix names the reserve file beside the database.
const reserveSuffix = ".reserve"

// reserve is a file of real (not sparse) bytes kept beside the database.
// When the disk fills, a write allowed to use the reserve (see
// UseReserve) deletes the file and tries again, so deleting objects, the
// way to free space through the API, keeps working on a full disk. The
// maintenance loop makes the file again once there is room.
type reserve struct {
	path string
	size int64

	mu sync.Mutex // guards the file
}

// ensure creates the reserve file at its full size if it is missing or
// short. On a full disk it leaves no partial file behind and returns the
// error (ErrNoSpace when that is the cause).
func (r *reserve) ensure() error {
	if r.size <= 0 {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if fi, err := os.Stat(r.path); err == nil && fi.Size() >= r.size {
		return nil
	}
	f, err := os.OpenFile(r.path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("space reserve: %w", err)
	}
	buf := make([]byte, 64<<10)
	var werr error
	for left := r.size; left > 0 && werr == nil; left -= int64(len(buf)) {
		_, werr = f.Write(buf[:min(left, int64(len(buf)))])
	}
	if werr == nil {
		werr = f.Sync()
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		if rerr := os.Remove(r.path); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
			werr = errors.Join(werr, rerr)
		}
		if isNoSpace(werr) {
			werr = fmt.Errorf("%w: %w", ErrNoSpace, werr)
		}
		return fmt.Errorf("space reserve: %w", werr)
	}
	return nil
}

// release deletes the reserve file and reports whether there was one to
// free.
func (r *reserve) release() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return os.Remove(r.path) == nil
}

// isNoSpace reports an ENOSPC or EDQUOT from the file system.
func isNoSpace(err error) bool {
	var pe *fs.PathError
	return errors.As(err, &pe) && isNoSpaceErrno(pe.Err)
}

type useReserveKey struct{}

// UseReserve returns a context whose writes may spend the space reserve:
// one that fails with ErrNoSpace frees the reserve (Options.ReserveBytes)
// and is tried once more. The API server gives it to deletes, so space
// can be freed through the API on a full disk.
func UseReserve(ctx context.Context) context.Context {
	return context.WithValue(ctx, useReserveKey{}, true)
}

func mayUseReserve(ctx context.Context) bool {
	v, _ := ctx.Value(useReserveKey{}).(bool)
	return v
}
