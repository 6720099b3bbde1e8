package apiserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/internal/table"
)

// kubectlAccept is the Accept header kubectl 1.32 sends for `get`
// (staging/src/k8s.io/kubectl/pkg/cmd/get/get.go, transformRequests).
const kubectlAccept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"

// wireTable is a Table as a client decodes it.
type wireTable struct {
	Kind       string `json:"kind"`
	APIVersion string `json:"apiVersion"`
	Metadata   struct {
		ResourceVersion string `json:"resourceVersion"`
	} `json:"metadata"`
	ColumnDefinitions []api.TableColumnDefinition `json:"columnDefinitions"`
	Rows              []struct {
		Cells      []any                   `json:"cells"`
		Conditions []api.TableRowCondition `json:"conditions"`
		Object     json.RawMessage         `json:"object"`
	} `json:"rows"`
}

// get sends a GET with an Accept header.
func (h *harness) getAccept(path, accept string) (int, []byte) {
	h.t.Helper()
	req, err := http.NewRequest("GET", h.http.URL+path, nil)
	if err != nil {
		h.t.Fatal(err)
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// watchStream opens a watch with an Accept header; lines yields its
// events one at a time. The stream closes with the test.
func (h *harness) watchStream(path, accept string) *bufio.Scanner {
	h.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	h.t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, "GET", h.http.URL+path, nil)
	if err != nil {
		h.t.Fatal(err)
	}
	req.Header.Set("Accept", accept)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		h.t.Fatalf("watch %s = %d %s", path, resp.StatusCode, b)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	return sc
}

type tableEvent struct {
	Type   string    `json:"type"`
	Object wireTable `json:"object"`
}

// nextEvent reads the next non-empty watch line as a Table event.
func nextEvent(t *testing.T, sc *bufio.Scanner) tableEvent {
	t.Helper()
	for sc.Scan() {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var ev tableEvent
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("bad watch line %q: %v", sc.Text(), err)
		}
		return ev
	}
	t.Fatalf("watch stream ended: %v", sc.Err())
	return tableEvent{}
}

func decodeTable(t *testing.T, b []byte) wireTable {
	t.Helper()
	var tbl wireTable
	if err := json.Unmarshal(b, &tbl); err != nil {
		t.Fatalf("body is not JSON: %v\n%s", err, trim(b))
	}
	if tbl.Kind != "Table" {
		t.Fatalf("body kind = %q; want Table: %s", tbl.Kind, trim(b))
	}
	return tbl
}

// tableFixtures is one valid object of every kind, each named "t1".
var tableFixtures = []struct {
	resource, path, body string
}{
	{"namespaces", "/api/v1/namespaces", `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"t1"}}`},
	{"nodes", "/api/v1/nodes", `{"apiVersion":"v1","kind":"Node","metadata":{"name":"t1","labels":{"node-role.kubernetes.io/edge":""}}}`},
	{"pods", "/api/v1/namespaces/default/pods", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"t1"},"spec":{"nodeName":"n1","containers":[{"name":"c","image":"busybox"}]}}`},
	{"events", "/api/v1/namespaces/default/events", `{"apiVersion":"v1","kind":"Event","metadata":{"name":"t1"},"involvedObject":{"kind":"Pod","name":"web"},"reason":"Started","message":"Started container","type":"Normal"}`},
	{"secrets", "/api/v1/namespaces/default/secrets", `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"t1"},"data":{"a":"eA=="}}`},
	{"configmaps", "/api/v1/namespaces/default/configmaps", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"t1"},"data":{"a":"x","b":"y"}}`},
	{"deployments", "/apis/apps/v1/namespaces/default/deployments", `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"t1"},"spec":{"selector":{"matchLabels":{"app":"t1"}},"template":{"metadata":{"labels":{"app":"t1"}},"spec":{"containers":[{"name":"c","image":"busybox"}]}}}}`},
	{"daemonsets", "/apis/apps/v1/namespaces/default/daemonsets", `{"apiVersion":"apps/v1","kind":"DaemonSet","metadata":{"name":"t1"},"spec":{"selector":{"matchLabels":{"app":"t1"}},"template":{"metadata":{"labels":{"app":"t1"}},"spec":{"containers":[{"name":"c","image":"busybox"}]}}}}`},
}

