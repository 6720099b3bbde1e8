package peers

import (
	"bytes"
	"net/url"
	"strconv"
)

// Reader is one stream's place in the feed when the stream carries the
// feed among an agent's watches (apiserver.WatchesPath): Next hands out
// what is due without waiting, and says where a stream resuming after
// it starts. It is used by one goroutine.
type Reader struct {
	f       *Feed
	started bool
	since   int64 // -1: none
	hash    string
	pos     int64 // the revision the lines handed out bring the set to
	sum     string
}

// NewReader starts a Reader as ServeHTTP starts a stream: since is the
// caller's revision (-1 for none) and hash its set's hash ("" for none).
func (f *Feed) NewReader(since int64, hash string) *Reader {
	return &Reader{f: f, since: since, hash: hash, pos: since, sum: hash}
}

// Next returns the batches due (each one JSON line, without its
// newline), the query a stream resuming after them gives (since and
// hash), and a channel closed once more may be due.
func (r *Reader) Next() ([][]byte, string, <-chan struct{}) {
	f := r.f
	select {
	case <-f.ready:
	default:
		return nil, "", f.ready
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	var lines [][]byte
	var wake chan struct{}
	if !r.started {
		r.started = true
		lines, r.pos, wake = f.startLocked(r.since, r.hash)
	} else {
		lines, r.pos, wake = f.afterLocked(r.pos)
	}
	if len(lines) > 0 {
		// The set's hash at r.pos: the last line's.
		last := lines[len(lines)-1]
		switch {
		case f.full.line != nil && &last[0] == &f.full.line[0]:
			r.sum = f.full.sum
		default:
			r.sum = f.sealSum
		}
	}
	if len(lines) == 0 {
		return nil, "", wake
	}
	out := make([][]byte, len(lines))
	for i, l := range lines {
		out[i] = bytes.TrimSuffix(l, []byte("\n"))
	}
	return out, r.resume(), wake
}

// resume is the query of a stream resuming at r's place, as
// url.Values.Encode gives it (keys sorted), built without the map: every
// stream of a fleet asks for it at every seal.
func (r *Reader) resume() string {
	if r.pos < 0 {
		return ""
	}
	since := "since=" + strconv.FormatInt(r.pos, 10)
	if r.sum == "" {
		return since
	}
	return "hash=" + url.QueryEscape(r.sum) + "&" + since
}
