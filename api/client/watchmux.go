package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/internal/backoff"
	"github.com/skiffhq/skiff/internal/clock"
)

// WatchesPath is the server's endpoint for several watches on one stream
// (server/apiserver.WatchesPath).
const WatchesPath = "/api/v1/skiff/watches"

// MaxMuxWatches is the most watches one WatchMux stream carries (the
// server's bound); further watches get a stream of their own.
const MaxMuxWatches = 6

// WatchMux carries several watches on one stream (GET WatchesPath):
// an agent's pods, Services and EndpointSlices cost the server one
// HTTP/2 stream, one handler goroutine and one response buffer instead
// of three. Its Watch has the signature and the Watcher of
// Client.Watch, so an informer loop takes either.
//
// Run holds the stream. A watch that starts or ends opens it again with
// the watches then live, each from the last revision it delivered; a
// stream that breaks (the server restarted, the link dropped) is opened
// again after a backoff, and the watches go on as if nothing happened.
// Only what the server says of one watch (an ERROR event: 410 for a
// revision too old) ends that watch, as on its own stream. A server
// without the endpoint (404 or 405) makes the WatchMux give every watch
// its own stream from then on: the watches live at that moment end with
// an error, and their loops watch again.
type WatchMux struct {
	c   *Client
	clk clock.Clock

	mu      sync.Mutex
	subs    []*muxSub
	cancel  context.CancelFunc // ends the stream being read, to open it again
	changed chan struct{}      // a watch started; capacity 1
	direct  atomic.Bool        // the server has no WatchesPath
}

// NewWatchMux returns a WatchMux on c; Run must be running for its
// watches to receive anything.
func NewWatchMux(c *Client, clk clock.Clock) *WatchMux {
	return &WatchMux{c: c, clk: clock.Or(clk), changed: make(chan struct{}, 1)}
}

// muxSub is one watch of the mux.
type muxSub struct {
	res  api.ResourceInfo
	ns   string
	opts ListOptions
	rv   string // where the watch resumes; owned by Run once added

	// A feed (OpenFeed) instead of a watch: its path, and the query it
	// resumes from (the server's resume of its last line).
	feedPath, feedQuery string

	events chan muxEvent // to the Watcher; closed by Run after an ERROR
	done   chan struct{} // closed when the watch ends on the client's side
	// carriedAt is when the stream that carries it now was accepted
	// (the mux's clock, Unix nanoseconds); 0 while none does.
	carriedAt atomic.Int64
	once      sync.Once
	err       error // why done was closed
}

// muxEvent is one event handed to a watch.
type muxEvent struct {
	typ    string
	object []byte // the watch's own copy
}

// muxEventBuffer is how many events a watch may hold before Run waits
// for its consumer: an agent's consumers apply events to caches, so
// they only fall behind by a burst.
const muxEventBuffer = 64

// errMuxDirect ends the watches live when the server turns out to have
// no WatchesPath: their loops watch again, each on its own stream.
var errMuxDirect = errors.New("watch: the server has no multiplexed watches; watching on a stream of its own")

// Watch starts a watch carried by the mux's stream. Its Watcher behaves
// as Client.Watch's: events until ctx is done, Close, or an ERROR (410:
// relist). It does not fail for the server's sake: a refusal arrives as
// the Watcher's error.
func (m *WatchMux) Watch(ctx context.Context, res api.ResourceInfo, ns string, opts WatchOptions) (*Watcher, error) {
	if m.direct.Load() {
		return m.c.Watch(ctx, res, ns, opts)
	}
	if err := checkResource(res); err != nil {
		return nil, err
	}
	s := &muxSub{res: res, ns: ns, opts: opts.ListOptions, rv: opts.ResourceVersion,
		events: make(chan muxEvent, muxEventBuffer), done: make(chan struct{})}
	m.mu.Lock()
	if len(m.subs) >= MaxMuxWatches {
		m.mu.Unlock()
		return m.c.Watch(ctx, res, ns, opts)
	}
	m.subs = append(m.subs, s)
	m.pokeLocked()
	m.mu.Unlock()
	stop := context.AfterFunc(ctx, func() { m.end(s, ctx.Err()) })
	w := newWatcher(ctx, res, nil, opts.ResourceVersion)
	w.feed = s
	w.closeFeed = func() { stop(); m.end(s, errWatcherClosed) }
	return w, nil
}