// checkColumns compares a table's columns with package table's for kind.
func checkColumns(t *testing.T, what, kind string, got []api.TableColumnDefinition) {
	t.Helper()
	want, _ := table.Columns(kind)
	if len(got) != len(want) {
		t.Fatalf("%s: %d columns %v; want %d", what, len(got), got, len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("%s: column %d = %+v; want %+v", what, i, got[i], want[i])
		}
	}
}

// TestTableEveryResource answers kubectl's Accept header with a Table for
// list, get and watch of every kind.
func TestTableEveryResource(t *testing.T) {
	h := newHarness(t)
	for _, fx := range tableFixtures {
		res, _ := api.LookupResource(fx.resource)
		code, b := h.do("POST", fx.path, "application/json", fx.body)
		if code != 201 {
			t.Fatalf("create %s = %d %s", fx.resource, code, trim(b))
		}
		var created struct {
			Metadata struct {
				ResourceVersion string `json:"resourceVersion"`
			} `json:"metadata"`
		}
		json.Unmarshal(b, &created)

		// List.
		code, b = h.getAccept(fx.path, kubectlAccept)
		if code != 200 {
			t.Fatalf("list %s as Table = %d %s", fx.resource, code, trim(b))
		}
		list := decodeTable(t, b)
		if list.APIVersion != "meta.k8s.io/v1" || list.Metadata.ResourceVersion == "" {
			t.Errorf("list %s: apiVersion %q resourceVersion %q; want meta.k8s.io/v1 and a revision", fx.resource, list.APIVersion, list.Metadata.ResourceVersion)
		}
		checkColumns(t, "list "+fx.resource, res.Kind, list.ColumnDefinitions)
		found := false
		for _, row := range list.Rows {
			if len(row.Cells) != len(list.ColumnDefinitions) {
				t.Errorf("list %s: row has %d cells for %d columns", fx.resource, len(row.Cells), len(list.ColumnDefinitions))
			}
			var pm api.PartialObjectMetadata
			if err := json.Unmarshal(row.Object, &pm); err != nil || pm.Kind != "PartialObjectMetadata" || pm.APIVersion != "meta.k8s.io/v1" {
				t.Errorf("list %s: row object = %s; want a meta.k8s.io/v1 PartialObjectMetadata", fx.resource, row.Object)
			}
			if pm.Name == "t1" {
				found = true
			}
		}
		if !found {
			t.Errorf("list %s: no row for t1 in %d rows", fx.resource, len(list.Rows))
		}

		// Get.
		code, b = h.getAccept(fx.path+"/t1", kubectlAccept)
		if code != 200 {
			t.Fatalf("get %s as Table = %d %s", fx.resource, code, trim(b))
		}
		one := decodeTable(t, b)
		checkColumns(t, "get "+fx.resource, res.Kind, one.ColumnDefinitions)
		if len(one.Rows) != 1 || one.Metadata.ResourceVersion != created.Metadata.ResourceVersion {
			t.Errorf("get %s: %d rows, resourceVersion %q; want 1 row at the object's %q", fx.resource, len(one.Rows), one.Metadata.ResourceVersion, created.Metadata.ResourceVersion)
		}
		nameCell := 0
		if res.Kind == "Event" {
			nameCell = len(one.ColumnDefinitions) - 1 // Event's Name is its last, wide column
		}
		if len(one.Rows) == 1 && one.Rows[0].Cells[nameCell] != "t1" {
			t.Errorf("get %s: name cell = %v; want t1", fx.resource, one.Rows[0].Cells[nameCell])
		}

		// Watch: every current object as ADDED, the first with the
		// columns, then a change without them.
		sc := h.watchStream(fx.path+"?watch=true", kubectlAccept)
		first := nextEvent(t, sc)
		if first.Type != "ADDED" || first.Object.APIVersion != "meta.k8s.io/v1" || len(first.Object.Rows) != 1 {
			t.Fatalf("watch %s: first event = %+v; want ADDED with a one-row Table", fx.resource, first)
		}
		checkColumns(t, "watch "+fx.resource+" first event", res.Kind, first.Object.ColumnDefinitions)
		code, b = h.do("PATCH", fx.path+"/t1", "application/merge-patch+json", `{"metadata":{"labels":{"changed":"yes"}}}`)
		if code != 200 {
			t.Fatalf("patch %s = %d %s", fx.resource, code, trim(b))
		}
		for {
			ev := nextEvent(t, sc)
			if ev.Object.ColumnDefinitions != nil {
				t.Errorf("watch %s: %s event repeats columnDefinitions; only the first event carries them", fx.resource, ev.Type)
			}
			if len(ev.Object.Rows) != 1 || len(ev.Object.Rows[0].Cells) != len(first.Object.ColumnDefinitions) {
				t.Fatalf("watch %s: event %+v; want one full row", fx.resource, ev)
			}
			if ev.Type == "MODIFIED" {
				var pm api.PartialObjectMetadata
				json.Unmarshal(ev.Object.Rows[0].Object, &pm)
				if pm.Name != "t1" || pm.Labels["changed"] != "yes" || ev.Object.Metadata.ResourceVersion != pm.ResourceVersion {
					t.Errorf("watch %s: MODIFIED row object %s, table rv %q; want t1 with the new label at its own revision", fx.resource, ev.Object.Rows[0].Object, ev.Object.Metadata.ResourceVersion)
				}
				break
			}
			if ev.Type != "ADDED" {
				t.Fatalf("watch %s: unexpected %s event", fx.resource, ev.Type)
			}
		}
	}
}

