package tunnel

import (
	"encoding/json"
	"time"
)

// The tunnel's opens on an agent's shared stream (apiserver.WatchesPath,
// beside its watches and the peer feed): a stream of its own cost the
// server a handler goroutine and a 4 KiB response buffer an agent.
//
// The shared stream is opened again whenever one of the agent's watches
// starts, so the control it reads must outlive it: the node's control
// stays registered while no stream reads it, the exchanges it handed out
// go on, and the opens it queues wait for the next reader (within
// OpenTimeout). Only a control no stream has read for DetachGrace counts
// as closed: the agent is gone.

// DetachGrace is how long a control no shared stream reads stays open:
// a stream opened again is back within it.
const DetachGrace = 5 * time.Second

// ControlReader reads a node's tunnel opens for a shared stream.
type ControlReader struct {
	g      *Registry
	c      *control
	closed bool
}

// AttachControl returns a reader of node's tunnel opens, the request
// already authenticated as node: it attaches to the node's control, or
// registers a new one in place of a tunnel of another kind or a closed
// one. Close detaches it.
func (g *Registry) AttachControl(node string) (*ControlReader, error) {
	g.mu.Lock()
	if c, ok := g.sessions[node].(*control); ok && !c.IsClosed() {
		c.mu.Lock()
		c.readers++
		c.mu.Unlock()
		g.mu.Unlock()
		return &ControlReader{g: g, c: c}, nil
	}
	g.mu.Unlock()
	c := newControl(g.now)
	c.readers = 1
	if err := g.register(node, c); err != nil {
		return nil, err
	}
	return &ControlReader{g: g, c: c}, nil
}

// Next returns the open lines due ({"open":"<id>"}), no resume query
// (the tunnel has no position), and a channel ready once more may be
// due. It does not wait.
func (r *ControlReader) Next() ([][]byte, string, <-chan struct{}) {
	var lines [][]byte
	for {
		select {
		case id := <-r.c.opens:
			line, _ := json.Marshal(openLine{Open: id})
			lines = append(lines, line)
			continue
		default:
		}
		return lines, "", r.c.queued
	}
}

// Close detaches the reader; the control stays for the next one.
func (r *ControlReader) Close() error {
	if r.closed {
		return nil
	}
	r.closed = true
	c := r.c
	c.mu.Lock()
	c.readers--
	if c.readers == 0 {
		c.detached = c.now()
	}
	c.mu.Unlock()
	return nil
}
