package client

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/skiffhq/skiff/api"
)

const objectReply = `{"metadata":{"name":"x","resourceVersion":"5"}}`
const listReply = `{"kind":"List","apiVersion":"v1","metadata":{"resourceVersion":"7"},"items":[{"metadata":{"name":"a"}},{"metadata":{"name":"b"}}]}`

// collectionPaths is the SPEC's URL layout: list path across all
// namespaces and in namespace "prod", for every resource skiff serves.
var collectionPaths = map[string][2]string{
	"namespaces":  {"/api/v1/namespaces", "/api/v1/namespaces"},
	"nodes":       {"/api/v1/nodes", "/api/v1/nodes"},
	"pods":        {"/api/v1/pods", "/api/v1/namespaces/prod/pods"},
	"events":      {"/api/v1/events", "/api/v1/namespaces/prod/events"},
	"secrets":     {"/api/v1/secrets", "/api/v1/namespaces/prod/secrets"},
	"configmaps":  {"/api/v1/configmaps", "/api/v1/namespaces/prod/configmaps"},
	"deployments": {"/apis/apps/v1/deployments", "/apis/apps/v1/namespaces/prod/deployments"},
	"daemonsets":  {"/apis/apps/v1/daemonsets", "/apis/apps/v1/namespaces/prod/daemonsets"},

	"serviceaccounts":     {"/api/v1/serviceaccounts", "/api/v1/namespaces/prod/serviceaccounts"},
	"roles":               {"/apis/rbac.authorization.k8s.io/v1/roles", "/apis/rbac.authorization.k8s.io/v1/namespaces/prod/roles"},
	"rolebindings":        {"/apis/rbac.authorization.k8s.io/v1/rolebindings", "/apis/rbac.authorization.k8s.io/v1/namespaces/prod/rolebindings"},
	"clusterroles":        {"/apis/rbac.authorization.k8s.io/v1/clusterroles", "/apis/rbac.authorization.k8s.io/v1/clusterroles"},
	"clusterrolebindings": {"/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings"},
}

func TestURLLayoutEveryResource(t *testing.T) {
	rec := &recorder{}
	c, _ := newTestClient(t, rec)
	ctx := context.Background()
	for _, res := range api.Resources() {
		want, ok := collectionPaths[res.Resource]
		if !ok {
			t.Errorf("resource %q has no expected URL layout in this test", res.Resource)
			continue
		}
		defaultColl := want[1]
		if res.Namespaced {
			defaultColl = strings.Replace(want[1], "/prod/", "/default/", 1)
		}
		calls := []struct {
			name string
			call func() error
			want string // method and request URI
		}{
			{"list all", func() error { _, _, err := c.List(ctx, res, NamespaceAll, ListOptions{}); return err }, "GET " + want[0]},
			{"list prod", func() error { _, _, err := c.List(ctx, res, "prod", ListOptions{}); return err }, "GET " + want[1]},
			{"get", func() error { _, err := c.Get(ctx, res, "prod", "web"); return err }, "GET " + want[1] + "/web"},
			{"get default ns", func() error { _, err := c.Get(ctx, res, "", "web"); return err }, "GET " + defaultColl + "/web"},
			{"get raw", func() error { _, err := c.GetRaw(ctx, res, "prod", "a b"); return err }, "GET " + want[1] + "/a%20b"},
			{"delete", func() error { return c.Delete(ctx, res, "prod", "web", DeleteOptions{}) }, "DELETE " + want[1] + "/web"},
			{"patch", func() error { _, err := c.Patch(ctx, res, "prod", "web", MergePatchType, []byte(`{}`)); return err }, "PATCH " + want[1] + "/web"},
			{"create", func() error {
				obj := res.New()
				obj.GetObjectMeta().Name, obj.GetObjectMeta().Namespace = "web", "prod"
				_, err := c.Create(ctx, obj)
				return err
			}, "POST " + want[1]},
			{"create no ns", func() error {
				obj := res.New()
				obj.GetObjectMeta().Name = "web"
				_, err := c.Create(ctx, obj)
				return err
			}, "POST " + defaultColl},
			{"update", func() error {
				obj := res.New()
				obj.GetObjectMeta().Name, obj.GetObjectMeta().Namespace = "web", "prod"
				_, err := c.Update(ctx, obj)
				return err
			}, "PUT " + want[1] + "/web"},
			{"watch", func() error {
				w, err := c.Watch(ctx, res, NamespaceAll, WatchOptions{})
				if err != nil {
					return err
				}
				return w.Close()
			}, "GET " + want[0] + "?allowWatchBookmarks=true&watch=true"},
		}
		if res.HasStatus {
			calls = append(calls,
				struct {
					name string
					call func() error
					want string
				}{"update status", func() error {
					obj := res.New()
					obj.GetObjectMeta().Name, obj.GetObjectMeta().Namespace = "web", "prod"
					_, err := c.UpdateStatus(ctx, obj)
					return err
				}, "PUT " + want[1] + "/web/status"},
				struct {
					name string
					call func() error
					want string
				}{"patch status", func() error {
					_, err := c.PatchStatus(ctx, res, "prod", "web", MergePatchType, []byte(`{}`))
					return err
				}, "PATCH " + want[1] + "/web/status"},
			)
		}
		for _, tc := range calls {
			reply := objectReply
			if strings.HasPrefix(tc.name, "list") {
				reply = listReply
			}
			if tc.name == "watch" {
				reply = ""
			}
			rec.set(http.StatusOK, reply)
			if err := tc.call(); err != nil {
				t.Errorf("%s %s: %v", tc.name, res.Resource, err)
				continue
			}
			got := rec.last(t)
			if g := got.Method + " " + got.URI; g != tc.want {
				t.Errorf("%s %s: request = %q; want %q", tc.name, res.Resource, g, tc.want)
			}
		}
	}
}

