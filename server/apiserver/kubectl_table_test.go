package apiserver

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/internal/table"
)

// discoveryStub answers the legacy discovery documents kubectl needs to
// map "pods" to a URL. The real discovery lives with the server's
// routes; this test only needs enough of it to reach the table code.
func discoveryStub(mux *http.ServeMux, srv *Server) {
	writeDoc := func(w http.ResponseWriter, v any) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(v)
	}
	resources := func(group string) []map[string]any {
		var out []map[string]any
		for _, r := range srv.resources {
			if r.Group != group {
				continue
			}
			out = append(out, map[string]any{"name": r.Resource, "singularName": r.Singular, "namespaced": r.Namespaced,
				"kind": r.Kind, "verbs": []string{"get", "list", "watch"}, "shortNames": r.ShortNames})
		}
		return out
	}
	mux.HandleFunc("/api", func(w http.ResponseWriter, r *http.Request) {
		writeDoc(w, map[string]any{"kind": "APIVersions", "versions": []string{"v1"},
			"serverAddressByClientCIDRs": []map[string]string{{"clientCIDR": "0.0.0.0/0", "serverAddress": r.Host}}})
	})
	mux.HandleFunc("/apis", func(w http.ResponseWriter, r *http.Request) {
		gv := map[string]string{"groupVersion": "apps/v1", "version": "v1"}
		writeDoc(w, map[string]any{"kind": "APIGroupList", "apiVersion": "v1",
			"groups": []map[string]any{{"name": "apps", "versions": []any{gv}, "preferredVersion": gv}}})
	})
	mux.HandleFunc("/api/v1", func(w http.ResponseWriter, r *http.Request) {
		writeDoc(w, map[string]any{"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": "v1", "resources": resources("")})
	})
	mux.HandleFunc("/apis/apps/v1", func(w http.ResponseWriter, r *http.Request) {
		writeDoc(w, map[string]any{"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": "apps/v1", "resources": resources("apps")})
	})
}

