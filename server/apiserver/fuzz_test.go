package apiserver

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/internal/clock"
	"github.com/skiffhq/skiff/storage"
)

// fuzzServer is a Server over a real SQLite file, called directly through
// httptest.ResponseRecorder (no sockets), with one object of every kind
// already stored for updates and patches to hit.
type fuzzServer struct {
	store *storage.Store
	srv   *Server
}

// fuzzSeeds are valid objects, one per resource, stored before fuzzing.
// Their names are what FuzzUpdate and FuzzPatch address.
var fuzzSeeds = map[string]string{
	"namespaces":             `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"fz"}}`,
	"nodes":                  `{"apiVersion":"v1","kind":"Node","metadata":{"name":"fz"},"status":{"conditions":[{"type":"Ready","status":"True","lastHeartbeatTime":"2026-11-21T12:00:00Z"}]}}`,
	"pods":                   `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"fz","labels":{"app":"fz"}},"spec":{"containers":[{"name":"c","image":"busybox"}]}}`,
	"events":                 `{"apiVersion":"v1","kind":"Event","metadata":{"name":"fz"},"involvedObject":{"kind":"Pod","name":"fz","namespace":"default"},"reason":"Started","message":"m","type":"Normal"}`,
	"secrets":                `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"fz"},"data":{"k":"dg=="}}`,
	"configmaps":             `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"fz"},"data":{"k":"v"}}`,
	"deployments":            `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"fz"},"spec":{"replicas":1,"selector":{"matchLabels":{"app":"fz"}},"template":{"metadata":{"labels":{"app":"fz"}},"spec":{"containers":[{"name":"c","image":"busybox"}]}}}}`,
	"replicasets":            `{"apiVersion":"apps/v1","kind":"ReplicaSet","metadata":{"name":"fz"},"spec":{"replicas":1,"selector":{"matchLabels":{"app":"fz"}},"template":{"metadata":{"labels":{"app":"fz"}},"spec":{"containers":[{"name":"c","image":"busybox"}]}}}}`,
	"jobs":                   `{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"fz"},"spec":{"template":{"spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"busybox"}]}}}}`,
	"cronjobs":               `{"apiVersion":"batch/v1","kind":"CronJob","metadata":{"name":"fz"},"spec":{"schedule":"*/5 * * * *","jobTemplate":{"spec":{"template":{"spec":{"restartPolicy":"OnFailure","containers":[{"name":"c","image":"busybox"}]}}}}}}`,
	"daemonsets":             `{"apiVersion":"apps/v1","kind":"DaemonSet","metadata":{"name":"fz"},"spec":{"selector":{"matchLabels":{"app":"fz"}},"template":{"metadata":{"labels":{"app":"fz"}},"spec":{"containers":[{"name":"c","image":"busybox"}]}}}}`,
	"services":               `{"apiVersion":"v1","kind":"Service","metadata":{"name":"fz"},"spec":{"selector":{"app":"fz"},"ports":[{"port":80}]}}`,
	"endpoints":              `{"apiVersion":"v1","kind":"Endpoints","metadata":{"name":"fz"},"subsets":[{"addresses":[{"ip":"10.42.0.9"}],"ports":[{"port":80,"protocol":"TCP"}]}]}`,
	"endpointslices":         `{"apiVersion":"discovery.k8s.io/v1","kind":"EndpointSlice","metadata":{"name":"fz"},"addressType":"IPv4","endpoints":[{"addresses":["10.42.0.9"]}],"ports":[{"port":80}]}`,
	"serviceaccounts":        `{"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"fz"}}`,
	"roles":                  `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"Role","metadata":{"name":"fz"},"rules":[{"verbs":["get"],"apiGroups":[""],"resources":["pods"]}]}`,
	"clusterroles":           `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","metadata":{"name":"fz"},"rules":[{"verbs":["get"],"nonResourceURLs":["/metrics"]}]}`,
	"rolebindings":           `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"RoleBinding","metadata":{"name":"fz"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"Role","name":"fz"},"subjects":[{"kind":"ServiceAccount","name":"fz","namespace":"default"}]}`,
	"clusterrolebindings":    `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRoleBinding","metadata":{"name":"fz"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"fz"},"subjects":[{"kind":"Group","apiGroup":"rbac.authorization.k8s.io","name":"fz"}]}`,
	"statefulsets":           `{"apiVersion":"apps/v1","kind":"StatefulSet","metadata":{"name":"fz"},"spec":{"replicas":1,"selector":{"matchLabels":{"app":"fz"}},"template":{"metadata":{"labels":{"app":"fz"}},"spec":{"containers":[{"name":"c","image":"busybox","volumeMounts":[{"name":"data","mountPath":"/data"}]}]}},"volumeClaimTemplates":[{"metadata":{"name":"data"},"spec":{"accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"1Gi"}}}}]}}`,
	"persistentvolumeclaims": `{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"fz"},"spec":{"accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"1Gi"}}}}`,
	"persistentvolumes":      `{"apiVersion":"v1","kind":"PersistentVolume","metadata":{"name":"fz"},"spec":{"capacity":{"storage":"1Gi"},"accessModes":["ReadWriteOnce"],"hostPath":{"path":"/srv/fz"}}}`,
	"storageclasses":         `{"apiVersion":"storage.k8s.io/v1","kind":"StorageClass","metadata":{"name":"fz"},"provisioner":"example.com/fz"}`,
	"poddisruptionbudgets":   `{"apiVersion":"policy/v1","kind":"PodDisruptionBudget","metadata":{"name":"fz"},"spec":{"minAvailable":1,"selector":{"matchLabels":{"app":"fz"}}}}`,
}