func TestQueryParameters(t *testing.T) {
	rec := &recorder{reply: listReply}
	c, _ := newTestClient(t, rec)
	ctx := context.Background()
	pods := mustResource(t, "pods")

	objs, rv, err := c.List(ctx, pods, "prod", ListOptions{LabelSelector: "app=web,tier in (a,b)", FieldSelector: "spec.nodeName=n1"})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := rec.last(t).URI, "/api/v1/namespaces/prod/pods?fieldSelector=spec.nodeName%3Dn1&labelSelector=app%3Dweb%2Ctier+in+%28a%2Cb%29"; got != want {
		t.Errorf("List URI = %q; want %q", got, want)
	}
	if rv != "7" || len(objs) != 2 {
		t.Fatalf("List = %d objects at %q; want 2 at \"7\"", len(objs), rv)
	}
	for _, o := range objs {
		p, ok := o.(*api.Pod)
		if !ok || p.Kind != "Pod" || p.APIVersion != "v1" {
			t.Errorf("List item = %#v; want *api.Pod with v1/Pod type meta", o)
		}
	}

	rec.set(http.StatusOK, objectReply)
	if err := c.Delete(ctx, pods, "prod", "web", DeleteOptions{GracePeriodSeconds: ptr(int64(0))}); err != nil {
		t.Fatal(err)
	}
	if got, want := rec.last(t).URI, "/api/v1/namespaces/prod/pods/web?gracePeriodSeconds=0"; got != want {
		t.Errorf("Delete URI = %q; want %q", got, want)
	}

	if _, err := c.Patch(ctx, pods, "prod", "web", MergePatchType, []byte(`{"metadata":{"labels":{"a":"b"}}}`)); err != nil {
		t.Fatal(err)
	}
	if got := rec.last(t); got.ContentType != MergePatchType || string(got.Body) != `{"metadata":{"labels":{"a":"b"}}}` {
		t.Errorf("Patch sent %q %q; want %q and the patch verbatim", got.ContentType, got.Body, MergePatchType)
	}

	w, err := c.Watch(ctx, pods, "", WatchOptions{ListOptions: ListOptions{LabelSelector: "app=web"}, ResourceVersion: "3"})
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	if got, want := rec.last(t).URI, "/api/v1/pods?allowWatchBookmarks=true&labelSelector=app%3Dweb&resourceVersion=3&watch=true"; got != want {
		t.Errorf("Watch URI = %q; want %q", got, want)
	}
}

