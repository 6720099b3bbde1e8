package apiserver

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/storage"
)

// defaultHeartbeat is how often an idle watch stream is written to: a
// BOOKMARK keeps the client's resume point recent, and the connection is
// never silent for as long as api/client's HTTP/2 health check waits
// (15 s) before it pings, so a healthy idle stream costs no pings. A
// stream whose connection was written to since its last heartbeat (the
// answers to an agent's own heartbeats, ConnActivity) skips it, and
// sends its progress only every bookmarkTicks heartbeats.
const defaultHeartbeat = 10 * time.Second

// bookmarkTicks is how many heartbeats a stream on a busy connection goes
// without a BOOKMARK: once a minute, as kube-apiserver sends them, so a
// client resumes from a revision at most a minute old.
const bookmarkTicks = 6

// bookmarkLag is how far the store's revision may move past a stream's
// last BOOKMARK before the next heartbeat sends one even on a busy
// connection: a quarter of the store's watch cache (the last 4,096
// changes), so that an agent resuming after a restart that follows a
// burst (a Deployment's pods, the pods after a restart) still finds its
// revision in the cache rather than being answered 410 and relisting. At
// a fleet's steady pace (10,000 agents, about 35 changes a second) that
// is every half minute; during a burst, every heartbeat, unless the burst
// turns the whole cache over between two (bookmarkDue).
const bookmarkLag = storage.DefaultWatchCacheSize / 4

// bookmarkDue says whether a heartbeat sends a BOOKMARK on a connection
// that was heard from (skipKeepAlive): every bookmarkTicks heartbeats
// (ticks), or once the store's revision (rev) has moved bookmarkLag past
// the last one (marked), unless it moved a whole watch cache since the
// previous heartbeat (prevTick). Then the cache drops revisions faster
// than heartbeats come, and the BOOKMARK would be out of it before a
// client could resume from it: in a fleet's placement that was 10,000
// streams' BOOKMARKs every heartbeat for nothing. The first heartbeat
// after the burst sends it.
func bookmarkDue(ticks int, rev, marked, prevTick int64) bool {
	return ticks >= bookmarkTicks || rev-marked >= bookmarkLag && rev-prevTick < storage.DefaultWatchCacheSize
}

// writeTimeout is how long a watch stream's write may wait; a client that
// stops reading is dropped within writeTimeout plus three heartbeats (see
// watchDeadline).
const writeTimeout = 10 * time.Second

// watchDeadline renews a stream's write deadline only when it would not
// cover this write's writeTimeout after the next keep-alive, and then two
// heartbeats further (an idle stream renews on every other one): on
// HTTP/2 each renewal is a message to the connection's goroutine and a
// timer reset, and a deadline that passes resets the stream even when
// nothing is being written. Renewing on every write was 5.7 % of a
// 10,000-agent server's steady CPU.
type watchDeadline struct {
	at        time.Time
	heartbeat time.Duration
}

// renew returns the deadline to set before a write at now, and false
// when the current one is still far enough.
func (d *watchDeadline) renew(now time.Time) (time.Time, bool) {
	if d.at.Sub(now) >= writeTimeout+d.heartbeat {
		return d.at, false
	}
	d.at = now.Add(writeTimeout + 3*d.heartbeat)
	return d.at, true
}

