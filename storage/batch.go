package storage

import (
	"context"
	"fmt"

	"github.com/skiffhq/skiff/api"
)

// UpdateBatch is Update for several objects at once, for callers such as
// the scheduler that have many independent writes ready at the same
// moment. Every object is encoded first, then all are queued to the
// writer back to back, so they are normally committed in one transaction
// with one fsync (a batch larger than Options.MaxBatch, or one queued
// beside other writers' ops, may span a few). Each object keeps Update's
// semantics: its resourceVersion, when set, is a precondition checked
// alone (ErrConflict fails only that object), and on success it is set
// to the new revision.
//
// The result has one entry per object, nil on success. Like Update, if
// ctx ends while the batch is being committed, some entries may be ctx's
// error although the write was stored. objs must not be used by other
// goroutines during the call.
func (s *Store) UpdateBatch(ctx context.Context, objs []api.Object) []error {
	errs := make([]error, len(objs))
	ops := make([]*op, len(objs))
	for i, obj := range objs {
		e, err := s.encode(obj)
		if err != nil {
			errs[i] = fmt.Errorf("update: %w", err)
			continue
		}
		pre, err := parseRevision(obj.GetObjectMeta().ResourceVersion)
		if err != nil {
			errs[i] = fmt.Errorf("update %s: %w", e.key, err)
			continue
		}
		ops[i] = &op{ctx: ctx, kind: opUpdate, enc: e, precond: pre, done: make(chan struct{})}
	}
	queued := len(ops)
	for i, o := range ops {
		if o == nil {
			continue
		}
		if err := s.enqueue(ctx, o); err != nil {
			queued = i
			for j := i; j < len(ops); j++ {
				if ops[j] != nil {
					errs[j] = fmt.Errorf("update %s: %w", ops[j].enc.key, err)
				}
			}
			break
		}
	}
	for i, o := range ops[:queued] {
		if o == nil {
			continue
		}
		if err := s.await(ctx, o); err != nil {
			errs[i] = fmt.Errorf("update %s: %w", o.enc.key, err)
			continue
		}
		objs[i].GetObjectMeta().ResourceVersion = formatRevision(o.rev)
	}
	return errs
}

// enqueue hands o (ctx and done already set) to the writer without
// waiting for its result.
func (s *Store) enqueue(ctx context.Context, o *op) error {
	select {
	case s.ops <- o:
		return nil
	case <-s.closing:
		return ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
}

// await waits for the result of an op queued by enqueue.
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
