package server

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"sync"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/internal/promtext"
	"github.com/skiffhq/skiff/server/apiserver"
)

// BeatsPath is the feed of an agent's heartbeats on its shared stream
// (apiserver.WatchesPath, watch=/api/v1/skiff/beats?node=<name>, the
// stream a POST over HTTP/2). Each line of the stream's request body is
// one heartbeat, a decimal sequence number; each is answered by a line
// of the feed with the code POST HeartbeatPath would have answered:
//
//	{"beat":42,"code":204}
//
// A heartbeat as its own request cost the server a stream, a request
// and its header map, a handler goroutine and chi's route: about
// 7 KB of garbage and 70 cpu-µs each, 550 a second at 10,000 agents,
// and the collector's mark phases that follow were the heartbeat
// tail. On the stream a beat is a line each way. Its price is a
// goroutine an agent reading the body, blocked while it is quiet.
const BeatsPath = "/api/v1/skiff/beats"

// maxBeatLine bounds one heartbeat line: a sequence number and '\n'.
const maxBeatLine = 24

// maxPendingBeats bounds the answers a stream has not sent yet; the
// body is not read meanwhile, so HTTP/2's flow control holds back a
// node that beats faster than its stream drains.
const maxPendingBeats = 16

// beatFeed serves BeatsPath: only a node's credential beats, and only
// for its own node; an admin for any (simulated fleets), as POST
// HeartbeatPath.
type beatFeed struct{ s *server }

// StartFeed implements apiserver.Feed: it starts reading r's body.
func (f beatFeed) StartFeed(r *http.Request, q url.Values) (apiserver.FeedReader, error) {
	name := q.Get("node")
	id := identityFrom(r.Context())
	if !id.Admin && id.Node != name {
		return nil, forbidden(id.String() + " may send heartbeats only for its own node")
	}
	if errs := api.ValidateNodeName(name); errs != "" {
		return nil, api.NewBadRequest("beats: node name %q: %s", name, errs)
	}
	if r.Method != http.MethodPost || r.ProtoMajor < 2 {
		return nil, api.NewBadRequest("beats are lines of the shared stream's request body: they need a POST over HTTP/2")
	}
	b := &beatReader{s: f.s, ctx: r.Context(), node: name,
		wake: make(chan struct{}, 1), room: make(chan struct{}, 1), done: make(chan struct{})}
	go b.read(r.Body)
	return b, nil
}

// beatReader reads one stream's heartbeats and holds their answers for
// the stream (apiserver.FeedReader).
type beatReader struct {
	s    *server
	ctx  context.Context
	node string
	wake chan struct{} // a token once an answer is pending
	room chan struct{} // a token once Next took the answers
	done chan struct{} // closed by Close

	mu      sync.Mutex
	pending [][]byte
	once    sync.Once
}

// read answers each line of body until it ends (the handler returned:
// the HTTP/2 server closes the body) or holds what is not a heartbeat.
// The frames it waits under are few: at 10,000 agents its stack is most
// of its cost.
func (b *beatReader) read(body io.Reader) {
	var buf [maxBeatLine]byte
	n := 0
	for {
		k, err := body.Read(buf[n:])
		n += k
		for {
			i := bytes.IndexByte(buf[:n], '\n')
			if i < 0 {
				break
			}
			if !b.beat(buf[:i]) {
				return
			}
			n = copy(buf[:], buf[i+1:n])
		}
		if err != nil {
			return
		}
		if n == len(buf) {
			b.answer(0, http.StatusBadRequest)
			return
		}
	}
}

// beat answers one line; false ends the reading.
func (b *beatReader) beat(line []byte) bool {
	seq, err := strconv.ParseUint(string(line), 10, 64)
	if err != nil {
		b.answer(0, http.StatusBadRequest)
		return false
	}
	for {
		b.mu.Lock()
		full := len(b.pending) >= maxPendingBeats
		b.mu.Unlock()
		if !full {
			break
		}
		select {
		case <-b.room:
		case <-b.done:
			return false
		}
	}
	b.s.streamBeats.Add(1)
	b.answer(seq, b.s.beat(b.ctx, b.node))
	return true
}

// answer queues the answer to beat seq and wakes the stream.
func (b *beatReader) answer(seq uint64, code int) {
	line := append([]byte(`{"beat":`), strconv.FormatUint(seq, 10)...)
	line = append(append(append(line, `,"code":`...), strconv.Itoa(code)...), '}')
	b.mu.Lock()
	b.pending = append(b.pending, line)
	b.mu.Unlock()
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

// Next implements apiserver.FeedReader: the answers pending, no resume
// (a beat is not resumed), and the channel of the next.
func (b *beatReader) Next() ([][]byte, string, <-chan struct{}) {
	b.mu.Lock()
	lines := b.pending
	b.pending = nil
	b.mu.Unlock()
	if len(lines) > 0 {
		select {
		case b.room <- struct{}{}:
		default:
		}
	}
	return lines, "", b.wake
}

// Close implements io.Closer: a reader waiting for room stops; one
// waiting for the body stops when the handler's return closes it.
func (b *beatReader) Close() error {
	b.once.Do(func() { close(b.done) })
	return nil
}

// beat records a heartbeat of node name and returns what answers it:
// 204, or 205 when the node lifecycle controller marked it unreachable
// (Ready=Unknown) while it was silent, and the agent is to send its
// conditions again; 404 when the Node does not exist (the agent
// registers again); 503 when that cannot be told.
func (s *server) beat(ctx context.Context, name string) int {
	exists, unknown, err := s.nodeState(ctx, name)
	switch {
	case err != nil:
		return http.StatusServiceUnavailable
	case !exists:
		return http.StatusNotFound
	}
	s.liveness.Beat(name, s.clk.Now())
	if unknown {
		return http.StatusResetContent
	}
	return http.StatusNoContent
}

// addBeatMetrics publishes skiff_stream_heartbeats_total.
func (s *server) addBeatMetrics() {
	s.metrics.addWriter(func(w *promtext.Writer) {
		w.Counter("skiff_stream_heartbeats_total", "Agent heartbeats taken on their shared streams (the others are requests).", "", float64(s.streamBeats.Load()))
	})
}
