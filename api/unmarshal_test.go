package api

import (
	"encoding/json"
	"errors"
	"testing"
)

// TestUnmarshalOwnLeniencyAndErrors: what encoding/json accepts beyond
// strict JSON decodes the same way, and a refused document fails with
// encoding/json's own error, leaving no half-decoded fields behind.
func TestUnmarshalOwnLeniencyAndErrors(t *testing.T) {
	var p Pod
	doc := "{\"Metadata\":{\"name\":\"a\",\"name\":\"b\",\"labels\":{\"app\":\"w\xffx\"}},\"spec\":{\"NODENAME\":\"n1\"}}"
	if err := UnmarshalOwn([]byte(doc), &p); err != nil {
		t.Fatal(err)
	}
	var want Pod
	if err := json.Unmarshal([]byte(doc), &want); err != nil {
		t.Fatal(err)
	}
	if p.Name != want.Name || p.Spec.NodeName != want.Spec.NodeName || p.Labels["app"] != want.Labels["app"] || p.Name != "b" || p.Spec.NodeName != "n1" {
		t.Errorf("UnmarshalOwn = %q %q %q; encoding/json %q %q %q", p.Name, p.Spec.NodeName, p.Labels["app"], want.Name, want.Spec.NodeName, want.Labels["app"])
	}

	var se *json.SyntaxError
	var q Pod
	if err := UnmarshalOwn([]byte(`{"metadata":{"name":"a"},"spec":`), &q); !errors.As(err, &se) {
		t.Errorf("truncated document: %v (%T); want a *json.SyntaxError", err, err)
	}
	var te *json.UnmarshalTypeError
	bad := []byte(`{"metadata":{"name":"a","labels":{"x":"1"}},"spec":{"replicas":"three","minReadySeconds":5}}`)
	var d, dv1 Deployment
	if err := UnmarshalOwn(bad, &d); !errors.As(err, &te) {
		t.Errorf("wrong type: %v (%T); want a *json.UnmarshalTypeError", err, err)
	}
	// encoding/json keeps decoding past a type error; what it leaves is
	// what UnmarshalOwn leaves, nothing of the fast path's partial work.
	json.Unmarshal(bad, &dv1)
	g, _ := json.Marshal(d)
	w, _ := json.Marshal(dv1)
	if string(g) != string(w) {
		t.Errorf("after the type error:\n%s\nencoding/json leaves\n%s", g, w)
	}
}
