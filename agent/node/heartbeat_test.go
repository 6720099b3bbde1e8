package node_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skiffhq/skiff/agent/node"
	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/internal/clock"
)

// fakeAPI is a server for the registrar that can be away: while down
// every call fails as a refused connection would. It records when each
// call came (on the fake clock) and the Ready status last written.
type fakeAPI struct {
	clk *clock.Fake

	mu    sync.Mutex
	down  bool
	node  *api.Node
	calls []time.Time
	ready []readyWrite // every Ready status written, in order
	beats []time.Time  // every lightweight heartbeat answered
	// wantStatus answers the next lightweight heartbeat 205, as the
	// server does while the node's Ready is the controller's Unknown.
	wantStatus bool
	// shedding refuses status writes 429, as a server whose in-flight
	// slots are full does, while it still serves the lightweight beat.
	shedding bool
	// busy answers every call 429, as a server just restarted under a
	// fleet's reconnections may.
	busy bool
}

type readyWrite struct {
	at     time.Time
	status string
}

var errRefused = errors.New("dial tcp 127.0.0.1:7443: connect: connection refused")

func (f *fakeAPI) call() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, f.clk.Now())
	if f.down {
		return errRefused
	}
	if f.busy {
		return api.NewStatusError(http.StatusTooManyRequests, api.StatusReasonTooManyRequests, "too many requests in flight; retry after 1 second(s)")
	}
	return nil
}

func (f *fakeAPI) setDown(down bool) {
	f.mu.Lock()
	f.down = down
	f.mu.Unlock()
}

func (f *fakeAPI) callsBetween(from, to time.Time) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, c := range f.calls {
		if !c.Before(from) && c.Before(to) {
			n++
		}
	}
	return n
}

// longestSilence is the longest time the server heard nothing in
// [from, to), counting the registrar's calls and the reports (which the
// server counts as heartbeats), and when it began.
func (f *fakeAPI) longestSilence(reports []time.Time, from, to time.Time) (time.Duration, time.Time) {
	f.mu.Lock()
	heard := append([]time.Time(nil), reports...)
	for _, c := range f.calls {
		if !c.Before(from) && c.Before(to) {
			heard = append(heard, c)
		}
	}
	f.mu.Unlock()
	slices.SortFunc(heard, func(a, b time.Time) int { return a.Compare(b) })
	var gap time.Duration
	var at time.Time
	for i := 1; i < len(heard); i++ {
		if g := heard[i].Sub(heard[i-1]); g > gap {
			gap, at = g, heard[i-1]
		}
	}
	return gap, at
}

// gapsBetween is the time between consecutive calls in [from, to).
func (f *fakeAPI) gapsBetween(from, to time.Time) []time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	var gaps []time.Duration
	var last time.Time
	for _, c := range f.calls {
		if c.Before(from) || !c.Before(to) {
			continue
		}
		if !last.IsZero() {
			gaps = append(gaps, c.Sub(last))
		}
		last = c
	}
	return gaps
}

// firstCallFrom is the first call at or after t (zero if none).
func (f *fakeAPI) firstCallFrom(t time.Time) time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range f.calls {
		if !c.Before(t) {
			return c
		}
	}
	return time.Time{}
}

// beatsSince is how many lightweight heartbeats were answered after t.
func (f *fakeAPI) beatsSince(t time.Time) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, b := range f.beats {
		if b.After(t) {
			n++
		}
	}
	return n
}

func (f *fakeAPI) readyWrites() []readyWrite {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]readyWrite(nil), f.ready...)
}

func (f *fakeAPI) Get(ctx context.Context, res api.ResourceInfo, ns, name string) (api.Object, error) {
	if err := f.call(); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.node == nil {
		return nil, api.NewNotFound("nodes", name)
	}
	return f.node, nil
}

func (f *fakeAPI) Create(ctx context.Context, obj api.Object) (api.Object, error) {
	if err := f.call(); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.node = obj.(*api.Node)
	return f.node, nil
}

func (f *fakeAPI) Update(ctx context.Context, obj api.Object) (api.Object, error) {
	if err := f.call(); err != nil {
		return nil, err
	}
	return obj, nil
}

func (f *fakeAPI) UpdateStatus(ctx context.Context, obj api.Object) (api.Object, error) {
	return f.Update(ctx, obj)
}

