package status

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skiffhq/skiff/agent/config"
	"github.com/skiffhq/skiff/agent/internal/agenttest"
	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/api/client"
	"github.com/skiffhq/skiff/internal/backoff"
	"github.com/skiffhq/skiff/internal/clock"
)

var quiet = slog.New(slog.DiscardHandler)

const (
	batch    = 100 * time.Millisecond
	resync   = 10 * time.Second
	retryMax = time.Second
)

// recordingClient is the real node client, recording the writes it makes.
type recordingClient struct {
	*client.Client
	mu  sync.Mutex
	ops []string
}

func (r *recordingClient) record(op string) {
	r.mu.Lock()
	r.ops = append(r.ops, op)
	r.mu.Unlock()
}

func (r *recordingClient) writes() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.ops...)
}

func (r *recordingClient) UpdateStatus(ctx context.Context, obj api.Object) (api.Object, error) {
	r.record("status " + obj.GetObjectMeta().Name)
	return r.Client.UpdateStatus(ctx, obj)
}

func (r *recordingClient) Create(ctx context.Context, obj api.Object) (api.Object, error) {
	r.record("create " + obj.GetObjectMeta().Name)
	return r.Client.Create(ctx, obj)
}

func (r *recordingClient) Do(ctx context.Context, method, path string, body io.Reader) (*http.Response, error) {
	r.record(strings.ToLower(method) + " " + path[strings.LastIndex(path, "/")+1:])
	return r.Client.Do(ctx, method, path, body)
}

type fixture struct {
	phaseDelay time.Duration
	srv        *agenttest.Server
	rc         *recordingClient
	clk        *clock.Fake
	m          *Manager
	rounds     chan struct{}
}

// start starts a manager whose phase changes wait the batch delay too,
// so each test steps every write with round.
func start(t *testing.T) *fixture { return startWithPhaseDelay(t, batch) }

