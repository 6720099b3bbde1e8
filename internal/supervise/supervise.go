package supervise

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
)

// ErrStopped is the cause of a loop that returned nil while its context
// was still live: a loop returns only when ctx ends or on a fatal error,
// so returning early is itself fatal.
var ErrStopped = errors.New("stopped unexpectedly")

// Group supervises loops. Create it with New; Go, Fail and Stop may be
// called from any goroutine until Wait returns. The zero value is not
// usable.
type Group struct {
	ctx    context.Context
	cancel context.CancelFunc
	log    *slog.Logger
	wg     sync.WaitGroup

	mu  sync.Mutex
	err error // the first fatal error
}

// New returns a Group and the context its loops run under: it ends when
// parent ends, when a loop fails, or on Stop. A nil log discards.
func New(parent context.Context, log *slog.Logger) (*Group, context.Context) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(parent)
	return &Group{ctx: ctx, cancel: cancel, log: log}, ctx
}

// Go runs loop name in a goroutine with the Group's context. The loop
// must return only when ctx ends (any error it returns then is shutdown
// noise: logged, not fatal) or when something fatal happened: a non-nil
// error while ctx is live becomes the Group's error (the first one wins)
// and ends every other loop. A nil return while ctx is live is fatal
// too (ErrStopped).
func (g *Group) Go(name string, loop func(ctx context.Context) error) {
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		err := loop(g.ctx)
		if g.ctx.Err() != nil {
			if err != nil && !errors.Is(err, context.Canceled) {
				g.log.Warn("loop failed while stopping", "loop", name, "err", err)
			}
			return
		}
		if err == nil {
			err = ErrStopped
		}
		g.Fail(fmt.Errorf("%s: %w", name, err))
	}()
}

// Fail records err as fatal, unless an error is recorded already or the
// Group is stopping, and ends every loop. Setup code that fails after
// loops started calls it. A nil err is ignored.
func (g *Group) Fail(err error) {
	if err == nil {
		return
	}
	g.mu.Lock()
	if g.err == nil && g.ctx.Err() == nil {
		g.err = err
	}
	g.mu.Unlock()
	g.cancel()
}

// Stop ends every loop without an error (a graceful stop).
func (g *Group) Stop() { g.cancel() }

// Wait blocks until every loop has returned, which needs the context to
// end (parent, a failure or Stop), and returns the first fatal error, or
// nil after a graceful stop.
func (g *Group) Wait() error {
	g.wg.Wait()
	g.cancel()
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.err
}
