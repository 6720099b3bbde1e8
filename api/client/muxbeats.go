package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"sync"
)

// BeatsPath is the server's feed of a node's heartbeats on its shared
// stream (server.BeatsPath): the stream is a POST over HTTP/2, each line
// of its request body one heartbeat, each answered by a line of the
// feed with the code the heartbeat call would have answered.
const BeatsPath = "/api/v1/skiff/beats"

// ErrNoStreamBeats is Beat's error when no stream carries heartbeats
// now: the stream is being opened again, the server (an older one, or
// one behind an HTTP/1 proxy) takes none, or the heartbeat went
// unanswered. The caller sends its heartbeat as a request.
var ErrNoStreamBeats = errors.New("no shared stream carries heartbeats now")

// maxUnsentBeats bounds the heartbeats written to a stream's body and
// not yet read by the transport: more means the stream has stalled.
const maxUnsentBeats = 4

// EnableBeats makes the streams opened from now on carry node's
// heartbeats (Beat), until a server refuses them.
func (m *WatchMux) EnableBeats(node string) {
	m.mu.Lock()
	m.beatNode = node
	m.mu.Unlock()
}

// Beat sends one heartbeat on the stream open now and returns the code
// the server answered it with (204; 205: the server wants the node's
// conditions; 404: no such Node; 503), or ErrNoStreamBeats. A heartbeat
// unanswered within the client timeout ends the stream, which opens
// again.
func (m *WatchMux) Beat(ctx context.Context) (int, error) {
	m.mu.Lock()
	sb := m.beats
	m.mu.Unlock()
	if sb == nil {
		return 0, ErrNoStreamBeats
	}
	seq, ack, err := sb.send()
	if err != nil {
		return 0, err
	}
	t := m.clk.NewTimer(m.c.timeout)
	defer t.Stop()
	select {
	case code := <-ack:
		return code, nil
	case <-sb.ended:
		return 0, ErrNoStreamBeats
	case <-t.C():
		// The stream is stuck: open it again at once (beats are a
		// client timeout apart, so this is no hot loop).
		m.mu.Lock()
		if m.beats == sb {
			m.pokeLocked()
		}
		m.mu.Unlock()
		return 0, fmt.Errorf("heartbeat %d on the shared stream unanswered in %v: %w", seq, m.c.timeout, ErrNoStreamBeats)
	case <-ctx.Done():
		sb.forget(seq)
		return 0, ctx.Err()
	}
}

// beatsWanted reports whether the next stream carries heartbeats, and
// for which node: once the server answered over HTTP/2. A POST whose
// body streams would hang on an HTTP/1 server (or a proxy), which reads
// the body before it answers; an agent has had answers (its lists, its
// registration) before it opens its stream, and a stream opened before
// any carries no beats: the next one does.
func (m *WatchMux) beatsWanted() (string, bool) {
	if m.beatsOff.Load() || m.c.h1.Load() || !m.c.h2.Load() {
		return "", false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.beatNode, m.beatNode != ""
}

// beatsSpec is the watch parameter of node's heartbeats.
func beatsSpec(node string) string {
	return BeatsPath + "?" + url.Values{"node": {node}}.Encode()
}

// streamBeats is one stream's heartbeats: its request body, and the
// heartbeats waiting for their answers.
type streamBeats struct {
	ended chan struct{} // closed when the stream ended

	mu      sync.Mutex
	seq     uint64
	waiting map[uint64]chan int
	unsent  []byte        // written, not yet read by the transport
	more    chan struct{} // a token once unsent grew
	endOnce sync.Once
}

func newStreamBeats() *streamBeats {
	return &streamBeats{ended: make(chan struct{}), waiting: map[uint64]chan int{}, more: make(chan struct{}, 1)}
}

// send writes the next heartbeat into the body.
func (b *streamBeats) send() (uint64, <-chan int, error) {
	ack := make(chan int, 1)
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.waiting) >= maxUnsentBeats {
		return 0, nil, fmt.Errorf("%d heartbeats unanswered on the shared stream: %w", len(b.waiting), ErrNoStreamBeats)
	}
	b.seq++
	b.waiting[b.seq] = ack
	b.unsent = append(strconv.AppendUint(b.unsent, b.seq, 10), '\n')
	select {
	case b.more <- struct{}{}:
	default:
	}
	return b.seq, ack, nil
}

// forget drops heartbeat seq's wait (its caller gave up).
func (b *streamBeats) forget(seq uint64) {
	b.mu.Lock()
	delete(b.waiting, seq)
	b.mu.Unlock()
}

// Read is the request body: the heartbeats written, as the transport
// takes them, until the stream ends.
func (b *streamBeats) Read(p []byte) (int, error) {
	for {
		b.mu.Lock()
		if len(b.unsent) > 0 {
			n := copy(p, b.unsent)
			b.unsent = b.unsent[:copy(b.unsent, b.unsent[n:])]
			b.mu.Unlock()
			return n, nil
		}
		b.mu.Unlock()
		select {
		case <-b.more:
		case <-b.ended:
			return 0, io.EOF
		}
	}
}

// beatAnswer is a line of the beats feed.
type beatAnswer struct {
	Beat uint64 `json:"beat"`
	Code int    `json:"code"`
}

// answered hands a line of the feed to the heartbeat it answers.
func (b *streamBeats) answered(line []byte) error {
	var a beatAnswer
	if err := json.Unmarshal(line, &a); err != nil {
		return fmt.Errorf("heartbeat answer %q: %w", line, err)
	}
	b.mu.Lock()
	ack := b.waiting[a.Beat]
	delete(b.waiting, a.Beat)
	b.mu.Unlock()
	if ack == nil {
		// The server could not read a heartbeat (0: not one), or
		// its caller gave up: nothing waits.
		return nil
	}
	ack <- a.Code
	return nil
}

// end marks the stream ended: waiting heartbeats and the body return.
func (b *streamBeats) end() {
	b.endOnce.Do(func() { close(b.ended) })
}

// Close ends the body: the transport closes it when the exchange ends
// (the server answered an error, the answer's body was closed), and
// waits for its writer, which waits in Read.
func (b *streamBeats) Close() error {
	b.end()
	return nil
}
