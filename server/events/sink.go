package events

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/internal/clock"
	"github.com/skiffhq/skiff/storage"
)

// DefaultTTL is how long an event lives after it was last seen, as
// kube-apiserver's --event-ttl.
const DefaultTTL = time.Hour

// maxKeys bounds the de-duplication index; past it, entries not seen for
// a TTL are dropped, and if that is not enough the index starts over (the
// cost is one duplicate event per key, not a wrong count).
const maxKeys = 16384

// Sink stores events, folding a repeat of an event still alive into the
// stored one: the count goes up and lastTimestamp moves, like the
// Kubernetes event correlator, but done once on the server so every
// client — agents, curl, kubectl — gets it. It is safe for concurrent
// use.
type Sink struct {
	store *storage.Store
	clock clock.Clock
	ttl   time.Duration
	log   *slog.Logger

	mu        sync.Mutex
	keys      map[key]entry
	lastStamp int64 // the last name stamp handed out (unix nanoseconds)
}

// key identifies "the same event": what it is about, who says it, and
// what it says.
type key struct {
	kind, namespace, name, uid, fieldPath string
	typ, reason, message                  string
	component, host                       string
}

type entry struct {
	namespace, name string
	lastSeen        time.Time
}

// NewSink returns a Sink over store; ttl <= 0 means DefaultTTL.
func NewSink(store *storage.Store, clk clock.Clock, ttl time.Duration, log *slog.Logger) *Sink {
	if ttl <= 0 {
		ttl = DefaultTTL
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Sink{store: store, clock: clock.Or(clk), ttl: ttl, log: log, keys: make(map[key]entry)}
}

func keyOf(e *api.Event) key {
	o := e.InvolvedObject
	return key{
		kind: o.Kind, namespace: o.Namespace, name: o.Name, uid: o.UID, fieldPath: o.FieldPath,
		typ: e.Type, reason: e.Reason, message: e.Message,
		component: e.Source.Component, host: e.Source.Host,
	}
}

// Record stores ev, a new, validated event with its server-owned metadata
// (uid, creationTimestamp) already set. When an equal event (same object,
// type, reason, message and source) was recorded within the TTL, that one
// is updated instead and returned; created reports which happened.
func (s *Sink) Record(ctx context.Context, ev *api.Event) (out *api.Event, created bool, err error) {
	now := s.clock.Now()
	fillTimes(ev, now)
	k := keyOf(ev)
	s.mu.Lock()
	prev, ok := s.aliveLocked(k, ev, now)
	s.mu.Unlock()
	if ok {
		merged, err := s.bump(ctx, prev, ev)
		switch {
		case err == nil:
			s.remember(k, entry{namespace: merged.Namespace, name: merged.Name, lastSeen: now})
			return merged, false, nil
		case !errors.Is(err, storage.ErrNotFound) && !errors.Is(err, errNotSame):
			return nil, false, err
		}
		// Gone (expired, deleted) or replaced: store ev as new.
	}
	if err := s.store.Create(ctx, ev); err != nil {
		return nil, false, err
	}
	s.remember(k, entry{namespace: ev.Namespace, name: ev.Name, lastSeen: now})
	return ev, true, nil
}

// aliveLocked returns the stored event ev repeats, if it is still alive.
func (s *Sink) aliveLocked(k key, ev *api.Event, now time.Time) (entry, bool) {
	prev, ok := s.keys[k]
	return prev, ok && prev.namespace == ev.Namespace && now.Sub(prev.lastSeen) < s.ttl
}

// stamp returns a time in unix nanoseconds for a new event's name, after
// every stamp before it: events about one object made at one instant (a
// batch, a coarse or fake clock) get distinct names.
func (s *Sink) stamp(now time.Time) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lastStamp = max(now.UnixNano(), s.lastStamp+1)
	return s.lastStamp
}

var errNotSame = errors.New("events: stored event no longer matches")

// bump adds ev's count to the stored event prev names.
func (s *Sink) bump(ctx context.Context, prev entry, ev *api.Event) (*api.Event, error) {
	obj, err := s.store.GuaranteedUpdate(ctx, "events", prev.namespace, prev.name, func(cur api.Object) (api.Object, error) {
		c, ok := cur.(*api.Event)
		if !ok || keyOf(c) != keyOf(ev) {
			return nil, errNotSame
		}
		n := *c
		n.Count = c.Count + max(ev.Count, 1)
		if ev.LastTimestamp.After(n.LastTimestamp.Time) {
			n.LastTimestamp = ev.LastTimestamp
		}
		if !ev.EventTime.IsZero() && ev.EventTime.After(n.EventTime.Time) {
			n.EventTime = ev.EventTime
		}
		return &n, nil
	})
	if err != nil {
		return nil, err
	}
	return obj.(*api.Event), nil
}

func (s *Sink) remember(k key, e entry) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.keys[k]; !ok && len(s.keys) >= maxKeys {
		for kk, v := range s.keys {
			if e.lastSeen.Sub(v.lastSeen) >= s.ttl {
				delete(s.keys, kk)
			}
		}
		if len(s.keys) >= maxKeys {
			s.keys = make(map[key]entry)
		}
	}
	s.keys[k] = e
}

// fillTimes gives an event without timestamps the Kubernetes defaults:
// firstTimestamp = lastTimestamp = now, count 1.
func fillTimes(ev *api.Event, now time.Time) {
	if ev.FirstTimestamp.IsZero() {
		if !ev.EventTime.IsZero() {
			ev.FirstTimestamp = api.NewTime(ev.EventTime.Time)
		} else {
			ev.FirstTimestamp = api.NewTime(now)
		}
	}
	if ev.LastTimestamp.IsZero() {
		ev.LastTimestamp = ev.FirstTimestamp
	}
	if ev.Count == 0 {
		ev.Count = 1
	}
}

// lastSeen is when an event last happened, by the best field it has.
func lastSeen(e *api.Event) time.Time {
	t := e.LastTimestamp.Time
	if e.EventTime.After(t) {
		t = e.EventTime.Time
	}
	if t.IsZero() {
		t = e.CreationTimestamp.Time
	}
	return t
}

// Expire deletes every event last seen a TTL or more ago and returns how
// many it deleted.
func (s *Sink) Expire(ctx context.Context) (int, error) {
	objs, _, err := s.store.List(ctx, "events", storage.ListOptions{})
	if err != nil {
		return 0, fmt.Errorf("expire events: %w", err)
	}
	cutoff := s.clock.Now().Add(-s.ttl)
	n := 0
	for _, o := range objs {
		e := o.(*api.Event)
		if lastSeen(e).After(cutoff) {
			continue
		}
		_, err := s.store.Delete(ctx, "events", e.Namespace, e.Name, e.ResourceVersion)
		switch {
		case err == nil:
			n++
		case errors.Is(err, storage.ErrNotFound), errors.Is(err, storage.ErrConflict):
			// Gone already, or bumped since the list: leave it.
		default:
			return n, fmt.Errorf("expire events: %w", err)
		}
	}
	return n, nil
}

// Run expires events every interval until ctx ends, then returns ctx's
// error.
func (s *Sink) Run(ctx context.Context, interval time.Duration) error {
	t := s.clock.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C():
			if n, err := s.Expire(ctx); err != nil {
				if ctx.Err() == nil {
					s.log.Warn("event expiry failed", "err", err)
				}
			} else if n > 0 {
				s.log.Debug("expired events", "count", n)
			}
		}
	}
}