// OpenFeed starts a feed (a stream of JSON lines other than a watch:
// the peer feed) carried by the mux's stream, from query. The lines are
// read from the returned body, each followed by a newline, as from the
// feed's own GET; a break of the stream is resumed where the server
// says, unseen. It does not fail for the server's sake: a refusal
// arrives as the body's error. With a server without shared streams, it
// is the feed's own GET.
func (m *WatchMux) OpenFeed(ctx context.Context, path string, query url.Values) (io.ReadCloser, error) {
	if m.direct.Load() {
		if len(query) > 0 {
			path += "?" + query.Encode()
		}
		resp, err := m.c.send(ctx, request{method: http.MethodGet, path: path})
		if err != nil {
			return nil, err
		}
		return resp.Body, nil
	}
	s := &muxSub{feedPath: path, feedQuery: query.Encode(), events: make(chan muxEvent, muxEventBuffer), done: make(chan struct{})}
	m.mu.Lock()
	if len(m.subs) >= MaxMuxWatches {
		m.mu.Unlock()
		return nil, fmt.Errorf("feed %s: the shared stream carries %d already", path, MaxMuxWatches)
	}
	m.subs = append(m.subs, s)
	m.pokeLocked()
	m.mu.Unlock()
	stop := context.AfterFunc(ctx, func() { m.end(s, ctx.Err()) })
	return &feedBody{m: m, s: s, ctx: ctx, stop: stop}, nil
}

// feedBody is a feed's lines, read from its sub's events.
type feedBody struct {
	m    *WatchMux
	s    *muxSub
	ctx  context.Context
	stop func() bool
	cur  []byte
}

func (b *feedBody) Read(p []byte) (int, error) {
	if len(b.cur) == 0 {
		_, obj, err := b.s.read(b.ctx)
		if err != nil {
			return 0, err
		}
		b.cur = append(obj, '\n')
	}
	n := copy(p, b.cur)
	b.cur = b.cur[n:]
	return n, nil
}

// Carried reports whether a stream the server accepted carries the feed
// now.
func (b *feedBody) Carried() bool { return b.s.carriedAt.Load() != 0 }

func (b *feedBody) Close() error {
	b.stop()
	b.m.end(b.s, errWatcherClosed)
	return nil
}

// pokeLocked makes Run open the stream again with the watches now live.
func (m *WatchMux) pokeLocked() {
	if m.cancel != nil {
		m.cancel()
		m.cancel = nil
	}
	select {
	case m.changed <- struct{}{}:
	default:
	}
}

// end removes s: its Watcher returns err from then on. The stream goes
// on until the next change (events of s are then dropped): ending one
// watch is mostly followed by starting another.
func (m *WatchMux) end(s *muxSub, err error) {
	s.once.Do(func() {
		s.err = err
		close(s.done)
	})
	m.remove(s)
}

// remove takes s out of the watches the next stream carries.
func (m *WatchMux) remove(s *muxSub) {
	m.mu.Lock()
	for i, o := range m.subs {
		if o == s {
			m.subs = append(m.subs[:i], m.subs[i+1:]...)
			break
		}
	}
	m.mu.Unlock()
}

// read returns s's next event for its Watcher.
func (s *muxSub) read(ctx context.Context) (string, []byte, error) {
	select {
	case ev, ok := <-s.events:
		if !ok {
			return "", nil, io.EOF
		}
		return ev.typ, ev.object, nil
	case <-s.done:
		return "", nil, s.err
	case <-ctx.Done():
		return "", nil, ctx.Err()
	}
}

// Run holds the stream until ctx is done.
func (m *WatchMux) Run(ctx context.Context) {
	bo := backoff.Backoff{Clock: m.clk}
	for ctx.Err() == nil && !m.direct.Load() {
		m.mu.Lock()
		select {
		case <-m.changed: // this stream has every watch started so far
		default:
		}
		subs := append([]*muxSub(nil), m.subs...)
		sctx, cancel := context.WithCancel(ctx)
		m.cancel = cancel
		m.mu.Unlock()
		if len(subs) == 0 {
			cancel()
			select {
			case <-m.changed:
			case <-ctx.Done():
			}
			continue
		}
		progressed, err := m.stream(sctx, subs)
		poked := sctx.Err() != nil // a watch started, or ctx ended
		cancel()
		if progressed {
			bo.Reset()
		}
		switch {
		case ctx.Err() != nil:
			return
		case poked:
			continue // a watch started: open again at once
		case isStatus(err, http.StatusNotFound, http.StatusMethodNotAllowed):
			m.direct.Store(true)
			m.failAll(errMuxDirect)
			return
		case isClientRefusal(err):
			// The server refused the watches (400, 403): each loop
			// hears it and backs off on its own.
			m.failAll(err)
			continue
		}
		if !bo.BackOff(ctx, err) {
			return
		}
	}
}

