package prober

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/internal/clock"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// scriptedExec answers each Exec with the exit code the test sends on
// answers; every call is announced on calls first.
type scriptedExec struct {
	calls   chan []string
	answers chan int
}

func newScriptedExec() *scriptedExec {
	return &scriptedExec{calls: make(chan []string, 16), answers: make(chan int)}
}

func (s *scriptedExec) Exec(ctx context.Context, id string, cmd []string, timeout time.Duration) (int, []byte, error) {
	s.calls <- cmd
	select {
	case code := <-s.answers:
		if code < 0 {
			return -1, nil, errors.New("exec failed")
		}
		return code, []byte("out"), nil
	case <-ctx.Done():
		return -1, nil, ctx.Err()
	}
}

// probeHarness runs a Manager on a fake clock and records updates.
type probeHarness struct {
	t       *testing.T
	clock   *clock.Fake
	exec    *scriptedExec
	m       *Manager
	updates chan Update
}

func newProbeHarness(t *testing.T, podIP string) *probeHarness {
	h := &probeHarness{t: t, clock: clock.NewFake(t0), exec: newScriptedExec(), updates: make(chan Update, 16)}
	m, err := New(Config{Runtime: h.exec, Clock: h.clock, PodIP: func(string) string { return podIP },
		OnUpdate: func(u Update) { h.updates <- u }})
	if err != nil {
		t.Fatal(err)
	}
	h.m = m
	t.Cleanup(m.Stop)
	return h
}

const waitLimit = 10 * time.Second

// answer waits for the next exec probe and answers it with code.
func (h *probeHarness) answer(wantCmd string, code int) {
	h.t.Helper()
	select {
	case cmd := <-h.exec.calls:
		if cmd[0] != wantCmd {
			h.t.Fatalf("exec %v; want %s", cmd, wantCmd)
		}
		h.exec.answers <- code
	case <-time.After(waitLimit):
		h.t.Fatalf("no exec of %s within %v", wantCmd, waitLimit)
	}
}

func (h *probeHarness) update() Update {
	h.t.Helper()
	select {
	case u := <-h.updates:
		return u
	case <-time.After(waitLimit):
		h.t.Fatalf("no probe update within %v", waitLimit)
	}
	return Update{}
}

func (h *probeHarness) noExec() {
	h.t.Helper()
	select {
	case cmd := <-h.exec.calls:
		h.t.Fatalf("unexpected exec %v", cmd)
	default:
	}
}

func execProbe(cmd string, period, success, failure int32) *api.Probe {
	return &api.Probe{ProbeHandler: api.ProbeHandler{Exec: &api.ExecAction{Command: []string{cmd}}},
		PeriodSeconds: period, SuccessThreshold: success, FailureThreshold: failure}
}

func podWith(c api.Container) *api.Pod {
	c.Name = "app"
	return &api.Pod{ObjectMeta: api.ObjectMeta{UID: "u1", Name: "p", Namespace: "default"}, Spec: api.PodSpec{Containers: []api.Container{c}}}
}

func TestReadinessThresholdsFakeClock(t *testing.T) {
	h := newProbeHarness(t, "")
	pod := podWith(api.Container{ReadinessProbe: execProbe("ready", 2, 2, 2)})
	h.m.UpdatePod(pod, []Container{{Name: "app", ID: "c1", StartedAt: t0}})
	if h.m.Ready("u1", "app", "c1") {
		t.Fatal("Ready before any probe = true; want false")
	}
	h.answer("ready", 0) // at start; 1 of 2 successes
	h.clock.Advance(2 * time.Second)
	h.answer("ready", 0)
	if u := h.update(); u.Type != Readiness || u.Result != Success || u.ContainerID != "c1" {
		t.Fatalf("update = %+v; want Readiness Success on c1", u)
	}
	if !h.m.Ready("u1", "app", "c1") || h.m.Ready("u1", "app", "c0") {
		t.Fatal("Ready(c1) should be true and Ready of another instance false")
	}
	h.clock.Advance(2 * time.Second)
	h.answer("ready", 1) // 1 of 2 failures: still ready
	h.clock.Advance(2 * time.Second)
	h.answer("ready", -1) // an exec error counts as a failure
	if u := h.update(); u.Result != Failure {
		t.Fatalf("update = %+v; want Failure", u)
	}
	if h.m.Ready("u1", "app", "c1") || h.m.LivenessFailed("u1", "app", "c1") {
		t.Fatal("after readiness failure: want not ready and not liveness-failed")
	}
}

func TestLivenessFailureHoldsUntilNewInstanceFakeClock(t *testing.T) {
	h := newProbeHarness(t, "")
	pod := podWith(api.Container{LivenessProbe: execProbe("alive", 1, 5 /*forced to 1*/, 2)})
	h.m.UpdatePod(pod, []Container{{Name: "app", ID: "c1", StartedAt: t0}})
	h.answer("alive", 0)
	h.clock.Advance(time.Second)
	h.answer("alive", 1)
	if h.m.LivenessFailed("u1", "app", "c1") {
		t.Fatal("LivenessFailed after 1 of 2 failures")
	}
	h.clock.Advance(time.Second)
	h.answer("alive", 1)
	if u := h.update(); u.Type != Liveness || u.Result != Failure {
		t.Fatalf("update = %+v; want Liveness Failure", u)
	}
	if !h.m.LivenessFailed("u1", "app", "c1") {
		t.Fatal("LivenessFailed = false after 2 failures")
	}
	h.clock.Advance(time.Second) // on hold: no probe of c1
	h.m.UpdatePod(pod, []Container{{Name: "app", ID: "c2", StartedAt: h.clock.Now()}})
	h.answer("alive", 0) // the new instance starts over at once
	if h.m.LivenessFailed("u1", "app", "c2") {
		t.Fatal("new instance inherited the liveness failure")
	}
	h.noExec()
}

