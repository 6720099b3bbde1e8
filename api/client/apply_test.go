package client

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"testing"

	"github.com/skiffhq/skiff/api"
)

// fakePodStore serves one pod at /api/v1/namespaces/default/pods/web with
// Kubernetes write semantics, for Apply tests.
type fakePodStore struct {
	mu            sync.Mutex
	pod           *api.Pod // nil when absent
	rv            int
	racingWriters int // PUTs that lose to a concurrent writer first
	methods       []string
	putRVs        []string // resourceVersion each PUT carried
}

const podsPath = "/api/v1/namespaces/default/pods"

func (s *fakePodStore) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.methods = append(s.methods, r.Method)
	body, _ := io.ReadAll(r.Body) // a short read fails decoding below
	switch {
	case r.Method == http.MethodPost && r.URL.Path == podsPath:
		if s.pod != nil {
			writeStatus(w, api.NewAlreadyExists("pods", "web"))
			return
		}
		var p api.Pod
		if err := json.Unmarshal(body, &p); err != nil {
			writeStatus(w, api.NewBadRequest("%v", err))
			return
		}
		if p.ResourceVersion != "" {
			writeStatus(w, api.NewBadRequest("resourceVersion should not be set on objects to be created"))
			return
		}
		s.store(&p)
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(s.pod)
	case r.Method == http.MethodGet && r.URL.Path == podsPath+"/web":
		if s.pod == nil {
			writeStatus(w, api.NewNotFound("pods", "web"))
			return
		}
		_ = json.NewEncoder(w).Encode(s.pod)
	case r.Method == http.MethodPut && r.URL.Path == podsPath+"/web":
		var p api.Pod
		if err := json.Unmarshal(body, &p); err != nil {
			writeStatus(w, api.NewBadRequest("%v", err))
			return
		}
		s.putRVs = append(s.putRVs, p.ResourceVersion)
		if s.racingWriters > 0 {
			s.racingWriters--
			s.store(s.pod) // someone else wrote first
		}
		if s.pod == nil {
			writeStatus(w, api.NewNotFound("pods", "web"))
			return
		}
		if p.ResourceVersion != s.pod.ResourceVersion {
			writeStatus(w, api.NewConflict("pods", "web", "the object has been modified; please apply your changes to the latest version and try again"))
			return
		}
		s.store(&p)
		_ = json.NewEncoder(w).Encode(s.pod)
	default:
		http.NotFound(w, r)
	}
}

func (s *fakePodStore) store(p *api.Pod) {
	s.rv++
	cp := *p
	cp.Namespace = "default"
	cp.ResourceVersion = strconv.Itoa(s.rv)
	s.pod = &cp
}

func webPod(image string) *api.Pod {
	return &api.Pod{
		TypeMeta:   api.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: api.ObjectMeta{Name: "web", ResourceVersion: "999"},
		Spec:       api.PodSpec{Containers: []api.Container{{Name: "web", Image: image}}},
	}
}

func TestApply(t *testing.T) {
	tests := []struct {
		name        string
		existing    bool
		racing      int
		wantCreated bool
		wantErr     bool
		wantMethods []string
		wantPutRVs  []string
	}{
		{name: "creates", wantCreated: true, wantMethods: []string{"POST"}},
		{name: "updates with the stored version", existing: true,
			wantMethods: []string{"POST", "GET", "PUT"}, wantPutRVs: []string{"1"}},
		{name: "retries a conflict", existing: true, racing: 2,
			wantMethods: []string{"POST", "GET", "PUT", "GET", "PUT", "GET", "PUT"}, wantPutRVs: []string{"1", "2", "3"}},
		{name: "gives up", existing: true, racing: 100, wantErr: true,
			wantMethods: []string{"POST", "GET", "PUT", "GET", "PUT", "GET", "PUT", "GET", "PUT", "GET", "PUT"},
			wantPutRVs:  []string{"1", "2", "3", "4", "5"}},
	}
	for _, tc := range tests {
		store := &fakePodStore{racingWriters: tc.racing}
		if tc.existing {
			store.store(webPod("nginx:1.24"))
		}
		c, _ := newTestClient(t, store)
		in := webPod("nginx:1.25")
		out, created, err := c.Apply(context.Background(), in)
		if (err != nil) != tc.wantErr {
			t.Fatalf("%s: Apply() error = %v; want error %v", tc.name, err, tc.wantErr)
		}
		if tc.wantErr {
			if !api.IsConflict(err) {
				t.Errorf("%s: Apply() = %v; want it to wrap the Conflict", tc.name, err)
			}
		} else {
			p, ok := out.(*api.Pod)
			if created != tc.wantCreated || !ok || p.Spec.Containers[0].Image != "nginx:1.25" {
				t.Errorf("%s: Apply() = %#v, created %v; want the new pod, created %v", tc.name, out, created, tc.wantCreated)
			}
		}
		if got := store.methods; !slices.Equal(got, tc.wantMethods) {
			t.Errorf("%s: requests = %v; want %v", tc.name, got, tc.wantMethods)
		}
		if got := store.putRVs; !slices.Equal(got, tc.wantPutRVs) {
			t.Errorf("%s: PUT resourceVersions = %v; want %v", tc.name, got, tc.wantPutRVs)
		}
		if in.ResourceVersion != "999" || in.Namespace != "" {
			t.Errorf("%s: Apply modified its argument: %+v", tc.name, in.ObjectMeta)
		}
	}
}

