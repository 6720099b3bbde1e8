package patch_test

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/api/patch"
)

var (
	podType        = reflect.TypeFor[api.Pod]()
	nodeType       = reflect.TypeFor[api.Node]()
	deploymentType = reflect.TypeFor[api.Deployment]()
)

// canonical re-encodes JSON with sorted keys so expectations can be
// written in any key order.
func canonical(t *testing.T, s string) string {
	t.Helper()
	d := json.NewDecoder(strings.NewReader(s))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		t.Fatalf("bad JSON in test: %s: %v", s, err)
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The cases follow Kubernetes' documented behaviour: the "Update API
// Objects in Place Using kubectl patch" task and the strategic merge patch
// directive reference (replace, delete, setElementOrder, retainKeys,
// deleteFromPrimitiveList).
func TestStrategic(t *testing.T) {
	tests := []struct {
		name             string
		typ              reflect.Type
		doc, patch, want string
	}{
		{"containers merge by name; new ones first (kubectl patch doc)", deploymentType,
			`{"spec":{"template":{"spec":{"containers":[{"name":"patch-demo-ctr","image":"nginx"}]}}}}`,
			`{"spec":{"template":{"spec":{"containers":[{"name":"patch-demo-ctr-2","image":"redis"}]}}}}`,
			`{"spec":{"template":{"spec":{"containers":[{"name":"patch-demo-ctr-2","image":"redis"},{"name":"patch-demo-ctr","image":"nginx"}]}}}}`},
		{"tolerations are replaced, not merged (kubectl patch doc)", deploymentType,
			`{"spec":{"template":{"spec":{"tolerations":[{"effect":"NoSchedule","key":"dedicated","value":"test-team"}]}}}}`,
			`{"spec":{"template":{"spec":{"tolerations":[{"effect":"NoSchedule","key":"disktype","value":"ssd"}]}}}}`,
			`{"spec":{"template":{"spec":{"tolerations":[{"effect":"NoSchedule","key":"disktype","value":"ssd"}]}}}}`},
		{"matching container merges field by field", podType,
			`{"spec":{"containers":[{"name":"a","image":"x","args":["1"]},{"name":"b","image":"y"}]}}`,
			`{"spec":{"containers":[{"name":"b","image":"z"}]}}`,
			`{"spec":{"containers":[{"name":"a","image":"x","args":["1"]},{"name":"b","image":"z"}]}}`},
		{"env by name, ports by containerPort, volumeMounts by mountPath", podType,
			`{"spec":{"containers":[{"name":"c","env":[{"name":"A","value":"1"},{"name":"B","value":"2"}],"ports":[{"containerPort":80,"name":"http"}],"volumeMounts":[{"name":"v","mountPath":"/data"}]}]}}`,
			`{"spec":{"containers":[{"name":"c","env":[{"name":"B","value":"3"}],"ports":[{"containerPort":80,"protocol":"TCP"},{"containerPort":443}],"volumeMounts":[{"name":"w","mountPath":"/data","readOnly":true}]}]}}`,
			`{"spec":{"containers":[{"name":"c","env":[{"name":"A","value":"1"},{"name":"B","value":"3"}],"ports":[{"containerPort":80,"name":"http","protocol":"TCP"},{"containerPort":443}],"volumeMounts":[{"name":"w","mountPath":"/data","readOnly":true}]}]}}`},
		{"args (no strategy) are replaced", podType,
			`{"spec":{"containers":[{"name":"c","args":["a","b"]}]}}`,
			`{"spec":{"containers":[{"name":"c","args":["c"]}]}}`,
			`{"spec":{"containers":[{"name":"c","args":["c"]}]}}`},
		{"$patch: replace in a list replaces it", podType,
			`{"spec":{"containers":[{"name":"a","image":"x"},{"name":"b","image":"y"}]}}`,
			`{"spec":{"containers":[{"name":"c","image":"z"},{"$patch":"replace"}]}}`,
			`{"spec":{"containers":[{"name":"c","image":"z"}]}}`},
		{"$patch: delete removes the element with that key", podType,
			`{"spec":{"containers":[{"name":"a","image":"x"},{"name":"b","image":"y"}]}}`,
			`{"spec":{"containers":[{"name":"a","$patch":"delete"}]}}`,
			`{"spec":{"containers":[{"name":"b","image":"y"}]}}`},
		{"$patch: replace on an object", podType,
			`{"metadata":{"labels":{"a":"1","b":"2"}}}`,
			`{"metadata":{"labels":{"$patch":"replace","c":"3"}}}`,
			`{"metadata":{"labels":{"c":"3"}}}`},
		{"$patch: delete on an object empties it", podType,
			`{"spec":{"securityContext":{"runAsUser":1000}}}`,
			`{"spec":{"securityContext":{"$patch":"delete"}}}`,
			`{"spec":{"securityContext":{}}}`},
		{"$patch: merge is the default", podType,
			`{"metadata":{"labels":{"a":"1"}}}`,
			`{"metadata":{"labels":{"$patch":"merge","b":"2"}}}`,
			`{"metadata":{"labels":{"a":"1","b":"2"}}}`},
		{"null deletes a key", podType,
			`{"metadata":{"labels":{"a":"1","b":"2"}},"spec":{"nodeName":"n1"}}`,
			`{"metadata":{"labels":{"a":null,"zz":null}},"spec":{"nodeName":null}}`,
			`{"metadata":{"labels":{"b":"2"}},"spec":{}}`},
		{"$setElementOrder reorders a list of objects", podType,
			`{"spec":{"containers":[{"name":"a"},{"name":"b"},{"name":"c"}]}}`,
			`{"spec":{"$setElementOrder/containers":[{"name":"b"},{"name":"c"},{"name":"a"}]}}`,
			`{"spec":{"containers":[{"name":"b"},{"name":"c"},{"name":"a"}]}}`},
		{"$setElementOrder reorders primitives", podType,
			`{"metadata":{"finalizers":["a","b","c"]}}`,
			`{"metadata":{"$setElementOrder/finalizers":["b","c","a"]}}`,
			`{"metadata":{"finalizers":["b","c","a"]}}`},
		{"$setElementOrder keeps order when kubectl apply changes one container", podType,
			`{"spec":{"containers":[{"name":"a","image":"1"},{"name":"b","image":"1"}]}}`,
			`{"spec":{"$setElementOrder/containers":[{"name":"a"},{"name":"b"}],"containers":[{"name":"b","image":"2"}]}}`,
			`{"spec":{"containers":[{"name":"a","image":"1"},{"name":"b","image":"2"}]}}`},
		{"$setElementOrder places a new element; server-only ones go before the next listed one they preceded", podType,
			`{"spec":{"containers":[{"name":"a"},{"name":"s"},{"name":"b"}]}}`,
			`{"spec":{"$setElementOrder/containers":[{"name":"a"},{"name":"n"},{"name":"b"}],"containers":[{"name":"n","image":"x"}]}}`,
			`{"spec":{"containers":[{"name":"a"},{"name":"n","image":"x"},{"name":"s"},{"name":"b"}]}}`},
		{"$setElementOrder with a deletion (kubectl apply removing a container)", podType,
			`{"spec":{"containers":[{"name":"a"},{"name":"b"},{"name":"c"}]}}`,
			`{"spec":{"$setElementOrder/containers":[{"name":"c"},{"name":"a"}],"containers":[{"$patch":"delete","name":"b"}]}}`,
			`{"spec":{"containers":[{"name":"c"},{"name":"a"}]}}`},
		{"$retainKeys clears the other union member (Deployment strategy)", deploymentType,
			`{"spec":{"strategy":{"type":"RollingUpdate","rollingUpdate":{"maxSurge":1}}}}`,
			`{"spec":{"strategy":{"$retainKeys":["type"],"type":"Recreate"}}}`,
			`{"spec":{"strategy":{"type":"Recreate"}}}`},
		{"$retainKeys in a volume (merge,retainKeys)", podType,
			`{"spec":{"volumes":[{"name":"v","emptyDir":{}},{"name":"w","emptyDir":{}}]}}`,
			`{"spec":{"volumes":[{"$retainKeys":["hostPath","name"],"name":"v","hostPath":{"path":"/x"}}]}}`,
			`{"spec":{"volumes":[{"name":"v","hostPath":{"path":"/x"}},{"name":"w","emptyDir":{}}]}}`},
		{"without $retainKeys union members accumulate", deploymentType,
			`{"spec":{"strategy":{"type":"RollingUpdate","rollingUpdate":{"maxSurge":1}}}}`,
			`{"spec":{"strategy":{"type":"Recreate"}}}`,
			`{"spec":{"strategy":{"type":"Recreate","rollingUpdate":{"maxSurge":1}}}}`},
		{"$deleteFromPrimitiveList", podType,
			`{"metadata":{"finalizers":["a","b","c","b"]}}`,
			`{"metadata":{"$deleteFromPrimitiveList/finalizers":["b","zz"]}}`,
			`{"metadata":{"finalizers":["a","c"]}}`},
		{"kubectl apply changing finalizers: order, additions and deletions together", podType,
			`{"metadata":{"finalizers":["a","b"]}}`,
			`{"metadata":{"$setElementOrder/finalizers":["c","a"],"$deleteFromPrimitiveList/finalizers":["b"],"finalizers":["c"]}}`,
			`{"metadata":{"finalizers":["c","a"]}}`},
		{"finalizers merge as a set", podType,
			`{"metadata":{"finalizers":["a","b"]}}`,
			`{"metadata":{"finalizers":["c","a"]}}`,
			`{"metadata":{"finalizers":["c","a","b"]}}`},
		{"ownerReferences merge by uid", podType,
			`{"metadata":{"ownerReferences":[{"uid":"1","name":"x","kind":"K","apiVersion":"v1"}]}}`,
			`{"metadata":{"ownerReferences":[{"uid":"1","name":"y"},{"uid":"2","name":"z","kind":"K","apiVersion":"v1"}]}}`,
			`{"metadata":{"ownerReferences":[{"uid":"1","name":"y","kind":"K","apiVersion":"v1"},{"uid":"2","name":"z","kind":"K","apiVersion":"v1"}]}}`},
		{"pod conditions by type, podIPs by ip", podType,
			`{"status":{"conditions":[{"type":"Ready","status":"False"},{"type":"PodScheduled","status":"True"}],"podIPs":[{"ip":"10.0.0.1"}]}}`,
			`{"status":{"conditions":[{"type":"Ready","status":"True"}],"podIPs":[{"ip":"fd00::1"}]}}`,
			`{"status":{"conditions":[{"type":"Ready","status":"True"},{"type":"PodScheduled","status":"True"}],"podIPs":[{"ip":"fd00::1"},{"ip":"10.0.0.1"}]}}`},
		{"kubectl cordon", nodeType,
			`{"metadata":{"name":"n"},"spec":{"podCIDR":"10.0.0.0/24"}}`,
			`{"spec":{"unschedulable":true}}`,
			`{"metadata":{"name":"n"},"spec":{"podCIDR":"10.0.0.0/24","unschedulable":true}}`},
		{"node taints are atomic; conditions and addresses merge by type", nodeType,
			`{"spec":{"taints":[{"key":"a","effect":"NoSchedule"}]},"status":{"conditions":[{"type":"Ready","status":"True"}],"addresses":[{"type":"InternalIP","address":"10.0.0.1"}]}}`,
			`{"spec":{"taints":[{"key":"b","effect":"NoExecute"}]},"status":{"conditions":[{"type":"Ready","status":"False"}],"addresses":[{"type":"Hostname","address":"n1"}]}}`,
			`{"spec":{"taints":[{"key":"b","effect":"NoExecute"}]},"status":{"conditions":[{"type":"Ready","status":"False"}],"addresses":[{"type":"Hostname","address":"n1"},{"type":"InternalIP","address":"10.0.0.1"}]}}`},
		{"new list elements lose nulls and nested directives", podType,
			`{"spec":{}}`,
			`{"spec":{"containers":[{"name":"c","image":null,"env":[{"name":"A","value":"1"}],"$setElementOrder/env":[{"name":"A"}]}]}}`,
			`{"spec":{"containers":[{"name":"c","env":[{"name":"A","value":"1"}]}]}}`},
		{"numbers stay exact", podType,
			`{"spec":{"terminationGracePeriodSeconds":30}}`,
			`{"spec":{"terminationGracePeriodSeconds":9007199254740993,"activeDeadlineSeconds":1.50}}`,
			`{"spec":{"terminationGracePeriodSeconds":9007199254740993,"activeDeadlineSeconds":1.50}}`},
		{"unknown members merge like a merge patch", podType,
			`{"spec":{"x":{"a":[1]}}}`,
			`{"spec":{"x":{"a":[2],"b":1}}}`,
			`{"spec":{"x":{"a":[2],"b":1}}}`},
		{"$patch: replace at the top level", podType,
			`{"metadata":{"name":"a"},"spec":{"nodeName":"n"}}`,
			`{"$patch":"replace","metadata":{"name":"b"}}`,
			`{"metadata":{"name":"b"}}`},
		{"empty patch list leaves a merged list alone", podType,
			`{"spec":{"containers":[{"name":"a"}]}}`,
			`{"spec":{"containers":[]}}`,
			`{"spec":{"containers":[{"name":"a"}]}}`},
	}
	for _, tt := range tests {
		got, err := patch.Strategic([]byte(tt.doc), []byte(tt.patch), tt.typ)
		if err != nil {
			t.Errorf("%s: Strategic(%s, %s) error: %v", tt.name, tt.doc, tt.patch, err)
			continue
		}
		if want := canonical(t, tt.want); string(got) != want {
			t.Errorf("%s: Strategic(%s, %s)\n got %s\nwant %s", tt.name, tt.doc, tt.patch, got, want)
		}
	}
}

func TestStrategicErrors(t *testing.T) {
	doc := `{"metadata":{"name":"p","finalizers":["a"]},"spec":{"containers":[{"name":"a"},{"name":"b"}],"tolerations":[{"key":"k"}]}}`
	tests := []struct{ name, patch, want string }{
		{"not an object", `[1]`, "must be a JSON object, not an array"},
		{"null patch", `null`, "must be a JSON object, not null"},
		{"malformed", `{"spec":`, "malformed strategic merge patch"},
		{"unknown directive", `{"spec":{"$foo":1}}`, `spec: unknown directive "$foo"`},
		{"bare directive prefix", `{"spec":{"$setElementOrder/":[]}}`, `unknown directive "$setElementOrder/"`},
		{"unknown $patch", `{"spec":{"$patch":"frob"}}`, `unknown $patch value "frob"`},
		{"non-string $patch", `{"spec":{"$patch":1}}`, "unknown $patch value 1"},
		{"unknown $patch in list", `{"spec":{"containers":[{"name":"a","$patch":"frob"}]}}`, `spec.containers[0]: unknown $patch value "frob"`},
		{"delete without merge key", `{"spec":{"containers":[{"$patch":"delete"}]}}`, `needs the merge key "name"`},
		{"element without merge key", `{"spec":{"containers":[{"image":"x"}]}}`, `has no merge key "name"`},
		{"mixed list", `{"spec":{"containers":["a"]}}`, "mixes objects and primitive values"},
		{"$patch in an atomic list", `{"spec":{"tolerations":[{"key":"k","$patch":"delete"}]}}`, "only allowed in the elements of lists with patchStrategy merge"},
		{"$retainKeys not a list", `{"spec":{"$retainKeys":"x"}}`, "$retainKeys must be a list"},
		{"$retainKeys misses a set key", `{"spec":{"$retainKeys":["a"],"nodeName":"x"}}`, `sets "nodeName", which is not in its $retainKeys list`},
		{"$setElementOrder not a list", `{"spec":{"$setElementOrder/containers":{}}}`, "must be a list"},
		{"$setElementOrder order mismatch", `{"spec":{"$setElementOrder/containers":[{"name":"a"},{"name":"b"}],"containers":[{"name":"b"},{"name":"a"}]}}`, "does not match $setElementOrder/containers"},
		{"$setElementOrder missing element", `{"spec":{"$setElementOrder/containers":[{"name":"a"}],"containers":[{"name":"c"}]}}`, "missing from $setElementOrder/containers"},
		{"$setElementOrder element without key", `{"spec":{"$setElementOrder/containers":[{"image":"a"}]}}`, `has no merge key "name"`},
		{"$setElementOrder element not an object", `{"spec":{"$setElementOrder/containers":["a"]}}`, `has no merge key "name"`},
		{"$deleteFromPrimitiveList not a list", `{"metadata":{"$deleteFromPrimitiveList/finalizers":"a"}}`, "must be a list"},
		{"$deleteFromPrimitiveList of objects", `{"metadata":{"$deleteFromPrimitiveList/finalizers":[{}]}}`, "may only list primitive values"},
		{"$deleteFromPrimitiveList on a non-list", `{"metadata":{"$deleteFromPrimitiveList/name":["p"]}}`, "applies to a list"},
	}
	for _, tt := range tests {
		got, err := patch.Strategic([]byte(doc), []byte(tt.patch), podType)
		if err == nil || got != nil || !strings.Contains(err.Error(), tt.want) || !patch.IsPatchError(err) {
			t.Errorf("%s: Strategic(%s) = %s, %v; want a patch error containing %q", tt.name, tt.patch, got, err, tt.want)
		}
	}
}

// TestStrategicDeterministic applies a patch with many keys and directives
// repeatedly: map iteration order must not show in the result.
func TestStrategicDeterministic(t *testing.T) {
	doc := []byte(`{"metadata":{"labels":{"a":"1","b":"2"},"finalizers":["x","y","z"]},"spec":{"containers":[{"name":"a","env":[{"name":"E1"},{"name":"E2"}]},{"name":"b"},{"name":"c"}]}}`)
	p := []byte(`{"metadata":{"labels":{"c":"3","a":null},"$deleteFromPrimitiveList/finalizers":["y"],"finalizers":["w","y"]},"spec":{"$setElementOrder/containers":[{"name":"c"},{"name":"a"},{"name":"d"}],"containers":[{"name":"d"},{"name":"b","$patch":"delete"}]}}`)
	first, err := patch.Strategic(doc, p, podType)
	if err != nil {
		t.Fatal(err)
	}
	want := canonical(t, `{"metadata":{"finalizers":["w","x","z"],"labels":{"b":"2","c":"3"}},"spec":{"containers":[{"name":"c"},{"name":"a","env":[{"name":"E1"},{"name":"E2"}]},{"name":"d"}]}}`)
	if string(first) != want {
		t.Errorf("Strategic = %s; want %s", first, want)
	}
	for i := 0; i < 50; i++ {
		got, err := patch.Strategic(doc, p, podType)
		if err != nil || !bytes.Equal(got, first) {
			t.Fatalf("run %d: Strategic = %s, %v; want %s (the result must be deterministic)", i, got, err, first)
		}
	}
}

// TestStrategicDecodesIntoType checks the tags end to end: a strategic
// patch of a real Pod decodes back into a Pod with the merged lists.
func TestStrategicDecodesIntoType(t *testing.T) {
	pod := api.Pod{
		ObjectMeta: api.ObjectMeta{Name: "p", Finalizers: []string{"f1"}},
		Spec: api.PodSpec{
			Containers:       []api.Container{{Name: "app", Image: "a:1", Env: []api.EnvVar{{Name: "X", Value: "1"}}}},
			ImagePullSecrets: []api.LocalObjectReference{{Name: "s1"}},
		},
	}
	doc, err := json.Marshal(&pod)
	if err != nil {
		t.Fatal(err)
	}
	out, err := patch.Strategic(doc, []byte(`{"spec":{"containers":[{"name":"app","env":[{"name":"Y","value":"2"}]},{"name":"sidecar","image":"s:1"}],"imagePullSecrets":[{"name":"s2"}]},"metadata":{"finalizers":["f2"]}}`), podType)
	if err != nil {
		t.Fatal(err)
	}
	var got api.Pod
	if err := api.DecodeJSON(out, &got); err != nil {
		t.Fatalf("DecodeJSON(%s): %v", out, err)
	}
	names := func(cs []api.Container) (n []string) {
		for _, c := range cs {
			n = append(n, c.Name)
		}
		return n
	}
	if n := names(got.Spec.Containers); !reflect.DeepEqual(n, []string{"app", "sidecar"}) {
		t.Fatalf("containers = %v; want [app sidecar] (the patch's order)", n)
	}
	if env := got.Spec.Containers[0].Env; len(env) != 2 || env[0].Name != "Y" || env[1].Name != "X" || got.Spec.Containers[0].Image != "a:1" {
		t.Errorf("app container = %+v; want image a:1 and env [Y X]", got.Spec.Containers[0])
	}
	if s := got.Spec.ImagePullSecrets; len(s) != 2 || s[0].Name != "s2" || s[1].Name != "s1" {
		t.Errorf("imagePullSecrets = %v; want [s2 s1]", s)
	}
	if f := got.Finalizers; !reflect.DeepEqual(f, []string{"f2", "f1"}) {
		t.Errorf("finalizers = %v; want [f2 f1]", f)
	}
}