// TestTablePodCells checks a pod's cells end to end: READY, STATUS,
// RESTARTS and AGE measured with the server's clock, the wide columns
// with priority 1, and the row condition of a finished pod.
func TestTablePodCells(t *testing.T) {
	h := newHarness(t)
	base := "/api/v1/namespaces/default/pods"
	pod := `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web"},"spec":{"nodeName":"n1","containers":[{"name":"a","image":"x"},{"name":"b","image":"y"}]}}`
	if code, b := h.do("POST", base, "application/json", pod); code != 201 {
		t.Fatalf("create = %d %s", code, b)
	}
	crashedAt := h.clock.Now().Add(2*24*time.Hour + 3*time.Hour - 5*time.Minute).UTC().Format(time.RFC3339)
	status := `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web"},"spec":{"nodeName":"n1","containers":[{"name":"a","image":"x"},{"name":"b","image":"y"}]},
		"status":{"phase":"Running","podIP":"10.42.0.5","podIPs":[{"ip":"10.42.0.5"}],"conditions":[{"type":"Ready","status":"False"}],"containerStatuses":[
		{"name":"a","ready":true,"restartCount":0,"image":"x","imageID":"","state":{"running":{"startedAt":"2026-11-21T12:00:00Z"}}},
		{"name":"b","ready":false,"restartCount":3,"image":"y","imageID":"","state":{"waiting":{"reason":"CrashLoopBackOff"}},
		 "lastState":{"terminated":{"exitCode":1,"reason":"Error","finishedAt":"` + crashedAt + `"}}}]}}`
	if code, b := h.do("PUT", base+"/web/status", "application/json", status); code != 200 {
		t.Fatalf("PUT status = %d %s", code, trim(b))
	}
	h.clock.Advance(2*24*time.Hour + 3*time.Hour)

	code, b := h.getAccept(base, kubectlAccept)
	if code != 200 {
		t.Fatalf("list = %d %s", code, trim(b))
	}
	tbl := decodeTable(t, b)
	var names []string
	for _, c := range tbl.ColumnDefinitions {
		if c.Priority == 1 {
			names = append(names, c.Name)
		}
	}
	if got := strings.Join(names, ","); got != "IP,Node,Nominated Node,Readiness Gates" {
		t.Errorf("pod columns with priority 1 = %s; want IP,Node,Nominated Node,Readiness Gates", got)
	}
	want := []any{"web", "1/2", "CrashLoopBackOff", "3 (5m ago)", "2d3h", "10.42.0.5", "n1", "<none>", "<none>"}
	if len(tbl.Rows) != 1 {
		t.Fatalf("list: %d rows; want 1", len(tbl.Rows))
	}
	for i, cell := range tbl.Rows[0].Cells {
		if i >= len(want) || cell != want[i] {
			t.Errorf("pod cells = %v; want %v", tbl.Rows[0].Cells, want)
			break
		}
	}

	// A finished pod's row says so.
	done := strings.Replace(status, `"phase":"Running"`, `"phase":"Succeeded"`, 1)
	if code, b := h.do("PUT", base+"/web/status", "application/json", done); code != 200 {
		t.Fatalf("PUT status = %d %s", code, trim(b))
	}
	_, b = h.getAccept(base+"/web", kubectlAccept)
	tbl = decodeTable(t, b)
	if c := tbl.Rows[0].Conditions; len(c) != 1 || c[0].Type != "Completed" || c[0].Reason != "Succeeded" {
		t.Errorf("succeeded pod row conditions = %+v; want Completed/Succeeded", c)
	}
}