// fuzzContentTypes seed the content-type argument; the fuzzer mutates
// them into anything.
var fuzzContentTypes = []string{
	"", "application/json", "application/yaml", "application/merge-patch+json",
	"application/json; charset=utf-8", "text/yaml", "application/xml", "multipart/form-data; boundary=",
}

func newFuzzServer(tb testing.TB) *fuzzServer {
	tb.Helper()
	ctx := context.Background()
	fc := clock.NewFake(time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC))
	st, err := storage.Open(ctx, storage.Options{Path: filepath.Join(tb.TempDir(), "state.db"), Clock: fc, CompactInterval: -1, CheckpointInterval: -1})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { st.Close() })
	srv, err := New(Config{Store: st, Clock: fc})
	if err != nil {
		tb.Fatal(err)
	}
	if err := srv.Bootstrap(ctx); err != nil {
		tb.Fatal(err)
	}
	fs := &fuzzServer{store: st, srv: srv}
	for _, res := range api.Resources() {
		if code, b := fs.serve(http.MethodPost, collectionPath(res), "application/json", []byte(fuzzSeeds[res.Resource])); code != http.StatusCreated {
			tb.Fatalf("seed %s = %d %s; want 201", res.Resource, code, b)
		}
	}
	return fs
}

// serve runs one request through ServeResource and returns code and body.
func (fs *fuzzServer) serve(method, path, contentType string, body []byte) (int, []byte) {
	req := httptest.NewRequest(method, path, bytes.NewReader(body))
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	rec := httptest.NewRecorder()
	fs.srv.ServeResource(rec, req)
	return rec.Code, rec.Body.Bytes()
}

// check sends the request and enforces the fuzz contract: no panic
// (a panic fails the fuzz run by itself), no 5xx, a Status body on
// failure, and a failed write leaves the store's revision where it was
// while a successful one answers with a committed resourceVersion.
func (fs *fuzzServer) check(t *testing.T, method, path, contentType string, body []byte) {
	t.Helper()
	before := fs.store.Revision()
	code, out := fs.serve(method, path, contentType, body)
	after := fs.store.Revision()
	switch {
	case code >= 500:
		t.Fatalf("%s %s (Content-Type %q, body %q) = %d %s; want no 5xx", method, path, contentType, body, code, out)
	case code >= 300:
		if after != before {
			t.Fatalf("%s %s (Content-Type %q, body %q) = %d, but the revision moved %d -> %d; a failed write must change nothing", method, path, contentType, body, code, before, after)
		}
		if !bytes.Contains(out, []byte(`"kind":"Status"`)) {
			t.Fatalf("%s %s = %d with body %s; want a Status", method, path, code, out)
		}
	default:
		// A write that changes nothing commits nothing (as in Kubernetes),
		// so success only requires the answer to be a stored version.
		var m struct {
			Metadata struct {
				ResourceVersion string `json:"resourceVersion"`
			} `json:"metadata"`
		}
		if err := json.Unmarshal(out, &m); err != nil {
			t.Fatalf("%s %s = %d with body %s: %v", method, path, code, out, err)
		}
		rv, err := strconv.ParseInt(m.Metadata.ResourceVersion, 10, 64)
		if err != nil || rv <= 0 || rv > after || after < before {
			t.Fatalf("%s %s = %d with resourceVersion %q; revision %d -> %d; want a committed version", method, path, code, m.Metadata.ResourceVersion, before, after)
		}
	}
}