func (f *fakeAPI) Patch(ctx context.Context, res api.ResourceInfo, ns, name, patchType string, body []byte) (api.Object, error) {
	if err := f.call(); err != nil {
		return nil, err
	}
	return f.node, nil
}

func (f *fakeAPI) PatchStatus(ctx context.Context, res api.ResourceInfo, ns, name, patchType string, body []byte) (api.Object, error) {
	if err := f.call(); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.shedding {
		return nil, api.NewStatusError(http.StatusTooManyRequests, api.StatusReasonTooManyRequests, "too many requests in flight; retry after 1 second(s)")
	}
	var patch struct {
		Status struct {
			Conditions []api.NodeCondition `json:"conditions"`
		} `json:"status"`
	}
	if err := json.Unmarshal(body, &patch); err != nil {
		return nil, err
	}
	for _, c := range patch.Status.Conditions {
		if c.Type == api.NodeReady {
			f.ready = append(f.ready, readyWrite{at: f.clk.Now(), status: c.Status})
		}
	}
	return f.node, nil
}

func (f *fakeAPI) Do(ctx context.Context, method, path string, body io.Reader) (*http.Response, error) {
	if err := f.call(); err != nil {
		return nil, err
	}
	f.mu.Lock()
	if strings.HasSuffix(path, "/heartbeat") {
		f.beats = append(f.beats, f.clk.Now())
	}
	code := http.StatusOK
	if f.wantStatus {
		code, f.wantStatus = http.StatusResetContent, false
	}
	f.mu.Unlock()
	return &http.Response{StatusCode: code, Body: io.NopCloser(strings.NewReader(""))}, nil
}

var _ node.API = (*fakeAPI)(nil)

// stepUntil advances clk in steps while the registrar waits, until the
// fake time reaches end.
func stepUntil(clk *clock.Fake, end time.Time, step time.Duration) {
	for clk.Now().Before(end) {
		clk.BlockUntil(1)
		clk.Advance(step)
	}
	clk.BlockUntil(1)
}

// TestRegistrarHeartbeatOutageOfAnHour keeps the server away for an hour
// of fake time: the retries stay capped at the heartbeat interval (never
// a hot loop, never a negative wait), and when the server is back the
// next attempt works and the heartbeat returns to its interval.
func TestRegistrarHeartbeatOutageOfAnHour(t *testing.T) {
	start := time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)
	clk := clock.NewFake(start)
	f := &fakeAPI{clk: clk}
	const hb = 10 * time.Second
	r := node.NewRegistrar(node.Config{API: f, NodeName: "edge", Info: fixedInfo, Runtime: &fakeRuntime{}, Heartbeat: hb, Clock: clk})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("Run after cancel = %v; want context.Canceled", err)
		}
	}()

	// Registered, then a minute of healthy heartbeats.
	stepUntil(clk, start.Add(time.Minute), 100*time.Millisecond)
	if !r.Registered() {
		t.Fatal("not registered after a minute with the server up")
	}
	f.setDown(true)
	outage := clk.Now()
	stepUntil(clk, outage.Add(time.Hour), 100*time.Millisecond)
	// Once capped, at most one attempt per half heartbeat (jitter), at
	// least one per heartbeat; each attempt is a single call (the
	// lightweight heartbeat fails first).
	for m := 0; m < 60; m++ {
		from := outage.Add(time.Duration(m) * time.Minute)
		n := f.callsBetween(from, from.Add(time.Minute))
		if n > int(2*time.Minute/hb)+6 || (m > 0 && n < int(time.Minute/hb)) {
			t.Fatalf("minute %d of the outage: %d attempts; want between %d and %d", m, n, int(time.Minute/hb), int(2*time.Minute/hb)+6)
		}
	}
	// Every wait between two attempts is positive, at least half the
	// first step (1 s, jittered) and at most the heartbeat (the fake
	// clock moves in 100 ms steps). The attempts are the calls after the
	// outage's first instant: a heartbeat due at that very step ran, and
	// worked, before the server went away, and the wait after it is a
	// heartbeat's, up to a tenth over (jitter). That made this test fail
	// about one run in a hundred.
	for i, gap := range f.gapsBetween(outage.Add(time.Nanosecond), outage.Add(time.Hour)) {
		if gap < 500*time.Millisecond-100*time.Millisecond || gap > hb+100*time.Millisecond {
			t.Fatalf("wait #%d of the outage = %v; want within [0.5s, %v]", i, gap, hb)
		}
	}
	if total := f.callsBetween(outage, outage.Add(time.Hour)); total > 2*int(time.Hour/hb)+10 {
		t.Fatalf("%d attempts in the hour; want at most %d", total, 2*int(time.Hour/hb)+10)
	}

	// The server is back: the next attempt (within one heartbeat) works
	// and the heartbeat returns to every 10 s.
	f.setDown(false)
	back := clk.Now()
	stepUntil(clk, back.Add(hb+time.Second), 100*time.Millisecond)
	first := f.firstCallFrom(back)
	if first.IsZero() || first.Sub(back) > hb {
		t.Fatalf("first call %v after the server came back; want within %v", first.Sub(back), hb)
	}
	stepUntil(clk, back.Add(2*time.Minute), 100*time.Millisecond)
	if n := f.callsBetween(back.Add(time.Minute), back.Add(2*time.Minute)); n < 5 || n > 7 {
		t.Fatalf("%d heartbeats in the second minute after recovery; want about 6", n)
	}
}