func TestTableIncludeObject(t *testing.T) {
	h := newHarness(t)
	base := "/api/v1/namespaces/default/pods"
	if code, b := h.do("POST", base, "application/json", podJSON); code != 201 {
		t.Fatalf("create = %d %s", code, b)
	}
	tests := []struct {
		query    string
		wantKind string // of the row's object; "" for none
	}{
		{"", "PartialObjectMetadata"},
		{"?includeObject=Metadata", "PartialObjectMetadata"},
		{"?includeObject=Object", "Pod"},
		{"?includeObject=None", ""},
	}
	for _, tc := range tests {
		for _, path := range []string{base + tc.query, base + "/web" + tc.query} {
			code, b := h.getAccept(path, kubectlAccept)
			if code != 200 {
				t.Fatalf("GET %s = %d %s", path, code, trim(b))
			}
			tbl := decodeTable(t, b)
			obj := tbl.Rows[0].Object
			if tc.wantKind == "" {
				if len(obj) != 0 && string(obj) != "null" {
					t.Errorf("GET %s: row object = %s; want none", path, obj)
				}
				continue
			}
			var got struct {
				Kind     string          `json:"kind"`
				Metadata api.ObjectMeta  `json:"metadata"`
				Spec     json.RawMessage `json:"spec"`
			}
			if err := json.Unmarshal(obj, &got); err != nil || got.Kind != tc.wantKind || got.Metadata.Name != "web" || got.Metadata.UID == "" {
				t.Errorf("GET %s: row object = %s; want a %s of web with its metadata", path, obj, tc.wantKind)
			}
			if (tc.wantKind == "Pod") != (len(got.Spec) > 0) {
				t.Errorf("GET %s: row object spec present = %v; want %v", path, len(got.Spec) > 0, tc.wantKind == "Pod")
			}
		}
	}
	code, b := h.getAccept(base+"?includeObject=Everything", kubectlAccept)
	if st := decodeStatus(t, b); code != 400 || st.Reason != api.StatusReasonBadRequest || !strings.Contains(st.Message, "includeObject") {
		t.Errorf("includeObject=Everything = %d %+v; want 400 naming includeObject", code, st)
	}
	// Plain JSON ignores includeObject, as Kubernetes does.
	if code, b := h.getAccept(base+"?includeObject=Everything", "application/json"); code != 200 || !strings.Contains(string(b), `"kind":"PodList"`) {
		t.Errorf("plain list with includeObject=Everything = %d %s; want the PodList", code, trim(b))
	}
}

// TestTableNegotiation covers Accept headers kubectl and other clients
// send, for list, get and watch.
func TestTableNegotiation(t *testing.T) {
	h := newHarness(t)
	base := "/api/v1/namespaces/default/pods"
	if code, b := h.do("POST", base, "application/json", podJSON); code != 201 {
		t.Fatalf("create = %d %s", code, b)
	}
	const (
		plain = "PodList"
		v1    = "meta.k8s.io/v1"
		beta  = "meta.k8s.io/v1beta1"
		no    = "406"
	)
	tests := []struct{ accept, want string }{
		{"", plain},
		{"application/json", plain},
		{"*/*", plain},
		{"application/*", plain},
		{"application/json, */*", plain},
		{kubectlAccept, v1},
		{"application/json;as=Table;v=v1beta1;g=meta.k8s.io", beta},
		{"application/json; as=Table; v=v1; g=meta.k8s.io", v1},
		{"application/yaml, application/json", plain},
		{"application/json;as=Table;v=v1;g=meta.k8s.io;q=0.5, application/json", plain},
		{"application/json;q=0, application/json;as=Table;v=v1;g=meta.k8s.io;q=0.5", v1},
		{"application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io, application/json;as=Table;v=v1beta1;g=meta.k8s.io", beta},
		{"application/yaml", no},
		{"application/vnd.kubernetes.protobuf", no},
		{"text/html", no},
		{"application/json;as=Table;v=v2;g=meta.k8s.io", no},
		{"application/json;as=Table;v=v1;g=example.com", no},
		{"application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io", no},
		{"application/json;q=0", no},
		{";;;", no},
	}
	for _, tc := range tests {
		for _, path := range []string{base, base + "/web"} {
			code, b := h.getAccept(path, tc.accept)
			switch tc.want {
			case no:
				st := decodeStatus(t, b)
				if code != 406 || st.Reason != api.StatusReasonNotAcceptable || st.Code != 406 || !strings.Contains(st.Message, "application/json") {
					t.Errorf("GET %s Accept %q = %d %s; want a 406 NotAcceptable Status", path, tc.accept, code, trim(b))
				}
			case plain:
				kind := `"kind":"PodList"`
				if path != base {
					kind = `"kind":"Pod"`
				}
				if code != 200 || !strings.Contains(string(b), kind) {
					t.Errorf("GET %s Accept %q = %d %s; want plain JSON", path, tc.accept, code, trim(b))
				}
			default:
				if code != 200 {
					t.Errorf("GET %s Accept %q = %d %s; want a Table", path, tc.accept, code, trim(b))
					continue
				}
				tbl := decodeTable(t, b)
				var pm api.PartialObjectMetadata
				json.Unmarshal(tbl.Rows[0].Object, &pm)
				if tbl.APIVersion != tc.want || pm.APIVersion != tc.want {
					t.Errorf("GET %s Accept %q: table %s, row object %s; want both %s", path, tc.accept, tbl.APIVersion, pm.APIVersion, tc.want)
				}
			}
		}
	}
	// A watch refuses before it starts streaming.
	code, b := h.getAccept(base+"?watch=true", "application/yaml")
	if st := decodeStatus(t, b); code != 406 || st.Reason != api.StatusReasonNotAcceptable {
		t.Errorf("watch Accept application/yaml = %d %s; want 406", code, trim(b))
	}
}

