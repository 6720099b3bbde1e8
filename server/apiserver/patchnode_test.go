package apiserver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/skiffhq/skiff/api"
)

// patchNodeFixture is a stored Node with the agent's five conditions and
// the rest of a status, which the conditions patch must leave alone.
const patchNodeFixture = `{"apiVersion":"v1","kind":"Node","metadata":{"name":"n1","resourceVersion":"7","labels":{"zone":"a"}},` +
	`"spec":{"podCIDR":"10.42.1.0/24"},` +
	`"status":{"capacity":{"cpu":"2","memory":"8Gi","pods":"110"},"allocatable":{"cpu":"2","memory":"8Gi","pods":"110"},` +
	`"addresses":[{"type":"InternalIP","address":"10.0.0.5"},{"type":"Hostname","address":"n1"}],` +
	`"images":[{"names":["busybox:latest"],"sizeBytes":1200000}],` +
	`"conditions":[` +
	`{"type":"MemoryPressure","status":"False","lastHeartbeatTime":"2026-12-05T10:00:00Z","lastTransitionTime":"2026-12-05T09:00:00Z","reason":"KubeletHasSufficientMemory","message":"enough"},` +
	`{"type":"DiskPressure","status":"False","lastHeartbeatTime":"2026-12-05T10:00:00Z","lastTransitionTime":"2026-12-05T09:00:00Z","reason":"KubeletHasNoDiskPressure"},` +
	`{"type":"PIDPressure","status":"False","lastHeartbeatTime":"2026-12-05T10:00:00Z","lastTransitionTime":"2026-12-05T09:00:00Z"},` +
	`{"type":"NetworkUnavailable","status":"False","lastHeartbeatTime":"2026-12-05T10:00:00Z","lastTransitionTime":"2026-12-05T09:00:00Z","reason":"RouteCreated"},` +
	`{"type":"Ready","status":"True","lastHeartbeatTime":"2026-12-05T10:00:00Z","lastTransitionTime":"2026-12-05T09:00:00Z","reason":"KubeletReady","message":"skiff agent is posting ready status"}]}}`

func patchNodeCur(t testing.TB) *api.Node {
	t.Helper()
	var n api.Node
	if err := api.DecodeJSON([]byte(patchNodeFixture), &n); err != nil {
		t.Fatal(err)
	}
	return &n
}

