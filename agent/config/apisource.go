package config

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/api/client"
	"github.com/skiffhq/skiff/internal/backoff"
	"github.com/skiffhq/skiff/internal/clock"
)

// PodWatcher is what the API source needs of the server: *client.Client.
type PodWatcher = client.ListWatcher

// APISourceConfig configures an APISource.
type APISourceConfig struct {
	// Client reaches the server with the node's credential.
	Client PodWatcher
	// NodeName is the node whose pods are watched.
	NodeName string
	// Clock times the reconnect backoff. Default clock.Real.
	Clock clock.Clock
	// Backoff bounds the waits between failed attempts. Default 500ms to
	// 30s with jitter.
	Backoff backoff.Backoff
	// WatchTimeout ends each watch after this long (plus up to half as
	// much again, at random) and resumes it from where it was: a
	// backstop for a watch that went silent on a connection that still
	// answers. A connection that died without a word is noticed sooner,
	// by the client's HTTP/2 pings (api/client: 15 s without a frame,
	// then 5 s for the answer). Default DefaultWatchTimeout.
	WatchTimeout time.Duration
	// Logger. Default slog.Default().
	Logger *slog.Logger
}

// DefaultWatchTimeout is the default APISourceConfig.WatchTimeout.
//
// It was client-go's 5 minutes. On an agent's shared stream
// (api/client.WatchMux) a watch that ends opens the whole stream again,
// with every watch on it, so at 5 to 7.5 minutes a fleet of 10,000
// agents had its server open about 27 streams a second, each
// authenticated and each of its five watches and feeds started again,
// for no change: the connection's health is the HTTP/2 pings' to watch.
const DefaultWatchTimeout = 30 * time.Minute

// Validate reports what is wrong with c.
func (c APISourceConfig) Validate() error {
	var errs []error
	if c.Client == nil {
		errs = append(errs, errors.New("api source: a client is required"))
	}
	if c.NodeName == "" {
		errs = append(errs, errors.New("api source: a node name is required"))
	}
	if c.WatchTimeout < 0 {
		errs = append(errs, fmt.Errorf("api source: negative watch timeout %v", c.WatchTimeout))
	}
	return errors.Join(errs...)
}

// APISource follows the pods bound to the node (the assignment stream):
// it lists them, hands the list to its Sink as the API source's whole
// state, then watches from the list's resourceVersion and hands over each
// change. Mirror pods are left out: their static pods run instead. On a
// 410 Gone it relists; when the server is away it retries with backoff,
// forever, and changes nothing meanwhile, so the agent keeps running its
// pods.
type APISource struct {
	cfg   APISourceConfig
	sink  Sink
	clock clock.Clock
	log   *slog.Logger
	pods  api.ResourceInfo
	// resync asks Run to drop its watch (or its wait) and watch again;
	// silentSince is the last Resync's (Unix nanoseconds).
	resync      chan struct{}
	silentSince atomic.Int64
}

// Resync ends the current watch, or the wait before the next attempt,
// and watches again at once from the last revision seen (a 410 then
// lists). The agent calls it when the server is heard from again after
// a silence: a watch whose connection went silent (a cut
// link drops packets, it sends no RST) would otherwise wait for TCP to
// give up, and a wait grown during a long outage would delay the pods'
// catch-up by up to the backoff's cap. It never blocks.
//
// silentSince is when the silence began: a watch carried by a stream
// the server accepted after it is left as it is. After a server
// restart the agent's shared stream has mostly been opened again by
// then; dropping it opened every agent's stream a second time.
func (s *APISource) Resync(silentSince time.Time) {
	s.silentSince.Store(silentSince.UnixNano())
	select {
	case s.resync <- struct{}{}:
	default:
	}
}

// openWatch is the live watch and when Watch returned it, on the
// source's clock.
type openWatch struct {
	w  *client.Watcher
	at time.Time
}

// carriedSinceSilence reports whether o (nil: no watch yet) is carried
// by a stream accepted after the last Resync's silentSince.
func (s *APISource) carriedSinceSilence(o *openWatch) bool {
	if o == nil {
		return false
	}
	at, ok := o.w.CarriedSince()
	if !ok {
		return false
	}
	if at.IsZero() {
		at = o.at // a stream of its own: accepted before Watch returned
	}
	return at.After(time.Unix(0, s.silentSince.Load()))
}

