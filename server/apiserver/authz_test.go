package apiserver

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/storage"
)

func TestAuthorizeHookSeesAttributes(t *testing.T) {
	ctx := context.Background()
	st, err := storage.Open(ctx, storage.Options{Path: filepath.Join(t.TempDir(), "state.db"), CompactInterval: -1, CheckpointInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var got []Attributes
	srv, err := New(Config{Store: st, Authorize: func(r *http.Request, a Attributes) error {
		got = append(got, a)
		// The hook may read the body if it puts it back.
		b, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(strings.NewReader(string(b)))
		if a.Name == "denied" {
			return api.NewStatusError(http.StatusForbidden, api.StatusReasonForbidden, "no")
		}
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Bootstrap(ctx); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		method, path, body string
		wantCode           int
		want               Attributes
	}{
		{"GET", "/api/v1/namespaces/default/pods?fieldSelector=spec.nodeName%3Dn1,status.phase!%3DRunning", "", 200,
			Attributes{Verb: VerbList, Resource: "pods", Namespace: "default", FieldSelector: map[string]string{"spec.nodeName": "n1"}}},
		{"GET", "/api/v1/pods?watch=true", "", 504, Attributes{Verb: VerbWatch, Resource: "pods"}},
		{"GET", "/api/v1/watch/namespaces/default/pods", "", 504, Attributes{Verb: VerbWatch, Resource: "pods", Namespace: "default"}},
		{"GET", "/api/v1/nodes/denied", "", 403, Attributes{Verb: VerbGet, Resource: "nodes", Name: "denied"}},
		{"PATCH", "/api/v1/nodes/n1/status", "{}", 415, Attributes{Verb: VerbPatch, Resource: "nodes", Subresource: "status", Name: "n1"}},
		{"POST", "/api/v1/namespaces/default/configmaps", `{"metadata":{"name":"c"}}`, 201, Attributes{Verb: VerbCreate, Resource: "configmaps", Namespace: "default"}},
		{"PUT", "/apis/apps/v1/namespaces/default/deployments/d", "{}", 404, Attributes{Verb: VerbUpdate, APIGroup: "apps", Resource: "deployments", Namespace: "default", Name: "d"}},
		{"DELETE", "/api/v1/namespaces/default/secrets/s", "", 404, Attributes{Verb: VerbDelete, Resource: "secrets", Namespace: "default", Name: "s"}},
	}
	for _, tt := range tests {
		got = nil
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(tt.method, tt.path, strings.NewReader(tt.body))
		if tt.body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		if tt.method == "PATCH" {
			req.Header.Set("Content-Type", "application/json") // not merge-patch: 415 after the hook
		}
		rctx, cancel := context.WithCancel(req.Context())
		if strings.Contains(tt.path, "watch") {
			cancel() // the watch is refused as cancelled (504) after the hook ran
		}
		srv.ServeResource(rec, req.WithContext(rctx))
		cancel()
		if len(got) != 1 || !reflect.DeepEqual(got[0], tt.want) {
			t.Errorf("%s %s: hook saw %+v; want %+v", tt.method, tt.path, got, tt.want)
		}
		if rec.Code != tt.wantCode {
			t.Errorf("%s %s = %d %s; want %d", tt.method, tt.path, rec.Code, rec.Body, tt.wantCode)
		}
	}
}
