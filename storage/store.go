package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"reflect"
	"sync"
	"sync/atomic"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/internal/clock"
)

// Store is skiff's state: live objects, the change log and watches, in
// one SQLite file or in a PostgreSQL database shared by several servers.
// All methods are safe for concurrent use. Writes go through one writer
// goroutine that commits them in groups (see Create); reads use a pool of
// connections and never wait for writes.
type Store struct {
	opts      Options
	path      string // the SQLite file; "" on PostgreSQL
	be        backend
	log       *slog.Logger
	clock     clock.Clock
	resources map[string]*api.ResourceInfo       // by plural
	byType    map[reflect.Type]*api.ResourceInfo // by Go type (*api.Pod)
	// lastChange holds, by resource, the revision of its last change
	// the change log held at Open (seedwatch.go) or committed since; the
	// map is fixed at Open.
	lastChange map[string]*atomic.Int64
	// hooks are told of every published change (hook.go); pubMu guards.
	hooks []ChangeHook

	wdb *sql.DB // the writer's pool: one connection, owned by the writer goroutine
	w   *writer
	rdb *sql.DB // read pool
	rs  *readStmts
	// replays admits watch replays to the read pool: at most half its
	// connections (at least one) read the change log for replays at
	// once, so a reconnecting fleet's replays cannot starve the point
	// reads (authentication, heartbeats) the fleet needs to stay Ready.
	replays chan struct{}
	bc      *broadcaster

	pubMu       sync.Mutex   // publishing to bc: the writer and the follower take turns
	rev         atomic.Int64 // last published revision
	compacted   atomic.Int64 // change-log entries at or below it are gone
	commits     atomic.Int64 // write transactions committed since Open
	replayReads atomic.Int64 // change-log reads by watch replays

	writes        atomic.Int64 // objects written by committed transactions
	failedCommits atomic.Int64 // transactions rolled back by an SQL error
	commitNanos   atomic.Int64 // time spent in COMMIT (the fsync)
	slowWrites    atomic.Int64 // transactions and tasks that held the writer over slowWrite

	ops        chan *op
	batches    chan *op      // CreateBatch and UpdateBatch tasks: the writer takes these first
	later      chan *op      // LowPriority batch tasks: the writer takes these when idle (writeLoop)
	closing    chan struct{} // closed when Close starts
	writerDone chan struct{}
	loopsDone  chan struct{}
	followDone chan struct{}
	bgCtx      context.Context // lifetime of the background loops
	bgCancel   context.CancelFunc
	compactMu  sync.Mutex // one compaction at a time
	keyLocks   keyLocks   // GuaranteedUpdate takes turns per key
	reserve    reserve    // space freed for deletes on a full disk
	seal       sealing    // Options.Sealer over Options.SealedResources
	hot        *hotCache  // the objects written last; nil on PostgreSQL

	lifeMu sync.RWMutex // readers hold it shared; Close exclusively
	closed bool         // guarded by lifeMu

	closeOnce sync.Once
	closeErr  error
}

// Open opens (or creates) the store named by opts.Path (SQLite) or
// opts.Postgres and starts the writer and the background loops
// (compaction; on SQLite checkpoints, on PostgreSQL following other
// servers' writes). An existing SQLite file that is not a skiff database,
// or fails PRAGMA quick_check, is refused with an error naming it
// (ErrCorrupt, ErrIncompatible) and left untouched; a file another
// process has open is refused with ErrLocked. A PostgreSQL database is
// shared: any number of Stores may open it. ctx bounds only the opening.
func Open(ctx context.Context, opts Options) (*Store, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	s := &Store{
		opts:       opts,
		clock:      opts.Clock,
		resources:  make(map[string]*api.ResourceInfo),
		byType:     make(map[reflect.Type]*api.ResourceInfo),
		ops:        make(chan *op, opts.MaxBatch),
		batches:    make(chan *op, 16),
		later:      make(chan *op, 16),
		closing:    make(chan struct{}),
		writerDone: make(chan struct{}),
		loopsDone:  make(chan struct{}),
		followDone: make(chan struct{}),
		seal:       newSealing(opts.Sealer, opts.SealedResources),
		replays:    make(chan struct{}, max(1, opts.ReadConns/2)),
	}
	name := Redact(opts.Postgres)
	if opts.Postgres != "" {
		s.be = &pgBackend{url: opts.Postgres}
	} else {
		path, err := filepath.Abs(opts.Path)
		if err != nil {
			return nil, fmt.Errorf("open %s: %w", opts.Path, err)
		}
		s.path, name = path, path
		s.reserve = reserve{path: path + reserveSuffix, size: opts.ReserveBytes}
		s.be = &sqliteBackend{path: path}
		s.hot = newHotCache(opts.HotObjects, hotObjectsBytes)
	}
	s.log = opts.Logger.With("db", name)
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
		return nil, fmt.Errorf("open %s: %w", name, err)
	}
	if err := s.reserve.ensure(); err != nil {
		// A full disk must not stop the store from opening: reads work,
		// and the maintenance loop tries again.
		s.log.Warn("no space reserve", "err", err)
	}
	s.bgCtx, s.bgCancel = context.WithCancel(context.Background())
	go s.writeLoop()
	go s.maintainLoop()
	go func() {
		defer close(s.followDone)
		s.be.run(s.bgCtx, s)
	}()
	return s, nil
}

