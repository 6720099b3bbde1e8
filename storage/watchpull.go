package storage

// Next returns the next event when one is ready, and false when none is:
// then, while the watch lives, wait for Ready (or Done) and call again;
// once Done is closed Next returns nothing more and Err says why. Next
// never waits for live changes, but while the watch replays history older
// than the in-memory ring it reads the change log, a chunk per call at
// most, taking turns with other replays. Call it from one goroutine.
func (w *Watcher) Next() (Event, bool) {
	for {
		if w.next < len(w.cur) {
			ev := w.cur[w.next]
			w.cur[w.next] = Event{}
			w.next++
			return ev, true
		}
		if w.ctx.Err() != nil {
			return Event{}, false
		}
		switch {
		case w.replayAfter < w.replayTo:
			if err := w.replayChunk(); err != nil {
				if w.ctx.Err() == nil {
					w.fail(err)
				}
				return Event{}, false
			}
		case w.backlog != nil:
			w.reuse(w.backlog)
			w.backlog = nil
		default:
			w.mu.Lock()
			q, ended := w.queue, w.ended
			if !ended && len(q) > 0 {
				// Swap: the consumer hands back its drained slice.
				w.queue = w.cur[:0]
				w.cur, w.next = q, 0
			}
			w.mu.Unlock()
			if ended || len(q) == 0 {
				return Event{}, false
			}
		}
	}
}

// reuse makes evs the events to hand out.
func (w *Watcher) reuse(evs []Event) {
	w.cur, w.next = evs, 0
}

// replayChunk reads the next chunk of the history in (from, replayTo]
// from the change log and makes what the watcher selects of it the events
// to hand out. Each chunk checks, in its read's snapshot, that
// compaction has not removed what the watch needs.
func (w *Watcher) replayChunk() error {
	// One chunk per admission, so long replays take turns.
	select {
	case w.s.replays <- struct{}{}:
	case <-w.ctx.Done():
		return w.ctx.Err()
	}
	cs, err := w.s.readChanges(w.ctx, w.resource, w.from, w.replayAfter, w.replayTo, replayChunk)
	<-w.s.replays
	if err != nil {
		return err
	}
	evs := w.cur[:0]
	for _, c := range cs {
		t, ok, err := w.filter.eventFor(c)
		if err != nil {
			return err
		}
		if ok {
			evs = append(evs, Event{Type: t, Revision: c.rev, Value: c.value, c: c})
		}
	}
	w.reuse(evs)
	if len(cs) < replayChunk {
		w.replayAfter = w.replayTo
	} else {
		w.replayAfter = cs[len(cs)-1].rev
	}
	return nil
}

// Progress returns a revision the consumer may resume from having missed
// nothing: when Next has handed out every event, the last revision
// published to watchers (every change up to it that the watch selects has
// been handed out); otherwise 0. The API server sends it in bookmarks, so
// a client resumes after a restart from a recent revision, which the
// warmed ring serves, rather than from its last event's. Call it from
// the goroutine calling Next.
func (w *Watcher) Progress() int64 {
	if w.next < len(w.cur) || w.replayAfter < w.replayTo || w.backlog != nil {
		return 0
	}
	b := w.s.bc
	b.mu.Lock()
	defer b.mu.Unlock()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ended || len(w.queue) > 0 {
		return 0
	}
	return max(b.rev, w.from)
}
