package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"sync/atomic"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/internal/clock"
)

// Store is skiff's state: live objects, the change log and watches, in one
// SQLite file. All methods are safe for concurrent use. Writes go through
// one writer goroutine that commits them in groups (see Create); reads use
// a pool of read-only connections and never wait for writes.
type Store struct {
	opts      Options
	path      string
	log       *slog.Logger
	clock     clock.Clock
	resources map[string]*api.ResourceInfo       // by plural
	byType    map[reflect.Type]*api.ResourceInfo // by Go type (*api.Pod)
	// lastChange holds, by resource, the revision of its last change
	// committed since Open; the map is fixed at Open.
	lastChange map[string]*atomic.Int64

	lock *os.File
	wdb  *sql.DB // one connection, owned by the writer goroutine
	w    *writer
	rdb  *sql.DB // read-only pool
	rs   *readStmts
	bc   *broadcaster

	rev       atomic.Int64 // last committed revision
	compacted atomic.Int64 // change-log entries at or below it are gone
	commits   atomic.Int64 // write transactions committed since Open

	writes        atomic.Int64 // objects written by committed transactions
	failedCommits atomic.Int64 // transactions rolled back by an SQL error
	commitNanos   atomic.Int64 // time spent in COMMIT (the fsync)

	ops        chan *op
	closing    chan struct{} // closed when Close starts
	writerDone chan struct{}
	loopsDone  chan struct{}
	bgCtx      context.Context // lifetime of the background loops
	bgCancel   context.CancelFunc
	compactMu  sync.Mutex // one compaction at a time
	keyLocks   keyLocks   // GuaranteedUpdate takes turns per key
	reserve    reserve    // space freed for deletes on a full disk
	seal       sealing    // Options.Sealer over Options.SealedResources

	lifeMu sync.RWMutex // readers hold it shared; Close exclusively
	closed bool         // guarded by lifeMu

	closeOnce sync.Once
	closeErr  error
}

// Open opens (or creates) the database at opts.Path and starts the writer
// and the background compaction and checkpoint loops. An existing file
// that is not a skiff database, or fails PRAGMA quick_check, is refused
// with an error naming it (ErrCorrupt, ErrIncompatible) and left untouched;
// a file another process has open is refused with ErrLocked. ctx bounds
// only the opening.
func Open(ctx context.Context, opts Options) (*Store, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	path, err := filepath.Abs(opts.Path)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", opts.Path, err)
	}
	s := &Store{
		opts:       opts,
		path:       path,
		log:        opts.Logger.With("db", path),
		clock:      opts.Clock,
		resources:  make(map[string]*api.ResourceInfo),
		byType:     make(map[reflect.Type]*api.ResourceInfo),
		ops:        make(chan *op, opts.MaxBatch),
		closing:    make(chan struct{}),
		writerDone: make(chan struct{}),
		loopsDone:  make(chan struct{}),
		reserve:    reserve{path: path + reserveSuffix, size: opts.ReserveBytes},
		seal:       newSealing(opts.Sealer, opts.SealedResources),
	}
	s.lastChange = make(map[string]*atomic.Int64)
	for _, r := range api.Resources() {
		s.resources[r.Resource] = &r
		s.byType[reflect.TypeOf(r.New())] = &r
		s.lastChange[r.Resource] = new(atomic.Int64)
	}
	if err := s.open(ctx); err != nil {
		if cerr := s.closeResources(); cerr != nil {
			s.log.Warn("closing after failed open", "err", cerr)
		}
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	if err := s.reserve.ensure(); err != nil {
		// A full disk must not stop the store from opening: reads work,
		// and the maintenance loop tries again.
		s.log.Warn("no space reserve", "err", err)
	}
	s.bgCtx, s.bgCancel = context.WithCancel(context.Background())
	go s.writeLoop()
	go s.maintainLoop()
	return s, nil
}