// TestRegistrarTriggerWritesReadyAtOnce: the pod network becomes ready
// (the podCIDR arrived); a Trigger sends Ready=True without waiting for
// the next heartbeat, on a clock that does not move.
func TestRegistrarTriggerWritesReadyAtOnce(t *testing.T) {
	start := time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)
	clk := clock.NewFake(start)
	f := &fakeAPI{clk: clk}
	var mu sync.Mutex
	netErr := errors.New("node has no podCIDR yet")
	r := node.NewRegistrar(node.Config{API: f, NodeName: "edge", Info: fixedInfo, Runtime: &fakeRuntime{}, Clock: clk,
		NetworkReady: func() error { mu.Lock(); defer mu.Unlock(); return netErr }})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("Run after cancel = %v; want context.Canceled", err)
		}
	}()
	clk.BlockUntil(1) // registered (NotReady) and waiting for the heartbeat
	if w := f.readyWrites(); len(w) != 1 || w[0].status != api.ConditionFalse {
		t.Fatalf("Ready writes at registration %+v; want one False", w)
	}
	mu.Lock()
	netErr = nil
	mu.Unlock()
	r.Trigger()
	deadline := time.Now().Add(10 * time.Second)
	for {
		w := f.readyWrites()
		if len(w) == 2 && w[1].status == api.ConditionTrue && w[1].at.Equal(start) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Ready writes %+v; want a second, True, at the same fake instant", w)
		}
		time.Sleep(time.Millisecond)
	}
}

// lastSilence is the silentSince of a registrar's last Recovered call.
var lastSilence atomic.Int64

// runRegistrar runs a registrar with heartbeat hb against a fakeAPI on
// a fake clock from start, until the test ends; recovered counts its
// Recovered calls, and lastSilence keeps the last one's silentSince.
func runRegistrar(t *testing.T, hb time.Duration) (start time.Time, clk *clock.Fake, f *fakeAPI, r *node.Registrar, recovered *atomic.Int32) {
	t.Helper()
	start = time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)
	clk = clock.NewFake(start)
	f = &fakeAPI{clk: clk}
	recovered = new(atomic.Int32)
	r = node.NewRegistrar(node.Config{API: f, NodeName: "edge", Info: fixedInfo, Runtime: &fakeRuntime{}, Heartbeat: hb, Clock: clk,
		Recovered: func(since time.Time) {
			lastSilence.Store(since.UnixNano())
			recovered.Add(1)
		}})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return start, clk, f, r, recovered
}