// failAll ends every watch live with err.
func (m *WatchMux) failAll(err error) {
	m.mu.Lock()
	subs := append([]*muxSub(nil), m.subs...)
	m.mu.Unlock()
	for _, s := range subs {
		m.end(s, err)
	}
}

// isStatus reports whether err is a StatusError with one of codes.
func isStatus(err error, codes ...int32) bool {
	var se *api.StatusError
	if !errors.As(err, &se) {
		return false
	}
	for _, c := range codes {
		if se.Status.Code == c {
			return true
		}
	}
	return false
}

// isClientRefusal reports a 4xx answer other than 408 and 429, which
// a later try may not get.
func isClientRefusal(err error) bool {
	var se *api.StatusError
	return errors.As(err, &se) && se.Status.Code >= 400 && se.Status.Code < 500 &&
		se.Status.Code != http.StatusRequestTimeout && se.Status.Code != http.StatusTooManyRequests
}

// stream opens one stream for subs and hands its events out until it
// ends; it reports whether an event came.
func (m *WatchMux) stream(ctx context.Context, subs []*muxSub) (bool, error) {
	q := url.Values{}
	for _, s := range subs {
		if s.feedPath != "" {
			spec := s.feedPath
			if s.feedQuery != "" {
				spec += "?" + s.feedQuery
			}
			q.Add("watch", spec)
			continue
		}
		wq := s.opts.query()
		if s.rv != "" {
			wq.Set("resourceVersion", s.rv)
		}
		spec := collectionPath(s.res, s.ns)
		if len(wq) > 0 {
			spec += "?" + wq.Encode()
		}
		q.Add("watch", spec)
	}
	resp, err := m.c.send(ctx, request{method: http.MethodGet, path: WatchesPath, query: q})
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	at := m.clk.Now().UnixNano()
	for _, s := range subs {
		s.carriedAt.Store(at)
	}
	defer func() {
		for _, s := range subs {
			s.carriedAt.Store(0)
		}
	}()
	dec := newMuxDecoder(resp.Body)
	progressed := false
	for {
		i, rv, typ, obj, err := dec.next()
		if err != nil {
			return progressed, fmt.Errorf("watch stream: %w", err)
		}
		if i < 0 || i >= len(subs) {
			return progressed, fmt.Errorf("watch stream: event of watch %d of %d", i, len(subs))
		}
		progressed = true
		s := subs[i]
		ev := muxEvent{typ: typ, object: append([]byte(nil), obj...)}
		select {
		case s.events <- ev:
		case <-s.done:
			continue // ended here; the next stream leaves it out
		case <-ctx.Done():
			return progressed, ctx.Err()
		}
		if typ == api.Error {
			// The server ended this watch; its loop relists.
			close(s.events)
			m.remove(s)
			continue
		}
		switch {
		case s.feedPath != "" && typ == feedEvent:
			s.feedQuery = rv // the line's resume
		case rv != "":
			s.rv = rv
		}
	}
}

// feedEvent is the type of a feed's lines (apiserver.FeedEvent).
const feedEvent = "FEED"

// MuxedWatches is a ListWatcher whose lists go to its Client and whose
// watches ride its WatchMux.
type MuxedWatches struct {
	*Client
	Mux *WatchMux
}

// Watch implements ListWatcher.
func (m MuxedWatches) Watch(ctx context.Context, res api.ResourceInfo, ns string, opts WatchOptions) (*Watcher, error) {
	return m.Mux.Watch(ctx, res, ns, opts)
}

// Shared reports whether the server takes shared streams (until it
// answers one with 404 or 405).
func (m *WatchMux) Shared() bool { return !m.direct.Load() }

// Shared reports whether the Mux shares its stream (WatchMux.Shared).
func (m MuxedWatches) Shared() bool { return m.Mux.Shared() }

// OpenFeed opens a feed on the Mux (WatchMux.OpenFeed).
func (m MuxedWatches) OpenFeed(ctx context.Context, path string, query url.Values) (io.ReadCloser, error) {
	return m.Mux.OpenFeed(ctx, path, query)
}

var _ ListWatcher = MuxedWatches{}
