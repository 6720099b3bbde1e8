package storage

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/skiffhq/skiff/internal/clock"
)

// InformerWatchBuffer is WatchOptions.Buffer for the server's own
// informers (the scheduler, the controllers, node IPAM): 64 Ki events, a
// few MiB at most, where a cut-off is a relist of every object.
const InformerWatchBuffer = 1 << 16

// Defaults applied by Open to zero-valued Options fields.
const (
	DefaultCompactMinRevisions = 10000
	DefaultCompactMinAge       = 5 * time.Minute
	DefaultCompactInterval     = time.Minute
	DefaultCheckpointInterval  = 30 * time.Second
	DefaultMaxBatch            = 256
	DefaultMaxBatchTxn         = 1024
	DefaultWatchBuffer         = 1024
	DefaultWatchCacheSize      = 4096
	DefaultWatchCacheBytes     = 32 << 20
	DefaultHotObjects          = 8192
	DefaultReadConns           = 4
	DefaultWriteTimeout        = 10 * time.Second
	DefaultPollInterval        = time.Second
)

// maxMaxBatch bounds Options.MaxBatch: SQLite's default limit on bound
// parameters is per statement, so the bound is about latency, not limits.
const maxMaxBatch = 4096

// Options configures a Store. The zero value of every field but Path or
// Postgres selects its default; Open validates first and applies defaults
// after.
type Options struct {
	// Path is the SQLite database file. Its directory is created (0700)
	// and the file (0600) when missing. An existing file must be a skiff
	// database; it is never recreated or overwritten. Exactly one of Path
	// and Postgres is set.
	Path string
	// Postgres is a postgres:// connection URL (see ParseDatastore): the
	// Store keeps its tables in that database, which several Stores (one
	// per server) share. An empty database is initialised; one holding
	// other tables named like skiff's is refused.
	Postgres string
	// Clock stamps changes for age-based compaction and drives the
	// background loops. Default clock.Real{}.
	Clock clock.Clock
	// Logger receives background-loop failures and maintenance notes.
	// Default: discard.
	Logger *slog.Logger

	// CompactMinRevisions is how many of the newest revisions compaction
	// always keeps. Default 10000.
	CompactMinRevisions int64
	// CompactMinAge is how long a change is kept at least, by the Clock.
	// Compaction honours both this and CompactMinRevisions. Default 5m.
	CompactMinAge time.Duration
	// CompactInterval is how often the background compaction runs;
	// negative disables the loop (Compact may still be called). Default 1m.
	CompactInterval time.Duration
	// CheckpointInterval is how often the write-ahead log is checkpointed
	// and truncated; negative disables the loop. Default 30s.
	CheckpointInterval time.Duration

	// MaxBatch is the most single writes (Create, Update, Delete from
	// many callers) committed in one transaction (one fsync). Default
	// 256.
	MaxBatch int
	// MaxBatchTxn is the most objects of one CreateBatch or UpdateBatch
	// committed in one transaction. A batch holds the writer until its
	// last object anyway, so its transactions may be larger than single
	// writes' without delaying anyone more: each one fewer is an fsync
	// fewer, and on a busy server a wait fewer for a core after it.
	// Default 1024; never below MaxBatch.
	MaxBatchTxn int
	// WatchBuffer is how many undelivered events a watcher may hold before
	// it is cut off with ErrTooSlow. Default 1024.
	WatchBuffer int
	// WatchCacheSize is how many recent changes are kept in memory so that
	// a watch resuming from a recent revision needs no database read (about
	// 10x faster). Each entry holds the stored value and, once a watcher
	// called Event.Object, the decoded object. Default 4096; negative
	// disables the cache.
	WatchCacheSize int
	// WatchCacheBytes bounds the memory of those changes (their stored
	// values, labels and fields): the oldest are dropped first, so a few
	// large objects (ConfigMaps near the size limit) cannot make the
	// cache hold gigabytes. Decoded objects come on top, at most about as
	// much again. Default 32 MiB; negative: bounded by WatchCacheSize
	// alone.
	WatchCacheBytes int64
	// HotObjects is how many of the objects written last a SQLite store
	// keeps in memory, so that a read of an object just written (a pod's
	// status write right after its binding) needs no database read; at
	// most 16 MiB of values, most of them shared with the watch cache.
	// Default 8192; negative disables it. A PostgreSQL store has none:
	// other servers write there too.
	HotObjects int
	// ReadConns is the size of the read connection pool. Default 4.
	ReadConns int

	// WriteTimeout bounds one PostgreSQL write transaction (a batch): a
	// datastore slower than that fails the batch's writes with
	// context.DeadlineExceeded rather than stalling the server. SQLite
	// commits are never interrupted. Default 10s.
	WriteTimeout time.Duration
	// PollInterval is how often a PostgreSQL Store reads the change log
	// for other servers' writes when no notification arrived (the fallback
	// for lost LISTEN/NOTIFY messages). Default 1s.
	PollInterval time.Duration
	// ReserveBytes is the size of the space reserve, a file beside the
	// database (<Path>.reserve) that writes under UseReserve may free
	// when the disk is full. Default DefaultReserveBytes; negative keeps
	// no reserve.
	ReserveBytes int64
	// Sealer, when set, encrypts the stored values of SealedResources
	// (default: secrets); see Sealer.
	Sealer          Sealer
	SealedResources []string
	// Claims, by resource, name the unique strings an object of that
	// resource holds (a Service's cluster IP and node ports); the store
	// refuses a write whose claims another object holds, with a
	// *ClaimError (see claims.go). Nil: no claims.
	Claims map[string]ClaimFunc
}

