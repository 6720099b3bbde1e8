package fleet

import (
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/api/client"
)

// watchLine is one watch event as the server writes it.
func watchLine(t *testing.T, typ string, obj any) string {
	t.Helper()
	b, err := json.Marshal(map[string]any{"type": typ, "object": obj})
	if err != nil {
		t.Fatal(err)
	}
	return string(b) + "\n"
}

func TestPodWatchReadsWhatTheTrackerNeeds(t *testing.T) {
	pod := func(rv, node string, phase api.PodPhase) *api.Pod {
		p := &api.Pod{TypeMeta: api.TypeMeta{APIVersion: "v1", Kind: "Pod"},
			ObjectMeta: api.ObjectMeta{Namespace: "default", Name: "fleet-web-abc", ResourceVersion: rv, Labels: map[string]string{"app": "fleet-web"}},
			Spec:       api.PodSpec{NodeName: node, Containers: []api.Container{{Name: "web", Image: "nginx:1.27"}}}}
		p.Status.Phase = phase
		p.Status.Conditions = []api.PodCondition{{Type: api.PodScheduled, Status: api.ConditionTrue}}
		return p
	}
	stream := watchLine(t, api.Added, pod("10", "", api.PodPending)) +
		watchLine(t, api.Bookmark, map[string]any{"kind": "Pod", "apiVersion": "v1", "metadata": map[string]any{"resourceVersion": "12"}}) +
		watchLine(t, api.Modified, pod("13", "fleet-7", api.PodPending)) +
		watchLine(t, api.Modified, pod("14", "fleet-7", api.PodRunning)) +
		watchLine(t, api.Bookmark, map[string]any{"kind": "Pod", "apiVersion": "v1", "metadata": map[string]any{"resourceVersion": "20"}}) +
		watchLine(t, api.Error, api.Status{TypeMeta: api.TypeMeta{APIVersion: "v1", Kind: "Status"}, Status: "Failure", Code: 410, Reason: api.StatusReasonExpired, Message: "too old"})
	w := newPodWatch(io.NopCloser(strings.NewReader(stream)), "")
	type got struct{ typ, key, node, phase, rv string }
	want := []got{
		{api.Added, "default/fleet-web-abc", "", "Pending", "10"},
		{api.Modified, "default/fleet-web-abc", "fleet-7", "Pending", "13"},
		{api.Modified, "default/fleet-web-abc", "fleet-7", "Running", "14"},
	}
	for i, wnt := range want {
		typ, ns, name, node, phase, err := w.next()
		if err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
		if g := (got{typ, ns + "/" + name, node, phase, w.resourceVersion()}); g != wnt {
			t.Errorf("event %d: got %+v, want %+v", i, g, wnt)
		}
	}
	_, _, _, _, _, err := w.next()
	if !client.IsGone(err) {
		t.Fatalf("after the ERROR event: %v; want a 410 the watch starts over from", err)
	}
	if rv := w.resourceVersion(); rv != "20" {
		t.Errorf("resume point after the last BOOKMARK: %q, want 20", rv)
	}
	if _, _, _, _, _, err := w.next(); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("at the stream's end: %v; want io.ErrUnexpectedEOF", err)
	}
}

func TestPodWatchRefusesGarbage(t *testing.T) {
	for _, stream := range []string{
		`{"type":"ADDED","object":{"metadata":{"name":7}}}`,
		`{"type":"SOMETHING","object":{}}`,
		`{"type":"ADDED","object":{"status":"Running"}}`,
		`not json`,
	} {
		w := newPodWatch(io.NopCloser(strings.NewReader(stream)), "")
		if _, _, _, _, _, err := w.next(); err == nil {
			t.Errorf("%s: no error", stream)
		}
	}
}