func TestCreateSendsTypeMetaWithoutMutating(t *testing.T) {
	rec := &recorder{code: http.StatusCreated, reply: `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"prod","uid":"u1","resourceVersion":"9"}}`}
	c, _ := newTestClient(t, rec)
	d := &api.Deployment{ObjectMeta: api.ObjectMeta{Name: "web", Namespace: "prod"}}
	out, err := c.Create(context.Background(), d)
	if err != nil {
		t.Fatal(err)
	}
	body := string(rec.last(t).Body)
	if !strings.Contains(body, `"apiVersion":"apps/v1"`) || !strings.Contains(body, `"kind":"Deployment"`) {
		t.Errorf("Create body = %s; want apiVersion apps/v1 and kind Deployment filled in", body)
	}
	if d.Kind != "" || d.APIVersion != "" {
		t.Errorf("Create modified its argument: type meta = %+v", d.TypeMeta)
	}
	got, ok := out.(*api.Deployment)
	if !ok || got.UID != "u1" || got.ResourceVersion != "9" {
		t.Errorf("Create = %#v; want the server's *api.Deployment", out)
	}
}

func TestAuthHeader(t *testing.T) {
	for _, token := range []string{testToken, ""} {
		rec := &recorder{reply: objectReply}
		_, cfg := newTestServer(t, rec)
		cfg.Token = token
		c, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		pods := mustResource(t, "pods")
		_, _ = c.Get(ctx, pods, "", "a")
		_ = c.Delete(ctx, pods, "", "a", DeleteOptions{})
		resp, err := c.Do(ctx, http.MethodGet, "/version", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		want := ""
		if token != "" {
			want = "Bearer " + token
		}
		for _, r := range rec.all() {
			if r.Auth != want {
				t.Errorf("token %q: %s %s sent Authorization %q; want %q", token, r.Method, r.URI, r.Auth, want)
			}
		}
	}
}

func TestCAPinning(t *testing.T) {
	rec := &recorder{reply: objectReply}
	_, cfg := newTestServer(t, rec)
	cfg.CAData = otherCAPEM(t)
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Get(context.Background(), mustResource(t, "nodes"), "", "n1")
	var unknownCA x509.UnknownAuthorityError
	var verifyErr *tls.CertificateVerificationError
	if !errors.As(err, &unknownCA) && !errors.As(err, &verifyErr) {
		t.Fatalf("Get with a different CA = %v; want a certificate verification error", err)
	}
	if strings.Contains(err.Error(), testToken) {
		t.Errorf("error %q leaks the token", err)
	}
	if n := len(rec.all()); n != 0 {
		t.Errorf("server saw %d requests through an unverified connection; want 0", n)
	}
}

func TestTLSMinVersion(t *testing.T) {
	ts := httptest.NewUnstartedServer(&recorder{reply: objectReply})
	ts.TLS = &tls.Config{MaxVersion: tls.VersionTLS11}
	ts.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshake is expected
	ts.StartTLS()
	t.Cleanup(ts.Close)
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ts.Certificate().Raw})
	c, err := New(Config{Server: ts.URL, CAData: caPEM})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Get(context.Background(), mustResource(t, "nodes"), "", "n1"); err == nil {
		t.Fatal("Get against a TLS 1.1 server succeeded; want a handshake failure")
	}
}

func TestRedirectNotFollowed(t *testing.T) {
	other := &recorder{reply: objectReply}
	_, otherCfg := newTestServer(t, other)
	c, _ := newTestClient(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, otherCfg.Server+r.URL.Path, http.StatusFound)
	}))
	_, err := c.Get(context.Background(), mustResource(t, "pods"), "", "a")
	var se *api.StatusError
	if !errors.As(err, &se) || se.Status.Code != http.StatusFound {
		t.Errorf("Get answered by a redirect = %v; want a StatusError with code 302", err)
	}
	if n := len(other.all()); n != 0 {
		t.Errorf("redirect target saw %d requests; want 0 (the token must not follow redirects)", n)
	}
}

