package apiserver

import (
	"net/http"
	"strings"
	"testing"
)

// TestAPIEmptyBodyIsBadRequest is defect 3 of issue 16: a PUT with an
// empty YAML body wiped the object and answered 200.
func TestAPIEmptyBodyIsBadRequest(t *testing.T) {
	h := newHarness(t)
	const cm = `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"keep"},"data":{"k":"v"}}`
	if code, b := h.do("POST", "/api/v1/namespaces/default/configmaps", "application/json", cm); code != http.StatusCreated {
		t.Fatalf("create = %d %s", code, b)
	}
	bodies := []struct{ contentType, body string }{
		{"application/yaml", ""},
		{"application/yaml", "---\n"},
		{"application/yaml", "# only a comment\n"},
		{"application/yaml", "null"},
		{"application/json", ""},
		{"application/json", "null"},
		{"", " \n"},
	}
	for _, tt := range bodies {
		for _, method := range []string{"PUT", "POST"} {
			path := "/api/v1/namespaces/default/configmaps"
			if method == "PUT" {
				path += "/keep"
			}
			code, b := h.do(method, path, tt.contentType, tt.body)
			if code != http.StatusBadRequest {
				t.Errorf("%s %s with %s body %q = %d %s; want 400", method, path, tt.contentType, tt.body, code, b)
			}
		}
	}
	code, b := h.do("GET", "/api/v1/namespaces/default/configmaps/keep", "", "")
	if code != http.StatusOK || !strings.Contains(string(b), `"data":{"k":"v"}`) {
		t.Errorf("GET after the empty writes = %d %s; want the object unchanged", code, b)
	}
}
