package apiserver

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/internal/clock"
	"github.com/skiffhq/skiff/storage"
)

// harness is a Server on a real SQLite file behind a plain HTTP test
// server (TLS and auth are layered on by the caller of this package).
type harness struct {
	t     testing.TB
	store *storage.Store
	srv   *Server
	http  *httptest.Server
	clock *clock.Fake
}

func newHarness(t testing.TB, opts ...func(*storage.Options)) *harness {
	t.Helper()
	ctx := context.Background()
	fc := clock.NewFake(time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC))
	so := storage.Options{Path: filepath.Join(t.TempDir(), "state.db"), Clock: fc, CompactInterval: -1, CheckpointInterval: -1}
	for _, o := range opts {
		o(&so)
	}
	st, err := storage.Open(ctx, so)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(Config{Store: st, Clock: fc})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Bootstrap(ctx); err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/api/", srv.ServeResource)
	mux.HandleFunc("/apis/", srv.ServeResource)
	mux.HandleFunc("/api", srv.ServeResource)
	mux.HandleFunc("/apis", srv.ServeResource)
	mux.HandleFunc("/openapi/", srv.ServeOpenAPI)
	mux.HandleFunc(WatchesPath, srv.ServeWatches)
	hs := httptest.NewServer(mux)
	h := &harness{t: t, store: st, srv: srv, http: hs, clock: fc}
	t.Cleanup(func() { hs.Close(); st.Close() })
	return h
}