// TestRegistrarAfterFailedHeartbeats: while the agent could not reach
// the server, the server may have marked its node Ready=Unknown. The
// first heartbeat that gets through afterwards is the lightweight beat;
// if the server marked the node (it answers 205), the conditions
// (Ready=True) are written at once, or the node would stay NotReady until
// the next snapshot (found by the partition scenario of test/faults). If
// it did not (a server restart: 10,000 agents come back together), no
// status is written: each status write is a store write, and a fleet's
// worth at once kept the restarted server from answering heartbeats for
// 40 s.
func TestRegistrarAfterFailedHeartbeats(t *testing.T) {
	for _, marked := range []bool{true, false} {
		t.Run(fmt.Sprintf("marked Unknown %v", marked), func(t *testing.T) {
			const hb = 10 * time.Second
			start, clk, f, r, recovered := runRegistrar(t, hb)
			stepUntil(clk, start.Add(time.Minute), 100*time.Millisecond)
			if !r.Registered() {
				t.Fatal("not registered after a minute with the server up")
			}
			quiet := clk.Now()
			stepUntil(clk, quiet.Add(time.Minute), 100*time.Millisecond)
			for _, w := range f.readyWrites() {
				if w.at.After(quiet) {
					t.Fatalf("Ready written at %v with nothing changed; want lightweight beats only", w.at.Sub(start))
				}
			}
			f.setDown(true)
			down := clk.Now()
			stepUntil(clk, clk.Now().Add(time.Minute), 100*time.Millisecond)
			f.mu.Lock()
			f.wantStatus = marked
			f.mu.Unlock()
			f.setDown(false)
			back := clk.Now()
			stepUntil(clk, back.Add(hb+time.Second), 100*time.Millisecond)
			var rewritten int
			for _, w := range f.readyWrites() {
				if w.at.After(back) && w.status == api.ConditionTrue {
					rewritten++
				}
			}
			if want := map[bool]int{true: 1, false: 0}[marked]; rewritten != want {
				t.Fatalf("%d Ready=True writes within a heartbeat of the server's return; want %d; writes: %+v", rewritten, want, f.readyWrites())
			}
			if beats := f.beatsSince(back); beats == 0 {
				t.Fatal("no lightweight beat after the server's return")
			}
			if n := recovered.Load(); n != 1 {
				t.Fatalf("Recovered called %d times; want once, when the server answered again", n)
			}
			// The silence began with the first sync the server did not
			// answer: within a heartbeat (and its jitter) of going down.
			if since := time.Unix(0, lastSilence.Load()); since.Before(down) || since.After(down.Add(hb+hb/10)) {
				t.Fatalf("Recovered's silence began at +%v; want the first refused sync, within %v of +%v", since.Sub(start), hb+hb/10, down.Sub(start))
			}
		})
	}
}

// TestRegistrarAnsweredFailuresAreNoSilence: heartbeats the server
// answered 429 (busy, as after a restart under a fleet's reconnections)
// are failures, retried with backoff, but not a silence: the streams,
// on a connection that was answering, are not made to resync (each
// agent's pods listed again, adding load to the busy server).
func TestRegistrarAnsweredFailuresAreNoSilence(t *testing.T) {
	const hb = 10 * time.Second
	start, clk, f, r, recovered := runRegistrar(t, hb)
	stepUntil(clk, start.Add(time.Minute), 100*time.Millisecond)
	if !r.Registered() {
		t.Fatal("not registered after a minute with the server up")
	}
	f.mu.Lock()
	f.busy = true
	f.mu.Unlock()
	busy := clk.Now()
	stepUntil(clk, busy.Add(time.Minute), 100*time.Millisecond)
	if n := f.callsBetween(busy, clk.Now()); n < 2 {
		t.Fatalf("%d calls while the server answered 429 for a minute; want the registrar to keep trying", n)
	}
	f.mu.Lock()
	f.busy = false
	f.mu.Unlock()
	back := clk.Now()
	stepUntil(clk, back.Add(hb+time.Second), 100*time.Millisecond)
	if beats := f.beatsSince(back); beats == 0 {
		t.Fatal("no heartbeat after the server took calls again")
	}
	if n := recovered.Load(); n != 0 {
		t.Fatalf("Recovered called %d times after 429s; want 0 (the server answered every call)", n)
	}
	// A silence after that still counts.
	f.setDown(true)
	stepUntil(clk, clk.Now().Add(time.Minute), 100*time.Millisecond)
	f.setDown(false)
	stepUntil(clk, clk.Now().Add(hb+time.Second), 100*time.Millisecond)
	if n := recovered.Load(); n != 1 {
		t.Fatalf("Recovered called %d times after refused calls; want 1", n)
	}
}