func collectionPath(res api.ResourceInfo) string {
	prefix := "/api/v1"
	if res.Group != "" {
		prefix = "/apis/" + res.GroupVersion()
	}
	if res.Namespaced {
		prefix += "/namespaces/default"
	}
	return prefix + "/" + res.Resource
}

// pickResource maps a fuzzed byte onto the registry.
func pickResource(i uint8) api.ResourceInfo {
	rs := api.Resources()
	return rs[int(i)%len(rs)]
}

// objectPath addresses the seeded object of res, or its status
// subresource when status is set and res has one.
func objectPath(res api.ResourceInfo, status bool) string {
	p := collectionPath(res) + "/fz"
	if status && res.HasStatus {
		p += "/status"
	}
	return p
}

// addBodySeeds adds, for every resource, its valid object and a few
// broken ones under several content types.
func addBodySeeds(f *testing.F, patches bool) {
	for i, res := range api.Resources() {
		seed := fuzzSeeds[res.Resource]
		bodies := []string{
			seed,
			seed[:len(seed)/2],
			`{}`, `null`, `[]`, `""`, `{"metadata":{"name":""}}`,
			`{"metadata":{"name":"fz","resourceVersion":"1"}}`,
			`{"metadata":{"name":"fz","namespace":"kube-system"}}`,
			"apiVersion: v1\nkind: " + res.Kind + "\nmetadata:\n  name: fz2\n",
			"{\"metadata\":{\"name\":\"\xff\xfe\"}}",
			`{"metadata":{"name":"fz","labels":{"a":null}},"spec":{"containers":null}}`,
		}
		if patches {
			bodies = append(bodies, `{"metadata":{"labels":{"x":"1"}}}`, `{"status":{"phase":"Running"}}`, `{"spec":null}`, `{"metadata":{"name":"other"}}`, `{"kind":"Node"}`, `{"metadata":{"resourceVersion":"x"}}`)
		}
		for j, b := range bodies {
			f.Add(uint8(i), fuzzContentTypes[(i+j)%len(fuzzContentTypes)], j%2 == 0, []byte(b))
		}
	}
}

func FuzzCreate(f *testing.F) {
	addBodySeeds(f, false)
	fs := newFuzzServer(f)
	f.Fuzz(func(t *testing.T, resource uint8, contentType string, _ bool, body []byte) {
		fs.check(t, http.MethodPost, collectionPath(pickResource(resource)), contentType, body)
	})
}

func FuzzUpdate(f *testing.F) {
	addBodySeeds(f, false)
	fs := newFuzzServer(f)
	f.Fuzz(func(t *testing.T, resource uint8, contentType string, status bool, body []byte) {
		fs.check(t, http.MethodPut, objectPath(pickResource(resource), status), contentType, body)
	})
}

func FuzzPatch(f *testing.F) {
	addBodySeeds(f, true)
	f.Add(uint8(2), "application/merge-patch+json", false, []byte(`{"metadata":{"labels":{"y":"2"}}}`))
	fs := newFuzzServer(f)
	f.Fuzz(func(t *testing.T, resource uint8, contentType string, status bool, body []byte) {
		fs.check(t, http.MethodPatch, objectPath(pickResource(resource), status), contentType, body)
	})
}