// do sends a request and returns the status code and body.
func (h *harness) do(method, path, contentType, body string) (int, []byte) {
	h.t.Helper()
	req, err := http.NewRequest(method, h.http.URL+path, strings.NewReader(body))
	if err != nil {
		h.t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func decodeStatus(t *testing.T, b []byte) api.Status {
	t.Helper()
	var st api.Status
	if err := json.Unmarshal(b, &st); err != nil || st.Kind != "Status" {
		t.Fatalf("body is not a Status: %s", b)
	}
	return st
}

const podJSON = `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web","labels":{"app":"web"}},"spec":{"containers":[{"name":"c","image":"busybox"}]}}`

func TestAPIStatusCodes(t *testing.T) {
	h := newHarness(t)
	pods := "/api/v1/namespaces/default/pods"
	tests := []struct {
		name, method, path, ctype, body string
		wantCode                        int
		wantReason                      api.StatusReason
		wantInBody                      string
	}{
		{"create", "POST", pods, "application/json", podJSON, 201, "", `"resourceVersion"`},
		{"create again", "POST", pods, "application/json", podJSON, 409, api.StatusReasonAlreadyExists, `pods \"web\" already exists`},
		{"get", "GET", pods + "/web", "", "", 200, "", `"uid"`},
		{"get missing", "GET", pods + "/nope", "", "", 404, api.StatusReasonNotFound, `pods \"nope\" not found`},
		{"missing namespace", "POST", "/api/v1/namespaces/ghost/pods", "application/json", podJSON, 404, api.StatusReasonNotFound, `namespaces \"ghost\" not found`},
		{"malformed json", "POST", pods, "application/json", `{"apiVersion":`, 400, api.StatusReasonBadRequest, "malformed JSON"},
		{"unknown field", "POST", pods, "application/json", strings.Replace(podJSON, `"image"`, `"imag"`, 1), 400, api.StatusReasonBadRequest, `unknown field \"spec.containers[0].imag\"`},
		{"invalid", "POST", pods, "application/json", strings.Replace(podJSON, `,"image":"busybox"`, ``, 1), 422, api.StatusReasonInvalid, `"field":"spec.containers[0].image"`},
		{"kind mismatch", "POST", pods, "application/json", strings.Replace(podJSON, `"Pod"`, `"Node"`, 1), 400, api.StatusReasonBadRequest, "the URL is for v1 Pod"},
		{"namespace mismatch", "POST", pods, "application/json", strings.Replace(podJSON, `"name":"web"`, `"name":"web2","namespace":"kube-system"`, 1), 400, api.StatusReasonBadRequest, "does not match the namespace"},
		{"unsupported media", "POST", pods, "application/xml", podJSON, 415, api.StatusReasonUnsupportedMediaType, "unknown format"},
		{"too large", "POST", pods, "application/json", `{"x":"` + strings.Repeat("a", MaxBodyBytes) + `"}`, 413, api.StatusReasonRequestEntityTooLarge, "larger than"},
		{"unknown resource", "GET", "/api/v1/widgets", "", "", 404, api.StatusReasonNotFound, "could not find"},
		{"wrong group", "GET", "/apis/apps/v1/namespaces/default/pods", "", "", 404, api.StatusReasonNotFound, "could not find"},
		{"post to name", "POST", pods + "/web", "application/json", podJSON, 405, api.StatusReasonMethodNotAllowed, "does not allow"},
		{"bad label selector", "GET", pods + "?labelSelector=a%20in%20x", "", "", 400, api.StatusReasonBadRequest, "unable to parse labelSelector"},
		{"unsupported field", "GET", pods + "?fieldSelector=spec.image%3Dx", "", "", 400, api.StatusReasonBadRequest, "field label not supported: spec.image"},
		{"stale update", "PUT", pods + "/web", "application/json", strings.Replace(podJSON, `"name":"web"`, `"name":"web","resourceVersion":"1"`, 1), 409, api.StatusReasonConflict, "has been modified"},
		{"name mismatch", "PUT", pods + "/other", "application/json", podJSON, 400, api.StatusReasonBadRequest, "does not match the name"},
		{"bad patch type", "PATCH", pods + "/web", "application/json", `{}`, 415, api.StatusReasonUnsupportedMediaType, "merge-patch"},
		{"delete default ns", "DELETE", "/api/v1/namespaces/default", "", "", 403, api.StatusReasonForbidden, "may not be deleted"},
		{"bad grace", "DELETE", pods + "/web?gracePeriodSeconds=-1", "", "", 400, api.StatusReasonBadRequest, "gracePeriodSeconds"},
	}
	for _, tt := range tests {
		code, body := h.do(tt.method, tt.path, tt.ctype, tt.body)
		if code != tt.wantCode || !strings.Contains(string(body), tt.wantInBody) {
			t.Errorf("%s: %s %s = %d %s; want %d containing %s", tt.name, tt.method, tt.path, code, trim(body), tt.wantCode, tt.wantInBody)
			continue
		}
		if tt.wantReason != "" {
			if st := decodeStatus(t, body); st.Reason != tt.wantReason || st.Code != int32(tt.wantCode) || st.Status != "Failure" {
				t.Errorf("%s: Status = %+v; want reason %s code %d", tt.name, st, tt.wantReason, tt.wantCode)
			}
		}
	}
}

func trim(b []byte) string {
	if len(b) > 300 {
		return string(b[:300]) + "..."
	}
	return string(b)
}

func TestAPIInvalidNamesEveryField(t *testing.T) {
	h := newHarness(t)
	body := `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"Bad_Name"},"spec":{"containers":[{"name":"c"},{"name":"c","image":"x","ports":[{"containerPort":70000}]}]}}`
	code, b := h.do("POST", "/api/v1/namespaces/default/pods", "application/json", body)
	if code != 422 {
		t.Fatalf("POST invalid pod = %d %s; want 422", code, b)
	}
	st := decodeStatus(t, b)
	got := map[string]bool{}
	for _, c := range st.Details.Causes {
		got[c.Field] = true
	}
	for _, f := range []string{"metadata.name", "spec.containers[0].image", "spec.containers[1].name", "spec.containers[1].ports[0].containerPort"} {
		if !got[f] {
			t.Errorf("causes = %+v; want one for %s", st.Details.Causes, f)
		}
	}
	if code, _ := h.do("GET", "/api/v1/namespaces/default/pods/Bad_Name", "", ""); code != 404 {
		t.Errorf("invalid pod was stored: GET = %d; want 404", code)
	}
}

func TestAPISharedManifestsApplyAsYAML(t *testing.T) {
	h := newHarness(t)
	for _, ns := range []string{"mem-example", "qos-example"} {
		if code, b := h.do("POST", "/api/v1/namespaces", "application/yaml", "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: "+ns+"\n"); code != 201 {
			t.Fatalf("create namespace %s = %d %s", ns, code, b)
		}
	}
	files, _ := filepath.Glob("../../../shared/manifests/*.yaml")
	if len(files) == 0 {
		t.Fatal("no manifests under ../../../shared/manifests; CI has shared/ beside the repository")
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		obj, err := api.DecodeObject(data)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		res, _ := api.ResourceOf(obj)
		ns := obj.GetObjectMeta().Namespace
		if ns == "" {
			ns = "default"
		}
		prefix := "/api/v1"
		if res.Group != "" {
			prefix = "/apis/" + res.GroupVersion()
		}
		code, b := h.do("POST", prefix+"/namespaces/"+ns+"/"+res.Resource, "application/yaml", string(data))
		if code != 201 {
			t.Errorf("POST %s = %d %s; want 201", filepath.Base(f), code, trim(b))
		}
	}
}

func TestAPIUpdateStrategies(t *testing.T) {
	h := newHarness(t)
	base := "/api/v1/namespaces/default/pods"
	if code, b := h.do("POST", base, "application/json", podJSON); code != 201 {
		t.Fatalf("create = %d %s", code, b)
	}
	// A status write changes only the status.
	status := `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web","labels":{"app":"changed"}},"spec":{"containers":[{"name":"c","image":"other"}]},"status":{"phase":"Running","podIP":"10.42.0.5"}}`
	code, b := h.do("PUT", base+"/web/status", "application/json", status)
	if code != 200 {
		t.Fatalf("PUT status = %d %s", code, b)
	}
	var p api.Pod
	json.Unmarshal(b, &p)
	if p.Status.Phase != api.PodRunning || p.Spec.Containers[0].Image != "busybox" || p.Labels["app"] != "web" {
		t.Errorf("after status PUT: phase %s image %s label %s; want Running, busybox, web", p.Status.Phase, p.Spec.Containers[0].Image, p.Labels["app"])
	}
	// A main-resource write keeps the status.
	code, b = h.do("PATCH", base+"/web", "application/merge-patch+json", `{"metadata":{"labels":{"tier":"front"}},"status":{"phase":"Failed"}}`)
	if code != 200 {
		t.Fatalf("PATCH = %d %s", code, b)
	}
	p = api.Pod{}
	json.Unmarshal(b, &p)
	if p.Status.Phase != api.PodRunning || p.Labels["tier"] != "front" || p.Labels["app"] != "web" {
		t.Errorf("after PATCH: phase %s labels %v; want Running and both labels", p.Status.Phase, p.Labels)
	}
	// Merge patch with null removes a key; patch on status subresource works.
	code, b = h.do("PATCH", base+"/web/status", "application/merge-patch+json", `{"status":{"podIP":null}}`)
	if code != 200 || strings.Contains(string(b), "10.42.0.5") {
		t.Errorf("PATCH status null = %d %s; want podIP removed", code, trim(b))
	}
	// Pod spec is immutable except for what Kubernetes allows.
	code, b = h.do("PATCH", base+"/web", "application/merge-patch+json", `{"spec":{"restartPolicy":"Never"}}`)
	if code != 422 {
		t.Errorf("PATCH immutable field = %d %s; want 422", code, trim(b))
	}
}

func TestAPIGracefulPodDelete(t *testing.T) {
	h := newHarness(t)
	base := "/api/v1/namespaces/default/pods"
	bound := strings.Replace(podJSON, `"containers"`, `"nodeName":"n1","containers"`, 1)
	if code, b := h.do("POST", base, "application/json", bound); code != 201 {
		t.Fatalf("create = %d %s", code, b)
	}
	code, b := h.do("DELETE", base+"/web", "", "")
	if code != 200 || !strings.Contains(string(b), `"deletionTimestamp":"2026-11-21T12:00:00Z"`) || !strings.Contains(string(b), `"deletionGracePeriodSeconds":30`) {
		t.Fatalf("DELETE bound pod = %d %s; want 200 with deletionTimestamp and grace 30", code, trim(b))
	}
	if code, _ := h.do("GET", base+"/web", "", ""); code != 200 {
		t.Fatalf("GET after graceful delete = %d; want 200 (still terminating)", code)
	}
	if code, b := h.do("DELETE", base+"/web?gracePeriodSeconds=0", "", ""); code != 200 {
		t.Fatalf("forced DELETE = %d %s", code, b)
	}
	if code, _ := h.do("GET", base+"/web", "", ""); code != 404 {
		t.Fatalf("GET after forced delete = %d; want 404", code)
	}
	// An unbound pod goes at once.
	h.do("POST", base, "application/json", podJSON)
	if code, _ := h.do("DELETE", base+"/web", "", ""); code != 200 {
		t.Fatalf("DELETE unbound = %d", code)
	}
	if code, _ := h.do("GET", base+"/web", "", ""); code != 404 {
		t.Fatalf("GET after deleting unbound pod = %d; want 404", code)
	}
}

func TestAPIListSelectors(t *testing.T) {
	h := newHarness(t)
	base := "/api/v1/namespaces/default/pods"
	for i, spec := range []struct{ name, app, node string }{{"a", "web", "n1"}, {"b", "web", "n2"}, {"c", "db", "n1"}} {
		body := strings.NewReplacer(`"name":"web"`, `"name":"`+spec.name+`"`, `"app":"web"`, `"app":"`+spec.app+`"`, `"containers"`, `"nodeName":"`+spec.node+`","containers"`).Replace(podJSON)
		if code, b := h.do("POST", base, "application/json", body); code != 201 {
			t.Fatalf("create %d = %d %s", i, code, b)
		}
	}
	tests := []struct{ query, want string }{
		{"", "a,b,c"},
		{"?labelSelector=app%3Dweb", "a,b"},
		{"?labelSelector=app%20notin%20(web)", "c"},
		{"?fieldSelector=spec.nodeName%3Dn1", "a,c"},
		{"?fieldSelector=spec.nodeName%3Dn1&labelSelector=app%3Dweb", "a"},
		{"?fieldSelector=metadata.name!%3Da", "b,c"},
	}
	for _, tt := range tests {
		code, b := h.do("GET", base+tt.query, "", "")
		var l api.PodList
		if code != 200 || json.Unmarshal(b, &l) != nil {
			t.Fatalf("GET %s = %d %s", tt.query, code, trim(b))
		}
		var names []string
		for _, p := range l.Items {
			names = append(names, p.Name)
		}
		if got := strings.Join(names, ","); got != tt.want || l.Kind != "PodList" || l.ResourceVersion == "" {
			t.Errorf("GET pods%s = %s (kind %s rv %q); want %s", tt.query, got, l.Kind, l.ResourceVersion, tt.want)
		}
	}
	// All namespaces.
	code, b := h.do("GET", "/api/v1/pods", "", "")
	if code != 200 || strings.Count(string(b), `"kind":"Pod"`) != 3 {
		t.Errorf("GET /api/v1/pods = %d, %d pods; want 3", code, strings.Count(string(b), `"kind":"Pod"`))
	}
}

func TestAPIWatchResumeAndGone(t *testing.T) {
	h := newHarness(t, func(o *storage.Options) { o.CompactMinRevisions = 1; o.CompactMinAge = time.Second })
	base := "/api/v1/namespaces/default/pods"
	_, b := h.do("POST", base, "application/json", podJSON)
	var p api.Pod
	json.Unmarshal(b, &p)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", h.http.URL+base+"?watch=true&resourceVersion="+p.ResourceVersion, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("watch = %d", resp.StatusCode)
	}
	h.do("PATCH", base+"/web", "application/merge-patch+json", `{"metadata":{"labels":{"x":"1"}}}`)
	h.do("DELETE", base+"/web", "", "")
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var types []string
	for len(types) < 2 && sc.Scan() {
		var ev struct {
			Type   string  `json:"type"`
			Object api.Pod `json:"object"`
		}
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("bad watch line %q: %v", sc.Text(), err)
		}
		types = append(types, ev.Type)
	}
	if strings.Join(types, ",") != "MODIFIED,DELETED" {
		t.Fatalf("watch events = %v; want MODIFIED,DELETED (no replay of the ADDED before the resume point)", types)
	}
	cancel()

	// Compact, then ask for an old revision: an ERROR event with 410.
	for i := 0; i < 5; i++ {
		h.do("POST", base, "application/json", strings.Replace(podJSON, `"name":"web"`, `"name":"p`+string(rune('a'+i))+`"`, 1))
	}
	h.clock.Advance(time.Minute)
	if rev, err := h.store.Compact(context.Background()); err != nil || rev <= 2 {
		t.Fatalf("Compact() = %d, %v; want a revision above 2", rev, err)
	}
	code, body := h.do("GET", base+"?watch=true&resourceVersion=1", "", "")
	var ev struct {
		Type   string     `json:"type"`
		Object api.Status `json:"object"`
	}
	if code != 200 || json.Unmarshal(body, &ev) != nil || ev.Type != "ERROR" || ev.Object.Code != 410 {
		t.Fatalf("watch from compacted revision = %d %s; want 200 with an ERROR event of code 410", code, trim(body))
	}
}