// agentConditionsPatch is the patch agent/node sends: every condition,
// in order, each in full, with new heartbeat times.
func agentConditionsPatch(t testing.TB, cur *api.Node, hb time.Time, edit func([]api.NodeCondition)) []byte {
	t.Helper()
	conds := append([]api.NodeCondition(nil), cur.Status.Conditions...)
	for i := range conds {
		conds[i].LastHeartbeatTime = api.NewTime(hb)
	}
	if edit != nil {
		edit(conds)
	}
	b, err := json.Marshal(map[string]any{"status": map[string]any{"conditions": conds}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// genericNodePatch is the definition: the strategic merge patch applied
// as every other patch is (encode, merge, strict decode).
func genericNodePatch(cur *api.Node, body []byte) (*api.Node, error) {
	doc, err := json.Marshal(cur)
	if err != nil {
		return nil, err
	}
	next := &api.Node{}
	patched, err := applyPatch(strategicPatchType, doc, body, next)
	if err != nil {
		return nil, err
	}
	if err := api.DecodeJSON(patched, next); err != nil {
		return nil, err
	}
	return next, nil
}

func nodeJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// checkAgrees fails t when the typed path answers body and its result is
// not the generic path's.
func checkAgrees(t *testing.T, cur *api.Node, body []byte) bool {
	t.Helper()
	before := nodeJSON(t, cur)
	fast, ok := nodeConditionsPatch(cur, body)
	if !bytes.Equal(nodeJSON(t, cur), before) {
		t.Fatalf("the typed path changed cur for %s", body)
	}
	if !ok {
		return false
	}
	slow, err := genericNodePatch(cur, body)
	if err != nil {
		t.Fatalf("typed path took %s, the generic path refuses it: %v", body, err)
	}
	if f, s := nodeJSON(t, fast), nodeJSON(t, slow); !bytes.Equal(f, s) {
		t.Fatalf("patch %s:\ntyped   %s\ngeneric %s", body, f, s)
	}
	return true
}

func TestNodeConditionsPatchTyped(t *testing.T) {
	cur := patchNodeCur(t)
	hb := time.Date(2026, 12, 5, 10, 5, 0, 0, time.UTC)
	cases := map[string][]byte{
		"heartbeat times only": agentConditionsPatch(t, cur, hb, nil),
		"a transition": agentConditionsPatch(t, cur, hb, func(c []api.NodeCondition) {
			c[4].Status, c[4].Reason, c[4].Message = "False", "KubeletNotReady", "runtime down"
			c[4].LastTransitionTime = api.NewTime(hb)
		}),
		"reason and message cleared": agentConditionsPatch(t, cur, hb, func(c []api.NodeCondition) {
			c[0].Reason, c[0].Message = "", ""
		}),
		"fields left out keep theirs": []byte(`{"status":{"conditions":[{"type":"MemoryPressure"},{"type":"DiskPressure","status":"True"},` +
			`{"type":"PIDPressure","lastHeartbeatTime":"2026-12-05T10:05:00Z"},{"type":"NetworkUnavailable","reason":"NoRoute"},{"type":"Ready","message":"m"}]}}`),
		"null clears": []byte(`{"status":{"conditions":[{"type":"MemoryPressure","reason":null,"message":null},{"type":"DiskPressure","lastTransitionTime":null},` +
			`{"type":"PIDPressure"},{"type":"NetworkUnavailable"},{"type":"Ready","lastHeartbeatTime":null}]}}`),
		"fractional seconds": []byte(`{"status":{"conditions":[{"type":"MemoryPressure","lastHeartbeatTime":"2026-12-05T10:05:00.75Z"},` +
			`{"type":"DiskPressure"},{"type":"PIDPressure"},{"type":"NetworkUnavailable"},{"type":"Ready","lastHeartbeatTime":"2026-12-05T11:05:00+01:00"}]}}`),
		"white space": []byte(" {\"status\" : {\"conditions\":[ {\"type\":\"MemoryPressure\"},{\"type\":\"DiskPressure\"},{\"type\":\"PIDPressure\"},\n{\"type\":\"NetworkUnavailable\"},{\"type\":\"Ready\",\"status\":\"Unknown\"} ]}}\n"),
		"non-ASCII":   agentConditionsPatch(t, cur, hb, func(c []api.NodeCondition) { c[4].Message = "prêt à servir ✓" }),
	}
	for name, body := range cases {
		t.Run(name, func(t *testing.T) {
			if !checkAgrees(t, cur, body) {
				t.Fatalf("the typed path did not take %s", body)
			}
		})
	}
	// The typed result shares nothing with cur.
	next, _ := nodeConditionsPatch(cur, cases["a transition"])
	next.Status.Conditions[0].Reason = "changed"
	next.Status.Images[0].Names[0] = "changed"
	if cur.Status.Conditions[0].Reason == "changed" || cur.Status.Images[0].Names[0] == "changed" {
		t.Fatal("the typed result shares memory with cur")
	}
}

// TestNodeConditionsPatchFallsBack lists the patches the typed path must
// leave to the generic one; each is still checked against it (both
// paths must then agree, which for these is vacuous, or the generic one
// answers alone).
func TestNodeConditionsPatchFallsBack(t *testing.T) {
	cur := patchNodeCur(t)
	all := func(first, last string) []byte {
		return []byte(`{"status":{"conditions":[` + first + `,{"type":"DiskPressure"},{"type":"PIDPressure"},{"type":"NetworkUnavailable"},` + last + `]}}`)
	}
	mp, rd := `{"type":"MemoryPressure"}`, `{"type":"Ready"}`
	cases := map[string][]byte{
		"another status member":  []byte(`{"status":{"conditions":[{"type":"MemoryPressure"},{"type":"DiskPressure"},{"type":"PIDPressure"},{"type":"NetworkUnavailable"},{"type":"Ready"}],"addresses":[]}}`),
		"metadata too":           []byte(`{"metadata":{"labels":{"x":"y"}},"status":{"conditions":[{"type":"MemoryPressure"},{"type":"DiskPressure"},{"type":"PIDPressure"},{"type":"NetworkUnavailable"},{"type":"Ready"}]}}`),
		"a directive":            []byte(`{"status":{"conditions":[{"type":"MemoryPressure"},{"type":"DiskPressure"},{"type":"PIDPressure"},{"type":"NetworkUnavailable"},{"type":"Ready"}],"$setElementOrder/conditions":[{"type":"Ready"}]}}`),
		"an element directive":   all(`{"type":"MemoryPressure","$patch":"delete"}`, rd),
		"one condition only":     []byte(`{"status":{"conditions":[{"type":"Ready","status":"False"}]}}`),
		"reordered":              all(rd, mp),
		"a new type":             all(`{"type":"Custom"}`, rd),
		"an unknown field":       all(`{"type":"MemoryPressure","severity":"high"}`, rd),
		"an escape":              all(`{"type":"MemoryPressure","message":"a \"quoted\" word"}`, rd),
		"a number for a string":  all(`{"type":"MemoryPressure","reason":5}`, rd),
		"a bad time":             all(`{"type":"MemoryPressure","lastHeartbeatTime":"yesterday"}`, rd),
		"a null type":            all(`{"type":null}`, rd),
		"no type":                all(`{"status":"True"}`, rd),
		"a name in capitals":     []byte(`{"Status":{"conditions":[{"type":"MemoryPressure"},{"type":"DiskPressure"},{"type":"PIDPressure"},{"type":"NetworkUnavailable"},{"type":"Ready"}]}}`),
		"a name twice":           all(`{"type":"MemoryPressure","reason":"a","reason":"b"}`, rd),
		"conditions null":        []byte(`{"status":{"conditions":null}}`),
		"status null":            []byte(`{"status":null}`),
		"not an object":          []byte(`[1,2]`),
		"invalid UTF-8":          all("{\"type\":\"MemoryPressure\",\"message\":\"\xff\"}", rd),
		"an element not objects": all(`"MemoryPressure"`, rd),
	}
	for name, body := range cases {
		t.Run(name, func(t *testing.T) {
			if checkAgrees(t, cur, body) {
				t.Fatalf("the typed path took %s", body)
			}
		})
	}
	dup := patchNodeCur(t)
	dup.Status.Conditions[1].Type = "MemoryPressure"
	if checkAgrees(t, dup, []byte(`{"status":{"conditions":[{"type":"MemoryPressure"},{"type":"MemoryPressure"},{"type":"PIDPressure"},{"type":"NetworkUnavailable"},{"type":"Ready"}]}}`)) {
		t.Fatal("the typed path took a patch of a Node whose conditions repeat a type")
	}
}

// FuzzNodeConditionsPatch: wherever the typed path answers, the generic
// strategic merge agrees with it byte for byte.
func FuzzNodeConditionsPatch(f *testing.F) {
	cur := patchNodeCur(f)
	hb := time.Date(2026, 12, 5, 10, 5, 0, 0, time.UTC)
	f.Add(agentConditionsPatch(f, cur, hb, nil))
	f.Add(agentConditionsPatch(f, cur, hb, func(c []api.NodeCondition) { c[4].Status, c[4].Reason = "False", "" }))
	f.Add([]byte(`{"status":{"conditions":[{"type":"MemoryPressure","reason":null},{"type":"DiskPressure"},{"type":"PIDPressure","message":""},{"type":"NetworkUnavailable"},{"type":"Ready","lastTransitionTime":null}]}}`))
	for i := range 3 {
		f.Add(fmt.Appendf(nil, `{"status":{"conditions":[{"type":"MemoryPressure","lastHeartbeatTime":"2026-12-05T1%d:00:00.5Z"}]}}`, i))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		checkAgrees(t, cur, body)
	})
}

// BenchmarkNodeConditionsPatch is an agent's periodic conditions patch
// through the handler (no TLS), on a Node stored with the five
// conditions: decode, merge, validate, the heartbeat-only check, answer.
func BenchmarkNodeConditionsPatch(b *testing.B) {
	h := newHarness(b)
	cur := patchNodeCur(b)
	cur.ResourceVersion = ""
	if code, body := h.do("POST", "/api/v1/nodes", "application/json", string(nodeJSON(b, cur))); code != 201 {
		b.Fatalf("create: %d %s", code, body)
	}
	if code, body := h.do("PUT", "/api/v1/nodes/n1/status", "application/json", string(nodeJSON(b, cur))); code != 200 {
		b.Fatalf("status: %d %s", code, body)
	}
	body := string(agentConditionsPatch(b, cur, h.clock.Now(), nil))
	b.ReportAllocs()
	for b.Loop() {
		if code, out := h.do("PATCH", "/api/v1/nodes/n1/status", strategicPatchType, body); code != 200 {
			b.Fatalf("patch: %d %s", code, out)
		}
	}
}
