package storage

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/skiffhq/skiff/api"
)

// opKind says what an op does.
type opKind uint8

const (
	opCreate opKind = iota + 1
	opUpdate
	opDelete
	opTask // maintenance run by the writer between transactions
)

// op is one request to the writer. The submitting goroutine fills the
// request fields; the writer fills the result fields and then closes done.
type op struct {
	ctx     context.Context // the caller's; checked before the op runs
	kind    opKind
	enc     *encoded // create, update
	key     key      // delete
	info    *api.ResourceInfo
	precond int64 // required current revision; 0 for none
	current bool  // on ErrConflict, return the current value (GuaranteedUpdate)
	task    func(ctx context.Context, w *writer) error
	what    string    // names a task in the slow-writer warning ("": a task that commits, noted by commit)
	batch   bool      // a CreateBatch or UpdateBatch task: queued in the writer's first lane
	queued  time.Time // when a LowPriority task was queued (submitLater), by the Store's clock

	rev    int64  // the op's revision
	value  []byte // the stored value (for delete: the last state)
	cur    []byte // on ErrConflict: the current value and revision
	curRev int64
	err    error
	done   chan struct{}
}

// submit hands o to the writer and waits for its result.
//
// If ctx ends while o is queued, the writer skips it; if ctx ends while o
// is being committed, submit returns ctx's error but the write may still
// be committed (as with etcd): callers that must know re-read.
//
// A write under UseReserve that fails with ErrNoSpace frees the space
// reserve and is tried once more.
func (s *Store) submit(ctx context.Context, o *op) error {
	err := s.submitOnce(ctx, o)
	if errors.Is(err, ErrNoSpace) && mayUseReserve(ctx) && s.reserve.release() {
		s.log.Warn("disk full: released the space reserve for a delete")
		o.err, o.value, o.cur = nil, nil, nil
		err = s.submitOnce(ctx, o)
	}
	return err
}

func (s *Store) submitOnce(ctx context.Context, o *op) error {
	o.ctx = ctx
	o.done = make(chan struct{})
	queue := s.ops
	if o.batch {
		queue = s.batches
	}
	if err := s.enqueue(ctx, queue, o); err != nil {
		return err
	}
	return s.await(ctx, o)
}

