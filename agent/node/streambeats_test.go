package node_test

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/skiffhq/skiff/agent/node"
	"github.com/skiffhq/skiff/api"
)

// fakeBeater is a shared stream's heartbeats: each answered code, or err
// (no stream carries them).
type fakeBeater struct {
	mu   sync.Mutex
	code int
	err  error
	n    int // beats answered
}

func (b *fakeBeater) Beat(context.Context) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.err != nil {
		return 0, b.err
	}
	b.n++
	code := b.code
	if code == http.StatusResetContent {
		b.code = http.StatusNoContent // asked once, as the server does until the write
	}
	return code, nil
}

func (b *fakeBeater) set(code int, err error) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.code, b.err = code, err
	return b.n
}

var errNoStream = errors.New("no shared stream carries heartbeats now")

// TestRegistrarBeatsOnTheStream: the lightweight heartbeat goes on the
// shared stream while one carries it, and as a request while none does;
// the stream's 205 makes the conditions written, as the call's does.
func TestRegistrarBeatsOnTheStream(t *testing.T) {
	const hb = 10 * time.Second
	b := &fakeBeater{code: http.StatusNoContent}
	start, clk, f, r, _ := runRegistrarWith(t, hb, func(c *node.Config) { c.Beats = b })
	stepUntil(clk, start.Add(time.Minute), 100*time.Millisecond)
	if !r.Registered() {
		t.Fatal("not registered after a minute with the server up")
	}
	quiet := clk.Now()
	was := b.set(http.StatusNoContent, nil)
	stepUntil(clk, quiet.Add(time.Minute), 100*time.Millisecond)
	if n := b.set(http.StatusNoContent, errNoStream) - was; n < 5 || f.beatsSince(quiet) != 0 {
		t.Fatalf("a minute with a stream: %d beats on it and %d requests; want about 6 and none", n, f.beatsSince(quiet))
	}
	for _, w := range f.readyWrites() {
		if w.at.After(quiet) {
			t.Fatalf("Ready written at %v with nothing changed", w.at.Sub(start))
		}
	}
	noStream := clk.Now()
	stepUntil(clk, noStream.Add(time.Minute), 100*time.Millisecond)
	if n := f.beatsSince(noStream); n < 5 {
		t.Fatalf("a minute without a stream: %d heartbeat requests; want about 6", n)
	}
	asked := clk.Now()
	b.set(http.StatusResetContent, nil)
	stepUntil(clk, asked.Add(hb+time.Second+hb/10), 100*time.Millisecond)
	written := 0
	for _, w := range f.readyWrites() {
		if w.at.After(asked) && w.status == api.ConditionTrue {
			written++
		}
	}
	if written != 1 {
		t.Fatalf("%d Ready=True writes after the stream's 205; want 1", written)
	}
	if n := f.beatsSince(asked); n != 0 {
		t.Fatalf("%d heartbeat requests while the stream carried them; want none", n)
	}
}
