package patch_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/skiffhq/skiff/api/patch"
)

const fuzzPod = `{"metadata":{"name":"p","labels":{"a":"1"},"finalizers":["x","y"],"ownerReferences":[{"uid":"1","name":"o"}]},"spec":{"volumes":[{"name":"v","emptyDir":{}}],"containers":[{"name":"a","image":"i","env":[{"name":"E","value":"1"}],"ports":[{"containerPort":80}]},{"name":"b"}],"tolerations":[{"key":"k"}]},"status":{"conditions":[{"type":"Ready","status":"True"}]}}`

// FuzzMerge checks that Merge never panics, returns valid JSON or a nil
// result with an error, and is idempotent: applying a patch to its own
// result changes nothing.
func FuzzMerge(f *testing.F) {
	f.Add([]byte(`{"a":"b","c":{"d":1}}`), []byte(`{"a":null,"c":{"e":[1,2]}}`))
	f.Add([]byte(`{"a":{"bb":{}}}`), []byte(`{"a":{"bb":{"ccc":null}}}`))
	f.Add([]byte(`[1,2]`), []byte(`{"a":"b","c":null}`))
	f.Add([]byte(fuzzPod), []byte(`{"metadata":{"labels":{"a":null,"b":"2"}},"spec":{"containers":[{"name":"c"}]}}`))
	f.Fuzz(func(t *testing.T, doc, p []byte) {
		once, err := patch.Merge(doc, p)
		if err != nil {
			if once != nil {
				t.Fatalf("Merge returned %s with error %v", once, err)
			}
			return
		}
		if !json.Valid(once) {
			t.Fatalf("Merge(%q, %q) = %q: not valid JSON", doc, p, once)
		}
		twice, err := patch.Merge(once, p)
		if err != nil || !bytes.Equal(once, twice) {
			t.Fatalf("Merge is not idempotent for doc %q patch %q: once %s, twice %s (%v)", doc, p, once, twice, err)
		}
	})
}

// FuzzJSONPatch checks that JSON never panics and that it either returns
// valid JSON or nothing at all.
func FuzzJSONPatch(f *testing.F) {
	f.Add([]byte(`{"foo":["bar","baz"],"a/b":{"~":1}}`), []byte(`[{"op":"add","path":"/foo/1","value":"qux"},{"op":"test","path":"/a~1b/~0","value":1}]`))
	f.Add([]byte(`{"foo":{"bar":"baz","waldo":"fred"},"qux":{"corge":"grault"}}`), []byte(`[{"op":"move","from":"/foo/waldo","path":"/qux/thud"},{"op":"copy","from":"/qux","path":"/foo/q"}]`))
	f.Add([]byte(`{"foo":["all","grass","cows","eat"]}`), []byte(`[{"op":"move","from":"/foo/1","path":"/foo/3"},{"op":"remove","path":"/foo/0"},{"op":"replace","path":"/foo/-","value":1}]`))
	f.Add([]byte(fuzzPod), []byte(`[{"op":"replace","path":"/spec/containers/0/image","value":"j"},{"op":"add","path":"/metadata/labels/b","value":"2"}]`))
	f.Fuzz(func(t *testing.T, doc, p []byte) {
		out, err := patch.JSON(doc, p)
		if err != nil {
			if out != nil {
				t.Fatalf("JSON returned %s with error %v", out, err)
			}
			return
		}
		if !json.Valid(out) {
			t.Fatalf("JSON(%q, %q) = %q: not valid JSON", doc, p, out)
		}
	})
}

// FuzzStrategic patches a Pod: no panics, valid JSON or nothing, and the
// same input always gives the same bytes.
func FuzzStrategic(f *testing.F) {
	doc := []byte(fuzzPod)
	seeds := []string{
		`{"spec":{"containers":[{"name":"c","image":"n"},{"name":"a","$patch":"delete"}]}}`,
		`{"spec":{"$setElementOrder/containers":[{"name":"b"},{"name":"a"}],"containers":[{"name":"a","env":[{"name":"F"}]}]}}`,
		`{"metadata":{"$deleteFromPrimitiveList/finalizers":["x"],"$setElementOrder/finalizers":["z","y"],"finalizers":["z"]}}`,
		`{"spec":{"volumes":[{"$retainKeys":["name","hostPath"],"name":"v","hostPath":{"path":"/"}}],"tolerations":[{"key":"j"}]}}`,
		`{"metadata":{"labels":{"$patch":"replace","b":"2"}},"status":{"conditions":[{"type":"Ready","status":"False"},{"$patch":"replace"}]}}`,
		`{"$patch":"delete"}`,
	}
	for _, s := range seeds {
		f.Add(doc, []byte(s))
	}
	f.Fuzz(func(t *testing.T, doc, p []byte) {
		out, err := patch.Strategic(doc, p, podType)
		if err != nil {
			if out != nil {
				t.Fatalf("Strategic returned %s with error %v", out, err)
			}
			return
		}
		if !json.Valid(out) {
			t.Fatalf("Strategic(%q, %q) = %q: not valid JSON", doc, p, out)
		}
		again, err := patch.Strategic(doc, p, podType)
		if err != nil || !bytes.Equal(out, again) {
			t.Fatalf("Strategic(%q, %q) is not deterministic: %s then %s (%v)", doc, p, out, again, err)
		}
	})
}
