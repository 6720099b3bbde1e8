package storage

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/api/fields"
	"github.com/skiffhq/skiff/api/labels"
)

func testStore() *Store {
	s := &Store{resources: make(map[string]*api.ResourceInfo), byType: make(map[reflect.Type]*api.ResourceInfo)}
	for _, r := range api.Resources() {
		s.resources[r.Resource] = &r
		s.byType[reflect.TypeOf(r.New())] = &r
	}
	return s
}

// Every kind must put metadata before any other nested object, so the
// first resourceVersion in its JSON is metadata's, even when a later field
// (Event.involvedObject) holds the same placeholder text.
func TestEncodeStampsMetadataResourceVersion(t *testing.T) {
	s := testStore()
	for _, r := range api.Resources() {
		obj := r.New()
		m := obj.GetObjectMeta()
		m.Name = "x"
		if r.Namespaced {
			m.Namespace = "ns"
		}
		m.ResourceVersion = "7"
		if ev, ok := obj.(*api.Event); ok {
			ev.InvolvedObject.ResourceVersion = rvPlaceholder
		}
		e, err := s.encode(obj)
		if err != nil {
			t.Fatalf("encode(%s) = %v; want nil", r.Kind, err)
		}
		if m.ResourceVersion != "7" {
			t.Errorf("encode(%s) changed the caller's resourceVersion to %q; want 7", r.Kind, m.ResourceVersion)
		}
		got, err := decode(s.resources[r.Resource], e.withRevision(42))
		if err != nil {
			t.Fatalf("decode(%s) = %v; want nil", r.Kind, err)
		}
		if rv := got.GetObjectMeta().ResourceVersion; rv != "42" {
			t.Errorf("encode(%s).withRevision(42) resourceVersion = %q; want 42", r.Kind, rv)
		}
		if tm := got.GetTypeMeta(); tm.Kind != r.Kind || tm.APIVersion != r.GroupVersion() {
			t.Errorf("encode(%s) type meta = %v; want %s %s", r.Kind, tm, r.GroupVersion(), r.Kind)
		}
		if ev, ok := got.(*api.Event); ok && ev.InvolvedObject.ResourceVersion != rvPlaceholder {
			t.Errorf("encode(Event) touched involvedObject.resourceVersion: %q", ev.InvolvedObject.ResourceVersion)
		}
	}
}

func TestRestamp(t *testing.T) {
	tests := []struct {
		in       string
		old, rev int64
		want     string
		ok       bool
	}{
		{`{"metadata":{"name":"a","resourceVersion":"5"},"x":{"resourceVersion":"5"}}`, 5, 12,
			`{"metadata":{"name":"a","resourceVersion":"12"},"x":{"resourceVersion":"5"}}`, true},
		{`{"metadata":{"resourceVersion":"99"}}`, 99, 100, `{"metadata":{"resourceVersion":"100"}}`, true},
		{`{"metadata":{"resourceVersion":"5"}}`, 6, 7, "", false},
	}
	for _, tt := range tests {
		got, err := restamp([]byte(tt.in), tt.old, tt.rev)
		if (err == nil) != tt.ok || string(got) != tt.want {
			t.Errorf("restamp(%q, %d, %d) = %q, %v; want %q, ok=%v", tt.in, tt.old, tt.rev, got, err, tt.want, tt.ok)
		}
	}
}