// Validate reports every field that is out of range. Zero values are
// valid: they select defaults.
func (o Options) Validate() error {
	var errs []error
	switch {
	case o.Path == "" && o.Postgres == "":
		errs = append(errs, errors.New("path or postgres URL is required"))
	case o.Path != "" && o.Postgres != "":
		errs = append(errs, errors.New("path and postgres URL are exclusive"))
	}
	if o.CompactMinRevisions < 0 {
		errs = append(errs, fmt.Errorf("compact min revisions %d is negative", o.CompactMinRevisions))
	}
	if o.CompactMinAge < 0 {
		errs = append(errs, fmt.Errorf("compact min age %v is negative", o.CompactMinAge))
	}
	if o.MaxBatch < 0 || o.MaxBatch > maxMaxBatch {
		errs = append(errs, fmt.Errorf("max batch %d is outside [0, %d]", o.MaxBatch, maxMaxBatch))
	}
	if o.MaxBatchTxn < 0 || o.MaxBatchTxn > maxMaxBatch {
		errs = append(errs, fmt.Errorf("max batch transaction %d is outside [0, %d]", o.MaxBatchTxn, maxMaxBatch))
	}
	if o.WatchBuffer < 0 {
		errs = append(errs, fmt.Errorf("watch buffer %d is negative", o.WatchBuffer))
	}
	if o.ReadConns < 0 {
		errs = append(errs, fmt.Errorf("read conns %d is negative", o.ReadConns))
	}
	if o.WriteTimeout < 0 {
		errs = append(errs, fmt.Errorf("write timeout %v is negative", o.WriteTimeout))
	}
	if o.PollInterval < 0 {
		errs = append(errs, fmt.Errorf("poll interval %v is negative", o.PollInterval))
	}
	if len(errs) > 0 {
		return fmt.Errorf("storage options: %w", errors.Join(errs...))
	}
	return nil
}

// withDefaults returns o with every zero field set to its default.
func (o Options) withDefaults() Options {
	o.Clock = clock.Or(o.Clock)
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.CompactMinRevisions == 0 {
		o.CompactMinRevisions = DefaultCompactMinRevisions
	}
	if o.CompactMinAge == 0 {
		o.CompactMinAge = DefaultCompactMinAge
	}
	if o.CompactInterval == 0 {
		o.CompactInterval = DefaultCompactInterval
	}
	if o.CheckpointInterval == 0 {
		o.CheckpointInterval = DefaultCheckpointInterval
	}
	if o.MaxBatch == 0 {
		o.MaxBatch = DefaultMaxBatch
	}
	if o.MaxBatchTxn == 0 {
		o.MaxBatchTxn = DefaultMaxBatchTxn
	}
	o.MaxBatchTxn = max(o.MaxBatchTxn, o.MaxBatch)
	if o.WatchBuffer == 0 {
		o.WatchBuffer = DefaultWatchBuffer
	}
	if o.WatchCacheSize == 0 {
		o.WatchCacheSize = DefaultWatchCacheSize
	}
	if o.WatchCacheBytes == 0 {
		o.WatchCacheBytes = DefaultWatchCacheBytes
	}
	if o.WatchCacheSize < 0 {
		o.WatchCacheSize = 0
	}
	if o.HotObjects == 0 {
		o.HotObjects = DefaultHotObjects
	}
	if o.ReadConns == 0 {
		o.ReadConns = DefaultReadConns
	}
	if o.WriteTimeout == 0 {
		o.WriteTimeout = DefaultWriteTimeout
	}
	if o.PollInterval == 0 {
		o.PollInterval = DefaultPollInterval
	}
	if o.ReserveBytes == 0 {
		o.ReserveBytes = DefaultReserveBytes
	}
	if o.Sealer != nil && len(o.SealedResources) == 0 {
		o.SealedResources = []string{"secrets"}
	}
	return o
}
