package printers

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/skiffhq/skiff/api"
)

func TestPrintObjectGolden(t *testing.T) {
	pod := fixturePods()[2] // no type meta: filled from the Go type
	for _, format := range []string{FormatJSON, FormatYAML} {
		var b bytes.Buffer
		if err := PrintObject(&b, pod, format); err != nil {
			t.Fatalf("PrintObject(%s) = %v", format, err)
		}
		checkGolden(t, "object-pod."+format, b.Bytes())
	}
	if pod.Kind != "" || pod.APIVersion != "" {
		t.Errorf("PrintObject modified its argument: %+v", pod.TypeMeta)
	}
}

func TestPrintListGolden(t *testing.T) {
	objs := []api.Object{fixtureSecrets()[0], fixtureDeployments()[1]}
	for _, format := range []string{FormatJSON, FormatYAML} {
		var b bytes.Buffer
		if err := PrintList(&b, objs, format); err != nil {
			t.Fatalf("PrintList(%s) = %v", format, err)
		}
		checkGolden(t, "list."+format, b.Bytes())
	}
	var b bytes.Buffer
	if err := PrintList(&b, nil, FormatJSON); err != nil {
		t.Fatal(err)
	}
	want := "{\n    \"apiVersion\": \"v1\",\n    \"items\": [],\n    \"kind\": \"List\",\n    \"metadata\": {\n        \"resourceVersion\": \"\"\n    }\n}\n"
	if b.String() != want {
		t.Errorf("PrintList(empty) = %q; want %q", b.String(), want)
	}
}

// TestPrintObjectRoundTrips checks the output decodes back into the same
// object, for both formats and every fixture kind.
func TestPrintObjectRoundTrips(t *testing.T) {
	objs := []api.Object{describedPod(), fixtureNodes()[0], fixtureDeployments()[0], fixtureDaemonSets()[0],
		fixtureEvents()[2], fixtureSecrets()[1], fixtureConfigMaps()[0], fixtureNamespaces()[0]}
	for _, obj := range objs {
		want, _ := json.Marshal(obj)
		for _, format := range []string{FormatJSON, FormatYAML} {
			var b bytes.Buffer
			if err := PrintObject(&b, obj, format); err != nil {
				t.Fatal(err)
			}
			back, err := api.DecodeObject(b.Bytes())
			if err != nil {
				t.Fatalf("DecodeObject(PrintObject(%T, %s)) = %v", obj, format, err)
			}
			back.GetTypeMeta().APIVersion, back.GetTypeMeta().Kind = obj.GetTypeMeta().APIVersion, obj.GetTypeMeta().Kind
			got, _ := json.Marshal(back)
			if !bytes.Equal(got, want) {
				t.Errorf("%T via %s:\n got %s\nwant %s", obj, format, got, want)
			}
		}
	}
}

func TestPrintObjectErrors(t *testing.T) {
	var b bytes.Buffer
	if err := PrintObject(&b, fixturePods()[0], "xml"); !errors.Is(err, ErrUnknownFormat) {
		t.Errorf("PrintObject(xml) = %v; want ErrUnknownFormat", err)
	}
	if err := PrintObject(&b, nil, FormatJSON); err == nil {
		t.Error("PrintObject(nil) = nil; want an error")
	}
	if err := PrintList(&b, []api.Object{nil}, FormatYAML); err == nil {
		t.Error("PrintList([nil]) = nil; want an error")
	}
	if b.Len() != 0 {
		t.Errorf("failed calls wrote %q", b.String())
	}
	var v map[string]any
	if err := PrintList(&b, []api.Object{fixtureSecrets()[0]}, FormatYAML); err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b.Bytes(), &v); err != nil || v["kind"] != "List" {
		t.Errorf("PrintList yaml = %v, %v; want kind List", v, err)
	}
}