// TestRegistrarRewritesConditionsWhenTheServerAsks: a lightweight
// heartbeat answered 205 (the server marked the node Unknown while its
// beats were stuck on a silent link, though none failed) is followed at
// once by the full conditions.
func TestRegistrarRewritesConditionsWhenTheServerAsks(t *testing.T) {
	const hb = 10 * time.Second
	start, clk, f, _, recovered := runRegistrar(t, hb)
	stepUntil(clk, start.Add(time.Minute), 100*time.Millisecond)
	// The last step may have fired a beat: let it end (the registrar
	// back on its timer) before the server asks, or the beat under way
	// races the question.
	clk.BlockUntil(1)
	asked := clk.Now()
	f.mu.Lock()
	f.wantStatus = true
	f.mu.Unlock()
	stepUntil(clk, asked.Add(hb+time.Second), 100*time.Millisecond)
	var n int
	for _, w := range f.readyWrites() {
		if w.at.After(asked) && w.status == api.ConditionTrue {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d Ready=True writes after the server asked; want 1", n)
	}
	if n := recovered.Load(); n != 1 {
		t.Fatalf("Recovered called %d times; want once, after the server asked", n)
	}
	// No sync failed: the silence began with the last sync that worked
	// before the server's question (which may have been at the same
	// instant of a clock that did not move).
	if since := time.Unix(0, lastSilence.Load()); since.After(asked) || since.Before(asked.Add(-(hb + hb/10))) {
		t.Fatalf("Recovered's silence began at +%v; want the last sync at or before +%v", since.Sub(start), asked.Sub(start))
	}
}

// TestRegistrarSkipsBeatsWhileReportsAreHeard: the server counts the
// agent's usage reports (every 15 s) as heartbeats, so the registrar sends
// a beat only when none was heard for most of a heartbeat period: about
// one call in 15 s instead of one in 10 s, with the server never left
// more than a heartbeat (and its jitter) without a word. A report
// answered 205 brings the conditions at once, and when the reports stop
// the beats are back every heartbeat.
func TestRegistrarSkipsBeatsWhileReportsAreHeard(t *testing.T) {
	const hb, every, step = 10 * time.Second, 15 * time.Second, 100 * time.Millisecond
	start, clk, f, r, _ := runRegistrar(t, hb)
	stepUntil(clk, start.Add(time.Minute), step)
	if !r.Registered() {
		t.Fatal("not registered after a minute with the server up")
	}
	from := clk.Now()
	end := from.Add(5 * time.Minute)
	var reports []time.Time
	next := from.Add(3 * time.Second)
	for clk.Now().Before(end) {
		clk.BlockUntil(1)
		clk.Advance(step)
		if now := clk.Now(); !now.Before(next) {
			r.Heard(now)
			reports = append(reports, now)
			next = next.Add(every)
		}
	}
	clk.BlockUntil(1)
	calls := f.callsBetween(from, end)
	if want := int(end.Sub(from) / every); calls < want-3 || calls > want+3 {
		t.Fatalf("%d calls in 5 minutes with a report heard every 15 s; want about %d (one every 10 s is %d)", calls, want, int(end.Sub(from)/hb))
	}
	// Every call and report in order: no silence over a heartbeat.
	if gap, at := f.longestSilence(reports, from, end); gap > hb+hb/10+step {
		t.Fatalf("the server heard nothing for %v (from %v); want at most a heartbeat and its jitter", gap, at.Sub(start))
	}

	// A report answered 205: the full conditions at once, on a clock
	// that does not move.
	asked := clk.Now()
	r.Heard(asked)
	r.StatusWanted()
	deadline := time.Now().Add(10 * time.Second)
	for {
		w := f.readyWrites()
		if last := w[len(w)-1]; last.at.Equal(asked) && last.status == api.ConditionTrue {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Ready writes %+v; want a True one at the instant the server asked", w)
		}
		time.Sleep(time.Millisecond)
	}

	// The reports stop: a beat every heartbeat again.
	quiet := asked.Add(hb)
	stepUntil(clk, quiet.Add(time.Minute), step)
	if n := f.beatsSince(quiet); n < 5 || n > 7 {
		t.Fatalf("%d beats in the minute after the reports stopped; want about 6", n)
	}
}

// TestRegistrarBeatsWhileTheServerShedsStatusWrites: while the server
// refuses status writes (429, its in-flight slots full) but serves the
// lightweight beat, a node whose full status write is due (here the
// periodic snapshot) is still heard every heartbeat, so the server does
// not mark it unreachable and evict its pods; the write lands once the
// server takes it again. Retrying the write alone left a fleet silent.
func TestRegistrarBeatsWhileTheServerShedsStatusWrites(t *testing.T) {
	const hb, step = 10 * time.Second, 100 * time.Millisecond
	start, clk, f, r, _ := runRegistrar(t, hb)
	stepUntil(clk, start.Add(time.Minute), step)
	if !r.Registered() {
		t.Fatal("not registered after a minute with the server up")
	}
	f.mu.Lock()
	f.shedding = true
	f.mu.Unlock()
	from := clk.Now()
	end := start.Add(8 * time.Minute) // past the snapshot, due 5 minutes after registration
	stepUntil(clk, end, step)
	f.mu.Lock()
	beats := append([]time.Time(nil), f.beats...)
	f.shedding = false
	f.mu.Unlock()
	last := from
	for _, b := range beats {
		if b.Before(from) {
			continue
		}
		if gap := b.Sub(last); gap > hb+hb/10+step {
			t.Fatalf("no beat for %v from %v while status writes were refused; want one every heartbeat", gap, last.Sub(start))
		}
		last = b
	}
	if gap := end.Sub(last); gap > hb+hb/10+step {
		t.Fatalf("no beat for the last %v of the refusals", gap)
	}
	for _, w := range f.readyWrites() {
		if w.at.After(from) {
			t.Fatalf("a Ready write at %v was taken while the server refused them", w.at.Sub(start))
		}
	}
	back := clk.Now()
	stepUntil(clk, back.Add(hb+hb/10+time.Second), step)
	written := false
	for _, w := range f.readyWrites() {
		written = written || w.at.After(back) && w.status == api.ConditionTrue
	}
	if !written {
		t.Fatal("the snapshot's Ready write did not follow within a heartbeat of the server taking writes again")
	}
}

// TestRegistrarLeavesBeatsToDueReports: with a usage report every two
// heartbeats, announced (ReportDue) before it goes out, the beat that
// would fall just before a report is left to it: the server hears one
// call a heartbeat period (beats and reports alike), never silent for
// more than a heartbeat and a quarter. A report announced but not heard
// leaves the beat a quarter heartbeat late, not missing.
func TestRegistrarLeavesBeatsToDueReports(t *testing.T) {
	const hb, every, step = 10 * time.Second, 20 * time.Second, 100 * time.Millisecond
	start, clk, f, r, _ := runRegistrar(t, hb)
	stepUntil(clk, start.Add(time.Minute), step)
	if !r.Registered() {
		t.Fatal("not registered after a minute with the server up")
	}
	from := clk.Now()
	end := from.Add(5 * time.Minute)
	var reports []time.Time
	next := from.Add(3 * time.Second)
	r.ReportDue(next)
	for clk.Now().Before(end) {
		clk.BlockUntil(1)
		clk.Advance(step)
		if now := clk.Now(); !now.Before(next) {
			r.Heard(now)
			reports = append(reports, now)
			next = next.Add(every)
			r.ReportDue(next)
		}
	}
	clk.BlockUntil(1)
	calls := f.callsBetween(from, end)
	// One beat between two reports (15), and the five-minute status
	// snapshot's beat and full write fall in the window: 17, or 18 when
	// the jitter puts one more beat in. Without ReportDue: 19 to 28.
	if want := int(end.Sub(from)/every) + 2; calls < want-2 || calls > want+1 {
		t.Fatalf("%d calls in 5 minutes with a report every 20 s; want %d or %d: one beat between two reports, and the status snapshot's two calls", calls, want, want+1)
	}
	if gap, at := f.longestSilence(reports, from, end); gap > hb+hb/4+step {
		t.Fatalf("the server heard nothing for %v (from %v); want at most a heartbeat and a quarter", gap, at.Sub(start))
	}

	// A report is announced, and never heard: the beat follows.
	due := clk.Now().Add(2 * time.Second)
	r.ReportDue(due)
	stepUntil(clk, due.Add(hb), step)
	if n := f.beatsSince(due.Add(-time.Second)); n == 0 {
		t.Fatalf("no beat within a heartbeat of a report that was due and never heard")
	}
}
