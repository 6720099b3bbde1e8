package streaming

import (
	"io"
	"sync"
)

// inboxMax is how much unread stdin a session holds.
const inboxMax = 64 << 10

// inbox carries a session's stdin from the frame reader to the command.
// Unlike io.Pipe it holds up to max unread bytes, so the frame reader
// goes on to the frames behind them: kubectl sends the terminal's size
// on its own channel, and input typed at once could reach the agent
// first. With a pipe the reader then waited for a command that waited
// for the size, and the terminal was created without it. Beyond max,
// Write waits, as a pipe's would: a command that does not read holds
// back its client, it does not grow the agent.
type inbox struct {
	mu     sync.Mutex
	cond   sync.Cond
	buf    []byte
	max    int
	err    error // what Read returns once buf is drained; io.EOF after Close
	closed bool  // the reading side is gone: Write fails
}

func newInbox(max int) *inbox {
	in := &inbox{max: max}
	in.cond.L = &in.mu
	return in
}

// Write queues p whole, waiting while the inbox is full. It fails with
// io.ErrClosedPipe once the reader closed or the writer did.
func (in *inbox) Write(p []byte) (int, error) {
	in.mu.Lock()
	defer in.mu.Unlock()
	n := 0
	for len(p) > 0 {
		for len(in.buf) >= in.max && !in.closed && in.err == nil {
			in.cond.Wait()
		}
		if in.closed || in.err != nil {
			return n, io.ErrClosedPipe
		}
		k := min(len(p), in.max-len(in.buf))
		in.buf = append(in.buf, p[:k]...)
		p, n = p[k:], n+k
		in.cond.Broadcast()
	}
	return n, nil
}

// Read returns queued bytes, waiting for some; once the writer closed
// and the queue is drained, the writer's error (io.EOF for Close).
func (in *inbox) Read(p []byte) (int, error) {
	in.mu.Lock()
	defer in.mu.Unlock()
	for len(in.buf) == 0 && in.err == nil && !in.closed {
		in.cond.Wait()
	}
	if in.closed {
		return 0, io.ErrClosedPipe
	}
	if len(in.buf) == 0 {
		return 0, in.err
	}
	n := copy(p, in.buf)
	in.buf = in.buf[:copy(in.buf, in.buf[n:])]
	if len(in.buf) == 0 && cap(in.buf) > 4<<10 {
		in.buf = nil // a paste's room is not kept for the session's life
	}
	in.cond.Broadcast()
	return n, nil
}

// CloseWrite ends the input: Read drains what is queued, then returns
// err (io.EOF if nil).
func (in *inbox) CloseWrite(err error) {
	if err == nil {
		err = io.EOF
	}
	in.mu.Lock()
	if in.err == nil {
		in.err = err
	}
	in.cond.Broadcast()
	in.mu.Unlock()
}

// Close is the reading side's: queued and later input is dropped, and
// a waiting Write returns.
func (in *inbox) Close() error {
	in.mu.Lock()
	in.closed, in.buf = true, nil
	in.cond.Broadcast()
	in.mu.Unlock()
	return nil
}