// open does Open's I/O; on error the caller closes what was opened.
func (s *Store) open(ctx context.Context) error {
	var err error
	s.wdb, s.rdb, err = s.be.open(ctx, s)
	if err != nil {
		return err
	}
	if s.w, err = newWriter(ctx, s.wdb, s.be); err != nil {
		return err
	}
	s.w.seal = s.seal
	s.w.claims = s.opts.Claims
	rev, compacted, lastTs, err := s.w.load(ctx)
	if err != nil {
		return err
	}
	s.rev.Store(rev)
	s.compacted.Store(compacted)
	s.w.lastRev, s.w.lastTs = rev, lastTs
	if err := s.ensureClaims(ctx); err != nil {
		return err
	}
	if s.rs, err = prepareReads(ctx, s.rdb, s.be); err != nil {
		return err
	}
	s.bc = newBroadcaster(rev, s.opts.WatchCacheSize, s.opts.WatchCacheBytes)
	s.bc.lastChange = s.ResourceRevision
	s.seedWatchIndex(ctx, rev, compacted)
	s.warmWatchCache(ctx, rev, compacted)
	return nil
}

// warmChunk is how many change-log rows one read of warmWatchCache
// returns: the ring's byte bound drops the oldest as they come, so at
// most a chunk of large values is held beyond it.
const warmChunk = 256

// warmWatchCache fills the watch cache with the change log's newest
// entries, up to WatchCacheSize of them (and WatchCacheBytes), so that
// after a restart the fleet's watches, resuming from recent revisions,
// replay from memory rather than each reading the change log. A read
// that fails leaves the cache empty (watches then replay from the
// database): a slower restart, not a failed one.
func (s *Store) warmWatchCache(ctx context.Context, rev, compacted int64) {
	size := int64(s.opts.WatchCacheSize)
	if size == 0 || rev <= compacted {
		return
	}
	after := max(compacted, rev-size)
	for after < rev {
		cs, err := s.readTail(ctx, after, rev, warmChunk)
		if err == nil && len(cs) == 0 {
			err = fmt.Errorf("change log ends at %d before revision %d: %w", after, rev, ErrCorrupt)
		}
		if err != nil {
			s.log.Warn("warming the watch cache failed; watches resume from the change log", "err", err)
			s.bc.skipTo(rev, err)
			return
		}
		s.bc.warm(cs)
		after = cs[len(cs)-1].rev
	}
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
		<-s.followDone
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
	errs = append(errs, s.be.close())
	for i, err := range errs {
		// A connection the server already dropped cannot be closed
		// cleanly, and nothing is lost by that.
		if errors.Is(translate(err), ErrUnavailable) {
			errs[i] = nil
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("close %s: %w", s.name(), err)
	}
	return nil
}

// name is the store's file, or its PostgreSQL URL without the password.
func (s *Store) name() string {
	if s.path != "" {
		return s.path
	}
	return Redact(s.opts.Postgres)
}

// Backend returns "sqlite" or "postgres".
func (s *Store) Backend() string { return s.be.kind() }

// Path returns the absolute path of the SQLite database file ("" on
// PostgreSQL).
func (s *Store) Path() string { return s.path }

// ResourceRevision returns the revision of the last change to any object
// of resource committed since Open or read from the change log's recent
// history at Open, or 0 when there was none (or the resource is
// unknown). A change is counted before its writer is answered, so a
// caller that wrote and then asks sees its own write. Caches of a few
// kinds (RBAC's) use it to know when to reload.
func (s *Store) ResourceRevision(resource string) int64 {
	if r, ok := s.lastChange[resource]; ok {
		return r.Load()
	}
	return 0
}

// Revision returns the last committed revision this Store has published
// to its watchers (0 for an empty store). On PostgreSQL other servers may
// have committed newer ones, which it publishes as it learns of them.
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
