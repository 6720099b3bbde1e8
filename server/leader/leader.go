package leader

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/skiffhq/skiff/internal/clock"
	"github.com/skiffhq/skiff/storage"
)

// Defaults of Config: a leader renews every 2 s a lease of 3 s, and a
// candidate retries every second, so a dead leader is replaced within
// TTL + RetryInterval = 4 s.
const (
	DefaultTTL           = 3 * time.Second
	DefaultRenewInterval = 2 * time.Second
	DefaultRetryInterval = time.Second
	// LeaseName is the lease the control plane's singletons run under.
	LeaseName = "skiff-controller"
)

// Store is what the elector needs of the store.
type Store interface {
	AcquireLease(ctx context.Context, name, holder string, ttl time.Duration) (epoch int64, held bool, err error)
	ReleaseLease(ctx context.Context, name, holder string, epoch int64) error
}

var _ Store = (*storage.Store)(nil)

// Config configures an Elector.
type Config struct {
	Store Store
	// Lease names the lease; default LeaseName.
	Lease string
	// Holder identifies this server; it must be unique among the servers.
	Holder string
	// TTL, RenewInterval and RetryInterval: see the defaults.
	TTL, RenewInterval, RetryInterval time.Duration
	Clock                             clock.Clock
	Logger                            *slog.Logger
}

// Validate reports what is missing or out of range.
func (c Config) Validate() error {
	var errs []error
	if c.Store == nil {
		errs = append(errs, errors.New("store is required"))
	}
	if c.Holder == "" {
		errs = append(errs, errors.New("holder is required"))
	}
	if c.TTL < 0 || c.RenewInterval < 0 || c.RetryInterval < 0 {
		errs = append(errs, errors.New("durations must not be negative"))
	}
	if c.TTL > 0 && c.RenewInterval > 0 && c.RenewInterval >= c.TTL {
		errs = append(errs, fmt.Errorf("renew interval %v must be shorter than the TTL %v", c.RenewInterval, c.TTL))
	}
	if len(errs) > 0 {
		return fmt.Errorf("leader config: %w", errors.Join(errs...))
	}
	return nil
}

func (c Config) withDefaults() Config {
	if c.Lease == "" {
		c.Lease = LeaseName
	}
	if c.TTL == 0 {
		c.TTL = DefaultTTL
	}
	if c.RenewInterval == 0 {
		c.RenewInterval = min(DefaultRenewInterval, c.TTL*2/3)
	}
	if c.RetryInterval == 0 {
		c.RetryInterval = DefaultRetryInterval
	}
	c.Clock = clock.Or(c.Clock)
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// Run campaigns until ctx ends. For each term this server holds the
// lease it calls lead in a goroutine of its own, with a context that
// carries the term's fence and is cancelled when the term ends: the lease
// went to another server, or could not be renewed before it would lapse.
// lead must return soon after its context ends; Run waits for it, and
// releases a lease still held when ctx ends, so another server takes over
// at once. Run returns nil when ctx ends, or the config's error.
func Run(ctx context.Context, cfg Config, lead func(ctx context.Context)) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	c := cfg.withDefaults()
	var (
		term    context.CancelFunc
		done    chan struct{}
		epoch   int64
		renewed time.Time // when the last successful acquisition started
	)
	stop := func(reason string) {
		if term == nil {
			return
		}
		c.Logger.Info("leadership ended", "lease", c.Lease, "epoch", epoch, "reason", reason)
		term()
		<-done
		term, done = nil, nil
	}
	defer func() {
		if term == nil {
			return
		}
		e := epoch
		stop("shutting down")
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.TTL)
		defer cancel()
		if err := c.Store.ReleaseLease(rctx, c.Lease, c.Holder, e); err != nil {
			c.Logger.Warn("releasing the lease failed; it lapses on its own", "err", err)
		}
	}()
	for {
		start := c.Clock.Now()
		actx, cancel := context.WithTimeout(ctx, c.RenewInterval)
		e, held, err := c.Store.AcquireLease(actx, c.Lease, c.Holder, c.TTL)
		cancel()
		if ctx.Err() != nil {
			return nil
		}
		switch {
		case err != nil:
			c.Logger.Warn("lease renewal failed", "lease", c.Lease, "err", err)
			// The lease may have lapsed: step down before it could
			// have, as seen from the time the last renewal started.
			if term != nil && !c.Clock.Now().Before(renewed.Add(c.TTL)) {
				stop("lease could not be renewed")
			}
		case !held:
			stop("another server holds the lease")
		case term != nil && e != epoch:
			stop("the lease lapsed and was taken again")
			fallthrough
		default:
			renewed = start
			if term == nil {
				epoch = e
				c.Logger.Info("leading", "lease", c.Lease, "holder", c.Holder, "epoch", e)
				tctx, cancel := context.WithCancel(storage.WithFence(ctx, storage.Fence{Lease: c.Lease, Epoch: e}))
				term, done = cancel, make(chan struct{})
				var wg sync.WaitGroup
				wg.Go(func() { lead(tctx) })
				go func(done chan struct{}) { wg.Wait(); close(done) }(done)
			}
		}
		wait := c.RetryInterval
		if term != nil {
			wait = c.RenewInterval
		}
		if !clock.Sleep(ctx, c.Clock, wait) {
			return nil
		}
	}
}
