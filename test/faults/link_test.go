package faults

import (
	"errors"
	"fmt"
	"net"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The links' faults. This kernel has no sch_netem (tc qdisc add ... netem
// answers "Specified qdisc kind is unknown"), so loss is made with
// nftables in the agent host's namespace (numgen random) and latency by
// holding the agent's bytes in delayConn, on every connection the agent
// makes to the server.

// faultTable is the nftables table of an agent host's link faults; it
// lives in the agent's namespace only.
const faultTable = "skiff_fault"

// cut drops every packet between h and the server host (both ways),
// as a broken link would: nothing is refused, connections just go
// silent.
func (h *agentHost) cut() {
	h.nft(fmt.Sprintf("ip saddr %s drop", h.serverIP), fmt.Sprintf("ip daddr %s drop", h.serverIP))
}

// lossy drops pct % of the packets between h and the server host, each
// way.
func (h *agentHost) lossy(pct int) {
	h.nft(fmt.Sprintf("ip saddr %s numgen random mod 100 < %d counter drop", h.serverIP, pct),
		fmt.Sprintf("ip daddr %s numgen random mod 100 < %d counter drop", h.serverIP, pct))
}

// dropped is how many packets h's lossy rules dropped so far.
func (h *agentHost) dropped() int {
	t := h.c.t
	t.Helper()
	out, err := exec.Command("ip", "netns", "exec", h.nsName, "nft", "list", "table", "inet", faultTable).CombinedOutput()
	if err != nil {
		t.Fatalf("nft list in %s: %v: %s", h.nsName, err, out)
	}
	n := 0
	for _, f := range strings.Split(string(out), "counter packets ")[1:] {
		var k int
		if _, err := fmt.Sscan(f, &k); err == nil {
			n += k
		}
	}
	return n
}

// heal removes every fault of h's link.
func (h *agentHost) heal() {
	h.c.t.Helper()
	h.delay.set(0)
	if out, err := exec.Command("ip", "netns", "exec", h.nsName, "nft", "delete", "table", "inet", faultTable).CombinedOutput(); err != nil &&
		!strings.Contains(string(out), "No such file") {
		h.c.t.Fatalf("heal %s: %v: %s", h.name, err, out)
	}
}

// nft replaces h's fault table with one whose input chain has rule in
// and output chain rule out.
func (h *agentHost) nft(in, out string) {
	t := h.c.t
	t.Helper()
	rules := fmt.Sprintf(`table inet %[1]s
delete table inet %[1]s
table inet %[1]s {
	chain input { type filter hook input priority -10; policy accept; %[2]s; }
	chain output { type filter hook output priority -10; policy accept; %[3]s; }
}
`, faultTable, in, out)
	cmd := exec.Command("ip", "netns", "exec", h.nsName, "nft", "-f", "-")
	cmd.Stdin = strings.NewReader(rules)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("nft in %s: %v: %s\n%s", h.nsName, err, b, rules)
	}
}

// delaySetting is a link's latency, changed while connections are open.
type delaySetting struct{ d atomic.Int64 }

func (s *delaySetting) set(d time.Duration) { s.d.Store(int64(d)) }
func (s *delaySetting) get() time.Duration  { return time.Duration(s.d.Load()) }

// delayConn holds every chunk written or read for the link's delay
// before it goes on, in order: a link's latency, each way.
type delayConn struct {
	net.Conn
	d      *delaySetting
	out    chan chunk // written by the agent, to the server
	in     chan chunk // read from the server, to the agent
	rest   []byte
	rerr   error
	closed chan struct{}
	once   sync.Once
	werr   atomic.Value // error of the background writer
}

type chunk struct {
	b   []byte
	at  time.Time
	err error
}

func newDelayConn(c net.Conn, d *delaySetting) *delayConn {
	dc := &delayConn{Conn: c, d: d, out: make(chan chunk, 256), in: make(chan chunk, 256), closed: make(chan struct{})}
	go dc.writer()
	go dc.reader()
	return dc
}

// hold waits until at plus the link's delay, or the conn closes.
func (c *delayConn) hold(at time.Time) bool {
	wait := time.Until(at.Add(c.d.get()))
	if wait <= 0 {
		return true
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-c.closed:
		return false
	}
}

func (c *delayConn) writer() {
	for {
		select {
		case <-c.closed:
			return
		case ch := <-c.out:
			if !c.hold(ch.at) {
				return
			}
			if _, err := c.Conn.Write(ch.b); err != nil {
				c.werr.Store(err)
				c.Conn.Close()
				return
			}
		}
	}
}

func (c *delayConn) reader() {
	for {
		b := make([]byte, 32<<10)
		n, err := c.Conn.Read(b)
		select {
		case c.in <- chunk{b: b[:n], at: time.Now(), err: err}:
		case <-c.closed:
			return
		}
		var ne net.Error
		if err != nil && !(errors.As(err, &ne) && ne.Timeout()) {
			return
		}
	}
}

func (c *delayConn) Write(p []byte) (int, error) {
	if err, ok := c.werr.Load().(error); ok {
		return 0, err
	}
	b := append([]byte(nil), p...)
	select {
	case c.out <- chunk{b: b, at: time.Now()}:
		return len(p), nil
	case <-c.closed:
		return 0, net.ErrClosed
	}
}

func (c *delayConn) Read(p []byte) (int, error) {
	for len(c.rest) == 0 {
		if c.rerr != nil {
			return 0, c.rerr
		}
		select {
		case ch := <-c.in:
			if !c.hold(ch.at) {
				return 0, net.ErrClosed
			}
			var ne net.Error
			if len(ch.b) == 0 && errors.As(ch.err, &ne) && ne.Timeout() {
				return 0, ch.err // a deadline passed; the conn stays usable
			}
			c.rest, c.rerr = ch.b, ch.err
		case <-c.closed:
			return 0, net.ErrClosed
		}
	}
	n := copy(p, c.rest)
	c.rest = c.rest[n:]
	return n, nil
}

func (c *delayConn) Close() error {
	c.once.Do(func() { close(c.closed) })
	return c.Conn.Close()
}