func startWithPhaseDelay(t *testing.T, phaseDelay time.Duration) *fixture {
	t.Helper()
	srv := agenttest.StartServer(t)
	f := &fixture{phaseDelay: phaseDelay, srv: srv, rc: &recordingClient{Client: srv.NodeClient("n1")}, clk: clock.NewFake(time.Unix(1e9, 0)), rounds: make(chan struct{}, 100)}
	m, err := New(Config{Client: f.rc, NodeName: "n1", Clock: f.clk, BatchDelay: batch, PhaseChangeDelay: f.phaseDelay, ResyncPeriod: resync,
		Backoff: backoff.Backoff{Min: retryMax / 4, Max: retryMax}, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	m.afterSync = func() { f.rounds <- struct{}{} }
	f.m = m
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return f
}

// round lets the batch delay pass and waits for the writes it triggers.
func (f *fixture) round(t *testing.T, d time.Duration) {
	t.Helper()
	f.clk.BlockUntil(2) // the resync ticker and the batch timer
	f.clk.Advance(d)
	select {
	case <-f.rounds:
	case <-time.After(20 * time.Second):
		t.Fatal("no sync round in 20s")
	}
}

func running(msg string) api.PodStatus {
	return api.PodStatus{Phase: api.PodRunning, Message: msg, HostIP: "10.0.0.1",
		Conditions: []api.PodCondition{{Type: api.PodReady, Status: "True"}}}
}

func TestStatusCoalescesAndSkipsEqualWritesRealServer(t *testing.T) {
	f := start(t)
	pod := f.srv.CreatePod(agenttest.Pod("p", "n1"))
	for i := 0; i < 10; i++ {
		f.m.SetPodStatus(pod, running(fmt.Sprint(i)))
	}
	f.round(t, batch)
	if got := f.rc.writes(); len(got) != 1 || got[0] != "status p" {
		t.Fatalf("writes after 10 updates = %q; want one status write", got)
	}
	cur := f.srv.GetPod("default", "p")
	if cur.Status.Message != "9" || cur.Status.Phase != api.PodRunning {
		t.Fatalf("server status = %s %q; want Running \"9\"", cur.Status.Phase, cur.Status.Message)
	}

	// The server's own status, given again for a fresh pod entry, is
	// not written.
	other := f.srv.CreatePod(agenttest.Pod("q", "n1"))
	f.m.SetPodStatus(other, other.Status)
	f.round(t, batch)
	if got := f.rc.writes(); len(got) != 1 {
		t.Fatalf("writes = %q; want no write of a status equal to the server's", got)
	}
}

// TestStatusPhaseChangeWrittenAtOnceRealServer: with the default phase
// change delay (0), a status that makes a Pending pod Running is written
// without waiting for the batch delay; a later change that keeps the
// phase and readiness waits for it, and several such changes make one
// write.
func TestStatusPhaseChangeWrittenAtOnceRealServer(t *testing.T) {
	f := startWithPhaseDelay(t, 0)
	pod := f.srv.CreatePod(agenttest.Pod("p", "n1"))
	f.m.SetPodStatus(pod, running("up"))
	select {
	case <-f.rounds:
	case <-time.After(20 * time.Second):
		t.Fatal("the phase change was not written without advancing the clock")
	}
	if got := f.rc.writes(); len(got) != 1 || got[0] != "status p" {
		t.Fatalf("writes = %q; want one status write", got)
	}
	if cur := f.srv.GetPod("default", "p"); cur.Status.Phase != api.PodRunning {
		t.Fatalf("server phase = %s; want Running", cur.Status.Phase)
	}
	for i := 0; i < 5; i++ {
		f.m.SetPodStatus(pod, running(fmt.Sprint("still ", i)))
	}
	f.clk.BlockUntil(2) // the resync ticker and the batch timer
	if got := f.rc.writes(); len(got) != 1 {
		t.Fatalf("writes = %q before the batch delay; want none beyond the first", got)
	}
	f.round(t, batch)
	if got := f.rc.writes(); len(got) != 2 {
		t.Fatalf("writes = %q; want the five same-phase changes in one write", got)
	}
	if cur := f.srv.GetPod("default", "p"); cur.Status.Message != "still 4" {
		t.Fatalf("server message = %q; want \"still 4\"", cur.Status.Message)
	}
}

func TestStatusQueuedWhileServerDownRealServer(t *testing.T) {
	f := start(t)
	pod := f.srv.CreatePod(agenttest.Pod("p", "n1"))
	f.srv.Stop()
	f.m.SetPodStatus(pod, running("while down"))
	f.round(t, batch)
	for i := 0; i < 3; i++ {
		f.round(t, retryMax) // each retry fails
	}
	f.srv.Start()
	agenttest.Pump(t, f.clk, retryMax, "the status written after the restart", func() bool {
		return f.srv.GetPod("default", "p").Status.Message == "while down"
	})
}

func TestStatusConfirmsGracefulDeletionRealServer(t *testing.T) {
	f := start(t)
	f.srv.CreatePod(agenttest.Pod("p", "n1"))
	if err := f.srv.Admin.Delete(context.Background(), agenttest.Pods(), "default", "p", client.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := f.srv.GetPod("default", "p")
	if pod == nil || pod.DeletionTimestamp == nil {
		t.Fatal("a graceful delete of a bound pod did not set deletionTimestamp")
	}
	f.m.SetPodStatus(pod, api.PodStatus{Phase: api.PodFailed, Reason: "Terminated"})
	f.m.PodTerminated(pod)
	f.round(t, batch)
	if got := strings.Join(f.rc.writes(), ", "); got != "status p, delete p" {
		t.Fatalf("writes = %s; want the final status, then the delete", got)
	}
	if p := f.srv.GetPod("default", "p"); p != nil {
		t.Fatalf("pod still exists after the deletion was confirmed (deletionTimestamp %v)", p.DeletionTimestamp)
	}
}

// TestStatusDoesNotDeleteARecreatedPodRealServer: a terminated pod whose
// name now belongs to a new pod (another UID) is left alone.
func TestStatusDoesNotDeleteARecreatedPodRealServer(t *testing.T) {
	f := start(t)
	old := f.srv.CreatePod(agenttest.Pod("p", "n1"))
	zero := int64(0)
	if err := f.srv.Admin.Delete(context.Background(), agenttest.Pods(), "default", "p", client.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	f.srv.CreatePod(agenttest.Pod("p", "n1"))
	old.DeletionTimestamp = api.NewTimePtr(time.Now())
	f.m.PodTerminated(old)
	f.round(t, batch)
	// The agent's copy is the old pod, so a delete may be tried, but its
	// preconditions (UID, resourceVersion) make the server refuse it.
	if p := f.srv.GetPod("default", "p"); p == nil || p.UID == old.UID {
		t.Fatalf("the new pod of the same name was deleted (%v)", p)
	}
	if got := f.rc.writes(); len(got) > 1 {
		t.Fatalf("writes = %q; want at most the refused delete", got)
	}
}

const staticManifest = "apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec: {containers: [{name: c, image: nginx:%s}]}\n"

func staticPod(t *testing.T, version string) *api.Pod {
	t.Helper()
	p, err := config.StaticPodFromFile("web.yaml", []byte(fmt.Sprintf(staticManifest, version)), "n1")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestStatusMirrorPodLifecycleRealServer(t *testing.T) {
	f := start(t)
	s1 := staticPod(t, "1")
	f.m.SetPodStatus(s1, running("static"))
	f.round(t, batch)
	mirror := f.srv.GetPod("default", "web-n1")
	if mirror == nil || mirror.Annotations[api.MirrorPodAnnotation] != config.StaticPodHash(s1) || mirror.Spec.NodeName != "n1" {
		t.Fatalf("mirror pod = %+v; want one annotated with the static pod's hash, bound to n1", mirror)
	}
	if mirror.UID == s1.UID || mirror.Status.Message != "static" {
		t.Fatalf("mirror uid %q (static %q) status %q; want its own UID and the static pod's status", mirror.UID, s1.UID, mirror.Status.Message)
	}

	// Deleted by someone: recreated at the next resync.
	zero := int64(0)
	if err := f.srv.Admin.Delete(context.Background(), agenttest.Pods(), "default", "web-n1", client.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	agenttest.Pump(t, f.clk, resync, "the mirror pod recreated", func() bool {
		p := f.srv.GetPod("default", "web-n1")
		return p != nil && p.UID != mirror.UID && p.Status.Message == "static"
	})

	// The file is edited: a new static pod, the old one removed. The
	// mirror is replaced by one with the new hash.
	s2 := staticPod(t, "2")
	f.m.SetPodStatus(s2, running("static 2"))
	f.m.RemovePod(s1.UID)
	agenttest.Pump(t, f.clk, batch, "the mirror pod of the new static pod", func() bool {
		p := f.srv.GetPod("default", "web-n1")
		return p != nil && p.Annotations[api.MirrorPodAnnotation] == config.StaticPodHash(s2) && p.Status.Message == "static 2"
	})

	// The file is deleted: the mirror goes.
	f.m.RemovePod(s2.UID)
	agenttest.Pump(t, f.clk, batch, "the mirror pod deleted", func() bool {
		return f.srv.GetPod("default", "web-n1") == nil
	})
}

func TestStatusLeavesNonMirrorPodOfTheSameNameRealServer(t *testing.T) {
	f := start(t)
	f.srv.CreatePod(agenttest.Pod("web-n1", "n1"))
	s := staticPod(t, "1")
	f.m.SetPodStatus(s, running("static"))
	f.round(t, batch)
	if got := f.rc.writes(); len(got) != 0 {
		t.Fatalf("writes = %q; want none: the pod of that name is not a mirror", got)
	}
}

func TestMergeStatusKeepsWhatTheAgentDoesNotOwn(t *testing.T) {
	server := api.PodStatus{NominatedNodeName: "n9", QOSClass: api.PodQOSBestEffort,
		Conditions: []api.PodCondition{{Type: "PodScheduled", Status: "True"}, {Type: api.PodReady, Status: "False"}}}
	got := mergeStatus(server, api.PodStatus{Phase: api.PodRunning, Conditions: []api.PodCondition{{Type: api.PodReady, Status: "True"}}})
	if got.NominatedNodeName != "n9" || got.QOSClass != api.PodQOSBestEffort || len(got.Conditions) != 2 ||
		got.Conditions[0].Type != api.PodReady || got.Conditions[0].Status != "True" || got.Conditions[1].Type != "PodScheduled" {
		t.Fatalf("mergeStatus = %+v; want the agent's Ready, the server's PodScheduled, nominated node and QoS class", got)
	}
}

func TestMergeStatusKeepsTerminalPhase(t *testing.T) {
	server := api.PodStatus{Phase: api.PodFailed, Reason: "NodeLost", Message: "node was lost"}
	got := mergeStatus(server, api.PodStatus{Phase: api.PodRunning})
	if got.Phase != api.PodFailed || got.Reason != "NodeLost" {
		t.Fatalf("merged %+v; want the server's Failed/NodeLost kept", got)
	}
	got = mergeStatus(api.PodStatus{Phase: api.PodRunning}, api.PodStatus{Phase: api.PodSucceeded})
	if got.Phase != api.PodSucceeded {
		t.Fatalf("merged %+v; want Succeeded", got)
	}
}