func TestApplyRecreatesVanishedObject(t *testing.T) {
	store := &fakePodStore{}
	store.store(webPod("old"))
	c, _ := newTestClient(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			store.mu.Lock()
			store.pod = nil // deleted between the POST and the GET
			store.mu.Unlock()
		}
		store.ServeHTTP(w, r)
	}))
	_, created, err := c.Apply(context.Background(), webPod("new"))
	if err != nil || !created {
		t.Fatalf("Apply() = created %v, %v; want created after the object vanished", created, err)
	}
	if want := []string{"POST", "GET", "POST"}; !slices.Equal(store.methods, want) {
		t.Errorf("requests = %v; want %v", store.methods, want)
	}
}

func TestApplyPassesOtherErrors(t *testing.T) {
	c, _ := newTestClient(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeStatus(w, api.NewInvalid("Pod", "web", api.FieldErrors{api.Required(api.NewPath("spec", "containers"), "")}))
	}))
	_, _, err := c.Apply(context.Background(), webPod(""))
	if api.ReasonOf(err) != api.StatusReasonInvalid {
		t.Errorf("Apply() = %v; want the Invalid error as is", err)
	}
}

func TestApplyObjectActions(t *testing.T) {
	// The fake store bumps the version on every PUT; a server that finds
	// the update a no-op answers with the stored version instead.
	tests := []struct {
		name       string
		existing   bool
		noopServer bool
		want       ApplyAction
	}{
		{"absent", false, false, ApplyCreated},
		{"changed", true, false, ApplyConfigured},
		{"no-op", true, true, ApplyUnchanged},
	}
	for _, tc := range tests {
		store := &fakePodStore{}
		if tc.existing {
			store.store(webPod("nginx:1.25"))
		}
		c, _ := newTestClient(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if tc.noopServer && r.Method == http.MethodPut {
				store.mu.Lock()
				defer store.mu.Unlock()
				_ = json.NewEncoder(w).Encode(store.pod)
				return
			}
			store.ServeHTTP(w, r)
		}))
		_, got, err := c.ApplyObject(context.Background(), webPod("nginx:1.25"))
		if err != nil || got != tc.want {
			t.Errorf("%s: ApplyObject() = %q, %v; want %q", tc.name, got, err, tc.want)
		}
	}
}

func TestApplyObjectSkipsWriteWhenStoredMatches(t *testing.T) {
	applied, err := withLastApplied(webPod("nginx:1.25"))
	if err != nil {
		t.Fatal(err)
	}
	stored := applied.(*api.Pod) // as a first apply stored it
	api.SetDefaults(stored)
	stored.UID, stored.Generation = "uid-1", 3
	stored.Status.Phase = api.PodRunning // the server's; a manifest has none
	store := &fakePodStore{}
	store.store(stored)
	c, _ := newTestClient(t, store)
	_, got, err := c.ApplyObject(context.Background(), webPod("nginx:1.25"))
	if err != nil || got != ApplyUnchanged {
		t.Fatalf("ApplyObject() = %q, %v; want %q", got, err, ApplyUnchanged)
	}
	if want := []string{"POST", "GET"}; !slices.Equal(store.methods, want) {
		t.Errorf("requests = %v; want %v (no PUT for an unchanged object)", store.methods, want)
	}
	_, got, err = c.ApplyObject(context.Background(), webPod("nginx:1.26"))
	if err != nil || got != ApplyConfigured {
		t.Errorf("ApplyObject(new image) = %q, %v; want %q", got, err, ApplyConfigured)
	}
}

