package apiserver

import (
	"encoding/json"
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"testing"

	"github.com/skiffhq/skiff/api"
)

// manyContainersPod is a pod with n minimal containers.
func manyContainersPod(n int) string {
	var b strings.Builder
	b.WriteString(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"big"},"spec":{"containers":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"name":"c%d","image":"i"}`, i)
	}
	b.WriteString(`]}}`)
	return b.String()
}

// TestAPIListCapsRefuseCheaply is defect 5 of issue 16: a 1.6 MiB pod of
// 50,000 containers was stored as 6.9 MB and cost 160 MiB of memory.
func TestAPIListCapsRefuseCheaply(t *testing.T) {
	h := newHarness(t)
	body := manyContainersPod(50000)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	code, b := h.do("POST", "/api/v1/namespaces/default/pods", "application/json", body)
	runtime.ReadMemStats(&after)
	if code != http.StatusBadRequest || !strings.Contains(string(b), "spec.containers") {
		t.Fatalf("create a pod of 50,000 containers = %d %.300s; want 400 naming spec.containers", code, b)
	}
	// Decoding 50,000 containers into typed structs and defaulting them
	// cost 180 MiB and more; the generic parse alone is about 25.
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("refusing a 50,000-container pod (%d KiB body) allocated %d MiB", len(body)>>10, alloc>>20)
	if alloc > 48<<20 {
		t.Errorf("refusing the pod allocated %d MiB; want under 48", alloc>>20)
	}
	// Below the decoder's cap, validation names the field and the cap.
	code, b = h.do("POST", "/api/v1/namespaces/default/pods", "application/json", manyContainersPod(101))
	st := decodeStatus(t, b)
	if code != http.StatusUnprocessableEntity || st.Details == nil || len(st.Details.Causes) != 1 || st.Details.Causes[0].Field != "spec.containers" || !strings.Contains(st.Details.Causes[0].Message, "at most 100") {
		t.Errorf("create a pod of 101 containers = %d, causes %+v; want 422 with one cause on spec.containers saying at most 100", code, st.Details)
	}
	if code, _ := h.do("GET", "/api/v1/namespaces/default/pods/big", "", ""); code != http.StatusNotFound {
		t.Errorf("GET the refused pod = %d; want 404", code)
	}

	tests := []struct{ name, patch, field string }{
		{"ports", `"ports":[` + strings.Repeat(`{"containerPort":1},`, 256) + `{"containerPort":2}]`, "spec.containers[0].ports"},
		{"env", `"env":[` + strings.Repeat(`{"name":"A"},`, 1024) + `{"name":"B"}]`, "spec.containers[0].env"},
	}
	for _, tt := range tests {
		pod := `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"name":"c","image":"i",` + tt.patch + `}]}}`
		code, b := h.do("POST", "/api/v1/namespaces/default/pods", "application/json", pod)
		if code != http.StatusUnprocessableEntity || !strings.Contains(string(b), `"field":"`+tt.field+`"`) {
			t.Errorf("create a pod with too many %s = %d %.300s; want 422 naming %s", tt.name, code, b, tt.field)
		}
	}
	// Through a Deployment's template too.
	dep := `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d"},"spec":{"selector":{"matchLabels":{"a":"b"}},"template":{"metadata":{"labels":{"a":"b"}},"spec":` +
		strings.TrimSuffix(strings.SplitN(manyContainersPod(101), `"spec":`, 2)[1], "}") + `}}}`
	if code, b := h.do("POST", "/apis/apps/v1/namespaces/default/deployments", "application/json", dep); code != http.StatusUnprocessableEntity || !strings.Contains(string(b), "spec.template.spec.containers") {
		t.Errorf("create a deployment of 101 containers = %d %.300s; want 422 naming spec.template.spec.containers", code, b)
	}
}

// TestAPIStoredSizeCapAndRoundTrip: an object that defaulting (here a
// Secret's stringData becoming base64 data) grows past the limit is
// refused, and what GET returns is accepted back by PUT.
func TestAPIStoredSizeCapAndRoundTrip(t *testing.T) {
	h := newHarness(t)
	secret := func(name string, n int) string {
		return fmt.Sprintf(`{"apiVersion":"v1","kind":"Secret","metadata":{"name":%q},"stringData":{"k":%q}}`, name, strings.Repeat("x", n))
	}
	// A pod just under the body limit whose 4,000 ports each gain a
	// default protocol grows past the stored limit.
	var ports strings.Builder
	for i := range 40 {
		if i > 0 {
			ports.WriteByte(',')
		}
		fmt.Fprintf(&ports, `{"containerPort":%d}`, 1000+i)
	}
	var pod strings.Builder
	pod.WriteString(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"inflated"},"spec":{"containers":[`)
	for i := range 100 {
		if i > 0 {
			pod.WriteByte(',')
		}
		fmt.Fprintf(&pod, `{"name":"c%d","image":"i","ports":[%s]}`, i, ports.String())
	}
	pod.WriteString(`],"hostname":"h"}}`)
	pad := MaxBodyBytes - 20<<10 - pod.Len()
	body := strings.Replace(pod.String(), `"image":"i"`, `"image":"i","args":["`+strings.Repeat("a", pad)+`"]`, 1)
	code, b := h.do("POST", "/api/v1/namespaces/default/pods", "application/json", body)
	if code != http.StatusRequestEntityTooLarge {
		t.Fatalf("create a %d-byte pod that grows past the limit when stored = %d %.300s; want 413", len(body), code, b)
	}
	// A secret at the data limit, read back and written back unchanged.
	n := 1 << 20
	if code, b := h.do("POST", "/api/v1/namespaces/default/secrets", "application/json", secret("big", n)); code != http.StatusCreated {
		t.Fatalf("create a secret of %d bytes = %d %.300s; want 201", n, code, b)
	}
	code, got := h.do("GET", "/api/v1/namespaces/default/secrets/big", "", "")
	if code != http.StatusOK {
		t.Fatalf("GET = %d", code)
	}
	if code, b := h.do("PUT", "/api/v1/namespaces/default/secrets/big", "application/json", string(got)); code != http.StatusOK {
		t.Errorf("PUT back what GET returned (%d bytes) = %d %.300s; want 200", len(got), code, b)
	}
	var s api.Secret
	if err := json.Unmarshal(got, &s); err != nil || len(s.Data["k"]) != n {
		t.Errorf("GET returned %d bytes of data (%v); want %d", len(s.Data["k"]), err, n)
	}

	// A pod stored just under the limit also goes back through PUT.
	const head = `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"edge"},"spec":{"containers":[{"name":"c","image":"i","args":["`
	const tail = `"]}]}}`
	big := head + strings.Repeat("a", api.MaxObjectBytes-1000-len(head)-len(tail)) + tail
	if code, b := h.do("POST", "/api/v1/namespaces/default/pods", "application/json", big); code != http.StatusCreated {
		t.Fatalf("create a pod of %d bytes = %d %.300s; want 201", len(big), code, b)
	}
	code, got = h.do("GET", "/api/v1/namespaces/default/pods/edge", "", "")
	if code != http.StatusOK || len(got) > MaxBodyBytes {
		t.Fatalf("GET = %d, %d bytes; want 200 within the body limit", code, len(got))
	}
	if code, b := h.do("PUT", "/api/v1/namespaces/default/pods/edge", "application/json", string(got)); code != http.StatusOK {
		t.Errorf("PUT back the pod GET returned (%d bytes) = %d %.300s; want 200", len(got), code, b)
	}
}