func TestStatusErrorDecoding(t *testing.T) {
	invalid := api.NewInvalid("Pod", "web", api.FieldErrors{
		api.Required(api.NewPath("spec", "containers").Index(0).Child("image"), ""),
	})
	tests := []struct {
		name       string
		handler    http.HandlerFunc
		wantCode   int32
		wantReason api.StatusReason
		wantMsg    string
		check      func(error) bool
	}{
		{"404 Status", func(w http.ResponseWriter, r *http.Request) { writeStatus(w, api.NewNotFound("pods", "web")) },
			404, api.StatusReasonNotFound, `pods "web" not found`, api.IsNotFound},
		{"409 AlreadyExists", func(w http.ResponseWriter, r *http.Request) { writeStatus(w, api.NewAlreadyExists("pods", "web")) },
			409, api.StatusReasonAlreadyExists, `pods "web" already exists`, api.IsAlreadyExists},
		{"409 Conflict", func(w http.ResponseWriter, r *http.Request) {
			writeStatus(w, api.NewConflict("pods", "web", "the object has been modified"))
		}, 409, api.StatusReasonConflict, `Operation cannot be fulfilled on pods "web": the object has been modified`, api.IsConflict},
		{"422 Invalid with causes", func(w http.ResponseWriter, r *http.Request) { writeStatus(w, invalid) },
			422, api.StatusReasonInvalid, invalid.Status.Message, func(err error) bool {
				var se *api.StatusError
				return errors.As(err, &se) && se.Status.Details != nil && len(se.Status.Details.Causes) == 1 &&
					se.Status.Details.Causes[0].Field == "spec.containers[0].image"
			}},
		{"Status without code or reason", func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusNotFound)
			io.WriteString(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"gone fishing"}`)
		}, 404, api.StatusReasonNotFound, "gone fishing", api.IsNotFound},
		{"plain text 502", func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusBadGateway)
			io.WriteString(w, "  upstream broke\n")
		}, 502, "", "upstream broke", nil},
		{"empty 404", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNotFound) },
			404, api.StatusReasonNotFound, "the server answered 404 Not Found", api.IsNotFound},
		{"HTML 401", func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusUnauthorized)
			io.WriteString(w, "<html>"+strings.Repeat("x", 2000)+"</html>")
		}, 401, api.StatusReasonUnauthorized, "<html>" + strings.Repeat("x", maxErrorMessage-len("<html>")) + "…", nil},
	}
	for _, tc := range tests {
		c, _ := newTestClient(t, tc.handler)
		_, err := c.Get(context.Background(), mustResource(t, "pods"), "default", "web")
		var se *api.StatusError
		if !errors.As(err, &se) {
			t.Errorf("%s: Get = %v (%T); want *api.StatusError", tc.name, err, err)
			continue
		}
		if se.Status.Code != tc.wantCode || se.Status.Reason != tc.wantReason || se.Status.Message != tc.wantMsg {
			t.Errorf("%s: Get error = code %d reason %q message %q; want %d %q %q",
				tc.name, se.Status.Code, se.Status.Reason, se.Status.Message, tc.wantCode, tc.wantReason, tc.wantMsg)
		}
		if tc.check != nil && !tc.check(err) {
			t.Errorf("%s: predicate on %v = false; want true", tc.name, err)
		}
	}
}

func TestDoJSON(t *testing.T) {
	rec := &recorder{code: http.StatusCreated, reply: `{"id":"abc","token":"SKF1.x"}`}
	c, _ := newTestClient(t, rec)
	var out struct{ ID, Token string }
	err := c.DoJSON(context.Background(), http.MethodPost, "/api/v1/tokens?dryRun=false", map[string]string{"ttl": "24h"}, &out)
	if err != nil {
		t.Fatal(err)
	}
	got := rec.last(t)
	if got.Method != http.MethodPost || got.URI != "/api/v1/tokens?dryRun=false" || got.ContentType != "application/json" || string(got.Body) != `{"ttl":"24h"}` {
		t.Errorf("DoJSON sent %+v; want POST /api/v1/tokens?dryRun=false with the JSON body", got)
	}
	if out.ID != "abc" {
		t.Errorf("DoJSON decoded %+v; want id abc", out)
	}
	if err := c.DoJSON(context.Background(), http.MethodGet, "relative", nil, nil); err == nil {
		t.Error(`DoJSON(path "relative") = nil; want an error`)
	}
}

func TestLogs(t *testing.T) {
	rec := &recorder{reply: "line 1\nline 2\n"}
	c, _ := newTestClient(t, rec)
	rc, err := c.Logs(context.Background(), "prod", "web", LogOptions{Container: "app", Follow: true, TailLines: ptr(int64(10))})
	if err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(rc)
	rc.Close()
	if err != nil || string(data) != "line 1\nline 2\n" {
		t.Errorf("Logs read %q, %v; want both lines", data, err)
	}
	if got, want := rec.last(t).URI, "/api/v1/namespaces/prod/pods/web/log?container=app&follow=true&tailLines=10"; got != want {
		t.Errorf("Logs URI = %q; want %q", got, want)
	}
	rec.set(http.StatusBadRequest, `{"kind":"Status","code":400,"reason":"BadRequest","message":"container x is not valid"}`)
	if _, err := c.Logs(context.Background(), "", "web", LogOptions{Container: "x"}); api.ReasonOf(err) != api.StatusReasonBadRequest {
		t.Errorf("Logs of a bad container = %v; want BadRequest", err)
	}
}

func TestCallerMistakes(t *testing.T) {
	c, _ := newTestClient(t, &recorder{reply: objectReply})
	ctx := context.Background()
	pods := mustResource(t, "pods")
	cases := map[string]error{}
	_, cases["Get without name"] = c.Get(ctx, pods, "", "")
	_, cases["Get of a zero ResourceInfo"] = c.Get(ctx, api.ResourceInfo{}, "", "a")
	_, _, cases["List of a zero ResourceInfo"] = c.List(ctx, api.ResourceInfo{}, "", ListOptions{})
	_, cases["Create nil"] = c.Create(ctx, nil)
	_, cases["Patch without type"] = c.Patch(ctx, pods, "", "a", "", nil)
	_, cases["UpdateStatus of a Secret"] = c.UpdateStatus(ctx, &api.Secret{ObjectMeta: api.ObjectMeta{Name: "s"}})
	_, _, cases["Apply without name"] = c.Apply(ctx, &api.Pod{})
	for name, err := range cases {
		if err == nil {
			t.Errorf("%s = nil error; want one", name)
		}
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	_, cfg := newTestServer(t, &recorder{})
	bad := map[string]Config{
		"no server":    {CAData: cfg.CAData},
		"http server":  {Server: strings.Replace(cfg.Server, "https", "http", 1), CAData: cfg.CAData},
		"no CA":        {Server: cfg.Server},
		"garbage CA":   {Server: cfg.Server, CAData: []byte("not pem")},
		"multiline":    {Server: cfg.Server, CAData: cfg.CAData, Token: "a\nb"},
		"neg timeout":  {Server: cfg.Server, CAData: cfg.CAData, Timeout: -1},
		"query in URL": {Server: cfg.Server + "/?x=1", CAData: cfg.CAData},
	}
	for name, c := range bad {
		if _, err := New(c); err == nil {
			t.Errorf("New(%s) = nil error; want one", name)
		}
	}
}

func TestConfigStringRedactsToken(t *testing.T) {
	cfg := Config{Server: "https://x:7443", CAData: []byte("pem"), Token: testToken}
	for _, verb := range []string{"%v", "%+v", "%#v", "%s"} {
		if s := fmt.Sprintf(verb, cfg); strings.Contains(s, testToken) {
			t.Errorf("Sprintf(%q, cfg) = %q; leaks the token", verb, s)
		}
	}
	c, _ := newTestClient(t, &recorder{})
	for _, v := range []any{c, *c} {
		if s := fmt.Sprintf("%+v", v); strings.Contains(s, testToken) {
			t.Errorf("Sprintf(%%+v, %T) = %q; leaks the token", v, s)
		}
	}
}
