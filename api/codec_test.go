package api

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// manifestsDir is shared/manifests beside the repository (CI clones main
// with shared/ next to it).
const manifestsDir = "../../shared/manifests"

func TestDecodeObjectSharedManifests(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(manifestsDir, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests under %s (err %v); CI must have shared/ beside the repo", manifestsDir, err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		docs := SplitYAML(data)
		if len(docs) == 0 {
			t.Errorf("SplitYAML(%s) = no documents; want at least 1", filepath.Base(f))
		}
		for i, doc := range docs {
			obj, err := DecodeObject(doc)
			if err != nil {
				t.Errorf("DecodeObject(%s #%d) = %v; want nil", filepath.Base(f), i, err)
				continue
			}
			if obj.GetObjectMeta().Name == "" {
				t.Errorf("DecodeObject(%s #%d): empty metadata.name", filepath.Base(f), i)
			}
		}
	}
}

func TestDecodeObjectKeepsFields(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(manifestsDir, "http-liveness.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	obj, err := DecodeObject(data)
	if err != nil {
		t.Fatal(err)
	}
	pod := obj.(*Pod)
	probe := pod.Spec.Containers[0].LivenessProbe
	if probe == nil || probe.HTTPGet == nil || probe.HTTPGet.Port != FromInt(8080) ||
		len(probe.HTTPGet.HTTPHeaders) != 1 || probe.HTTPGet.HTTPHeaders[0].Value != "Awesome" || probe.PeriodSeconds != 3 {
		t.Fatalf("decoded probe = %+v; want httpGet :8080 with header Custom-Header: Awesome, period 3", probe)
	}
	data, _ = os.ReadFile(filepath.Join(manifestsDir, "shared-volume.yaml"))
	obj, err = DecodeObject(data)
	if err != nil {
		t.Fatal(err)
	}
	ed := obj.(*Pod).Spec.Volumes[0].EmptyDir
	if ed == nil || ed.SizeLimit == nil || ed.SizeLimit.String() != "10Mi" {
		t.Fatalf("emptyDir = %+v; want sizeLimit 10Mi", ed)
	}
}

func TestDecodeErrors(t *testing.T) {
	tests := []struct {
		name, in  string
		wantField string // "" = a syntax or type error
		wantMsg   string
	}{
		{"unknown top-level", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a"},"spek":{}}`, `"spek"`, "unknown field"},
		{"unknown nested", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a"},"spec":{"containers":[{"name":"c","image":"i"},{"name":"d","imag":"i"}]}}`, `"spec.containers[1].imag"`, "unknown field"},
		{"unknown in inline", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a"},"spec":{"volumes":[{"name":"v","emptyDir":{"size":1}}]}}`, `"spec.volumes[0].emptyDir.size"`, "unknown field"},
		{"case matters", `{"apiVersion":"v1","kind":"Pod","Metadata":{"name":"a"}}`, `"Metadata"`, "unknown field"},
		{"wrong type", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a"},"spec":{"containers":[{"name":"c","ports":[{"containerPort":"80"}]}]}}`, "", "expected int32"},
		{"bad quantity", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a"},"spec":{"containers":[{"name":"c","resources":{"limits":{"cpu":"lots"}}}]}}`, "", "invalid value"},
		{"malformed yaml", "apiVersion: v1\nkind: Pod\nmetadata: [\n", "", "malformed YAML"},
		{"no kind", `{"apiVersion":"v1"}`, "", "no apiVersion or kind"},
		{"unknown kind", `{"apiVersion":"v1","kind":"Widget"}`, "", `no kind "Widget"`},
	}
	for _, tt := range tests {
		_, err := DecodeObject([]byte(tt.in))
		var de *DecodeError
		if !errors.As(err, &de) {
			t.Errorf("%s: DecodeObject() = %v; want *DecodeError", tt.name, err)
			continue
		}
		if (tt.wantField != "" && !strings.Contains(de.Error(), tt.wantField)) || !strings.Contains(de.Error(), tt.wantMsg) {
			t.Errorf("%s: DecodeObject() = %q; want it to name %s and say %q", tt.name, de.Error(), tt.wantField, tt.wantMsg)
		}
	}
}

func TestDecodeErrorQuotesEachFieldOnce(t *testing.T) {
	var cm ConfigMap
	err := DecodeJSON([]byte(`{"metadata":{"name":"a"},"binaryDatta":{},"datta":{}}`), &cm)
	want := `strict decoding error: unknown field "binaryDatta", unknown field "datta"`
	if err == nil || err.Error() != want {
		t.Fatalf("DecodeJSON(two unknown fields) = %v; want %s", err, want)
	}
}

func TestDecodeJSONRejectsTrailingData(t *testing.T) {
	var p Pod
	err := DecodeJSON([]byte(`{"metadata":{"name":"a"}} {}`), &p)
	if err == nil || !strings.Contains(err.Error(), "after the top-level value") {
		t.Fatalf("DecodeJSON(trailing data) = %v; want a malformed JSON error", err)
	}
}

func TestDecodeJSONRoundTrip(t *testing.T) {
	in := `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"default","creationTimestamp":"2026-01-02T03:04:05Z","labels":{"app":"web"}},"spec":{"replicas":2,"selector":{"matchLabels":{"app":"web"}},"template":{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"name":"web","image":"nginx","resources":{"requests":{"cpu":"0.5","memory":"64Mi"}}}]}},"strategy":{"type":"RollingUpdate","rollingUpdate":{"maxSurge":"25%","maxUnavailable":0}}}}`
	var d Deployment
	if err := Decode([]byte(in), &d); err != nil {
		t.Fatal(err)
	}
	out, err := json.Marshal(&d)
	if err != nil {
		t.Fatal(err)
	}
	var d2 Deployment
	if err := DecodeJSON(out, &d2); err != nil {
		t.Fatalf("DecodeJSON(Marshal(d)) = %v", err)
	}
	if got := d2.Spec.Template.Spec.Containers[0].Resources.Requests[ResourceCPU]; got.String() != "500m" {
		t.Errorf("cpu request = %s; want 500m", got.String())
	}
	if got := d2.Spec.Strategy.RollingUpdate.MaxSurge.String(); got != "25%" {
		t.Errorf("maxSurge = %s; want 25%%", got)
	}
	if got := d2.CreationTimestamp.UTC().Format("2006-01-02T15:04:05Z"); got != "2026-01-02T03:04:05Z" {
		t.Errorf("creationTimestamp = %s", got)
	}
	if strings.Contains(string(out), `"status"`) || strings.Contains(string(out), "deletionTimestamp") {
		t.Errorf("Marshal wrote empty status or deletionTimestamp: %s", out)
	}
}

func TestSplitYAML(t *testing.T) {
	in := "# header\n---\na: 1\n---\n# only a comment\n---\nb: 2\n--- \nc: 3\n"
	docs := SplitYAML([]byte(in))
	if len(docs) != 3 {
		t.Fatalf("SplitYAML() = %d docs %q; want 3", len(docs), docs)
	}
	for i, want := range []string{"a: 1", "b: 2", "c: 3"} {
		if strings.TrimSpace(string(docs[i])) != want {
			t.Errorf("doc %d = %q; want %q", i, docs[i], want)
		}
	}
}

func FuzzDecodeObject(f *testing.F) {
	f.Add([]byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a"},"spec":{"containers":[{"name":"c","image":"i"}]}}`))
	f.Add([]byte("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\nspec: {replicas: 1}\n"))
	f.Add([]byte(`{"apiVersion":"v1","kind":"Node","metadata":{"name":"n"},"status":{"capacity":{"cpu":"4"}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		obj, err := DecodeObject(data)
		if err != nil {
			return
		}
		out, err := json.Marshal(obj)
		if err != nil {
			t.Fatalf("Marshal(decoded) = %v", err)
		}
		if _, err := DecodeObject(out); err != nil {
			t.Fatalf("DecodeObject(Marshal(decoded)) = %v for %s", err, out)
		}
	})
}