func TestEventFor(t *testing.T) {
	web := mustLabels(t, "app=web")
	onN1 := mustFields(t, "spec.nodeName=n1")
	js := func(v any) []byte { b, _ := json.Marshal(v); return b }
	mk := func(typ EventType, ns string, now, prev map[string]string) *change {
		c := &change{typ: typ, key: key{resource: "pods", namespace: ns, name: "p"}}
		c.rawLabels = js(now)
		c.rawFields = js(map[string]string{"spec.nodeName": now["node"]})
		if prev != nil {
			c.rawPrevLabels = js(prev)
			c.rawPrevFields = js(map[string]string{"spec.nodeName": prev["node"]})
		}
		return c
	}
	webL, dbL := map[string]string{"app": "web"}, map[string]string{"app": "db"}
	tests := []struct {
		name   string
		f      filter
		c      *change
		want   EventType
		wantOK bool
	}{
		{"everything added", filter{}, mk(Added, "a", dbL, nil), Added, true},
		{"everything modified", filter{}, mk(Modified, "a", dbL, nil), Modified, true},
		{"everything deleted", filter{}, mk(Deleted, "a", dbL, nil), Deleted, true},
		{"namespace miss", filter{namespace: "b"}, mk(Added, "a", webL, nil), 0, false},
		{"namespace hit", filter{namespace: "a"}, mk(Added, "a", webL, nil), Added, true},
		{"added matching", filter{labels: web}, mk(Added, "a", webL, nil), Added, true},
		{"added not matching", filter{labels: web}, mk(Added, "a", dbL, nil), 0, false},
		{"starts matching", filter{labels: web}, mk(Modified, "a", webL, dbL), Added, true},
		{"stops matching", filter{labels: web}, mk(Modified, "a", dbL, webL), Deleted, true},
		{"keeps matching", filter{labels: web}, mk(Modified, "a", webL, nil), Modified, true},
		{"never matches", filter{labels: web}, mk(Modified, "a", dbL, nil), 0, false},
		{"deleted matching", filter{labels: web}, mk(Deleted, "a", webL, nil), Deleted, true},
		{"deleted not matching", filter{labels: web}, mk(Deleted, "a", dbL, nil), 0, false},
		{"bound", filter{fields: onN1}, mk(Modified, "a", map[string]string{"node": "n1"}, map[string]string{}), Added, true},
		{"from empty labels", filter{labels: web}, mk(Modified, "a", webL, map[string]string{}), Added, true},
	}
	for _, tt := range tests {
		got, ok, err := tt.f.eventFor(tt.c)
		if err != nil || got != tt.want || ok != tt.wantOK {
			t.Errorf("eventFor(%s) = %v, %v, %v; want %v, %v, nil", tt.name, got, ok, err, tt.want, tt.wantOK)
		}
	}
}

func TestCompactTargetFor(t *testing.T) {
	tests := []struct {
		rev, compacted, minRevisions, firstYoung int64
		want                                     int64
	}{
		{rev: 200, compacted: 0, minRevisions: 50, firstYoung: 201, want: 150},   // all old: count decides
		{rev: 200, compacted: 0, minRevisions: 50, firstYoung: 101, want: 100},   // age decides
		{rev: 200, compacted: 0, minRevisions: 150, firstYoung: 101, want: 50},   // count decides
		{rev: 200, compacted: 120, minRevisions: 50, firstYoung: 101, want: 120}, // never backwards
		{rev: 10, compacted: 0, minRevisions: 50, firstYoung: 11, want: 0},
	}
	for _, tt := range tests {
		if got := compactTargetFor(tt.rev, tt.compacted, tt.minRevisions, tt.firstYoung); got != tt.want {
			t.Errorf("compactTargetFor(%d, %d, %d, %d) = %d; want %d", tt.rev, tt.compacted, tt.minRevisions, tt.firstYoung, got, tt.want)
		}
	}
}

