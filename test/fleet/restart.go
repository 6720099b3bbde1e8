package fleet

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// restart stops the server, starts it again and times the fleet's
// return: every agent heartbeating, then a new pod bound to every agent
// delivered.
func (r *run) restart(ctx context.Context) error {
	// The return's shape, every 2 s from the new process's start: a herd
	// shows as a flat start and a late step, a server that keeps up as a
	// steady climb.
	before := r.srv.Started()
	tctx, stopTimeline := context.WithCancel(ctx)
	defer stopTimeline()
	timeline := make(chan struct{})
	go func() {
		defer close(timeline)
		tick := time.NewTicker(2 * time.Second)
		defer tick.Stop()
		for {
			select {
			case <-tctx.Done():
				return
			case now := <-tick.C:
				st := r.srv.Started()
				if st.Equal(before) {
					continue // not started again yet
				}
				n := r.fleet.Count(func(a *Agent) bool { return a.LastBeat().After(st) })
				r.progress("restart at %v: %d of %d agents heartbeating", now.Sub(st).Round(100*time.Millisecond), n, r.cfg.Agents)
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
	r.rep.Restarted, r.rep.RestartDown, r.rep.RestartReady = true, started.Sub(t0), ready.Sub(started)
	a, err := r.sample()
	if err != nil {
		return err
	}
	beating := func(a *Agent) bool { return a.LastBeat().After(started) }
	r.progress("restart: stopped in %v, ready %v after the new process started", r.rep.RestartDown.Round(100*time.Millisecond), r.rep.RestartReady.Round(100*time.Millisecond))
	err = r.fleet.WaitFor(ctx, "heartbeating after the restart", beating, r.cfg.Timeout)
	stopTimeline()
	<-timeline
	if err != nil {
		return fmt.Errorf("%w\n%s", err, r.srv.LogTail())
	}
	r.rep.RestartBeats = time.Since(started)
	// What the return cost the new process: its counters start at zero.
	if text, err := r.serverMetrics(ctx); err == nil {
		r.rep.RestartHandshakes = [4]int{int(ParseSample(text, "skiff_tls_handshakes_total", `result="ok"`)), int(ParseSample(text, "skiff_tls_handshakes_resumed_total")),
			int(ParseSample(text, "skiff_tls_handshakes_total", `result="failed"`)), int(ParseSample(text, "skiff_tls_handshakes_expired_total"))}
		r.rep.Restart429s = int(ParseSample(text, "skiff_http_requests_total", `code="429"`))
		r.progress("restart: every agent heartbeating %v after the new process started; TLS handshakes %d ok (%d resumed), %d failed (%d of them waited out their deadline for a slot); %d requests answered 429 (%s)",
			r.rep.RestartBeats.Round(100*time.Millisecond), r.rep.RestartHandshakes[0], r.rep.RestartHandshakes[1], r.rep.RestartHandshakes[2], r.rep.RestartHandshakes[3], r.rep.Restart429s,
			tooManyByResource(text))
	}
	if _, err := r.bindAll(ctx, "after", r.cfg.Agents, max(r.cfg.BindRate, 1000)); err != nil {
		return err
	}
	if err := r.waitDelivered(ctx, "after", r.cfg.Agents); err != nil {
		return err
	}
	r.rep.RestartStreams = time.Since(started)
	b, err := r.sample()
	if err != nil {
		return err
	}
	r.rep.AfterRestart, r.rep.RestartCPU = b, CPUPercent(a.ProcStats, b.ProcStats)
	r.progress("restart: stopped in %v; from the new process's start: ready %v, every agent heartbeating %v, a new pod at every agent %v; server CPU %.1f%%, %v",
		r.rep.RestartDown, r.rep.RestartReady, r.rep.RestartBeats, r.rep.RestartStreams, r.rep.RestartCPU, b)
	return nil
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