// NewAPISource returns an APISource writing to sink (a Merger).
func NewAPISource(cfg APISourceConfig, sink Sink) (*APISource, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if sink == nil {
		return nil, errors.New("api source: a sink is required")
	}
	res, ok := api.LookupResource("pods")
	if !ok {
		return nil, errors.New("api source: the pods resource is not registered")
	}
	if cfg.WatchTimeout == 0 {
		cfg.WatchTimeout = DefaultWatchTimeout
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	return &APISource{cfg: cfg, sink: sink, clock: clock.Or(cfg.Clock), log: log.With("source", SourceAPI), pods: res, resync: make(chan struct{}, 1)}, nil
}

// Run follows the node's pods until ctx ends, then returns ctx's error.
// Call it once.
func (s *APISource) Run(ctx context.Context) error {
	bo := s.cfg.Backoff
	bo.Clock = s.clock
	rv := "" // "" means: list first
	for ctx.Err() == nil {
		var err error
		listed, progressed := rv == "", false
		if listed {
			rv, err = s.list(ctx)
			progressed = err == nil
		}
		if err == nil {
			var n int
			rv, n, err = s.watch(ctx, rv)
			progressed = progressed || n > 0
			if errors.Is(err, errWatchRotated) {
				continue // resume at once from rv
			}
			if errors.Is(err, errResync) {
				// Resumed from rv, not listed again: the watch replays
				// what it missed, or the server answers 410 and it
				// lists. After a server restart every agent whose
				// heartbeat was refused resyncs; relisting, 10,000 of
				// them had 12,966 lists answered 429.
				s.log.Info("pod stream resynced after a silence; resuming", "node", s.cfg.NodeName, "resourceVersion", rv)
				bo.Reset()
				continue
			}
		}
		if ctx.Err() != nil {
			break
		}
		if progressed {
			bo.Reset()
		}
		if client.IsGone(err) {
			s.log.Info("pod watch expired; relisting", "node", s.cfg.NodeName)
			rv = ""
			if !listed {
				continue // relist at once, unless a fresh list was just too old
			}
		} else if err != nil {
			s.log.Warn("pod stream from the server failed; retrying", "node", s.cfg.NodeName, "err", err)
		}
		// A watch the server ended without an error is resumed after the
		// back-off like a failure, so a server that closes every stream
		// at once is not hammered.
		if !s.wait(ctx, bo.Next()) {
			break
		}
	}
	return ctx.Err()
}

// wait waits d on the clock, or until a Resync; it returns false when
// ctx ends.
func (s *APISource) wait(ctx context.Context, d time.Duration) bool {
	t := s.clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C():
		return true
	case <-s.resync:
		return true
	}
}

// list reads the node's pods and sets them as the API source's state.
func (s *APISource) list(ctx context.Context) (string, error) {
	objs, rv, err := s.cfg.Client.List(ctx, s.pods, client.NamespaceAll, s.listOptions())
	if err != nil {
		return "", fmt.Errorf("list pods of node %s: %w", s.cfg.NodeName, err)
	}
	pods := make([]*api.Pod, 0, len(objs))
	for _, o := range objs {
		if p, ok := s.accept(o); ok {
			pods = append(pods, p)
		}
	}
	if err := s.sink.Set(ctx, SourceAPI, pods); err != nil {
		return "", err
	}
	return rv, nil
}

func (s *APISource) listOptions() client.ListOptions {
	return client.ListOptions{FieldSelector: "spec.nodeName=" + s.cfg.NodeName}
}

// accept returns o as a pod to run, or false for a mirror pod, a pod of
// another node (which the field selector excludes anyway) or a pod
// without a UID.
func (s *APISource) accept(o any) (*api.Pod, bool) {
	p, ok := o.(*api.Pod)
	if !ok || p.UID == "" || p.Spec.NodeName != s.cfg.NodeName || IsMirrorPod(p) {
		return nil, false
	}
	return p, true
}

// errResync ends a watch that Resync dropped.
var errResync = errors.New("resync asked")

// errWatchRotated ends a watch that reached its WatchTimeout.
var errWatchRotated = errors.New("watch reached its timeout")

// watch follows changes from rv until the stream ends, and returns the
// version to resume from, how many events arrived, and why it ended
// (errWatchRotated after the watch timeout).
func (s *APISource) watch(ctx context.Context, rv string) (string, int, error) {
	wctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	d := s.cfg.WatchTimeout
	timer := s.clock.NewTimer(d + rand.N(d/2+1))
	defer timer.Stop()
	var cur atomic.Pointer[openWatch]
	go func() {
		for {
			select {
			case <-timer.C():
				cancel(errWatchRotated)
				return
			case <-s.resync:
				if s.carriedSinceSilence(cur.Load()) {
					s.log.Debug("pod stream opened since the silence; no resync", "node", s.cfg.NodeName)
					continue
				}
				cancel(errResync)
				return
			case <-wctx.Done():
				return
			}
		}
	}()
	w, err := s.cfg.Client.Watch(wctx, s.pods, client.NamespaceAll, client.WatchOptions{ListOptions: s.listOptions(), ResourceVersion: rv})
	if err == nil {
		cur.Store(&openWatch{w: w, at: s.clock.Now()})
	}
	if err != nil {
		if c := context.Cause(wctx); errors.Is(c, errWatchRotated) || errors.Is(c, errResync) {
			return rv, 0, c
		}
		return rv, 0, fmt.Errorf("watch pods of node %s: %w", s.cfg.NodeName, err)
	}
	defer w.Close()
	n := 0
	for {
		ev, err := w.Next()
		if err != nil {
			if c := context.Cause(wctx); errors.Is(c, errWatchRotated) || errors.Is(c, errResync) {
				err = c
			}
			return w.ResourceVersion(), n, err
		}
		n++
		p, ok := s.accept(ev.Object)
		if !ok {
			continue
		}
		switch ev.Type {
		case api.Added, api.Modified:
			err = s.sink.Upsert(ctx, SourceAPI, p)
		case api.Deleted:
			err = s.sink.Remove(ctx, SourceAPI, p)
		}
		if err != nil {
			return w.ResourceVersion(), n, err
		}
	}
}