// enqueue puts o into queue, unless the store closes or ctx ends first.
func (s *Store) enqueue(ctx context.Context, queue chan<- *op, o *op) error {
	select {
	case queue <- o:
		return nil
	case <-s.closing:
		return ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
}

// await waits for the writer to answer o: o's error, ctx's if it ends
// first, ErrClosed if the writer stopped without answering.
func (s *Store) await(ctx context.Context, o *op) error {
	select {
	case <-o.done:
		return o.err
	case <-ctx.Done():
		return ctx.Err()
	case <-s.writerDone:
		select {
		case <-o.done:
			return o.err
		default:
			return ErrClosed
		}
	}
}

// writeLoop is the writer goroutine. It takes every op queued (up to
// MaxBatch), runs consecutive writes in one transaction with one fsync,
// publishes the committed changes to watchers in revision order, and only
// then answers the callers.
//
// Batches (CreateBatch, UpdateBatch) have a lane of their own, which the
// writer serves first. Their callers are the control
// loops (a controller creating a ReplicaSet's pods, the scheduler's
// binders), and each waits for its batch before it makes the next: behind
// a fleet's status writes, which queue by the hundred while pods start,
// each wait was several transactions long, and the placement was paced by
// it. The lanes take turns: a batch, then the single ops queued (up to
// MaxBatch), then the next batch. Strict priority starved the single
// ops, among them the controllers' own status updates, which their next
// batches waited for.
//
// Batches under LowPriority (events) have the last lane, a task per
// transaction: the writer runs one when nothing else is queued, or once
// the oldest has waited laterMaxWait one a turn, so that a burst's own
// writes (a placement's creates and binds) are not shared with the events
// about them.
func (s *Store) writeLoop() {
	defer close(s.writerDone)
	batch := make([]*op, 0, s.opts.MaxBatch)
	var later []*op // LowPriority tasks taken from s.later, oldest first
	for {
		later = s.takeLater(later)
		if len(later) > 0 && s.clock.Now().Sub(later[0].queued) >= laterMaxWait {
			later = s.runLater(later)
		}
		select {
		case o := <-s.batches:
			s.runTask(o)
		default:
		}
		batch = batch[:0]
		select {
		case o := <-s.ops:
			batch = append(batch, o)
		default:
			if len(later) > 0 {
				// Nothing else is queued: the writer would be idle.
				later = s.runLater(later)
				continue
			}
			select {
			case o := <-s.batches:
				s.runTask(o)
				continue
			case o := <-s.ops:
				batch = append(batch, o)
			case o := <-s.later:
				later = append(later, o)
				continue
			case <-s.closing:
				s.drainClosed()
				return
			}
		}
	fill:
		for len(batch) < s.opts.MaxBatch {
			select {
			case o := <-s.ops:
				batch = append(batch, o)
			default:
				break fill
			}
		}
		for i := 0; i < len(batch); {
			if batch[i].kind == opTask {
				s.runTask(batch[i])
				i++
				continue
			}
			j := i + 1
			for j < len(batch) && batch[j].kind != opTask {
				j++
			}
			s.commit(batch[i:j])
			i = j
		}
		clear(batch)
	}
}

// laterMaxWait bounds how long a LowPriority batch waits for an idle
// writer: under a load that never lets the writer idle, the events still
// land, one batch at a time, this long after they were queued.
const laterMaxWait = 5 * time.Second

// submitLater queues tasks in the writer's last lane, all stamped with
// the same time, and waits for them all. As submit, it returns early
// when ctx ends or the store closes, and at the first task that fails
// (its context ended, or the database could not be reached); tasks
// already queued still run.
func (s *Store) submitLater(ctx context.Context, tasks []*op) error {
	now := s.clock.Now()
	for _, o := range tasks {
		o.ctx, o.done, o.queued = ctx, make(chan struct{}), now
	}
	for _, o := range tasks {
		if err := s.enqueue(ctx, s.later, o); err != nil {
			return err
		}
	}
	for _, o := range tasks {
		if err := s.await(ctx, o); err != nil {
			return err
		}
	}
	return nil
}

// takeLater moves the LowPriority tasks queued into later, without
// waiting.
func (s *Store) takeLater(later []*op) []*op {
	for {
		select {
		case o := <-s.later:
			later = append(later, o)
		default:
			return later
		}
	}
}

// runLater runs the oldest of later and returns the rest.
func (s *Store) runLater(later []*op) []*op {
	s.runTask(later[0])
	later[0] = nil
	return later[1:]
}

// drainClosed fails every op still queued once Close has begun.
func (s *Store) drainClosed() {
	for {
		select {
		case o := <-s.ops:
			o.err = ErrClosed
			close(o.done)
		case o := <-s.batches:
			o.err = ErrClosed
			close(o.done)
		case o := <-s.later:
			o.err = ErrClosed
			close(o.done)
		default:
			return
		}
	}
}

// slowWrite is how long a transaction or a maintenance task may hold the
// writer before it is logged: every write waits behind it, so a long one
// is a stall of the whole API's writes (a checkpoint copying a large
// write-ahead log, a slow disk).
const slowWrite = 500 * time.Millisecond

// noteSlowWrite logs what held the writer for d when d is over slowWrite;
// phases say where a transaction's time went.
func (s *Store) noteSlowWrite(what string, ops int, d time.Duration, phases ...slog.Attr) {
	if d < slowWrite {
		return
	}
	s.slowWrites.Add(1)
	attrs := []any{"what", what, "ops", ops, "took", d.Round(time.Millisecond)}
	for _, p := range phases {
		attrs = append(attrs, p)
	}
	s.log.Warn("slow write: every write waited", attrs...)
}

// phase is a slow write's phase as a log attribute, to the millisecond.
func phase(name string, d time.Duration) slog.Attr {
	return slog.Duration(name, d.Round(time.Millisecond))
}

func (s *Store) runTask(o *op) {
	start := s.clock.Now()
	if err := o.ctx.Err(); err != nil {
		o.err = err
	} else if err := s.w.ensureConnected(o.ctx); err != nil {
		o.err = err
	} else {
		o.err = o.task(o.ctx, s.w)
		if o.err != nil && s.w.be.resetAfterFailure() {
			s.w.disconnect()
		}
	}
	if o.what != "" {
		s.noteSlowWrite(o.what, 1, s.clock.Now().Sub(start))
	}
	close(o.done)
}

// commit runs ops in one transaction. A failed precondition fails only its
// op; a database error rolls the whole transaction back and fails every op.
func (s *Store) commit(ops []*op) {
	// A commit in progress is never interrupted by a caller; on a network
	// database it is bounded by WriteTimeout.
	ctx, cancel := s.commitContext()
	defer cancel()
	start := s.clock.Now()
	s.hot.forget(ops)
	w := s.w
	var base, rev, ts int64
	var changes []*change
	err := w.ensureConnected(ctx)
	if err == nil {
		var lastTs int64
		base, lastTs, err = w.be.begin(ctx, w)
		ts = max(s.clock.Now().UnixNano(), lastTs)
	}
	if err == nil {
		err = w.fences(ctx, ops)
	}
	if err == nil {
		if _, pg := w.be.(*pgBackend); pg && !s.batchClaims(ops) {
			changes, rev, err = w.applyPipelined(ctx, ops, base, ts)
		} else {
			changes, rev, err = w.applyEach(ctx, ops, base, ts)
		}
	}
	applied := s.clock.Now()
	if err == nil && len(changes) > 0 {
		start := time.Now()
		err = w.be.commit(ctx, w, rev, ts)
		s.commitNanos.Add(time.Since(start).Nanoseconds())
	} else if err == nil {
		err = w.rollback(ctx)
	}
	if err != nil {
		err = translate(err)
		s.abandon(ctx)
		s.failedCommits.Add(1)
		s.noteSlowWrite("transaction", len(ops), s.clock.Now().Sub(start), phase("apply", applied.Sub(start)))
		for _, o := range ops {
			o.err = err
			o.value, o.cur = nil, nil
			close(o.done)
		}
		return
	}
	committed := s.clock.Now()
	if len(changes) > 0 {
		now := time.Now()
		for _, c := range changes {
			c.committed = now
		}
		s.commits.Add(1)
		s.writes.Add(int64(len(changes)))
		w.lastRev, w.lastTs = rev, ts
		s.hot.remember(changes)
		s.publishCommitted(base, changes)
	}
	end := s.clock.Now()
	s.noteSlowWrite("transaction", len(ops), end.Sub(start),
		phase("apply", applied.Sub(start)), phase("commit", committed.Sub(applied)), phase("publish", end.Sub(committed)))
	for _, o := range ops {
		close(o.done)
	}
}

// applyEach applies ops one by one on top of revision base inside the
// open transaction (each sees the ones before it) and returns the changes
// and the last revision. Ops that fail a precondition get o.err; err is a
// database failure.
func (w *writer) applyEach(ctx context.Context, ops []*op, base, ts int64) ([]*change, int64, error) {
	rev := base
	changes := make([]*change, 0, len(ops))
	for _, o := range ops {
		if o.err != nil {
			continue // fenced
		}
		if cerr := o.ctx.Err(); cerr != nil {
			o.err = cerr
			continue
		}
		c, opErr, err := w.apply(ctx, o, rev+1, ts)
		if err != nil {
			return nil, 0, err
		}
		if o.err = opErr; opErr != nil {
			continue
		}
		rev++
		changes = append(changes, c)
	}
	return changes, rev, nil
}

// commitContext bounds a write transaction: WriteTimeout on a network
// database; on SQLite nothing (a local commit is not interrupted
// halfway). There it is a context that can never end: the SQLite driver
// starts a goroutine per statement to watch a context that can, which
// for a batch of pod writes was hundreds of goroutines, each queued for
// a core on a busy server before it could exit.
func (s *Store) commitContext() (context.Context, context.CancelFunc) {
	if !s.be.resetAfterFailure() {
		return context.Background(), func() {}
	}
	return context.WithTimeout(context.Background(), s.opts.WriteTimeout)
}

// abandon rolls back a failed transaction, or drops the connection when
// the backend may have lost it.
func (s *Store) abandon(ctx context.Context) {
	w := s.w
	if w.be.resetAfterFailure() {
		w.disconnect()
		return
	}
	if rerr := w.rollback(ctx); rerr != nil {
		s.log.Debug("rollback after failed batch", "err", rerr)
	}
}

// ensureConnected reconnects a writer whose connection was dropped.
func (w *writer) ensureConnected(ctx context.Context) error {
	if w.conn != nil {
		return nil
	}
	return w.connect(ctx)
}
