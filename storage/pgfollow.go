package storage

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
)

// run follows other servers' writes until ctx ends: it LISTENs on
// pgChannel on a connection of its own and, on every notification and
// every PollInterval without one, publishes the change log's new entries
// to this Store's watchers. While the listening connection is down it
// keeps polling through the read pool and reconnects once per
// PollInterval, so a restarted PostgreSQL is picked up without a restart
// of the server.
func (b *pgBackend) run(ctx context.Context, s *Store) {
	for ctx.Err() == nil {
		err := b.listen(ctx, s)
		if ctx.Err() != nil {
			return
		}
		s.log.Warn("listening for other servers' changes failed; polling", "err", err)
		// One poll now and one per interval until a listener is back.
		s.poll(ctx)
		t := s.clock.NewTimer(s.opts.PollInterval)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C():
		}
	}
}

// listen runs one listening connection until it fails or ctx ends.
func (b *pgBackend) listen(ctx context.Context, s *Store) error {
	cctx, cancel := context.WithTimeout(ctx, s.opts.WriteTimeout)
	conn, err := pgx.ConnectConfig(cctx, b.cfg)
	cancel()
	if err != nil {
		return translate(err)
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		conn.Close(cctx) //nolint:errcheck // the connection is done with either way
	}()
	if _, err := conn.Exec(ctx, "LISTEN "+pgChannel); err != nil {
		return translate(err)
	}
	// Changes committed before LISTEN took effect sent no notification
	// this connection saw.
	s.poll(ctx)
	for {
		wctx, cancel := context.WithTimeout(ctx, s.opts.PollInterval)
		n, err := conn.WaitForNotification(wctx)
		cancel()
		switch {
		case ctx.Err() != nil:
			return nil
		case err == nil && published(n.Payload, s.rev.Load()):
			// This server's own commit, or one a read already caught up
			// with: no query (every commit notifies every server).
		case err == nil:
			s.follow(ctx)
		case errors.Is(err, context.DeadlineExceeded):
			s.poll(ctx) // the fallback: a notification may have been lost
		default:
			return translate(err)
		}
	}
}

// follow publishes new changes, logging a failure (the next notification
// or poll retries).
func (s *Store) follow(ctx context.Context) {
	rctx, cancel := context.WithTimeout(ctx, s.opts.WriteTimeout)
	defer cancel()
	if err := s.catchUp(rctx); err != nil && ctx.Err() == nil {
		s.log.Warn("reading other servers' changes failed", "err", err)
	}
}

// poll is follow plus a refresh of the compacted revision, which another
// server's compaction may have raised.
func (s *Store) poll(ctx context.Context) {
	s.follow(ctx)
	if err := s.beginRead(); err != nil {
		return
	}
	defer s.endRead()
	rctx, cancel := context.WithTimeout(ctx, s.opts.WriteTimeout)
	defer cancel()
	var compacted int64
	if err := s.rs.meta.QueryRowContext(rctx, metaCompacted).Scan(&compacted); err != nil {
		if ctx.Err() == nil {
			s.log.Debug("reading the compacted revision failed", "err", translate(err))
		}
		return
	}
	s.raiseCompacted(compacted)
}

// published reports whether the revision a commit notified (its payload)
// is at or below rev, the last one this Store published. A payload that
// is not a revision is not published: read the change log.
func published(payload string, rev int64) bool {
	n, err := strconv.ParseInt(payload, 10, 64)
	return err == nil && n <= rev
}
