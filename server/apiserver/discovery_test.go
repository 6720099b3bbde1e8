package apiserver

import (
	"compress/gzip"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
)

// get sends a GET with headers and returns the response and its body.
func (h *harness) get(path string, headers map[string]string) (*http.Response, []byte) {
	h.t.Helper()
	req, err := http.NewRequest(http.MethodGet, h.http.URL+path, nil)
	if err != nil {
		h.t.Fatal(err)
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	// A transport of its own, so gzip is not undone behind the test's back.
	resp, err := (&http.Transport{DisableCompression: true}).RoundTrip(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		h.t.Fatal(err)
	}
	return resp, b
}

const kubectlDiscoveryAccept = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json"

func TestAggregatedVersion(t *testing.T) {
	for _, tc := range []struct{ accept, want string }{
		{kubectlDiscoveryAccept, "v2"},
		{"application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json", "v2beta1"},
		{"application/json", ""},
		{"", ""},
		{"*/*", ""},
		{"application/json, " + kubectlDiscoveryAccept, ""},
		{"application/json;g=apidiscovery.k8s.io;v=v3;as=APIGroupDiscoveryList", ""},
		{"application/json;as=Table;v=v1;g=meta.k8s.io,application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList", "v2"},
		{";;;,garbage/", ""},
	} {
		if got := aggregatedVersion(tc.accept); got != tc.want {
			t.Errorf("aggregatedVersion(%q) = %q; want %q", tc.accept, got, tc.want)
		}
	}
}

// TestDiscoveryAggregated checks /api and /apis in the v2 form kubectl
// 1.32 asks for first: every resource with scope, short names,
// categories and subresources.
func TestDiscoveryAggregated(t *testing.T) {
	h := newHarness(t)
	type gvk struct{ Group, Version, Kind string }
	type sub struct {
		Subresource  string
		ResponseKind gvk
		Verbs        []string
	}
	type resource struct {
		Resource, Scope, SingularResource string
		ResponseKind                      gvk
		Verbs, ShortNames, Categories     []string
		Subresources                      []sub
	}
	type list struct {
		Kind, APIVersion string
		Items            []struct {
			Metadata struct{ Name string }
			Versions []struct {
				Version, Freshness string
				Resources          []resource
			}
		}
	}
	read := func(path string) (list, map[string]resource) {
		resp, b := h.get(path, map[string]string{"Accept": kubectlDiscoveryAccept})
		if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || ct != "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList" {
			t.Fatalf("GET %s = %d %q; want 200 with the aggregated content type", path, resp.StatusCode, ct)
		}
		var l list
		if err := json.Unmarshal(b, &l); err != nil {
			t.Fatal(err)
		}
		byName := map[string]resource{}
		for _, it := range l.Items {
			for _, v := range it.Versions {
				for _, r := range v.Resources {
					byName[r.Resource] = r
				}
			}
		}
		return l, byName
	}
	core, res := read("/api")
	if core.Kind != "APIGroupDiscoveryList" || core.APIVersion != "apidiscovery.k8s.io/v2" || len(core.Items) != 1 || core.Items[0].Metadata.Name != "" {
		t.Fatalf("/api = %+v; want one unnamed group", core)
	}
	if v := core.Items[0].Versions; len(v) != 1 || v[0].Version != "v1" || v[0].Freshness != "Current" {
		t.Errorf("/api versions = %+v; want v1, Current", v)
	}
	var names []string
	for _, r := range core.Items[0].Versions[0].Resources {
		names = append(names, r.Resource)
	}
	if !slices.IsSorted(names) {
		t.Errorf("/api resources = %v; want them sorted", names)
	}
	for _, want := range []string{"configmaps", "events", "namespaces", "nodes", "persistentvolumeclaims", "persistentvolumes", "pods", "secrets"} {
		if !slices.Contains(names, want) {
			t.Errorf("/api resources = %v; want %s among them", names, want)
		}
	}
	pods := res["pods"]
	if pods.Scope != "Namespaced" || pods.SingularResource != "pod" || pods.ResponseKind != (gvk{"", "v1", "Pod"}) ||
		!slices.Equal(pods.ShortNames, []string{"po"}) || !slices.Equal(pods.Categories, []string{"all"}) ||
		!slices.Equal(pods.Verbs, []string{"create", "delete", "get", "list", "patch", "update", "watch"}) {
		t.Errorf("pods = %+v", pods)
	}
	subs := map[string]sub{}
	for _, s := range pods.Subresources {
		subs[s.Subresource] = s
	}
	if e := subs["eviction"]; e.ResponseKind != (gvk{"policy", "v1", "Eviction"}) || !slices.Equal(e.Verbs, []string{"create"}) {
		t.Errorf("pods/eviction = %+v", e)
	}
	if _, ok := subs["log"]; !ok || len(subs) != 7 {
		t.Errorf("pods subresources = %+v; want eviction, log, exec, attach, portforward, ephemeralcontainers, status", pods.Subresources)
	}
	if e := subs["exec"]; e.ResponseKind != (gvk{"", "v1", "PodExecOptions"}) || !slices.Equal(e.Verbs, []string{"create", "get"}) {
		t.Errorf("pods/exec = %+v", e)
	}
	if n := res["nodes"]; n.Scope != "Cluster" || !slices.Equal(n.ShortNames, []string{"no"}) || n.Categories != nil {
		t.Errorf("nodes = %+v", n)
	}

	apps, res := read("/apis")
	if len(apps.Items) < 1 || apps.Items[0].Metadata.Name != "apps" {
		t.Fatalf("/apis = %+v; want the apps group first", apps)
	}
	d := res["deployments"]
	if len(d.Subresources) != 2 || d.Subresources[0].Subresource != "scale" || d.Subresources[0].ResponseKind != (gvk{"autoscaling", "v1", "Scale"}) {
		t.Errorf("deployments subresources = %+v; want scale (autoscaling/v1 Scale) and status", d.Subresources)
	}
	if ds := res["daemonsets"]; !slices.Equal(ds.ShortNames, []string{"ds"}) || ds.ResponseKind != (gvk{"apps", "v1", "DaemonSet"}) {
		t.Errorf("daemonsets = %+v", ds)
	}
}

// TestDiscoveryClassic checks the plain documents for clients that do not
// ask for the aggregated form, and the paths that are not discovery.
func TestDiscoveryClassic(t *testing.T) {
	h := newHarness(t)
	for _, tc := range []struct {
		path string
		code int
		want []string
	}{
		{"/api", 200, []string{`{"kind":"APIVersions","apiVersion":"v1","versions":["v1"]}`}},
		{"/api/", 200, []string{`"versions":["v1"]`}},
		{"/apis", 200, []string{`{"kind":"APIGroupList","apiVersion":"v1","groups":[{"name":"apps","versions":[{"groupVersion":"apps/v1","version":"v1"}],"preferredVersion":{"groupVersion":"apps/v1","version":"v1"}},{"name":"batch",`,
			`{"name":"rbac.authorization.k8s.io","versions":[{"groupVersion":"rbac.authorization.k8s.io/v1"`}},
		{"/apis/apps", 200, []string{`"kind":"APIGroup"`, `"name":"apps"`}},
		{"/api/v1", 200, []string{`"kind":"APIResourceList"`, `"groupVersion":"v1"`,
			`{"name":"pods","singularName":"pod","namespaced":true,"kind":"Pod","verbs":["create","delete","get","list","patch","update","watch"],"shortNames":["po"],"categories":["all"]}`,
			`{"name":"pods/eviction","singularName":"","namespaced":true,"group":"policy","version":"v1","kind":"Eviction","verbs":["create"]}`,
			`{"name":"pods/log","singularName":"","namespaced":true,"kind":"Pod","verbs":["get"]}`,
			`{"name":"nodes/status","singularName":"","namespaced":false,"kind":"Node","verbs":["get","patch","update"]}`}},
		{"/apis/apps/v1", 200, []string{`"groupVersion":"apps/v1"`,
			`{"name":"deployments/scale","singularName":"","namespaced":true,"group":"autoscaling","version":"v1","kind":"Scale","verbs":["get","patch","update"]}`,
			`{"name":"daemonsets/status"`}},
		{"/api/v2", 404, []string{`"reason":"NotFound"`}},
		{"/apis/example", 404, []string{`"reason":"NotFound"`}},
		{"/apis/apps/v2", 404, []string{`"reason":"NotFound"`}},
		{"/apis/example/v1/widgets", 404, []string{`"reason":"NotFound"`}},
	} {
		resp, b := h.get(tc.path, map[string]string{"Accept": "application/json"})
		if resp.StatusCode != tc.code {
			t.Errorf("GET %s = %d; want %d", tc.path, resp.StatusCode, tc.code)
		}
		if tc.code == 200 && resp.Header.Get("Content-Type") != "application/json" {
			t.Errorf("GET %s Content-Type = %q; want application/json", tc.path, resp.Header.Get("Content-Type"))
		}
		for _, w := range tc.want {
			if !strings.Contains(string(b), w) {
				t.Errorf("GET %s = %s; want it to contain %s", tc.path, b, w)
			}
		}
	}
	if code, b := h.do(http.MethodPost, "/api/v1", "application/json", "{}"); code != 405 {
		t.Errorf("POST /api/v1 = %d %s; want 405", code, b)
	}
}

// TestDocumentCaching checks ETag revalidation and gzip.
func TestDocumentCaching(t *testing.T) {
	h := newHarness(t)
	resp, body := h.get("/api/v1", nil)
	etag := resp.Header.Get("ETag")
	if etag == "" || resp.Header.Get("Content-Encoding") != "" {
		t.Fatalf("GET /api/v1: ETag %q, Content-Encoding %q; want an ETag and no encoding", etag, resp.Header.Get("Content-Encoding"))
	}
	if resp, b := h.get("/api/v1", map[string]string{"If-None-Match": etag}); resp.StatusCode != http.StatusNotModified || len(b) != 0 {
		t.Errorf("GET /api/v1 If-None-Match current = %d with %d bytes; want 304, empty", resp.StatusCode, len(b))
	}
	if resp, _ := h.get("/api/v1", map[string]string{"If-None-Match": `"stale"`}); resp.StatusCode != 200 {
		t.Errorf("GET /api/v1 If-None-Match stale = %d; want 200", resp.StatusCode)
	}
	resp, gz := h.get("/api/v1", map[string]string{"Accept-Encoding": "gzip"})
	if resp.Header.Get("Content-Encoding") != "gzip" {
		t.Fatalf("GET /api/v1 with Accept-Encoding gzip: Content-Encoding %q; want gzip", resp.Header.Get("Content-Encoding"))
	}
	zr, err := gzip.NewReader(strings.NewReader(string(gz)))
	if err != nil {
		t.Fatal(err)
	}
	plain, err := io.ReadAll(zr)
	if err != nil || string(plain) != string(body) {
		t.Errorf("gunzipped body differs from the plain one (err %v)", err)
	}
	if resp, _ := h.get("/api/v1", map[string]string{"Accept-Encoding": "gzip;q=0"}); resp.Header.Get("Content-Encoding") != "" {
		t.Errorf("gzip;q=0 still got Content-Encoding %q", resp.Header.Get("Content-Encoding"))
	}
}
