package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Leases elect one leader among the servers sharing a PostgreSQL store,
// with fencing: a write made under a lease (a context from WithFence)
// commits only while that lease is still held at the epoch it was
// acquired with, so a deposed leader that has not noticed yet cannot
// write. Acquiring and checking both happen under the revision lock (see
// pgBackend), so they are ordered with every write: once a new leader's
// acquisition has committed, no write of the old epoch commits after it.
// Lease time is PostgreSQL's clock, one clock for every server.
//
// On SQLite one process owns the store (the file is locked), so it always
// holds every lease, at epoch 1, and fences always pass.

// ErrFenced means a write was made under a lease that is no longer held
// at its epoch: the writer is no longer the leader.
var ErrFenced = errors.New("storage: lease lost")

// Fence names a lease and the epoch a write requires.
type Fence struct {
	Lease string
	Epoch int64
}

type fenceKey struct{}

// WithFence returns a context whose writes (Create, Update,
// GuaranteedUpdate, UpdateBatch, Delete) commit only while lease f is
// held at f.Epoch; otherwise they fail with ErrFenced.
func WithFence(ctx context.Context, f Fence) context.Context {
	return context.WithValue(ctx, fenceKey{}, f)
}

// FenceOf returns the fence WithFence put in ctx, if any.
func FenceOf(ctx context.Context) (Fence, bool) {
	f, ok := ctx.Value(fenceKey{}).(Fence)
	return f, ok
}

// pgAcquireLease takes or renews the lease: a free or expired lease goes
// to the caller at the next epoch; its own live lease is extended at the
// same epoch. No row comes back while another holder's lease is live.
const pgAcquireLease = `INSERT INTO leases (name, holder, epoch, expires)
	VALUES ($1, $2, 1, clock_timestamp() + $3 * interval '1 millisecond')
	ON CONFLICT (name) DO UPDATE SET
		holder = EXCLUDED.holder,
		epoch = CASE WHEN leases.holder = EXCLUDED.holder AND leases.expires > clock_timestamp()
			THEN leases.epoch ELSE leases.epoch + 1 END,
		expires = EXCLUDED.expires
	WHERE leases.holder = EXCLUDED.holder OR leases.expires <= clock_timestamp()
	RETURNING epoch`

// pgCheckFence is true when the lease is live at the epoch.
const pgCheckFence = `SELECT EXISTS (SELECT 1 FROM leases WHERE name = $1 AND epoch = $2 AND expires > clock_timestamp())`

// pgReleaseLease ends the holder's lease at once, for a clean handover.
const pgReleaseLease = `UPDATE leases SET expires = clock_timestamp() WHERE name = $1 AND holder = $2 AND epoch = $3`

// AcquireLease takes lease name for holder for ttl, or renews it when
// holder holds it. It returns the epoch and true when holder holds the
// lease after the call, false when another holder's lease is live. The
// epoch changes whenever the lease changes hands (or lapsed in between),
// so a Fence of an older epoch no longer passes.
func (s *Store) AcquireLease(ctx context.Context, name, holder string, ttl time.Duration) (epoch int64, held bool, err error) {
	if name == "" || holder == "" || ttl <= 0 {
		return 0, false, fmt.Errorf("acquire lease %q for %q, ttl %v: %w", name, holder, ttl, ErrInvalid)
	}
	if _, ok := s.be.(*pgBackend); !ok {
		return 1, true, nil
	}
	err = s.submit(ctx, &op{kind: opTask, what: "lease", task: func(ctx context.Context, w *writer) error {
		if _, _, err := w.be.begin(ctx, w); err != nil {
			return translate(err)
		}
		err := w.conn.QueryRowContext(ctx, pgAcquireLease, name, holder, ttl.Milliseconds()).Scan(&epoch)
		if errors.Is(err, sql.ErrNoRows) {
			err = nil
		} else if err == nil {
			held = true
		}
		if err == nil {
			_, err = w.conn.ExecContext(ctx, "COMMIT")
		}
		if err != nil {
			w.rollback(ctx) //nolint:errcheck // the lease error is the one to report
		}
		return translate(err)
	}})
	if err != nil {
		return 0, false, fmt.Errorf("acquire lease %s: %w", name, err)
	}
	return epoch, held, nil
}

// ReleaseLease gives up holder's lease at epoch, so another server can
// take it without waiting for it to expire. Releasing a lease not held
// is not an error.
func (s *Store) ReleaseLease(ctx context.Context, name, holder string, epoch int64) error {
	if _, ok := s.be.(*pgBackend); !ok {
		return nil
	}
	err := s.submit(ctx, &op{kind: opTask, what: "lease", task: func(ctx context.Context, w *writer) error {
		_, err := w.conn.ExecContext(ctx, pgReleaseLease, name, holder, epoch)
		return translate(err)
	}})
	if err != nil {
		return fmt.Errorf("release lease %s: %w", name, err)
	}
	return nil
}

// fences checks, inside the open write transaction, the fence of every
// op that has one (each distinct fence once) and fails the ops whose
// lease is lost. err is a database failure.
func (w *writer) fences(ctx context.Context, ops []*op) error {
	if _, ok := w.be.(*pgBackend); !ok {
		return nil
	}
	var checked map[Fence]bool
	for _, o := range ops {
		f, ok := FenceOf(o.ctx)
		if !ok {
			continue
		}
		live, seen := checked[f]
		if !seen {
			if err := w.conn.QueryRowContext(ctx, pgCheckFence, f.Lease, f.Epoch).Scan(&live); err != nil {
				return err
			}
			if checked == nil {
				checked = make(map[Fence]bool)
			}
			checked[f] = live
		}
		if !live {
			o.err = fmt.Errorf("lease %s epoch %d: %w", f.Lease, f.Epoch, ErrFenced)
		}
	}
	return nil
}
