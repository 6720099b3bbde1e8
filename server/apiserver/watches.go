package apiserver

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/internal/clock"
	"github.com/skiffhq/skiff/storage"
)

// WatchesPath serves several watches on one stream (GET, one "watch"
// query parameter a watch): an agent's pods, Services and EndpointSlices
// travel together instead of on three HTTP/2 streams. Each stream costs
// the server a handler goroutine, a 4 KiB response buffer, a request and
// its context for the stream's life: at 10,000 agents, five streams an
// agent were most of the server's memory.
//
// Each parameter is the path and query of a watch as GET would take it
// (/api/v1/pods?fieldSelector=spec.nodeName%3Dn1&resourceVersion=42);
// each is checked and authorized as that request would be, and the first
// refused refuses the whole request, before anything is watched. Each
// line of the answer is a watch event with two more members:
//
//	{"watch":0,"resourceVersion":"43","type":"ADDED","object":{...}}
//
// watch is the index of the parameter, resourceVersion the event's
// revision (where that watch resumes). A watch that ends (410 for a
// compacted revision or a consumer too slow) sends its ERROR event and
// the others go on; the stream ends when the last one ended.
//
// A parameter may also name a Feed (Config.Feeds: the peer feed), with
// its own query. Its lines arrive as events of type FEED whose object is
// the feed's line, with the query a stream resuming after it gives:
//
//	{"watch":3,"resume":"since=43&hash=9f2c","type":"FEED","object":{...}}
const WatchesPath = "/api/v1/skiff/watches"

// FeedEvent is the type of a Feed's events on a shared stream.
const FeedEvent = "FEED"

// maxWatches bounds the watches and feeds of one stream: an agent needs
// four.
const maxWatches = 6

// A Feed is a stream other than a watch that a shared stream may carry.
type Feed interface {
	// StartFeed authorizes r for the feed and starts it from the query
	// q of the stream's parameter.
	StartFeed(r *http.Request, q url.Values) (FeedReader, error)
}

// FeedReader is one shared stream's place in a Feed. The stream asks
// Next at its start and whenever it wakes; when it ends, it closes the
// reader if the reader is an io.Closer.
type FeedReader interface {
	// Next returns the lines due now, each one JSON value; the query a
	// stream resuming after them gives; and a channel that is ready
	// (closed, or holding a token) once more may be due. It does not
	// wait.
	Next() (lines [][]byte, resume string, wake <-chan struct{})
}

// subWatch is one watch of a WatchesPath stream.
type subWatch struct {
	rt      route
	from    int64
	initial [][]byte
	w       *storage.Watcher
	enc     eventEncoder
	last    int64 // the revision of its last event or bookmark
	ended   bool
	failed  error // why the watch could not start (a compacted revision)

	feed FeedReader      // instead of w, for a Feed
	wake <-chan struct{} // the feed's: ready once more may be due
}

// ServeWatches answers GET WatchesPath. The caller authenticated r;
// each watch is authorized here, with the verb watch.
//
// An agent's stream lasts as long as its connection, and the handler's
// goroutine waits under every frame between it and the HTTP/2 server.
// The goroutine keeps the stack its deepest moment needed (rendering,
// the store) until a collection finds it using under a quarter, so the
// frames it waits under are kept small: the work is in methods of
// watchStream, each returning before the wait (at 10,000 agents, a
// 16 KiB stack where 8 KiB does was 80 MB).
func (s *Server) ServeWatches(w http.ResponseWriter, r *http.Request) {
	st := s.startWatches(w, r)
	if st == nil {
		return
	}
	defer st.close()
	st.run()
}

// watchStream is one WatchesPath stream's state.
type watchStream struct {
	s         *Server
	w         http.ResponseWriter
	r         *http.Request
	rc        *http.ResponseController
	subs      []*subWatch
	deadline  watchDeadline
	head      []byte
	beat      clock.Ticker
	conn      *ConnActivity
	seen      uint64
	ticks     int
	marked    int64
	prevTick  int64 // the store's revision at the last heartbeat (bookmarkDue)
	unflushed int   // bytes written since the last flush (write)
	endNoted  bool  // its end is counted (noteEnd)
}

