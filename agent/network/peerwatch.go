package network

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/api/client"
	"github.com/skiffhq/skiff/internal/backoff"
	"github.com/skiffhq/skiff/internal/clock"
	"github.com/skiffhq/skiff/internal/peerfeed"
)

// PeerAPI is what a PeerWatcher needs of the server: *client.Client.
type PeerAPI interface {
	client.ListWatcher
	Do(ctx context.Context, method, path string, body io.Reader) (*http.Response, error)
}

// FeedOpener is a PeerAPI that carries the feed on a stream it shares
// with the agent's watches (client.MuxedWatches): the PeerWatcher then
// opens its feed there.
type FeedOpener interface {
	OpenFeed(ctx context.Context, path string, query url.Values) (io.ReadCloser, error)
}

var _ PeerAPI = (*client.Client)(nil)

// PeerWatcher feeds a NodeSink from the server's peer feed
// (internal/peerfeed): each Node's name, podCIDR and InternalIP, sealed
// into one batch a second by the server, rather than every write of
// every Node. The sink gets Nodes carrying only those fields, after
// every batch. A stream that ends is resumed from the last batch's
// revision with the set's hash, after a back-off (Retry up to RetryMax,
// reset by any batch); a batch whose hash does not match asks for the
// whole set again. A server without the feed (404: older than the
// agent) is watched as before, Node by Node (NodeWatcher).
type PeerWatcher struct {
	Client PeerAPI // *client.Client
	Sink   NodeSink
	Clock  clock.Clock  // default clock.Real
	Logger *slog.Logger // default slog.Default
	// Retry and RetryMax bound the back-off; defaults 1 s and 30 s.
	Retry, RetryMax time.Duration

	set peerfeed.Set
	rev int64 // the set's revision; -1: none yet
}

// Run streams until ctx ends, then returns ctx's error.
func (w *PeerWatcher) Run(ctx context.Context) error {
	log := w.Logger
	if log == nil {
		log = slog.Default()
	}
	bo := backoff.Backoff{Min: cmp.Or(w.Retry, time.Second), Max: cmp.Or(w.RetryMax, 30*time.Second), Clock: clock.Or(w.Clock)}
	w.rev = -1
	for {
		n, err := w.stream(ctx)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var se *api.StatusError
		if errors.As(err, &se) && se.Status.Code == http.StatusNotFound {
			log.Info("pod network: the server has no peer feed; watching Nodes")
			nw := &NodeWatcher{Client: w.Client, Sink: w.Sink, Clock: w.Clock, Logger: w.Logger, Retry: w.Retry, RetryMax: w.RetryMax}
			return nw.Run(ctx)
		}
		if errors.Is(err, peerfeed.ErrHash) {
			w.set, w.rev = peerfeed.Set{}, -1
		}
		if n > 0 {
			bo.Reset()
		}
		log.Warn("pod network: peer feed restarts", "err", err, "failures", bo.Failures()+1)
		if !bo.BackOff(ctx, err) {
			return ctx.Err()
		}
	}
}

// stream reads one stream until it ends; it returns how many batches
// came and why it ended (never nil).
func (w *PeerWatcher) stream(ctx context.Context) (int, error) {
	var q url.Values
	if w.rev >= 0 {
		q = url.Values{"since": {strconv.FormatInt(w.rev, 10)}, "hash": {w.set.Hash()}}
	}
	var body io.ReadCloser
	if fo, ok := w.Client.(FeedOpener); ok {
		b, err := fo.OpenFeed(ctx, peerfeed.Path, q)
		if err != nil {
			return 0, fmt.Errorf("peer feed: %w", err)
		}
		body = b
	} else {
		path := peerfeed.Path
		if q != nil {
			path += "?" + q.Encode()
		}
		resp, err := w.Client.Do(ctx, http.MethodGet, path, nil)
		if err != nil {
			return 0, fmt.Errorf("peer feed: %w", err)
		}
		body = resp.Body
	}
	defer body.Close()
	rd := peerfeed.NewReader(body)
	for n := 0; ; n++ {
		b, err := rd.Next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return n, fmt.Errorf("peer feed: %w", err)
		}
		if err := w.set.Apply(b); err != nil {
			return n, err
		}
		w.rev = b.Revision
		if err := w.Sink.SetPeers(w.set.Peers()); err != nil {
			// Resumed at once from this batch, the sink gets the set
			// again.
			return n + 1, fmt.Errorf("%w: %w", errSink, err)
		}
	}
}
