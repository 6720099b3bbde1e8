package apiserver

import (
	"encoding/json"
	"testing"

	"github.com/skiffhq/skiff/api"
)

// TestReputtingAManifestIsNotAChange: PUT of the same manifest a client
// created (without the fields the server defaulted) changes neither the
// generation nor the resourceVersion.
func TestReputtingAManifestIsNotAChange(t *testing.T) {
	h := newHarness(t)
	const dep = `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d"},"spec":{"replicas":2,` +
		`"selector":{"matchLabels":{"app":"d"}},"template":{"metadata":{"labels":{"app":"d"}},` +
		`"spec":{"containers":[{"name":"c","image":"busybox"}]}}}}`
	path := "/apis/apps/v1/namespaces/default/deployments"
	code, b := h.do("POST", path, "application/json", dep)
	if code != 201 {
		t.Fatalf("create: %d %s", code, b)
	}
	var created api.Deployment
	json.Unmarshal(b, &created)
	code, b = h.do("PUT", path+"/d", "application/json", dep)
	if code != 200 {
		t.Fatalf("put: %d %s", code, b)
	}
	var after api.Deployment
	json.Unmarshal(b, &after)
	if after.Generation != created.Generation || after.ResourceVersion != created.ResourceVersion {
		t.Fatalf("no-op PUT moved generation %d->%d, resourceVersion %s->%s", created.Generation, after.Generation, created.ResourceVersion, after.ResourceVersion)
	}
}
