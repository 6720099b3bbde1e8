package storage

import (
	"context"
	"fmt"

	"github.com/skiffhq/skiff/api"
)

// UpdateBatch is Update for several objects at once, for callers such as
// the scheduler that have many independent writes ready at the same
// moment. The objects are encoded by the caller's goroutine and written
// by the writer in one transaction with one fsync per
// Options.MaxBatchTxn objects. Each object keeps Update's semantics: its resourceVersion,
// when set, is a precondition checked alone (ErrConflict fails only that
// object), and on success it is set to the new revision.
//
// The result has one entry per object, nil on success. Like Update, if
// ctx ends while the batch is being committed, entries may be ctx's error
// although the write was stored. objs must not be used by other
// goroutines during the call.
func (s *Store) UpdateBatch(ctx context.Context, objs []api.Object) []error {
	return s.writeBatch(ctx, opUpdate, objs)
}

// CreateBatch is Create for several objects at once, as UpdateBatch is
// Update: a controller making many pods writes them from its own
// goroutine, in one transaction per Options.MaxBatchTxn objects, rather than
// from a goroutine per object. An object whose key exists fails alone
// with ErrExists. Results and commit semantics are UpdateBatch's.
func (s *Store) CreateBatch(ctx context.Context, objs []api.Object) []error {
	return s.writeBatch(ctx, opCreate, objs)
}

// writeBatch writes objs as ops of kind (opCreate or opUpdate).
func (s *Store) writeBatch(ctx context.Context, kind opKind, objs []api.Object) []error {
	verb := "update"
	if kind == opCreate {
		verb = "create"
	}
	errs := make([]error, len(objs))
	var ops []*op
	idx := make([]int, 0, len(objs))
	for i, obj := range objs {
		e, err := s.encode(obj)
		if err != nil {
			errs[i] = fmt.Errorf("%s: %w", verb, err)
			continue
		}
		var pre int64
		if kind == opUpdate {
			if pre, err = parseRevision(obj.GetObjectMeta().ResourceVersion); err != nil {
				errs[i] = fmt.Errorf("%s %s: %w", verb, e.key, err)
				continue
			}
		}
		ops = append(ops, &op{ctx: ctx, kind: kind, enc: e, precond: pre, done: make(chan struct{})})
		idx = append(idx, i)
	}
	if len(ops) == 0 {
		return errs
	}
	// The groups run as one writer task, so no other op splits them and
	// the caller waits for the writer once, not once a group: under load,
	// each wait is a turn in the queue behind every status write and a
	// turn behind every runnable goroutine for a core, and a controller's
	// 1 024 pods took four of each. A group is a transaction of up to
	// MaxBatchTxn objects: the writer is held until the last group
	// anyway, and each transaction's fsync cost the writer a wait for a
	// core after it (on a fleet's busy server, 22 ms on average and 61
	// ms at p90, for a 4 ms fsync), so 1 024 pods in four transactions
	// waited four times.
	//
	// Under LowPriority each group of MaxBatch is a task of its own in
	// the last lane, queued at once: the writer runs them one at a time,
	// whenever it is idle, so a large batch of events never holds it for
	// long.
	var err error
	if isLowPriority(ctx) {
		var tasks []*op
		for lo := 0; lo < len(ops); lo += s.opts.MaxBatch {
			group := ops[lo:min(lo+s.opts.MaxBatch, len(ops))]
			tasks = append(tasks, &op{kind: opTask, task: func(context.Context, *writer) error {
				s.commit(group)
				return nil
			}})
		}
		err = s.submitLater(ctx, tasks)
	} else {
		err = s.submit(ctx, &op{kind: opTask, batch: true, task: func(context.Context, *writer) error {
			for lo := 0; lo < len(ops); lo += s.opts.MaxBatchTxn {
				s.commit(ops[lo:min(lo+s.opts.MaxBatchTxn, len(ops))])
			}
			return nil
		}})
	}
	for k, o := range ops {
		i := idx[k]
		if err != nil {
			errs[i] = fmt.Errorf("%s %s: %w", verb, o.enc.key, err)
			continue
		}
		if o.err != nil {
			errs[i] = fmt.Errorf("%s %s: %w", verb, o.enc.key, o.err)
			continue
		}
		objs[i].GetObjectMeta().ResourceVersion = formatRevision(o.rev)
	}
	return errs
}

type lowPriorityKey struct{}

// LowPriority marks ctx's batches as writes nothing waits for (events): a
// CreateBatch or UpdateBatch under it waits until the writer has nothing
// else queued, or for at most laterMaxWait, so it does not delay the
// control loops' batches nor the single writes (a placement's creates
// and binds, the agents' status writes).
func LowPriority(ctx context.Context) context.Context {
	return context.WithValue(ctx, lowPriorityKey{}, true)
}

func isLowPriority(ctx context.Context) bool {
	v, _ := ctx.Value(lowPriorityKey{}).(bool)
	return v
}