func TestParseRevision(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"", 0, true}, {"1", 1, true}, {"123456789012", 123456789012, true},
		{"0", 0, false}, {"-1", 0, false}, {"x", 0, false}, {"1.5", 0, false},
	}
	for _, tt := range tests {
		got, err := parseRevision(tt.in)
		if got != tt.want || (err == nil) != tt.ok {
			t.Errorf("parseRevision(%q) = %d, %v; want %d, ok=%v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}

func mustLabels(t *testing.T, s string) labels.Selector {
	t.Helper()
	sel, err := labels.Parse(s)
	if err != nil {
		t.Fatalf("labels.Parse(%q) = %v", s, err)
	}
	return sel
}

func mustFields(t *testing.T, s string) fields.Selector {
	t.Helper()
	sel, err := fields.Parse(s)
	if err != nil {
		t.Fatalf("fields.Parse(%q) = %v", s, err)
	}
	return sel
}

func mustLabelsB(b *testing.B, s string) labels.Selector {
	b.Helper()
	sel, err := labels.Parse(s)
	if err != nil {
		b.Fatalf("labels.Parse(%q) = %v", s, err)
	}
	return sel
}

func mustFieldsB(b *testing.B, s string) fields.Selector {
	b.Helper()
	sel, err := fields.Parse(s)
	if err != nil {
		b.Fatalf("fields.Parse(%q) = %v", s, err)
	}
	return sel
}

// TestMarshalStringMap: the labels and fields columns are what
// encoding/json wrote before, byte for byte, for maps it quotes as they
// are and for those it escapes.
func TestMarshalStringMap(t *testing.T) {
	for _, m := range []map[string]string{
		nil,
		{},
		{"app": "web"},
		{"app.kubernetes.io/name": "web", "tier": "front", "a": "", "": "b"},
		{"metadata.name": "web-0", "metadata.namespace": "default", "spec.nodeName": "node-00001", "status.phase": "Running"},
		{"q": `say "hi"`},
		{"html": "<b>&</b>"},
		{"ctl": "a\tb\x00\x1f"},
		{"utf8": "zürich", "bad": "\xff\xfe", "sep": "\u2028"},
		{"del": "\x7f"},
	} {
		checkMarshalStringMap(t, m)
	}
}

func FuzzMarshalStringMap(f *testing.F) {
	f.Add("app", "web", "tier", "front")
	f.Add("a<", "\"b", "\x00", "\xff")
	f.Fuzz(func(t *testing.T, k1, v1, k2, v2 string) {
		checkMarshalStringMap(t, map[string]string{k1: v1, k2: v2})
		checkMarshalStringMap(t, labels.Set{k1: v1})
		// What it wrote reads back as what it was given.
		b, err := marshalStringMap(map[string]string{k1: v1, k2: v2})
		if err != nil {
			t.Fatal(err)
		}
		checkUnmarshalStringMap(t, b)
	})
}

// FuzzUnmarshalStringMap: for any bytes, unmarshalStringMap gives what
// json.Unmarshal gives, error or map.
func FuzzUnmarshalStringMap(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":"1"}`, `{"a":"1","b":""}`, `{"a":"1",}`, `{"a":"1","a":"2"}`, `{"a":1}`, `{ "a":"1"}`, `{"a\"":"1"}`, `null`, `{"a":"1"`, `{"a""1"}`, `{"a":"1"}}`, `{,}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		checkUnmarshalStringMap(t, b)
	})
}

func checkUnmarshalStringMap(t *testing.T, b []byte) {
	t.Helper()
	var want, got fields.Set
	werr := json.Unmarshal(b, &want)
	err := unmarshalStringMap(b, &got)
	if (err == nil) != (werr == nil) || (err == nil && !reflect.DeepEqual(got, want)) {
		t.Errorf("unmarshalStringMap(%q) = %v, %v; want %v, %v (encoding/json)", b, got, err, want, werr)
	}
}

func checkMarshalStringMap[M ~map[string]string](t *testing.T, m M) {
	t.Helper()
	want, werr := json.Marshal(m)
	got, err := marshalStringMap(m)
	if err != nil || werr != nil || string(got) != string(want) {
		t.Errorf("marshalStringMap(%q) = %s, %v; want %s, %v (encoding/json)", m, got, err, want, werr)
	}
}

// TestIsStored: isStored(v, rev) is bytes.Equal(withRevision(rev), v),
// for the value itself, other revisions, and values that differ
// elsewhere, are cut short or run on.
func TestIsStored(t *testing.T) {
	s := testStore()
	cm := &api.ConfigMap{ObjectMeta: api.ObjectMeta{Name: "x", Namespace: "ns"}, Data: map[string]string{"k": "v"}}
	e, err := s.encode(cm)
	if err != nil {
		t.Fatal(err)
	}
	stored := e.withRevision(1234)
	head := e.json[:e.at]
	values := [][]byte{
		stored,
		e.withRevision(123),
		e.withRevision(12345),
		e.withRevision(0),
		e.withRevision(-1234),
		stored[:len(stored)-1],
		append(append([]byte(nil), stored...), ' '),
		append([]byte(nil), head...),
		nil,
		[]byte(strings.Replace(string(stored), `"k":"v"`, `"k":"w"`, 1)),
		[]byte(strings.Replace(string(stored), "1234", "12a4", 1)),
	}
	for _, rev := range []int64{1234, 123, 12345, 0} {
		for _, v := range values {
			want := bytes.Equal(e.withRevision(rev), v)
			if got := e.isStored(v, rev); got != want {
				t.Errorf("isStored(%s, %d) = %v; want %v", v, rev, got, want)
			}
		}
	}
}
