package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/skiffhq/skiff/api"
)

// WatchOptions narrows a Watch. ResourceVersion "" starts with the current
// state (an ADDED event per existing object, as Kubernetes does); a
// version from List or Watcher.ResourceVersion resumes just after it.
type WatchOptions struct {
	ListOptions
	ResourceVersion string
}

// ListWatcher lists and watches: what an informer-like loop needs of the
// server. *Client is one; tests wrap it to count or fail calls.
type ListWatcher interface {
	List(ctx context.Context, res api.ResourceInfo, ns string, opts ListOptions) ([]api.Object, string, error)
	Watch(ctx context.Context, res api.ResourceInfo, ns string, opts WatchOptions) (*Watcher, error)
}

var _ ListWatcher = (*Client)(nil)

// Watch opens a watch stream of res in ns (NamespaceAll for every
// namespace). It returns once the server has answered: an error answer
// (403, 410, ...) is returned here as *api.StatusError. The stream lives
// until ctx is done, the server ends it, or Close is called; the client
// timeout does not apply to it.
func (c *Client) Watch(ctx context.Context, res api.ResourceInfo, ns string, opts WatchOptions) (*Watcher, error) {
	if err := checkResource(res); err != nil {
		return nil, err
	}
	q := opts.query()
	q.Set("watch", "true")
	q.Set("allowWatchBookmarks", "true")
	if opts.ResourceVersion != "" {
		q.Set("resourceVersion", opts.ResourceVersion)
	}
	resp, err := c.send(ctx, request{method: http.MethodGet, path: collectionPath(res, ns), query: q})
	if err != nil {
		return nil, err
	}
	return newWatcher(ctx, res, resp.Body, opts.ResourceVersion), nil
}

// Watcher reads the events of one watch stream. It is not safe for
// concurrent use: one goroutine calls Next until it returns an error, then
// Close. It holds the ctx given to Watch for the stream's lifetime.
type Watcher struct {
	ctx  context.Context
	res  api.ResourceInfo
	body io.ReadCloser
	dec  streamDecoder
	obj  []byte // the last event's object, reused
	rv   string
	err  error // sticky: once set, Next returns it

	// A watch on a WatchMux reads its events from feed, not body.
	feed      *muxSub
	closeFeed func()
}

func newWatcher(ctx context.Context, res api.ResourceInfo, body io.ReadCloser, rv string) *Watcher {
	w := &Watcher{ctx: ctx, res: res, body: body, rv: rv}
	if body != nil {
		w.dec = newStreamDecoder(body)
	}
	return w
}

// CarriedSince reports, for a watch on a WatchMux, when the stream that
// carries it now was accepted by the server (on the mux's clock), and
// false while no stream carries it (the mux is opening one again). A
// watch on a stream of its own was accepted before Watch returned: it
// reports the zero time and true. An agent heard from the server again
// after a silence asks it whether its watch already rides a stream
// opened since (then nothing was missed that resuming would not replay).
func (w *Watcher) CarriedSince() (time.Time, bool) {
	if w.feed == nil {
		return time.Time{}, true
	}
	at := w.feed.carriedAt.Load()
	if at == 0 {
		return time.Time{}, false
	}
	return time.Unix(0, at), true
}

// maxKeptEventBytes is the largest object buffer a Watcher keeps for the
// next event: an agent's pods fit many times over.
const maxKeptEventBytes = 64 << 10

// watchJSON are the stream decoder's options: the server writes each
// event's names once, in UTF-8, and the object is checked when decoded.
var watchJSON = []jsontext.Options{jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true)}

// Next blocks for the next ADDED, MODIFIED or DELETED event; its Object is
// a typed api.Object (*api.Pod, ...). BOOKMARK events are consumed here:
// they only advance ResourceVersion. An ERROR event is returned as its
// *api.StatusError (IsGone(err) means: relist, then watch again). When the
// server ends the stream Next returns io.EOF; when ctx is done, ctx.Err().
// After any error Next keeps returning it.
func (w *Watcher) Next() (api.WatchEvent, error) {
	if w.err != nil {
		return api.WatchEvent{}, w.err
	}
	ev, err := w.next()
	if err != nil {
		w.err = err
	}
	return ev, err
}