// watch streams newline-delimited watch events. Without a resourceVersion
// (or with "0") it first sends the current objects as ADDED, as Kubernetes
// does; with one it resumes after it. A compacted revision, or a watcher
// cut off for being too slow, ends the stream with an ERROR event carrying
// a 410 Status so the client relists.
//
// When the Accept header asks for Tables (kubectl get -w), each event's
// object is a one-row Table; as kube-apiserver does, only the first
// carries columnDefinitions. ERROR events keep their Status.
func (s *Server) watch(w http.ResponseWriter, r *http.Request, rt route) {
	q := r.URL.Query()
	rd, err := negotiate(r)
	if err != nil {
		s.writeError(w, r, err, rt.res, "")
		return
	}
	opts, err := s.listOptions(r, rt)
	if err != nil {
		s.writeError(w, r, err, rt.res, "")
		return
	}
	var from int64
	var initial [][]byte
	switch rv := q.Get("resourceVersion"); rv {
	case "", "0":
		items, rev, err := s.store.ListRaw(r.Context(), rt.res.Resource, opts)
		if err != nil {
			s.writeError(w, r, err, rt.res, "")
			return
		}
		initial, from = items, rev
	default:
		from, err = strconv.ParseInt(rv, 10, 64)
		if err != nil || from < 0 {
			writeStatus(w, api.NewBadRequest("resourceVersion must be a non-negative integer, not %q", rv))
			return
		}
	}
	var timeout <-chan time.Time
	if ts := q.Get("timeoutSeconds"); ts != "" {
		n, err := strconv.ParseInt(ts, 10, 64)
		if err != nil || n < 0 {
			writeStatus(w, api.NewBadRequest("timeoutSeconds must be a non-negative integer, not %q", ts))
			return
		}
		if n > 0 {
			t := s.clock.NewTimer(watchTimeout(n))
			defer t.Stop()
			timeout = t.C()
		}
	}
	bookmarks := isTrue(q.Get("allowWatchBookmarks"))

	watcher, err := s.store.Watch(r.Context(), rt.res.Resource, storage.WatchOptions{
		Namespace: opts.Namespace, Revision: from, Labels: opts.Labels, Fields: opts.Fields,
	})
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	deadline := watchDeadline{heartbeat: s.heartbeat}
	send := func(b []byte) bool {
		if at, renew := deadline.renew(time.Now()); renew {
			rc.SetWriteDeadline(at)
		}
		if _, err := w.Write(b); err != nil {
			return false
		}
		return true
	}
	if err != nil {
		send(errorEvent(err))
		rc.Flush()
		return
	}
	defer watcher.Stop()
	s.singleStreams.Add(1)
	s.watches.Add(1)
	defer func() { s.singleStreams.Add(-1); s.watches.Add(-1) }()
	enc := eventEncoder{res: rt.res, rd: rd, now: s.clock.Now}
	// sendEvent writes one event; a stored object that cannot be rendered
	// ends the stream with an ERROR event.
	sendEvent := func(typ string, raw []byte) bool {
		b, err := enc.line(typ, raw)
		if err != nil {
			s.log.LogAttrs(r.Context(), slog.LevelError, "watch: render event", slog.String("path", r.URL.Path), slog.Any("err", err))
			send(errorEvent(err))
			rc.Flush()
			return false
		}
		ok := send(b)
		enc.release()
		return ok
	}
	for _, it := range initial {
		if !sendEvent(api.Added, it) {
			return
		}
	}
	if rc.Flush() != nil {
		return
	}
	beat := s.clock.NewTicker(s.heartbeat)
	defer beat.Stop()
	last := from
	// conn counts what the connection was sent; seen is its count when
	// this stream last looked, ticks the heartbeats since it last wrote
	// a keep-alive. Without a ConnActivity every heartbeat writes.
	conn := connActivityOf(r.Context())
	seen, ticks, marked := conn.load(), 0, from
	prevTick := s.store.Revision() // the store's revision at the last heartbeat (bookmarkDue)
	for {
		// Pull what is ready (no goroutine of the watcher's forwards
		// it), write it, and flush once the burst is written.
		n := 0
		for n < maxBurst {
			ev, ok := watcher.Next()
			if !ok {
				break
			}
			if !sendEvent(ev.Type.String(), ev.Value) {
				return
			}
			last = ev.Revision
			n++
		}
		if n > 0 {
			if rc.Flush() != nil {
				return
			}
			conn.note()
		}
		if n == maxBurst {
			continue
		}
		select {
		case <-watcher.Done():
			// Next returned nothing: an ended watch has nothing more.
			if err := watcher.Err(); err != nil {
				send(errorEvent(err))
				rc.Flush()
			}
			return
		default:
		}
		select {
		case <-watcher.Ready():
		case <-watcher.Done():
		case <-beat.C():
			ticks++
			rev := s.store.Revision()
			due := bookmarks && bookmarkDue(ticks, rev, marked, prevTick)
			prevTick = rev
			if s.skipKeepAlive(conn, &seen, due, &deadline, rc) {
				continue
			}
			var b []byte
			if bookmarks {
				// The watch's progress when it has nothing pending, so a
				// client resumes from a recent revision.
				last = max(last, watcher.Progress())
				b, marked = enc.bookmark(last), last
			} else {
				b = []byte("\n")
			}
			if !send(b) || rc.Flush() != nil {
				return
			}
			conn.note()
			seen, ticks = conn.load(), 0
			s.keepAlives.Add(1)
		case <-timeout:
			return
		case <-r.Context().Done():
			return
		}
	}
}

// skipKeepAlive reports whether a heartbeat may go without a
// keep-alive: nothing is due and the client heard from the connection
// since the stream last looked (seen). The write deadline is kept ahead
// all the same, as a write would (an HTTP/2 stream's deadline resets it
// when it passes).
func (s *Server) skipKeepAlive(conn *ConnActivity, seen *uint64, due bool, deadline *watchDeadline, rc *http.ResponseController) bool {
	cur := conn.load()
	if conn == nil || cur == *seen || due {
		return false
	}
	*seen = cur
	s.keepAlivesSkipped.Add(1)
	if at, renew := deadline.renew(time.Now()); renew {
		rc.SetWriteDeadline(at)
	}
	return true
}