// startWatches starts r's watches, or answers its error and returns nil.
//
//go:noinline
func (s *Server) startWatches(w http.ResponseWriter, r *http.Request) *watchStream {
	if r.Method != http.MethodGet {
		s.methodNotAllowed(w, r)
		return nil
	}
	specs := r.URL.Query()["watch"]
	if len(specs) == 0 || len(specs) > maxWatches {
		writeStatus(w, api.NewBadRequest("watch: give 1 to %d watches, not %d", maxWatches, len(specs)))
		return nil
	}
	st := &watchStream{s: s, w: w, r: r, subs: make([]*subWatch, 0, len(specs))}
	for i, spec := range specs {
		sw, err := s.subWatch(r, i, spec)
		if err != nil {
			st.stop()
			s.writeError(w, r, err, nil, "")
			return nil
		}
		st.subs = append(st.subs, sw)
	}
	s.sharedStreams.Add(1)
	s.watches.Add(int64(len(st.subs)))
	st.rc = http.NewResponseController(w)
	st.deadline = watchDeadline{heartbeat: s.heartbeat}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	return st
}

// stop ends the watches and closes the feeds.
func (st *watchStream) stop() {
	for _, sw := range st.subs {
		if sw.w != nil {
			sw.w.Stop()
		}
		if c, ok := sw.feed.(io.Closer); ok {
			c.Close()
		}
	}
}

//go:noinline
func (st *watchStream) close() {
	st.stop()
	st.s.sharedStreams.Add(-1)
	st.s.watches.Add(-int64(len(st.subs)))
	if st.beat != nil {
		st.beat.Stop()
	}
}

// The reasons wait returns.
const (
	wokeReady = iota // a watch or feed may have more
	wokeBeat         // the heartbeat ticked
	wokeDone         // the request ended
)

func (st *watchStream) run() {
	if !st.sendInitial() || st.flush() != nil {
		st.noteEnd(st.whyEnded())
		return
	}
	st.beat = st.s.clock.NewTicker(st.s.heartbeat)
	st.conn = connActivityOf(st.r.Context())
	st.seen, st.marked = st.conn.load(), st.s.store.Revision()
	st.prevTick = st.marked
	for {
		n, live, ok := st.pump()
		switch {
		case !ok:
			st.noteEnd(st.whyEnded())
			return
		case n > 0:
			if st.flush() != nil {
				st.noteEnd(st.whyEnded())
				return
			}
			st.conn.note()
			continue // until every watch has nothing ready
		case live == 0:
			st.noteEnd(endDone)
			return
		}
		switch st.wait() {
		case wokeBeat:
			if !st.keepAlive() {
				st.noteEnd(st.whyEnded())
				return
			}
		case wokeDone:
			st.noteEnd(st.whyEnded())
			return
		}
	}
}

// wait waits for a watch or feed that may have more (a watch that ended
// is ready too: storage.Watcher), the heartbeat, or the request's end.
//
//go:noinline
func (st *watchStream) wait() int {
	var ready [maxWatches]<-chan struct{}
	for i, sw := range st.subs {
		switch {
		case sw.ended:
		case sw.feed != nil:
			ready[i] = sw.wake
		default:
			ready[i] = sw.w.Ready()
		}
	}
	select {
	case <-ready[0]:
	case <-ready[1]:
	case <-ready[2]:
	case <-ready[3]:
	case <-ready[4]:
	case <-ready[5]:
	case <-st.beat.C():
		return wokeBeat
	case <-st.r.Context().Done():
		return wokeDone
	}
	return wokeReady
}

// send writes watch i's event line (one of the encoder's lines) with
// the two members in front.
func (st *watchStream) send(i int, rev int64, line []byte) bool {
	if at, renew := st.deadline.renew(time.Now()); renew {
		st.rc.SetWriteDeadline(at)
	}
	head := append(st.head[:0], `{"watch":`...)
	head = strconv.AppendInt(head, int64(i), 10)
	if rev > 0 {
		head = append(head, `,"resourceVersion":"`...)
		head = strconv.AppendInt(head, rev, 10)
		head = append(head, '"')
	}
	head = append(head, ',')
	st.head = head
	return st.write(head) && st.write(line[1:]) // the line without its '{'
}

var closeFeedEvent = []byte("}\n")