func TestAPIWatchInitialStateAndBookmarks(t *testing.T) {
	h := newHarness(t)
	base := "/api/v1/namespaces/default/pods"
	h.do("POST", base, "application/json", podJSON)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", h.http.URL+base+"?watch=1&allowWatchBookmarks=true", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	if !sc.Scan() || !strings.HasPrefix(sc.Text(), `{"type":"ADDED","object":{"apiVersion":"v1","kind":"Pod"`) {
		t.Fatalf("first watch line = %q; want the existing pod as ADDED", sc.Text())
	}
	h.clock.BlockUntil(1)
	h.clock.Advance(defaultHeartbeat)
	if !sc.Scan() || !strings.HasPrefix(sc.Text(), `{"type":"BOOKMARK","object":{"kind":"Pod","apiVersion":"v1","metadata":{"resourceVersion":"`) {
		t.Fatalf("line after a heartbeat = %q; want a BOOKMARK", sc.Text())
	}
}

// TestAPIWatchBookmarkCarriesProgress: a bookmark names the store's
// revision once the stream has sent everything, even when the newest
// changes were of other resources or other nodes' pods, so an agent
// resumes after a server restart from a recent revision (served from the
// warmed watch cache) rather than from its last pod's.
func TestAPIWatchBookmarkCarriesProgress(t *testing.T) {
	h := newHarness(t)
	base := "/api/v1/namespaces/default/pods"
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rev := h.store.Revision()
	req, _ := http.NewRequestWithContext(ctx, "GET", h.http.URL+base+"?watch=1&allowWatchBookmarks=true&fieldSelector=spec.nodeName%3Dn1&resourceVersion="+strconv.FormatInt(rev, 10), nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	h.clock.BlockUntil(1)
	// Another node's pod and a ConfigMap: nothing this stream selects.
	other := strings.Replace(podJSON, `"containers"`, `"nodeName":"n2","containers"`, 1)
	if code, body := h.do("POST", base, "application/json", other); code != http.StatusCreated {
		t.Fatalf("create pod on n2 = %d %s", code, trim(body))
	}
	if code, body := h.do("POST", "/api/v1/namespaces/default/configmaps", "application/json",
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"}}`); code != http.StatusCreated {
		t.Fatalf("create configmap = %d %s", code, trim(body))
	}
	want := h.store.Revision()
	if want < rev+2 {
		t.Fatalf("revision %d after two creates from %d", want, rev)
	}
	h.clock.Advance(defaultHeartbeat)
	sc := bufio.NewScanner(resp.Body)
	wantLine := `{"type":"BOOKMARK","object":{"kind":"Pod","apiVersion":"v1","metadata":{"resourceVersion":"` + strconv.FormatInt(want, 10) + `"}}}`
	if !sc.Scan() || sc.Text() != wantLine {
		t.Fatalf("line after a heartbeat = %q; want %s", sc.Text(), wantLine)
	}
}