func (w *Watcher) next() (api.WatchEvent, error) {
	for {
		typ, object, err := w.readEvent()
		if err != nil {
			if ctxErr := w.ctx.Err(); ctxErr != nil {
				return api.WatchEvent{}, ctxErr
			}
			if errors.Is(err, io.EOF) {
				return api.WatchEvent{}, io.EOF
			}
			return api.WatchEvent{}, fmt.Errorf("watch %s: read stream: %w", w.res.Resource, err)
		}
		switch typ {
		case api.Added, api.Modified, api.Deleted, api.Bookmark:
			obj, err := decodeObject(w.res, object, "watch "+w.res.Resource)
			if err != nil {
				return api.WatchEvent{}, err
			}
			if rv := obj.GetObjectMeta().ResourceVersion; rv != "" {
				w.rv = rv
			}
			if typ == api.Bookmark {
				continue
			}
			return api.WatchEvent{Type: typ, Object: obj}, nil
		case api.Error:
			var st api.Status
			if err := json.Unmarshal(object, &st); err != nil {
				return api.WatchEvent{}, fmt.Errorf("watch %s: decode ERROR event: %w", w.res.Resource, err)
			}
			return api.WatchEvent{}, statusError(st, http.StatusInternalServerError)
		default:
			return api.WatchEvent{}, fmt.Errorf("watch %s: unknown event type %q", w.res.Resource, typ)
		}
	}
}

// readEvent reads the next {"type": ..., "object": ...} value of the
// stream in one pass over its bytes (encoding/json's Decoder scanned each
// event twice before the object was decoded: a third of what an agent's
// watch cost it). object is valid until the next call; the end of the
// stream between two events is io.EOF.
func (w *Watcher) readEvent() (typ string, object []byte, err error) {
	if w.feed != nil {
		return w.feed.read(w.ctx)
	}
	d := w.dec.dec
	tok, err := d.ReadToken()
	if err != nil {
		return "", nil, err
	}
	if tok.Kind() != '{' {
		return "", nil, fmt.Errorf("event at offset %d is not an object", d.InputOffset())
	}
	w.obj = w.obj[:0]
	seen := false
	for d.PeekKind() != '}' {
		name, err := d.ReadToken()
		if err != nil {
			return "", nil, err
		}
		switch name.String() {
		case "type":
			v, err := d.ReadToken()
			if err != nil {
				return "", nil, err
			}
			if v.Kind() != '"' {
				return "", nil, fmt.Errorf("event at offset %d: type is not a string", d.InputOffset())
			}
			typ = v.String()
		case "object":
			v, err := d.ReadValue()
			if err != nil {
				return "", nil, err
			}
			// v is the decoder's buffer, overwritten by the next read.
			w.obj, seen = append(w.obj, v...), true
		default:
			if err := d.SkipValue(); err != nil {
				return "", nil, err
			}
		}
	}
	if _, err := d.ReadToken(); err != nil { // '}'
		return "", nil, err
	}
	if !seen {
		return typ, nil, nil // decoding nothing is the caller's error
	}
	object = w.obj
	if cap(object) > maxKeptEventBytes {
		// One large object is not kept for the stream's life, nor the
		// decoder's buffer that held it whole; the caller has it until
		// the next call.
		w.obj = nil
		w.dec.renew()
	}
	return typ, object, nil
}

// ResourceVersion returns the version of the last object or bookmark the
// stream delivered (or the version Watch started from): a new Watch from
// it misses nothing, unless it has been compacted (IsGone).
func (w *Watcher) ResourceVersion() string { return w.rv }

// Close ends the stream. It may be called more than once.
func (w *Watcher) Close() error {
	if w.err == nil {
		w.err = errWatcherClosed
	}
	if w.feed != nil {
		w.closeFeed()
		return nil
	}
	return w.body.Close()
}

// errWatcherClosed is what Next returns after Close.
var errWatcherClosed = errors.New("watcher closed")

// ListThenWatch is one turn of an informer's loop, as client-go's
// reflector takes it: list when rv is "" (list returns the list's
// version), then watch from rv until the watch ends (watch returns the
// last version it saw and how many events came). It returns where to
// resume, whether it listed, whether it made progress (a list that
// worked or an event) and why the turn ended. The caller backs off,
// keeps rv to resume after a failure, and sets it to "" to list again
// (on 410 Gone: IsGone).
func ListThenWatch(ctx context.Context, rv string, list func(context.Context) (string, error),
	watch func(ctx context.Context, rv string) (string, int, error)) (next string, listed, progressed bool, err error) {
	listed = rv == ""
	if listed {
		if rv, err = list(ctx); err != nil {
			return "", true, false, err
		}
		progressed = true
	}
	rv, n, err := watch(ctx, rv)
	return rv, listed, progressed || n > 0, err
}
