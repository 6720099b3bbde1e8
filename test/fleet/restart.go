package fleet

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"time"
)

// RestartReport is one restart's return, every duration from the new
// server process's start unless named otherwise.
type RestartReport struct {
	Down    time.Duration // SIGTERM → the new server process started
	Ready   time.Duration // → its /readyz answered the simulator
	Beats   time.Duration // → every agent heartbeated again
	Streams time.Duration // → a pod bound to every agent after it reached it
	// The new process's TLS handshakes and its requests answered 429,
	// until every agent heartbeated.
	Handshakes Handshakes
	TooMany    int
	CPU        float64 // the server's, from ready to every stream back
	After      Sample
	// Stalls names the files where a stall's goroutines went (see
	// Config.ServerPprof), Snapshots those kept at Config.SnapshotAt.
	Stalls, Snapshots []string
}

// Handshakes are a server's TLS handshakes from its metrics: done (of
// those, resumed) and failed (of those, past their deadline waiting for
// a slot, and left by their client while waiting).
type Handshakes struct{ OK, Resumed, Failed, Expired, Abandoned int }

func (rr RestartReport) String() string {
	s := fmt.Sprintf("stopped in %v; from the new process's start: ready %v, every agent heartbeating %v, a new pod at every agent %v; server CPU %.1f%%, %v",
		rr.Down.Round(time.Millisecond), rr.Ready.Round(time.Millisecond), rr.Beats.Round(time.Millisecond), rr.Streams.Round(time.Millisecond), rr.CPU, rr.After)
	if len(rr.Stalls) > 0 {
		s += "; stalled, goroutines in " + strings.Join(rr.Stalls, ", ")
	}
	if len(rr.Snapshots) > 0 {
		s += "; goroutines at the snapshot in " + strings.Join(rr.Snapshots, ", ")
	}
	return s
}

// stallTicks is how many 2 s ticks of the restart's timeline without a
// new agent heartbeating make a stall worth a snapshot.
const stallTicks = 5

// restart stops the server, starts it again and times the fleet's
// return: every agent heartbeating, then a new pod bound to every agent
// delivered. n numbers the restart (from 1) in names and lines.
func (r *run) restart(ctx context.Context, n int) error {
	var rr RestartReport
	// The return's shape, every 2 s from the new process's start: a herd
	// shows as a flat start and a late step, a server that keeps up as a
	// steady climb. A climb that stops short is a stall: its goroutines
	// are kept once.
	before := r.srv.Started()
	tctx, stopTimeline := context.WithCancel(ctx)
	timeline := make(chan struct{})
	defer func() {
		// The timeline's goroutine writes rr.Stalls: it has ended
		// before rr is read, on every return.
		stopTimeline()
		<-timeline
		r.rep.Restarts = append(r.rep.Restarts, rr)
	}()
	go func() {
		defer close(timeline)
		tick := time.NewTicker(2 * time.Second)
		defer tick.Stop()
		last, flat, kept := -1, 0, false
		for {
			select {
			case <-tctx.Done():
				return
			case now := <-tick.C:
				st := r.srv.Started()
				if st.Equal(before) {
					continue // not started again yet
				}
				beating := r.fleet.Count(func(a *Agent) bool { return a.LastBeat().After(st) })
				r.progress("restart %d at %v: %d of %d agents heartbeating", n, now.Sub(st).Round(100*time.Millisecond), beating, r.cfg.Agents)
				if beating == last && beating < r.cfg.Agents {
					flat++
				} else {
					flat = 0
				}
				last = beating
				if flat >= stallTicks && !kept {
					kept = true
					rr.Stalls = r.keepStall(tctx, fmt.Sprintf("restart-%d", n), "the fleet stopped coming back")
				}
			}
		}
	}()
	t0 := time.Now()
	if err := r.srv.Restart(time.Minute); err != nil {
		return err
	}
	// Every figure counts from the new process's start, not from when
	// its /readyz answered this process: the fleet reconnects from the
	// moment the server listens, and a reconnect storm can hold the
	// simulator's own readiness probe back for most of it.
	ready, started := time.Now(), r.srv.Started()
	rr.Down, rr.Ready = started.Sub(t0), ready.Sub(started)
	if at := r.cfg.SnapshotAt; at > 0 {
		// What both processes are doing at a set point of a restart
		// that is not over yet (a stream stuck since its reconnect
		// shows there, before its deadline ends it).
		sctx, stopSnapshot := context.WithCancel(ctx)
		snapshot := make(chan struct{})
		defer func() {
			// Before the first defer reads rr: only this goroutine
			// writes rr.Snapshots.
			stopSnapshot()
			<-snapshot
		}()
		go func() {
			defer close(snapshot)
			t := time.NewTimer(time.Until(started.Add(at)))
			defer t.Stop()
			select {
			case <-sctx.Done():
				return
			case <-t.C:
			}
			rr.Snapshots = r.keepStall(sctx, fmt.Sprintf("restart-%d-at-%v", n, at), fmt.Sprintf("%v after the new process started", at))
		}()
	}
	a, err := r.sample()
	if err != nil {
		return err
	}
	beating := func(a *Agent) bool { return a.LastBeat().After(started) }
	r.progress("restart %d: stopped in %v, ready %v after the new process started", n, rr.Down.Round(100*time.Millisecond), rr.Ready.Round(100*time.Millisecond))
	err = r.fleet.WaitFor(ctx, "heartbeating after the restart", beating, r.cfg.Timeout)
	stopTimeline()
	<-timeline
	if err != nil {
		return fmt.Errorf("restart %d: %w\n%s", n, err, r.srv.LogTail())
	}
	rr.Beats = time.Since(started)
	// What the return cost the new process: its counters start at zero.
	if text, err := r.serverMetrics(ctx); err == nil {
		rr.Handshakes = Handshakes{OK: int(ParseSample(text, "skiff_tls_handshakes_total", `result="ok"`)), Resumed: int(ParseSample(text, "skiff_tls_handshakes_resumed_total")),
			Failed: int(ParseSample(text, "skiff_tls_handshakes_total", `result="failed"`)), Expired: int(ParseSample(text, "skiff_tls_handshakes_expired_total")),
			Abandoned: int(ParseSample(text, "skiff_tls_handshakes_abandoned_total"))}
		hs := rr.Handshakes
		rr.TooMany = int(ParseSample(text, "skiff_http_requests_total", `code="429"`))
		r.progress("restart %d: every agent heartbeating %v after the new process started; TLS handshakes %d ok (%d resumed), %d failed (%d of them waited out their deadline for a slot, %d were left by their client while waiting); %d requests answered 429 (%s)",
			n, rr.Beats.Round(100*time.Millisecond), hs.OK, hs.Resumed, hs.Failed, hs.Expired, hs.Abandoned, rr.TooMany,
			tooManyByResource(text))
	}
	// The first restart's pods keep the names runs before several
	// restarts gave them.
	prefix := "after"
	if n > 1 {
		prefix = fmt.Sprintf("after%d", n)
	}
	if _, err := r.bindAll(ctx, prefix, r.cfg.Agents, max(r.cfg.BindRate, 1000)); err != nil {
		return err
	}
	if err := r.waitDelivered(ctx, prefix, r.cfg.Agents); err != nil {
		return err
	}
	rr.Streams = time.Since(started)
	b, err := r.sample()
	if err != nil {
		return err
	}
	if text, err := r.serverMetrics(ctx); err == nil {
		r.progress("restart %d: %s", n, streamEnds(text))
	}
	rr.After, rr.CPU = b, CPUPercent(a.ProcStats, b.ProcStats)
	r.progress("restart %d: %v", n, rr)
	r.progressSeen(fmt.Sprintf("restart %d", n))
	return nil
}