// TestKubectlGetPodsWideRealBinary runs the real kubectl 1.32 against the
// API server and checks that it prints the server's Table with -o wide.
func TestKubectlGetPodsWideRealBinary(t *testing.T) {
	h := newHarness(t)
	mux := http.NewServeMux()
	discoveryStub(mux, h.srv)
	mux.HandleFunc("/api/v1/", h.srv.ServeResource)
	mux.HandleFunc("/apis/apps/v1/", h.srv.ServeResource)
	h.http.Config.Handler = mux

	pod := `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web"},"spec":{"nodeName":"n1","containers":[{"name":"a","image":"x"}]}}`
	if code, b := h.do("POST", "/api/v1/namespaces/default/pods", "application/json", pod); code != 201 {
		t.Fatalf("create = %d %s", code, b)
	}
	status := `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web"},"spec":{"nodeName":"n1","containers":[{"name":"a","image":"x"}]},
		"status":{"phase":"Running","podIPs":[{"ip":"10.42.0.5"}],"containerStatuses":[{"name":"a","ready":true,"restartCount":0,"image":"x","imageID":"","state":{"running":{"startedAt":"2026-11-21T12:00:00Z"}}}]}}`
	if code, b := h.do("PUT", "/api/v1/namespaces/default/pods/web/status", "application/json", status); code != 200 {
		t.Fatalf("PUT status = %d %s", code, b)
	}
	// kubectl renders the server's AGE cell as it is; the fake clock
	// makes it exact.
	h.clock.Advance(3*time.Minute + 20*time.Second)

	kubectl := "/usr/bin/kubectl"
	if _, err := os.Stat(kubectl); err != nil {
		t.Fatalf("this test needs kubectl 1.32 at %s: %v", kubectl, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	run := func(args ...string) string {
		t.Helper()
		base := []string{"--server=" + h.http.URL, "--cache-dir=" + filepath.Join(t.TempDir(), "cache"), "--kubeconfig=/dev/null"}
		cmd := exec.CommandContext(ctx, kubectl, append(base, args...)...)
		cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	got := run("get", "pods", "-o", "wide", "-n", "default")
	want := "NAME   READY   STATUS    RESTARTS   AGE     IP          NODE   NOMINATED NODE   READINESS GATES\n" +
		"web    1/1     Running   0          3m20s   10.42.0.5   n1     <none>           <none>\n"
	if got != want {
		t.Errorf("kubectl get pods -o wide =\n%s\nwant\n%s", got, want)
	}
	got = run("get", "pods", "-n", "default")
	want = "NAME   READY   STATUS    RESTARTS   AGE\nweb    1/1     Running   0          3m20s\n"
	if got != want {
		t.Errorf("kubectl get pods =\n%s\nwant\n%s", got, want)
	}
	// -A: kubectl takes the NAMESPACE column from each row's
	// PartialObjectMetadata.
	got = run("get", "pods", "-A")
	want = "NAMESPACE   NAME   READY   STATUS    RESTARTS   AGE\ndefault     web    1/1     Running   0          3m20s\n"
	if got != want {
		t.Errorf("kubectl get pods -A =\n%s\nwant\n%s", got, want)
	}
	got = run("get", "namespaces")
	if !strings.HasPrefix(got, "NAME           STATUS   AGE\ndefault        Active   3m20s\n") {
		t.Errorf("kubectl get namespaces =\n%s", got)
	}

	// kubectl get -w: the list, then a line per watch event.
	wctx, stop := context.WithCancel(ctx)
	cmd := exec.CommandContext(wctx, kubectl, "--server="+h.http.URL, "--kubeconfig=/dev/null", "--cache-dir="+filepath.Join(t.TempDir(), "cache"),
		"get", "pods", "-n", "default", "-w")
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { stop(); cmd.Wait() }()
	lines := bufio.NewScanner(stdout)
	for _, want := range []string{"NAME   READY   STATUS    RESTARTS   AGE", "web    1/1     Running   0          3m20s"} {
		if !lines.Scan() || lines.Text() != want {
			t.Fatalf("kubectl get -w line = %q (%v); want %q", lines.Text(), lines.Err(), want)
		}
	}
	crashed := strings.Replace(status, `"ready":true,"restartCount":0`, `"ready":false,"restartCount":2`, 1)
	crashed = strings.Replace(crashed, `{"running":{"startedAt":"2026-11-21T12:00:00Z"}}`, `{"waiting":{"reason":"CrashLoopBackOff"}}`, 1)
	if code, b := h.do("PUT", "/api/v1/namespaces/default/pods/web/status", "application/json", crashed); code != 200 {
		t.Fatalf("PUT status = %d %s", code, b)
	}
	want = "web    0/1     CrashLoopBackOff   2          3m20s"
	if !lines.Scan() || lines.Text() != want {
		t.Fatalf("kubectl get -w line after a change = %q (%v); want %q", lines.Text(), lines.Err(), want)
	}

	// Every kind: kubectl's -o wide header is the server's column names.
	for _, fx := range tableFixtures {
		if code, b := h.do("POST", fx.path, "application/json", fx.body); code != 201 {
			t.Fatalf("create %s = %d %s", fx.resource, code, b)
		}
		res, _ := api.LookupResource(fx.resource)
		cols, _ := table.Columns(res.Kind)
		var want []string
		for _, c := range cols {
			want = append(want, strings.ToUpper(c.Name))
		}
		out := run("get", fx.resource, "-o", "wide", "-n", "default")
		header, _, _ := strings.Cut(out, "\n")
		if got := regexp.MustCompile(`\s{2,}`).Split(strings.TrimSpace(header), -1); strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("kubectl get %s -o wide header = %q; want columns %v", fx.resource, header, want)
		}
		if !strings.Contains(out, "t1") {
			t.Errorf("kubectl get %s -o wide =\n%s\nwant a row for t1", fx.resource, out)
		}
	}
}