// open does Open's I/O; on error the caller closes what was opened.
func (s *Store) open(ctx context.Context) error {
	if err := os.MkdirAll(filepath.Dir(s.path), 0o700); err != nil {
		return fmt.Errorf("create directory: %w", err)
	}
	lock, err := lockFile(s.path)
	if err != nil {
		return err
	}
	s.lock = lock
	fresh, err := prepareFile(s.path)
	if err != nil {
		return err
	}

	s.wdb, err = sql.Open("sqlite", dsn(s.path, false))
	if err != nil {
		return err
	}
	s.wdb.SetMaxOpenConns(1)
	s.wdb.SetMaxIdleConns(1)
	conn, err := s.wdb.Conn(ctx)
	if err != nil {
		return fmt.Errorf("connect: %w", translate(err))
	}
	state := stateEmpty
	if !fresh {
		if state, err = checkDB(ctx, conn); err != nil {
			conn.Close()
			return err
		}
	}
	if state == stateEmpty {
		if err := initSchema(ctx, conn); err != nil {
			conn.Close()
			return fmt.Errorf("initialise: %w", translate(err))
		}
	} else {
		if err := setWAL(ctx, conn); err != nil {
			conn.Close()
			return err
		}
	}
	if s.w, err = newWriter(ctx, conn); err != nil {
		return err // newWriter closed conn
	}
	s.w.seal = s.seal
	rev, compacted, lastTs, err := s.w.load(ctx)
	if err != nil {
		return err
	}
	s.rev.Store(rev)
	s.compacted.Store(compacted)
	s.w.lastTs = lastTs

	s.rdb, err = sql.Open("sqlite", dsn(s.path, true))
	if err != nil {
		return err
	}
	s.rdb.SetMaxOpenConns(s.opts.ReadConns)
	s.rdb.SetMaxIdleConns(s.opts.ReadConns)
	if s.rs, err = prepareReads(ctx, s.rdb); err != nil {
		return err
	}
	s.bc = newBroadcaster(rev, s.opts.WatchCacheSize)
	return nil
}

// Close stops the background loops, lets the batch being committed
// finish, fails queued writes with ErrClosed, ends every watcher with
// ErrClosed, and closes the database (which checkpoints and removes the
// write-ahead log). It is idempotent; later calls return the first result.
// Operations racing with Close either complete or fail with ErrClosed.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		close(s.closing)
		s.bgCancel()
		<-s.loopsDone
		<-s.writerDone
		s.bc.close(ErrClosed)
		s.lifeMu.Lock()
		s.closed = true
		s.lifeMu.Unlock()
		s.closeErr = s.closeResources()
	})
	return s.closeErr
}

// closeResources closes the databases readers first, so the writer's
// connection is the last and SQLite checkpoints and deletes the WAL.
func (s *Store) closeResources() error {
	var errs []error
	if s.rdb != nil {
		errs = append(errs, s.rdb.Close())
	}
	if s.w != nil {
		errs = append(errs, s.w.close())
	}
	if s.wdb != nil {
		errs = append(errs, s.wdb.Close())
	}
	if s.lock != nil {
		errs = append(errs, s.lock.Close())
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("close %s: %w", s.path, err)
	}
	return nil
}

// Path returns the absolute path of the database file.
func (s *Store) Path() string { return s.path }

// ResourceRevision returns the revision of the last change to any object
// of resource committed since Open, or 0 when there was none (or the
// resource is unknown). A change is counted before its writer is answered,
// so a caller that wrote and then asks sees its own write. Caches of a few
// kinds (RBAC's) use it to know when to reload.
func (s *Store) ResourceRevision(resource string) int64 {
	if r, ok := s.lastChange[resource]; ok {
		return r.Load()
	}
	return 0
}

// Revision returns the last committed revision (0 for an empty store).
func (s *Store) Revision() int64 { return s.rev.Load() }

// CompactedRevision returns the revision at or below which the change log
// has been compacted: watches must start at or above it.
func (s *Store) CompactedRevision() int64 { return s.compacted.Load() }

// lookup returns the resource named by its plural ("pods").
func (s *Store) lookup(resource string) (*api.ResourceInfo, error) {
	info, ok := s.resources[resource]
	if !ok {
		return nil, fmt.Errorf("unknown resource %q: %w", resource, ErrInvalid)
	}
	return info, nil
}

// beginRead admits a read unless the Store is closing; endRead must follow.
func (s *Store) beginRead() error {
	select {
	case <-s.closing:
		return ErrClosed
	default:
	}
	s.lifeMu.RLock()
	if s.closed {
		s.lifeMu.RUnlock()
		return ErrClosed
	}
	return nil
}

func (s *Store) endRead() { s.lifeMu.RUnlock() }
