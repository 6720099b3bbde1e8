package peers

import (
	"encoding/json"
	"net/http"
	"sort"
	"strconv"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/internal/peerfeed"
)

// ServeHTTP serves one stream (GET Path?since=<revision>&hash=<hash>):
// what brings the caller's set to the server's (the batches after since,
// an empty batch when hash is already the server's, or the whole set),
// then every batch sealed after it, until the caller goes. The caller
// authorizes the request.
func (f *Feed) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	since, hasSince := int64(-1), q.Get("since") != ""
	if hasSince {
		v, err := strconv.ParseInt(q.Get("since"), 10, 64)
		if err != nil || v < 0 {
			writeError(w, api.NewBadRequest("since: %q is not a revision", q.Get("since")))
			return
		}
		since = v
	}
	// The answer starts at once; the first batch follows the feed's
	// first seal (within an interval of the server's start).
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	if err := rc.Flush(); err != nil {
		return
	}
	ctx := r.Context()
	select {
	case <-f.ready:
	case <-ctx.Done():
		return
	}
	f.mu.Lock()
	lines, pos, wake := f.startLocked(since, q.Get("hash"))
	f.mu.Unlock()
	for {
		for _, l := range lines {
			if err := writeChunked(w, l); err != nil {
				return
			}
		}
		if err := rc.Flush(); err != nil {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-wake:
		}
		f.mu.Lock()
		lines, pos, wake = f.afterLocked(pos)
		f.mu.Unlock()
	}
}

// startLocked is a new stream's first lines and the revision they bring
// it to.
func (f *Feed) startLocked(since int64, hash string) ([][]byte, int64, chan struct{}) {
	switch {
	case since >= f.base && since <= f.sealRev:
		lines, pos, wake := f.afterLocked(since)
		if len(lines) == 0 {
			// Nothing after since: an empty batch says so, with the
			// revision to resume from.
			lines = [][]byte{encode(peerfeed.Batch{Revision: f.sealRev, Hash: f.sealSum})}
		}
		return lines, pos, wake
	case hash != "" && hash == f.sealSum:
		return [][]byte{encode(peerfeed.Batch{Revision: f.sealRev, Hash: f.sealSum})}, f.sealRev, f.wake
	}
	return f.fullLocked()
}

// afterLocked returns the sealed batches after revision pos, the
// revision they bring a stream to and the channel the next seal closes.
// A stream behind the kept batches gets the whole set instead.
func (f *Feed) afterLocked(pos int64) ([][]byte, int64, chan struct{}) {
	if pos < f.base {
		return f.fullLocked()
	}
	i := sort.Search(len(f.batches), func(i int) bool { return f.batches[i].to > pos })
	lines := make([][]byte, 0, len(f.batches)-i)
	for _, b := range f.batches[i:] {
		lines = append(lines, b.line)
	}
	return lines, max(pos, f.sealRev), f.wake
}

// fullLocked is the whole set as one line, the revision it brings a
// stream to and the channel the next seal closes. The line is encoded
// once a seal interval, at most, for every stream that needs it: it is
// the set at the revision it was encoded (f.full.to), and the next
// batch holds every peer that changed since (the changes pending then
// are sealed into it), so a stream handed an older line misses nothing.
// Encoded again for every node write that moved the revision, it was
// rebuilt for each stream that needed it while a fleet's node status
// writes went on: 10,000 peers sorted and encoded, a megabyte and more,
// one to two times a second during a placement.
func (f *Feed) fullLocked() ([][]byte, int64, chan struct{}) {
	if f.full.line == nil {
		f.fullBuilds.Add(1)
		sum := f.set.Hash()
		f.full = sealed{to: f.rev, sum: sum, line: encode(peerfeed.Batch{Revision: f.rev, Hash: sum, Full: true, Peers: f.set.Sorted()})}
	}
	return [][]byte{f.full.line}, f.full.to, f.wake
}

// chunk is the most one Write hands HTTP/2 at once. A larger write is
// sent in frames of the client's largest (16 KiB), and the connection's
// framer and TLS output buffers keep that size for the connection's
// life: 15 KiB a connection at 9,000 agents, all from the whole set's
// line. Writes within the response writer's 4 KiB buffer are sent as
// frames of that size.
const chunk = 4 << 10

func writeChunked(w http.ResponseWriter, b []byte) error {
	for len(b) > 0 {
		n := min(len(b), chunk)
		if _, err := w.Write(b[:n]); err != nil {
			return err
		}
		b = b[n:]
	}
	return nil
}

func writeError(w http.ResponseWriter, se *api.StatusError) {
	b, _ := json.Marshal(&se.Status)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(int(se.Status.Code))
	w.Write(b)
}
