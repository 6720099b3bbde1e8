package apiserver

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/skiffhq/skiff/api"
)

func nodeStatusJSON(hb time.Time, ready string) string {
	return fmt.Sprintf(`{"apiVersion":"v1","kind":"Node","metadata":{"name":"n1"},"status":{"conditions":[`+
		`{"type":"Ready","status":%q,"lastHeartbeatTime":%q,"lastTransitionTime":"2026-11-21T11:00:00Z"}]}}`,
		ready, hb.UTC().Format(time.RFC3339))
}

// TestHeartbeatOnlyWritesAreNotPersisted checks the cheap-heartbeat rule:
// a status write that changes only lastHeartbeatTime is answered and
// counted as liveness but not written, until the stored copy is older
// than the snapshot interval; any other status change is written at once.
func TestHeartbeatOnlyWritesAreNotPersisted(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	if code, body := h.do("POST", "/api/v1/nodes", "application/json", `{"apiVersion":"v1","kind":"Node","metadata":{"name":"n1"}}`); code != 201 {
		t.Fatalf("create node: %d %s", code, body)
	}
	status := "/api/v1/nodes/n1/status"
	put := func(hb time.Time, ready string) api.Node {
		t.Helper()
		code, body := h.do("PUT", status, "application/json", nodeStatusJSON(hb, ready))
		if code != 200 {
			t.Fatalf("PUT status: %d %s", code, body)
		}
		var n api.Node
		if err := json.Unmarshal(body, &n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	t0 := h.clock.Now()
	put(t0, "True") // first heartbeat: a real change (no conditions before)
	rev := h.store.Revision()
	if last, ok := h.srv.liveness.Last("n1"); !ok || !last.Equal(t0) {
		t.Fatalf("liveness after first beat = %v %v; want %v", last, ok, t0)
	}

	for i := 1; i <= 20; i++ {
		h.clock.Advance(10 * time.Second)
		now := h.clock.Now()
		got := put(now, "True")
		if !got.Status.Conditions[0].LastHeartbeatTime.Equal(now) {
			t.Fatalf("beat %d: answer carries heartbeat %v; want the client's %v", i, got.Status.Conditions[0].LastHeartbeatTime, now)
		}
		if last, _ := h.srv.liveness.Last("n1"); !last.Equal(now) {
			t.Fatalf("beat %d: liveness %v; want %v", i, last, now)
		}
	}
	if r := h.store.Revision(); r != rev {
		t.Fatalf("20 heartbeat-only writes within the snapshot interval moved the revision %d -> %d", rev, r)
	}

	// A condition change is persisted at once.
	h.clock.Advance(10 * time.Second)
	put(h.clock.Now(), "False")
	if r := h.store.Revision(); r != rev+1 {
		t.Fatalf("a Ready change was not persisted: revision %d; want %d", r, rev+1)
	}
	rev++

	// After the snapshot interval a heartbeat-only write is persisted, so
	// the stored heartbeat is never more than one interval old.
	var persisted time.Time
	for range 40 {
		h.clock.Advance(10 * time.Second)
		put(h.clock.Now(), "False")
		if h.store.Revision() != rev {
			persisted = h.clock.Now()
			break
		}
	}
	if persisted.IsZero() {
		t.Fatal("no heartbeat persisted within 400s")
	}
	obj, err := h.store.Get(ctx, "nodes", "", "n1")
	if err != nil {
		t.Fatal(err)
	}
	stored := nodeHeartbeat(obj.(*api.Node))
	if !stored.Equal(persisted) {
		t.Fatalf("stored heartbeat %v; want %v", stored, persisted)
	}
	if gap := persisted.Sub(t0.Add(210 * time.Second)); gap < defaultHeartbeatSnapshot-10*time.Second || gap > defaultHeartbeatSnapshot+10*time.Second {
		t.Fatalf("persisted %v after the last stored beat; want about %v", gap, defaultHeartbeatSnapshot)
	}

	// Deleting the node forgets its liveness.
	if code, body := h.do("DELETE", "/api/v1/nodes/n1", "", ""); code != 200 {
		t.Fatalf("delete: %d %s", code, body)
	}
	if _, ok := h.srv.liveness.Last("n1"); ok {
		t.Fatal("liveness kept a deleted node")
	}
}

func TestHeartbeatOnlyComparesStatus(t *testing.T) {
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	mk := func(hb time.Time, reason string, cpu string) *api.Node {
		n := &api.Node{}
		n.Status.Conditions = []api.NodeCondition{{Type: "Ready", Status: "True", Reason: reason, LastHeartbeatTime: api.NewTime(hb)}}
		n.Status.NodeInfo.KubeletVersion = cpu
		return n
	}
	cur := mk(now.Add(-time.Minute), "KubeletReady", "v1")
	cases := []struct {
		name string
		next *api.Node
		want bool
	}{
		{"only heartbeat", mk(now, "KubeletReady", "v1"), true},
		{"reason changed", mk(now, "Other", "v1"), false},
		{"node info changed", mk(now, "KubeletReady", "v2"), false},
		{"condition added", func() *api.Node {
			n := mk(now, "KubeletReady", "v1")
			n.Status.Conditions = append(n.Status.Conditions, api.NodeCondition{Type: "MemoryPressure", Status: "False"})
			return n
		}(), false},
	}
	for _, c := range cases {
		if got := heartbeatOnly(c.next, cur, now, time.Minute*5); got != c.want {
			t.Errorf("%s: heartbeatOnly = %v; want %v", c.name, got, c.want)
		}
	}
	if heartbeatOnly(mk(now, "KubeletReady", "v1"), cur, now.Add(5*time.Minute), 5*time.Minute) {
		t.Error("a stored heartbeat older than the snapshot interval must be refreshed")
	}
	if heartbeatOnly(mk(now, "KubeletReady", "v1"), &api.Node{}, now, 5*time.Minute) {
		t.Error("a node with no stored heartbeat must be written")
	}
}
