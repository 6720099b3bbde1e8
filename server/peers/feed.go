package peers

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/internal/clock"
	"github.com/skiffhq/skiff/internal/peerfeed"
	"github.com/skiffhq/skiff/storage"
)

// Defaults of Config.
const (
	DefaultInterval = time.Second
	DefaultKeep     = 300 // five minutes of batches at one a second
)

// Config configures a Feed.
type Config struct {
	Store *storage.Store
	// Interval is how often changes are sealed into a batch (default
	// DefaultInterval): the most a change waits before agents see it.
	Interval time.Duration
	// Keep is how many batches are kept for agents resuming (default
	// DefaultKeep); one further behind gets the whole set.
	Keep   int
	Clock  clock.Clock
	Logger *slog.Logger
}

// sealed is one batch, encoded once for every stream.
type sealed struct {
	from, to int64 // the set goes from revision from to revision to
	line     []byte
	sum      string // the set's hash at to
}

// Feed follows the store's Nodes and serves their Peers. Start it with
// Run; ServeHTTP serves a stream.
type Feed struct {
	cfg Config

	mu       sync.Mutex
	set      peerfeed.Set // as of rev, with pending applied
	rev      int64        // revision of the newest change followed
	pending  map[string]bool
	base     int64    // revision of the set the first kept batch starts from
	sealRev  int64    // revision of the last seal
	batches  []sealed // oldest first
	wake     chan struct{}
	ready    chan struct{} // closed by the first seal
	isReady  bool
	haveList bool   // a list has been applied
	sealSum  string // the set's hash as of sealRev
	// full is the whole set at full.to, encoded lazily and kept until a
	// seal with changes (fullLocked); fullBuilds counts the encodings.
	full       sealed
	fullBuilds atomic.Int64
}

// FullEncodes returns how many times the whole set has been encoded for
// streams that needed it (skiff_peer_feed_full_encodes_total): at most
// once a seal interval while the fleet's nodes change.
func (f *Feed) FullEncodes() int64 { return f.fullBuilds.Load() }

// New returns a Feed for cfg.
func New(cfg Config) *Feed {
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.Keep <= 0 {
		cfg.Keep = DefaultKeep
	}
	cfg.Clock = clock.Or(cfg.Clock)
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Feed{cfg: cfg, pending: map[string]bool{}, wake: make(chan struct{}), ready: make(chan struct{})}
}

// Run follows the Nodes and seals a batch every interval until ctx ends.
func (f *Feed) Run(ctx context.Context) {
	var wg sync.WaitGroup
	defer wg.Wait()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	wg.Go(func() { f.follow(ctx) })
	t := f.cfg.Clock.NewTicker(f.cfg.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
			f.seal()
		}
	}
}

// follow lists the Nodes, then watches them, listing again whenever the
// watch ends (storage.Store.Follow).
func (f *Feed) follow(ctx context.Context) {
	f.cfg.Store.Follow(ctx, "nodes", storage.Following{
		Listed: f.listed,
		Changed: func(typ storage.EventType, obj api.Object, rev int64) {
			n, ok := obj.(*api.Node)
			if !ok {
				return
			}
			f.mu.Lock()
			defer f.mu.Unlock()
			if typ == storage.Deleted {
				f.removeLocked(n.Name, rev)
			} else {
				f.putLocked(peerfeed.Of(n), rev)
			}
		},
		Failed: func(err error) {
			if errors.Is(err, storage.ErrRelist) {
				f.cfg.Logger.Info("peer feed: listing the Nodes again", "err", err)
				return
			}
			f.cfg.Logger.Warn("peer feed", "err", err)
		},
		Clock: f.cfg.Clock,
	})
}

// listed replaces the set with a list's Nodes at revision rev.
func (f *Feed) listed(objs []api.Object, rev int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	seen := make(map[string]bool, len(objs))
	for _, o := range objs {
		if n, ok := o.(*api.Node); ok {
			seen[n.Name] = true
			f.putLocked(peerfeed.Of(n), rev)
		}
	}
	for _, p := range f.set.Sorted() {
		if !seen[p.Name] {
			f.removeLocked(p.Name, rev)
		}
	}
	f.rev = max(f.rev, rev)
	f.haveList = true
}

func (f *Feed) putLocked(p peerfeed.Peer, rev int64) {
	if f.set.Put(p) {
		f.pending[p.Name] = true
	}
	f.rev = max(f.rev, rev)
}

func (f *Feed) removeLocked(name string, rev int64) {
	if f.set.Delete(name) {
		f.pending[name] = true
	}
	f.rev = max(f.rev, rev)
}

// seal turns the pending changes into one batch and wakes the streams.
// The first seal (after the first list) only marks the feed ready.
func (f *Feed) seal() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.isReady {
		if !f.haveList {
			return
		}
		f.isReady = true
		f.pending = map[string]bool{}
		f.base, f.sealRev, f.sealSum = f.rev, f.rev, f.set.Hash()
		close(f.ready)
		return
	}
	if len(f.pending) == 0 {
		return
	}
	b := peerfeed.Batch{Revision: f.rev, Hash: f.set.Hash()}
	names := make([]string, 0, len(f.pending))
	for name := range f.pending {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if p, ok := f.set.Get(name); ok {
			b.Peers = append(b.Peers, p)
		} else {
			b.Deleted = append(b.Deleted, name)
		}
	}
	f.pending = map[string]bool{}
	// The whole set's line is encoded again when next asked for: a
	// stream given the old one gets this batch, which brings it here.
	f.full.line = nil
	f.batches = append(f.batches, sealed{from: f.sealRev, to: f.rev, line: encode(b), sum: b.Hash})
	if len(f.batches) > f.cfg.Keep {
		drop := len(f.batches) - f.cfg.Keep
		f.base = f.batches[drop-1].to
		f.batches = slices.Delete(f.batches, 0, drop)
	}
	f.sealRev, f.sealSum = f.rev, b.Hash
	close(f.wake)
	f.wake = make(chan struct{})
}

func encode(b peerfeed.Batch) []byte {
	line, err := json.Marshal(b)
	if err != nil {
		panic(err) // strings and integers only
	}
	return append(line, '\n')
}