// sendFeed writes the lines of feed i, each with its resume query.
func (st *watchStream) sendFeed(i int, lines [][]byte, resume string) bool {
	for _, l := range lines {
		if at, renew := st.deadline.renew(time.Now()); renew {
			st.rc.SetWriteDeadline(at)
		}
		head := append(st.head[:0], `{"watch":`...)
		head = strconv.AppendInt(head, int64(i), 10)
		head = append(head, `,"resume":`...)
		head = strconv.AppendQuote(head, resume)
		head = append(head, `,"type":"`+FeedEvent+`","object":`...)
		st.head = head
		if !st.write(head) || !st.write(bytes.TrimRight(l, "\n")) || !st.write(closeFeedEvent) {
			return false
		}
	}
	return true
}

// end sends watch i's ERROR event and stops it. A watch that ended
// without an error (the store closing) ends the stream.
func (st *watchStream) end(i int, err error) bool {
	sw := st.subs[i]
	sw.ended = true
	sw.w.Stop()
	st.s.noteWatchError(err)
	return err != nil && st.send(i, 0, errorEvent(err))
}

// sendInitial sends each watch's current objects (or its ERROR, when it
// could not start).
//
//go:noinline
func (st *watchStream) sendInitial() bool {
	for i, sw := range st.subs {
		if sw.feed != nil {
			continue
		}
		if sw.w == nil {
			// The watch could not start (a compacted revision): its
			// ERROR, and the others go on.
			sw.ended = true
			st.s.noteWatchError(sw.failed)
			if !st.send(i, 0, errorEvent(sw.failed)) {
				return false
			}
			continue
		}
		if sw.initial == nil {
			continue
		}
		// The current objects carry no revision (a stream cut among
		// them must list again); the BOOKMARK after them does.
		for _, it := range sw.initial {
			if !st.send(i, 0, sw.enc.render(api.Added, it)) {
				return false
			}
			sw.enc.release()
		}
		sw.initial = nil
		if !st.send(i, sw.from, sw.enc.bookmark(sw.from)) {
			return false
		}
	}
	return true
}

// pump sends what each watch and feed has ready, up to maxBurst events
// a watch: n is how many it sent, live how many watches go on, and ok
// false when the stream must end.
//
//go:noinline
func (st *watchStream) pump() (n, live int, ok bool) {
	for i, sw := range st.subs {
		if sw.ended {
			continue
		}
		if sw.feed != nil {
			// Asked each turn: a feed's wake may be a token the
			// wait took.
			live++
			lines, resume, wake := sw.feed.Next()
			if !st.sendFeed(i, lines, resume) {
				return n, live, false
			}
			sw.wake = wake
			n += len(lines)
			continue
		}
		for k := 0; k < maxBurst; k++ {
			ev, ok := sw.w.Next()
			if !ok {
				break
			}
			if !st.send(i, ev.Revision, sw.enc.render(ev.Type.String(), ev.Value)) {
				return n, live, false
			}
			sw.enc.release()
			sw.last = ev.Revision
			n++
		}
		select {
		case <-sw.w.Done():
			// An ended watch has nothing more.
			if st.r.Context().Err() != nil || !st.end(i, sw.w.Err()) {
				return n, live, false
			}
			n++
			continue
		default:
		}
		live++
	}
	return n, live, true
}

// keepAlive sends each watch's BOOKMARK, unless the connection was
// heard from lately (skipKeepAlive).
//
//go:noinline
func (st *watchStream) keepAlive() bool {
	s := st.s
	st.ticks++
	rev := s.store.Revision()
	due := bookmarkDue(st.ticks, rev, st.marked, st.prevTick)
	st.prevTick = rev
	if s.skipKeepAlive(st.conn, &st.seen, due, &st.deadline, st.rc) {
		return true
	}
	st.marked = rev
	for i, sw := range st.subs {
		if sw.ended || sw.feed != nil {
			continue
		}
		sw.last = max(sw.last, sw.w.Progress())
		if !st.send(i, sw.last, sw.enc.bookmark(sw.last)) {
			return false
		}
	}
	if st.flush() != nil {
		return false
	}
	st.conn.note()
	st.seen, st.ticks = st.conn.load(), 0
	s.keepAlives.Add(1)
	return true
}

