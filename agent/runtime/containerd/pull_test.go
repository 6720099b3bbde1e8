package containerd

import (
	"archive/tar"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/skiffhq/skiff/agent/runtime"
	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/internal/testenv"
)

// testRegistry serves the busybox OCI layout over the registry API on
// loopback, behind basic auth.
type testRegistry struct {
	blobs    map[string][]byte // digest → content (config, layer, manifest)
	manifest string            // digest of the manifest
	requests atomic.Int64
}

func newTestRegistry(t *testing.T) (*testRegistry, string) {
	tarPath, _ := testenv.BusyboxImage(t)
	f, err := os.Open(tarPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	reg := &testRegistry{blobs: map[string][]byte{}}
	tr := tar.NewReader(f)
	var index []byte
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if d, ok := strings.CutPrefix(h.Name, "blobs/sha256/"); ok && d != "" {
			reg.blobs["sha256:"+d] = b
		}
		if h.Name == "index.json" {
			index = b
		}
	}
	var idx struct {
		Manifests []struct{ Digest string } `json:"manifests"`
	}
	if err := json.Unmarshal(index, &idx); err != nil || len(idx.Manifests) != 1 {
		t.Fatalf("index.json: %v", err)
	}
	reg.manifest = idx.Manifests[0].Digest
	srv := httptest.NewServer(reg)
	t.Cleanup(srv.Close)
	return reg, strings.TrimPrefix(srv.URL, "http://")
}

func (reg *testRegistry) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	reg.requests.Add(1)
	if u, p, ok := r.BasicAuth(); !ok || u != "puller" || p != "s3cret" {
		w.Header().Set("WWW-Authenticate", `Basic realm="skiff-test"`)
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	path := r.URL.Path
	switch {
	case path == "/v2/" || path == "/v2":
		w.WriteHeader(http.StatusOK)
	case strings.HasPrefix(path, "/v2/skiff/busybox/manifests/"):
		ref := strings.TrimPrefix(path, "/v2/skiff/busybox/manifests/")
		if ref != "v1" && ref != reg.manifest {
			http.NotFound(w, r)
			return
		}
		b := reg.blobs[reg.manifest]
		w.Header().Set("Content-Type", "application/vnd.oci.image.manifest.v1+json")
		w.Header().Set("Docker-Content-Digest", reg.manifest)
		w.Header().Set("Content-Length", itoa64(len(b)))
		if r.Method != http.MethodHead {
			w.Write(b)
		}
	case strings.HasPrefix(path, "/v2/skiff/busybox/blobs/"):
		b, ok := reg.blobs[strings.TrimPrefix(path, "/v2/skiff/busybox/blobs/")]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Length", itoa64(len(b)))
		if r.Method != http.MethodHead {
			w.Write(b)
		}
	default:
		http.NotFound(w, r)
	}
}

func itoa64(n int) string { return strconv.Itoa(n) }

// TestIntegrationPullWithAuth pulls from a registry on loopback that
// wants credentials.
func TestIntegrationPullWithAuth(t *testing.T) {
	h := newHarness(t)
	reg, host := newTestRegistry(t)
	ref := host + "/skiff/busybox:v1"

	if _, err := h.rt.EnsureImage(h.ctx, ref, api.PullIfNotPresent, nil); !errors.Is(err, runtime.ErrImagePull) {
		t.Errorf("pull without credentials = %v; want ErrImagePull", err)
	}
	wrong := []runtime.RegistryAuth{{Host: host, Username: "puller", Password: "wrong"}}
	if _, err := h.rt.EnsureImage(h.ctx, ref, api.PullAlways, wrong); !errors.Is(err, runtime.ErrImagePull) {
		t.Errorf("pull with a wrong password = %v; want ErrImagePull", err)
	} else if strings.Contains(err.Error(), "wrong") {
		t.Errorf("pull error shows the password: %v", err)
	}
	auth := []runtime.RegistryAuth{{Host: "other.example:5000", Username: "x", Password: "y"}, {Host: host, Username: "puller", Password: "s3cret"}}
	img, err := h.rt.EnsureImage(h.ctx, ref, api.PullAlways, auth)
	if err != nil {
		t.Fatalf("pull with credentials: %v", err)
	}
	if img.Ref != ref || img.ID == "" {
		t.Errorf("pulled image = %+v; want ref %s", img, ref)
	}
	n := reg.requests.Load()
	if _, err := h.rt.EnsureImage(h.ctx, ref, api.PullIfNotPresent, nil); err != nil {
		t.Errorf("IfNotPresent on a pulled image = %v", err)
	}
	if reg.requests.Load() != n {
		t.Error("IfNotPresent contacted the registry for an image that is present")
	}
	// The pulled image runs.
	sb := h.sandbox(false, api.PodQOSBestEffort, 0)
	cfg := h.config(sb, "pulled", "echo from-registry")
	cfg.Image = img.Ref
	h.run(cfg)
	h.waitLog(cfg.LogPath, "from-registry")
}

// dockerArchive repacks the registry's image as a `docker save` tarball
// tagged tag.
func (reg *testRegistry) dockerArchive(t *testing.T, tag string) []byte {
	var m struct {
		Config struct{ Digest string }   `json:"config"`
		Layers []struct{ Digest string } `json:"layers"`
	}
	if err := json.Unmarshal(reg.blobs[reg.manifest], &m); err != nil || len(m.Layers) != 1 {
		t.Fatalf("manifest: %v", err)
	}
	cfgName := strings.TrimPrefix(m.Config.Digest, "sha256:") + ".json"
	layerName := strings.TrimPrefix(m.Layers[0].Digest, "sha256:") + "/layer.tar"
	manifest, _ := json.Marshal([]map[string]any{{"Config": cfgName, "RepoTags": []string{tag}, "Layers": []string{layerName}}})
	var buf strings.Builder
	tw := tar.NewWriter(&buf)
	for _, f := range []struct {
		name string
		body []byte
	}{{cfgName, reg.blobs[m.Config.Digest]}, {layerName, reg.blobs[m.Layers[0].Digest]}, {"manifest.json", manifest}} {
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: 0o644, Size: int64(len(f.body))}); err != nil {
			t.Fatal(err)
		}
		tw.Write(f.body)
	}
	tw.Close()
	return []byte(buf.String())
}

// TestIntegrationImportDockerArchive imports a docker-archive tarball and
// runs the image.
func TestIntegrationImportDockerArchive(t *testing.T) {
	h := newHarness(t)
	reg, _ := newTestRegistry(t)
	imgs, err := h.rt.ImportImages(h.ctx, strings.NewReader(string(reg.dockerArchive(t, "skiff.test/dockerbox:1"))))
	if err != nil {
		t.Fatalf("ImportImages(docker archive): %v", err)
	}
	if len(imgs) != 1 || imgs[0].Ref != "skiff.test/dockerbox:1" {
		t.Fatalf("ImportImages = %+v; want skiff.test/dockerbox:1", imgs)
	}
	list, err := h.rt.ListImages(h.ctx)
	if err != nil || len(list) != 2 {
		t.Errorf("ListImages = %+v, %v; want busybox and dockerbox", list, err)
	}
	sb := h.sandbox(false, api.PodQOSBestEffort, 0)
	cfg := h.config(sb, "docker", "echo from-archive")
	cfg.Image = imgs[0].Ref
	h.run(cfg)
	h.waitLog(cfg.LogPath, "from-archive")
}
