package apiserver

import (
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"
)

// openAPIDoc is the part of an OpenAPI v3 document the tests read.
type openAPIDoc struct {
	OpenAPI    string
	Paths      map[string]map[string]json.RawMessage
	Components struct {
		Schemas map[string]map[string]any
	}
}

func (h *harness) openAPIRoot() map[string]map[string]string {
	h.t.Helper()
	resp, b := h.get("/openapi/v3", nil)
	if resp.StatusCode != 200 {
		h.t.Fatalf("GET /openapi/v3 = %d %s", resp.StatusCode, b)
	}
	var root struct{ Paths map[string]map[string]string }
	if err := json.Unmarshal(b, &root); err != nil {
		h.t.Fatal(err)
	}
	return root.Paths
}

func TestOpenAPIRootAndCaching(t *testing.T) {
	h := newHarness(t)
	paths := h.openAPIRoot()
	if paths["api/v1"] == nil || paths["apis/apps/v1"] == nil {
		t.Fatalf("/openapi/v3 paths = %v; want api/v1 and apis/apps/v1 among them", paths)
	}
	url := paths["api/v1"]["serverRelativeURL"]
	if !strings.HasPrefix(url, "/openapi/v3/api/v1?hash=") {
		t.Fatalf("api/v1 serverRelativeURL = %q", url)
	}
	resp, _ := h.get(url, nil)
	if resp.StatusCode != 200 || resp.Header.Get("Cache-Control") != "public, immutable, max-age=31536000" {
		t.Errorf("GET %s = %d, Cache-Control %q; want 200, immutable", url, resp.StatusCode, resp.Header.Get("Cache-Control"))
	}
	resp, _ = h.get("/openapi/v3/api/v1?hash=stale", nil)
	if resp.StatusCode != http.StatusMovedPermanently || resp.Header.Get("Location") != url {
		t.Errorf("GET with a stale hash = %d, Location %q; want 301 to %s", resp.StatusCode, resp.Header.Get("Location"), url)
	}
	resp, _ = h.get("/openapi/v3/api/v1", nil)
	if resp.StatusCode != 200 || resp.Header.Get("Cache-Control") != "no-cache, private" {
		t.Errorf("GET without hash = %d, Cache-Control %q; want 200, no-cache", resp.StatusCode, resp.Header.Get("Cache-Control"))
	}
	for _, p := range []string{"/openapi/v3/apis/batch/v1", "/openapi/v3/api", "/openapi/v3x"} {
		if resp, _ := h.get(p, nil); resp.StatusCode != 404 {
			t.Errorf("GET %s = %d; want 404", p, resp.StatusCode)
		}
	}
}

func (h *harness) openAPIDoc(path string) openAPIDoc {
	h.t.Helper()
	resp, b := h.get("/openapi/v3/"+path, nil)
	if resp.StatusCode != 200 {
		h.t.Fatalf("GET /openapi/v3/%s = %d %s", path, resp.StatusCode, b)
	}
	var doc openAPIDoc
	if err := json.Unmarshal(b, &doc); err != nil {
		h.t.Fatal(err)
	}
	return doc
}

// TestOpenAPISchemas checks the schemas kubectl explain and apply read:
// kinds carry their group-version-kind, structs are referenced by
// Kubernetes' names, special types have Kubernetes' formats.
func TestOpenAPISchemas(t *testing.T) {
	h := newHarness(t)
	doc := h.openAPIDoc("api/v1")
	if doc.OpenAPI != "3.0.0" {
		t.Errorf("openapi = %q; want 3.0.0", doc.OpenAPI)
	}
	s := doc.Components.Schemas
	pod := s["io.k8s.api.core.v1.Pod"]
	gvk, _ := json.Marshal(pod["x-kubernetes-group-version-kind"])
	if string(gvk) != `[{"group":"","kind":"Pod","version":"v1"}]` {
		t.Errorf("Pod x-kubernetes-group-version-kind = %s", gvk)
	}
	props := func(name string) map[string]any {
		p, _ := s[name]["properties"].(map[string]any)
		if p == nil {
			t.Fatalf("schema %s has no properties: %v", name, s[name])
		}
		return p
	}
	for _, want := range []string{"apiVersion", "kind", "metadata", "spec", "status"} {
		if _, ok := props("io.k8s.api.core.v1.Pod")[want]; !ok {
			t.Errorf("Pod lacks property %s", want)
		}
	}
	js := func(v any) string { b, _ := json.Marshal(v); return string(b) }
	for _, tc := range []struct{ schema, prop, want string }{
		{"io.k8s.api.core.v1.PodSpec", "containers", `"items":{"$ref":"#/components/schemas/io.k8s.api.core.v1.Container"}`},
		{"io.k8s.api.core.v1.PodSpec", "nodeSelector", `"additionalProperties":{"type":"string"}`},
		{"io.k8s.api.core.v1.PodSpec", "terminationGracePeriodSeconds", `"format":"int64","type":"integer"`},
		{"io.k8s.api.core.v1.Pod", "metadata", `"$ref":"#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"`},
		{"io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta", "creationTimestamp", `"format":"date-time","type":"string"`},
		{"io.k8s.api.core.v1.ContainerPort", "containerPort", `"format":"int32"`},
		{"io.k8s.api.core.v1.Secret", "data", `"additionalProperties":{"format":"byte","type":"string"}`},
		{"io.k8s.api.core.v1.ResourceRequirements", "limits", `"additionalProperties":{"$ref":"#/components/schemas/io.k8s.apimachinery.pkg.api.resource.Quantity"}`},
		{"io.k8s.api.core.v1.Volume", "hostPath", `"$ref":"#/components/schemas/io.k8s.api.core.v1.HostPathVolumeSource"`},
	} {
		if got := js(props(tc.schema)[tc.prop]); !strings.Contains(got, tc.want) {
			t.Errorf("%s.%s = %s; want it to contain %s", tc.schema, tc.prop, got, tc.want)
		}
	}
	if _, ok := props("io.k8s.api.core.v1.Pod")["TypeMeta"]; ok {
		t.Error("Pod has a TypeMeta property; inline fields must be flattened")
	}
	if got := js(s["io.k8s.apimachinery.pkg.util.intstr.IntOrString"]); !strings.Contains(got, `"format":"int-or-string"`) {
		t.Errorf("IntOrString = %s; want format int-or-string", got)
	}

	apps := h.openAPIDoc("apis/apps/v1").Components.Schemas
	if _, ok := apps["io.k8s.api.apps.v1.DeploymentSpec"]; !ok {
		t.Error("apps/v1 lacks io.k8s.api.apps.v1.DeploymentSpec")
	}
	if _, ok := apps["io.k8s.api.core.v1.PodTemplateSpec"]; !ok {
		t.Error("apps/v1 lacks io.k8s.api.core.v1.PodTemplateSpec; each document must be self-contained")
	}
}