// TestApplyMergesWithLastApplied: re-applying a bare pod after the
// scheduler bound it writes nothing; a changed manifest keeps what others
// set (spec.nodeName, a label added by hand) and removes what the
// previous manifest said and this one does not.
func TestApplyMergesWithLastApplied(t *testing.T) {
	store := &fakePodStore{}
	c, _ := newTestClient(t, store)
	first := webPod("nginx:1.25")
	first.Labels = map[string]string{"app": "web", "tier": "front"}
	if _, got, err := c.ApplyObject(context.Background(), first); err != nil || got != ApplyCreated {
		t.Fatalf("first ApplyObject() = %q, %v; want created", got, err)
	}
	store.mu.Lock()
	if store.pod.Annotations[AnnotationLastApplied] == "" {
		t.Fatal("created pod has no last-applied annotation")
	}
	store.pod.Spec.NodeName = "edge-1" // the scheduler
	store.pod.Labels["owner"] = "ops"  // kubectl label
	api.SetDefaults(store.pod)         // the server's defaults
	store.mu.Unlock()

	again := webPod("nginx:1.25")
	again.Labels = map[string]string{"app": "web", "tier": "front"}
	if _, got, err := c.ApplyObject(context.Background(), again); err != nil || got != ApplyUnchanged {
		t.Fatalf("re-apply after scheduling = %q, %v; want unchanged", got, err)
	}
	changed := webPod("nginx:1.26")
	changed.Labels = map[string]string{"app": "web"}
	if _, got, err := c.ApplyObject(context.Background(), changed); err != nil || got != ApplyConfigured {
		t.Fatalf("apply of a new image = %q, %v; want configured", got, err)
	}
	store.mu.Lock()
	defer store.mu.Unlock()
	p := store.pod
	if p.Spec.NodeName != "edge-1" || p.Spec.Containers[0].Image != "nginx:1.26" || p.Labels["owner"] != "ops" || p.Labels["tier"] != "" || p.Labels["app"] != "web" {
		t.Errorf("after apply: nodeName %q image %q labels %v; want edge-1, nginx:1.26, owner kept, tier removed", p.Spec.NodeName, p.Spec.Containers[0].Image, p.Labels)
	}
}

func TestThreeWayMerge(t *testing.T) {
	tests := []struct {
		name                        string
		original, modified, current string
		want                        string
	}{
		{"no change", `{"a":1}`, `{"a":1}`, `{"a":1,"b":2}`, `{}`},
		{"set", `{"a":1}`, `{"a":2}`, `{"a":1}`, `{"a":2}`},
		{"remove dropped", `{"a":1,"c":3}`, `{"a":1}`, `{"a":1,"c":3}`, `{"c":null}`},
		{"dropped already gone", `{"c":3}`, `{}`, `{}`, `{}`},
		{"nested", `{"m":{"x":1,"y":2}}`, `{"m":{"x":1}}`, `{"m":{"x":1,"y":2,"z":3}}`, `{"m":{"y":null}}`},
		{"no original", ``, `{"a":1}`, `{"a":1,"b":2}`, `{}`},
		{"list replaced", `{"l":[1]}`, `{"l":[1,2]}`, `{"l":[1]}`, `{"l":[1,2]}`},
	}
	for _, tt := range tests {
		var o, m, c map[string]any
		if tt.original != "" {
			json.Unmarshal([]byte(tt.original), &o)
		}
		json.Unmarshal([]byte(tt.modified), &m)
		json.Unmarshal([]byte(tt.current), &c)
		got, _ := json.Marshal(threeWayMerge(o, m, c))
		if string(got) != tt.want {
			t.Errorf("%s: threeWayMerge(%s, %s, %s) = %s; want %s", tt.name, tt.original, tt.modified, tt.current, got, tt.want)
		}
	}
}