// TestTablePlainJSONUnchanged pins that asking for JSON explicitly gives
// the very bytes a request without Accept gets.
func TestTablePlainJSONUnchanged(t *testing.T) {
	h := newHarness(t)
	base := "/api/v1/namespaces/default/pods"
	if code, b := h.do("POST", base, "application/json", podJSON); code != 201 {
		t.Fatalf("create = %d %s", code, b)
	}
	for _, path := range []string{base, base + "/web", base + "/web/status", "/api/v1/pods"} {
		_, want := h.getAccept(path, "")
		code, got := h.getAccept(path, "application/json")
		if code != 200 || !bytes.Equal(got, want) || bytes.Contains(got, []byte(`"Table"`)) {
			t.Errorf("GET %s as application/json = %d %s; want the same bytes as without Accept: %s", path, code, trim(got), trim(want))
		}
	}
}

// TestTableWatchDeleteAndError sends a DELETED event as a Table row and
// keeps an ERROR event's Status.
func TestTableWatchDeleteAndError(t *testing.T) {
	h := newHarness(t)
	base := "/api/v1/namespaces/default/pods"
	if code, b := h.do("POST", base, "application/json", podJSON); code != 201 {
		t.Fatalf("create = %d %s", code, b)
	}
	sc := h.watchStream(base+"?watch=true&includeObject=None", kubectlAccept)
	if ev := nextEvent(t, sc); ev.Type != "ADDED" || ev.Object.Rows[0].Object != nil {
		t.Fatalf("first event = %+v; want ADDED without a row object", ev)
	}
	if code, b := h.do("DELETE", base+"/web", "", ""); code != 200 {
		t.Fatalf("delete = %d %s", code, b)
	}
	ev := nextEvent(t, sc)
	if ev.Type != "DELETED" || len(ev.Object.Rows) != 1 || ev.Object.Rows[0].Cells[0] != "web" || ev.Object.ColumnDefinitions != nil {
		t.Fatalf("event after delete = %+v; want DELETED with web's row and no columns", ev)
	}

	code, b := h.getAccept(base+"?watch=true&resourceVersion=x", kubectlAccept)
	if code != 400 {
		t.Errorf("table watch with a bad resourceVersion = %d %s; want 400", code, trim(b))
	}
}

func TestParseAcceptOrder(t *testing.T) {
	got := parseAccept("*/*;q=0.9, application/*, application/json;q=0.9, text/plain;q=0, application/yaml")
	var order []string
	for _, c := range got {
		order = append(order, c.typ+"/"+c.sub)
	}
	want := "application/yaml,application/*,application/json,*/*"
	if strings.Join(order, ",") != want {
		t.Errorf("parseAccept order = %v; want %s", order, want)
	}
}