// TestOpenAPIPatchOperations checks what kubectl looks for before it
// sends fieldValidation and strategic merge patches: a PATCH operation
// tagged with the kind, taking fieldValidation and the SMP media type.
func TestOpenAPIPatchOperations(t *testing.T) {
	h := newHarness(t)
	doc := h.openAPIDoc("apis/apps/v1")
	item, ok := doc.Paths["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"]
	if !ok {
		t.Fatalf("no deployment item path among %d paths", len(doc.Paths))
	}
	var patch struct {
		GVK         map[string]string `json:"x-kubernetes-group-version-kind"`
		Parameters  []struct{ Name, In string }
		RequestBody struct{ Content map[string]any }
	}
	if err := json.Unmarshal(item["patch"], &patch); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(patch.GVK, map[string]string{"group": "apps", "version": "v1", "kind": "Deployment"}) {
		t.Errorf("PATCH gvk = %v", patch.GVK)
	}
	hasFV := false
	for _, p := range patch.Parameters {
		hasFV = hasFV || p.Name == "fieldValidation" && p.In == "query"
	}
	if !hasFV {
		t.Errorf("PATCH parameters %v lack fieldValidation in query", patch.Parameters)
	}
	if _, ok := patch.RequestBody.Content["application/strategic-merge-patch+json"]; !ok {
		t.Errorf("PATCH request body types %v lack strategic merge patch", patch.RequestBody.Content)
	}
	nodes := h.openAPIDoc("api/v1").Paths
	if _, ok := nodes["/api/v1/nodes/{name}"]; !ok {
		t.Error("no cluster-scoped /api/v1/nodes/{name} path")
	}
}

// TestSchemaPatchTags checks the patchStrategy/patchMergeKey struct tags
// become x-kubernetes-patch-* extensions, and that field docs apply.
func TestSchemaPatchTags(t *testing.T) {
	type item struct {
		Name string `json:"name"`
	}
	type holder struct {
		Items []item `json:"items,omitempty" patchStrategy:"merge" patchMergeKey:"name"`
		Plain []item `json:"plain"`
		One   *item  `json:"one,omitempty" patchStrategy:"retainKeys"`
		Skip  string `json:"-"`
		inner string
	}
	_ = holder{inner: "unexported fields are not properties"}
	b := newSchemaBuilder(map[string]string{"holder": "Holder holds.", "holder.plain": "Plain is plain."})
	name := b.component(reflect.TypeFor[holder]())
	s := b.components[name]
	got, _ := json.Marshal(s)
	for _, want := range []string{
		`"description":"Holder holds."`,
		`"items":{"items":{"$ref":"#/components/schemas/`,
		`"x-kubernetes-patch-merge-key":"name","x-kubernetes-patch-strategy":"merge"`,
		`"plain":{"description":"Plain is plain.","items"`,
		`"one":{"allOf":[{"$ref"`,
		`"x-kubernetes-patch-strategy":"retainKeys"`,
	} {
		if !strings.Contains(string(got), want) {
			t.Errorf("schema = %s; want it to contain %s", got, want)
		}
	}
	if strings.Contains(string(got), "Skip") || strings.Contains(string(got), "inner") {
		t.Errorf("schema = %s; want no Skip or inner", got)
	}
}
