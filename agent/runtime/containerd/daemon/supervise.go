package daemon

import (
	"context"
	"sync"
	"time"

	"github.com/skiffhq/skiff/internal/backoff"
	"github.com/skiffhq/skiff/internal/clock"
)

// Back-off bounds of Supervise's restarts: the delay doubles from
// minBackoff up to maxBackoff (with jitter) and starts over after a
// daemon ran for stableAfter.
const (
	minBackoff  = time.Second
	maxBackoff  = 30 * time.Second
	stableAfter = time.Minute
	stopGrace   = 10 * time.Second
)

// restartDelay is the delay before the next restart, given how long
// the daemon that just died ran: a daemon that ran for stableAfter
// starts the back-off over.
func restartDelay(bo *backoff.Backoff, ran time.Duration) time.Duration {
	if ran >= stableAfter {
		bo.Reset()
	}
	return bo.Next()
}

// Supervise starts containerd per cfg and keeps it running: a daemon
// that exits is restarted after a backoff. When ctx ends the daemon is
// stopped (SIGTERM, then SIGKILL after 10s; containers keep running in
// their shims). It returns the socket once the first daemon answers;
// wait blocks until supervision has ended and the daemon is stopped.
func Supervise(ctx context.Context, cfg Config) (socket string, wait func() error, err error) {
	if err := cfg.Validate(); err != nil {
		return "", nil, err
	}
	p, err := Start(ctx, cfg)
	if err != nil {
		return "", nil, err
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		supervise(ctx, cfg, p)
	}()
	return p.Socket, func() error { wg.Wait(); return nil }, nil
}

func supervise(ctx context.Context, cfg Config, p *Process) {
	bo := backoff.Backoff{Min: minBackoff, Max: maxBackoff, Clock: cfg.Clock}
	for {
		started := cfg.Clock.Now()
		select {
		case <-ctx.Done():
			if err := p.Stop(stopGrace); err != nil {
				cfg.Logger.Error("stop containerd", "err", err)
			}
			return
		case <-p.Done():
		}
		delay := restartDelay(&bo, cfg.Clock.Now().Sub(started))
		cfg.Logger.Warn("containerd exited; restarting", "err", p.Err(), "backoff", delay, "log", p.LogPath)
		if !clock.Sleep(ctx, cfg.Clock, delay) {
			return
		}
		for {
			np, err := Start(ctx, cfg)
			if err == nil {
				p = np
				break
			}
			cfg.Logger.Error("restart containerd", "err", err, "failures", bo.Failures()+1)
			if !bo.BackOff(ctx, err) {
				return
			}
		}
	}
}