// keepStall writes what the server and the simulator were doing into
// the run's directory: both processes' goroutines (counted by stack)
// and the server's heap, the server's only when Config.ServerPprof
// names its pprof address. why says what moved it, in the progress. It
// returns the files written.
func (r *run) keepStall(ctx context.Context, name, why string) []string {
	var kept []string
	own := filepath.Join(r.cfg.Dir, name+"-simulator-goroutines.txt")
	if f, err := os.Create(own); err == nil {
		err = pprof.Lookup("goroutine").WriteTo(f, 1)
		if cerr := f.Close(); err == nil && cerr == nil {
			kept = append(kept, own)
		}
	}
	if r.cfg.ServerPprof == "" {
		return kept
	}
	for _, p := range []struct{ file, path string }{
		{name + "-server-goroutines.txt", "/debug/pprof/goroutine?debug=1"},
		{name + "-server-heap.pb.gz", "/debug/pprof/heap"},
	} {
		file := filepath.Join(r.cfg.Dir, p.file)
		if err := fetchTo(ctx, "http://"+r.cfg.ServerPprof+p.path, file); err != nil {
			r.progress("%s: %v", name, err)
			continue
		}
		kept = append(kept, file)
	}
	r.progress("%s: %s; kept %s", name, why, strings.Join(kept, ", "))
	return kept
}

// fetchTo writes the body of a GET of url to file.
func fetchTo(ctx context.Context, url, file string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// tooManyByResource lists the server's 429 answers by resource and verb,
// most first ("heartbeat create 5, ..."), from its /metrics text.
func tooManyByResource(text []byte) string {
	type row struct {
		what string
		n    float64
	}
	var rows []row
	for line := range strings.Lines(string(text)) {
		rest, ok := strings.CutPrefix(line, "skiff_http_requests_total{")
		if !ok || !strings.Contains(rest, `code="429"`) {
			continue
		}
		labels, value, ok := strings.Cut(rest, "} ")
		if !ok {
			continue
		}
		n, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil || n == 0 {
			continue
		}
		var res, verb string
		for kv := range strings.SplitSeq(labels, ",") {
			k, v, _ := strings.Cut(kv, "=")
			switch k {
			case "resource":
				res = strings.Trim(v, `"`)
			case "verb":
				verb = strings.Trim(v, `"`)
			}
		}
		rows = append(rows, row{res + " " + verb, n})
	}
	slices.SortStableFunc(rows, func(a, b row) int {
		switch {
		case a.n > b.n:
			return -1
		case a.n < b.n:
			return 1
		}
		return 0
	})
	parts := make([]string, len(rows))
	for i, r := range rows {
		parts[i] = fmt.Sprintf("%s %.0f", r.what, r.n)
	}
	return strings.Join(parts, ", ")
}

// streamEnds says why the server's shared watch streams and their
// watches ended since it started (skiff_watch_stream_ends_total,
// skiff_watch_errors_total): a stream an agent opens again resumes its
// pod watch, which may list again.
func streamEnds(text []byte) string {
	var b strings.Builder
	b.WriteString("shared streams ended:")
	for _, reason := range []string{"client", "write", "done"} {
		fmt.Fprintf(&b, " %s %d", reason, int(ParseSample(text, "skiff_watch_stream_ends_total", `reason="`+reason+`"`)))
	}
	b.WriteString("; their watches ended with an ERROR:")
	for _, reason := range []string{"too_slow", "expired", "closed", "other"} {
		fmt.Fprintf(&b, " %s %d", reason, int(ParseSample(text, "skiff_watch_errors_total", `reason="`+reason+`"`)))
	}
	return b.String()
}