// maxBurst is the most events a watch stream writes between flushes (and
// between looks at its heartbeat and timeout).
const maxBurst = 256

// eventEncoder renders a watch stream's events as the request asked:
// stored JSON as it is, or one-row Tables. It is used by one stream's
// goroutine only.
type eventEncoder struct {
	res  *api.ResourceInfo
	rd   rendering
	now  func() time.Time
	sent bool    // a Table with columnDefinitions has gone out
	buf  []byte  // the last bookmark, reused
	head int     // length of buf's part before the revision; 0 until built
	held *[]byte // the last event's buffer, from lineBufs until release
}

// line renders one event of type typ about the stored object raw.
func (e *eventEncoder) line(typ string, raw []byte) ([]byte, error) {
	if !e.rd.table {
		return e.render(typ, raw), nil
	}
	t, err := tableOne(e.res, raw, e.now(), e.rd, !e.sent)
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(t)
	if err != nil {
		return nil, fmt.Errorf("encode %s table: %w", e.res.Resource, err)
	}
	e.sent = true
	return e.render(typ, b), nil
}

// render builds the line of an event in a buffer from lineBufs, which
// the stream gives back with release once the line is written.
func (e *eventEncoder) render(typ string, obj []byte) []byte {
	bp := lineBufs.Get().(*[]byte)
	*bp = appendEventLine((*bp)[:0], typ, obj)
	e.held = bp
	return *bp
}

// lineBufs holds the buffers events are rendered into. A stream writes
// an event (the write copies it) and gives its buffer back at once, so a
// few buffers serve every stream: a fleet's placement sends 10,000
// agents their pods, and a buffer an event was 6 % of the server's
// allocations.
var lineBufs = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

// maxPooledLine bounds the buffers kept: one huge object's event does
// not pin its size.
const maxPooledLine = 64 << 10

// release gives back the buffer of the last line once it is written.
func (e *eventEncoder) release() {
	if e.held != nil && cap(*e.held) <= maxPooledLine {
		lineBufs.Put(e.held)
	}
	e.held = nil
}

// bookmark renders a BOOKMARK at revision rev: the kind with only its
// resourceVersion, or in a Table stream a Table without rows (so a
// table client can decode it; it does not use up the column headers).
func (e *eventEncoder) bookmark(rev int64) []byte {
	if !e.rd.table {
		// Every idle stream writes one every few seconds: built in the
		// stream's own buffer (the write copies it), whose head, the
		// part before the revision, is made once.
		if e.head == 0 {
			e.buf = append(e.buf[:0], `{"type":"BOOKMARK","object":{"kind":"`+e.res.Kind+
				`","apiVersion":"`+e.res.GroupVersion()+`","metadata":{"resourceVersion":"`...)
			e.head = len(e.buf)
		}
		e.buf = strconv.AppendInt(e.buf[:e.head], rev, 10)
		e.buf = append(e.buf, "\"}}}\n"...)
		return e.buf
	}
	return []byte(`{"type":"BOOKMARK","object":{"kind":"Table","apiVersion":"` + e.rd.apiVersion +
		`","metadata":{"resourceVersion":"` + strconv.FormatInt(rev, 10) + `"},"columnDefinitions":null,"rows":[]}}` + "\n")
}

// appendEventLine appends the watch event of type typ about the stored
// object obj, one line of JSON.
func appendEventLine(b []byte, typ string, obj []byte) []byte {
	b = append(b, `{"type":"`...)
	b = append(b, typ...)
	b = append(b, `","object":`...)
	b = append(b, obj...)
	return append(b, "}\n"...)
}

// errorEvent renders the ERROR event that ends a stream: 410 Gone for a
// compacted revision or a too-slow watcher, 500 otherwise.
func errorEvent(err error) []byte {
	var st *api.StatusError
	switch {
	case errors.Is(err, storage.ErrCompacted), errors.Is(err, storage.ErrTooSlow):
		st = api.NewGone("too old resource version: %v", err)
		st.Status.Reason = api.StatusReasonExpired
	default:
		st = toStatus(err, nil, "")
	}
	return append(mustJSON(api.WatchEvent{Type: api.Error, Object: &st.Status}), '\n')
}

// watchTimeout converts timeoutSeconds to a duration, saturating where
// the product would overflow (beyond about 292 years) rather than wrapping
// to a negative duration that would end the watch at once. It takes an
// int64 so that 32-bit platforms accept the same values as 64-bit ones.
func watchTimeout(seconds int64) time.Duration {
	if seconds > math.MaxInt64/int64(time.Second) {
		return math.MaxInt64
	}
	return time.Duration(seconds) * time.Second
}
