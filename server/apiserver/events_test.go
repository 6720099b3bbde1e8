package apiserver

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/skiffhq/skiff/api"
)

// TestPostedEventRepeatsAreFolded: agents POST an event each time a thing
// happens; the second identical POST bumps the first event's count (200)
// instead of storing another (201).
func TestPostedEventRepeatsAreFolded(t *testing.T) {
	h := newHarness(t)
	path := "/api/v1/namespaces/default/events"
	body := func(name string) string {
		return `{"apiVersion":"v1","kind":"Event","metadata":{"name":"` + name + `"},` +
			`"involvedObject":{"kind":"Pod","namespace":"default","name":"web","uid":"u1"},` +
			`"reason":"BackOff","message":"Back-off restarting failed container","type":"Warning","source":{"component":"skiff-agent","host":"n1"}}`
	}
	code, b := h.do("POST", path, "application/json", body("web.1"))
	if code != 201 {
		t.Fatalf("first POST: %d %s", code, b)
	}
	code, b = h.do("POST", path, "application/json", body("web.2"))
	if code != 200 {
		t.Fatalf("repeat POST: %d %s; want 200 with the folded event", code, b)
	}
	var ev api.Event
	if err := json.Unmarshal(b, &ev); err != nil {
		t.Fatal(err)
	}
	if ev.Name != "web.1" || ev.Count != 2 {
		t.Fatalf("folded into %s with count %d; want web.1 with count 2", ev.Name, ev.Count)
	}
	code, b = h.do("POST", path, "application/json", strings.Replace(body("web.3"), "BackOff", "Pulled", 1))
	if code != 201 {
		t.Fatalf("different reason: %d %s; want a new event", code, b)
	}
	code, b = h.do("GET", path, "", "")
	var list api.List[api.Event]
	if err := json.Unmarshal(b, &list); code != 200 || err != nil || len(list.Items) != 2 {
		t.Fatalf("list: %d %v, %d items; want 2", code, err, len(list.Items))
	}
}