// subWatch checks, authorizes and starts watch i of a WatchesPath
// request: spec is the path and query of the watch. A revision too old
// to watch from is not an error here: the watch's ERROR event says so.
func (s *Server) subWatch(r *http.Request, i int, spec string) (*subWatch, error) {
	u, err := url.Parse(spec)
	if err != nil || u.Scheme != "" || u.Host != "" || u.Fragment != "" {
		return nil, api.NewBadRequest("watch[%d]: %q is not the path and query of a watch", i, spec)
	}
	if f, ok := s.feeds[u.Path]; ok {
		sr := new(http.Request)
		*sr = *r
		sr.URL = u
		sr.RequestURI = u.RequestURI()
		fr, err := f.StartFeed(sr, u.Query())
		if err != nil {
			return nil, err
		}
		return &subWatch{feed: fr}, nil
	}
	group, version, rest, ok := splitAPIPath(u.Path)
	if !ok {
		return nil, api.NewBadRequest("watch[%d]: %q is not a resource path", i, u.Path)
	}
	rt, err := s.parseRoute(group, version, rest)
	if err != nil {
		return nil, api.NewBadRequest("watch[%d]: %q is not a resource path", i, u.Path)
	}
	if rt.name != "" || rt.sub != "" {
		return nil, api.NewBadRequest("watch[%d]: %q is not a collection", i, u.Path)
	}
	// The watch is authorized as its own GET would be.
	sr := new(http.Request)
	*sr = *r
	sr.URL = u
	sr.RequestURI = u.RequestURI()
	if s.authz != nil {
		a := attributes(sr, rt)
		a.Verb = VerbWatch
		if err := s.authz(sr, a); err != nil {
			return nil, err
		}
	}
	opts, err := s.listOptions(sr, rt)
	if err != nil {
		return nil, err
	}
	sw := &subWatch{rt: rt, enc: eventEncoder{res: rt.res, now: s.clock.Now}}
	switch rv := u.Query().Get("resourceVersion"); rv {
	case "", "0":
		items, rev, err := s.store.ListRaw(r.Context(), rt.res.Resource, opts)
		if err != nil {
			return nil, err
		}
		sw.initial, sw.from = items, rev
	default:
		sw.from, err = strconv.ParseInt(rv, 10, 64)
		if err != nil || sw.from < 0 {
			return nil, api.NewBadRequest("watch[%d]: resourceVersion must be a non-negative integer, not %q", i, rv)
		}
	}
	sw.last = sw.from
	sw.w, err = s.store.Watch(r.Context(), rt.res.Resource, storage.WatchOptions{
		Namespace: opts.Namespace, Revision: sw.from, Labels: opts.Labels, Fields: opts.Fields,
	})
	if err != nil {
		if errors.Is(err, storage.ErrCompacted) {
			sw.w, sw.failed = nil, err
			return sw, nil
		}
		return nil, err
	}
	return sw, nil
}

// frameCap is the most the stream hands HTTP/2 between two flushes, so
// the most one DATA frame of it carries. net/http's HTTP/2 framer keeps
// a write buffer as large as the largest frame the connection ever sent,
// for the connection's life, and a write that fills the response's
// 4 KiB buffer is sent as a 4 KiB frame: a fleet's join (the peer
// feed's batches, several events in one turn) left 4,864 bytes on every
// agent's connection, 11 MB at 2,000 agents (heap profile, round forty).
// The agent's own requests (its Node's writes, its pods' status) get
// answers of about 1.4-1.7 KB, so their frames stay in the buffer's
// 1,792-byte size class with the stream's; a larger write, such as the
// whole peer set's line on a first connection, is sent a frame of
// frameCap at a time.
const frameCap = 1536

// write hands p to the response, flushing whenever frameCap bytes are
// waiting. ok is false when the stream must end.
func (st *watchStream) write(p []byte) bool {
	for len(p) > 0 {
		if st.unflushed >= frameCap {
			if st.flush() != nil {
				return false
			}
		}
		n := min(frameCap-st.unflushed, len(p))
		if _, err := st.w.Write(p[:n]); err != nil {
			return false
		}
		st.unflushed += n
		p = p[n:]
	}
	return true
}

// flush sends what the stream has written.
func (st *watchStream) flush() error {
	st.unflushed = 0
	return st.rc.Flush()
}