func TestStartupGatesReadinessAndInitialDelayFakeClock(t *testing.T) {
	h := newProbeHarness(t, "")
	c := api.Container{StartupProbe: execProbe("started", 1, 1, 3), ReadinessProbe: execProbe("ready", 1, 1, 3)}
	c.ReadinessProbe.InitialDelaySeconds = 3
	pod := podWith(c)
	h.m.UpdatePod(pod, []Container{{Name: "app", ID: "c1", StartedAt: t0}})
	h.answer("started", 1)
	h.noExec() // readiness waits for startup
	h.clock.Advance(time.Second)
	h.answer("started", 0)
	if u := h.update(); u.Type != Startup || u.Result != Success {
		t.Fatalf("update = %+v; want Startup Success", u)
	}
	if !h.m.Started("u1", "app", "c1") || h.m.Ready("u1", "app", "c1") {
		t.Fatal("want started and not yet ready")
	}
	// readiness may run from t0+3s only; the startup worker is done
	h.clock.Advance(time.Second) // t0+2s: nothing due
	h.clock.Advance(time.Second) // t0+3s: readiness
	h.answer("ready", 0)
	if u := h.update(); u.Type != Readiness || u.Result != Success {
		t.Fatalf("update = %+v; want Readiness Success", u)
	}
	h.noExec()
	h.m.RemovePod("u1")
	if h.m.Ready("u1", "app", "c1") != true { // no probes known: ready by default
		t.Fatal("after RemovePod the container has no probes and counts as ready")
	}
}

func TestStartupFailureCountsAsLivenessFailureFakeClock(t *testing.T) {
	h := newProbeHarness(t, "")
	pod := podWith(api.Container{StartupProbe: execProbe("started", 1, 1, 1), LivenessProbe: execProbe("alive", 1, 1, 1)})
	h.m.UpdatePod(pod, []Container{{Name: "app", ID: "c1", StartedAt: t0}})
	h.answer("started", 1)
	if u := h.update(); u.Type != Startup || u.Result != Failure {
		t.Fatalf("update = %+v; want Startup Failure", u)
	}
	if !h.m.LivenessFailed("u1", "app", "c1") {
		t.Fatal("a failed startup probe must make the kubelet restart the container")
	}
	h.noExec() // liveness never ran
}

// TestHTTPAndTCPProbesLoopback probes a server on 127.0.0.1 (the pod IP
// in this test).
func TestHTTPAndTCPProbesLoopback(t *testing.T) {
	var mu sync.Mutex
	status := http.StatusOK
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if r.URL.Path != "/healthz" || r.Header.Get("X-Probe") != "yes" {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		w.WriteHeader(status)
	}))
	defer srv.Close()
	_, portStr, _ := net.SplitHostPort(srv.Listener.Addr().String())
	port, _ := strconv.Atoi(portStr)
	h := newProbeHarness(t, "127.0.0.1")
	c := api.Container{
		Ports: []api.ContainerPort{{Name: "web", ContainerPort: int32(port)}},
		ReadinessProbe: &api.Probe{ProbeHandler: api.ProbeHandler{HTTPGet: &api.HTTPGetAction{Path: "healthz", Port: api.FromString("web"),
			HTTPHeaders: []api.HTTPHeader{{Name: "X-Probe", Value: "yes"}}}}, PeriodSeconds: 1, FailureThreshold: 1},
		LivenessProbe: &api.Probe{ProbeHandler: api.ProbeHandler{TCPSocket: &api.TCPSocketAction{Port: api.FromInt(int32(port))}}, PeriodSeconds: 1, FailureThreshold: 1},
	}
	pod := podWith(c)
	h.m.UpdatePod(pod, []Container{{Name: "app", ID: "c1", StartedAt: t0}})
	if u := h.update(); u.Type != Readiness || u.Result != Success {
		t.Fatalf("update = %+v; want Readiness Success", u)
	}
	mu.Lock()
	status = http.StatusServiceUnavailable
	mu.Unlock()
	h.clock.Advance(time.Second)
	if u := h.update(); u.Type != Readiness || u.Result != Failure {
		t.Fatalf("update = %+v; want Readiness Failure after a 503", u)
	}
	srv.Close() // the port closes: tcpSocket fails
	h.clock.Advance(time.Second)
	for {
		u := h.update()
		if u.Type == Liveness {
			if u.Result != Failure {
				t.Fatalf("liveness update = %+v; want Failure", u)
			}
			break
		}
	}
}

func TestResolvePort(t *testing.T) {
	c := &api.Container{Ports: []api.ContainerPort{{Name: "http", ContainerPort: 8080}}}
	for _, tc := range []struct {
		in   api.IntOrString
		want int
		ok   bool
	}{
		{api.FromInt(80), 80, true}, {api.FromString("http"), 8080, true}, {api.FromString("81"), 81, true},
		{api.FromString("nope"), 0, false}, {api.FromInt(0), 0, false}, {api.FromInt(70000), 0, false},
	} {
		got, err := resolvePort(tc.in, c)
		if got != tc.want || (err == nil) != tc.ok {
			t.Errorf("resolvePort(%v) = %d, %v; want %d ok=%v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}
