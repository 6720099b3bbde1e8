package volumes

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/skiffhq/skiff/api"
)

type objects struct {
	secrets    map[string]*api.Secret
	configMaps map[string]*api.ConfigMap
	claims     map[string]*api.PersistentVolumeClaim
}

type objectsWithVolumes struct {
	*objects
	volumes map[string]*api.PersistentVolume
}

func (o objectsWithVolumes) GetPersistentVolume(ctx context.Context, name string) (*api.PersistentVolume, error) {
	if v, ok := o.volumes[name]; ok {
		return v, nil
	}
	return nil, fmt.Errorf("persistentvolume %s: %w", name, ErrObjectNotFound)
}

func (o *objects) GetPersistentVolumeClaim(ctx context.Context, ns, name string) (*api.PersistentVolumeClaim, error) {
	if c, ok := o.claims[ns+"/"+name]; ok {
		return c, nil
	}
	return nil, fmt.Errorf("persistentvolumeclaim %s/%s: %w", ns, name, ErrObjectNotFound)
}

func (o *objects) GetSecret(ctx context.Context, ns, name string) (*api.Secret, error) {
	if s, ok := o.secrets[ns+"/"+name]; ok {
		return s, nil
	}
	return nil, fmt.Errorf("secret %s/%s: %w", ns, name, ErrObjectNotFound)
}

func (o *objects) GetConfigMap(ctx context.Context, ns, name string) (*api.ConfigMap, error) {
	if c, ok := o.configMaps[ns+"/"+name]; ok {
		return c, nil
	}
	return nil, fmt.Errorf("configmap %s/%s: %w", ns, name, ErrObjectNotFound)
}

func ptr[T any](v T) *T { return &v }

func podWith(vols ...api.Volume) *api.Pod {
	return &api.Pod{ObjectMeta: api.ObjectMeta{Name: "p", Namespace: "ns", UID: "u1"}, Spec: api.PodSpec{Volumes: vols}}
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("read %s: %v", p, err)
	}
	return string(b)
}

func TestEmptyDirAndMounts(t *testing.T) {
	dir := t.TempDir()
	m := &Manager{PodsDir: dir}
	pod := podWith(api.Volume{Name: "cache", VolumeSource: api.VolumeSource{EmptyDir: &api.EmptyDirVolumeSource{Medium: "Memory"}}})
	paths, err := m.Prepare(context.Background(), pod)
	if err != nil {
		t.Fatalf("Prepare() = %v", err)
	}
	want := filepath.Join(dir, "ns_p_u1", "volumes", "empty-dir", "cache")
	if fi, err := os.Stat(want); err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o777 || paths["cache"] != want {
		t.Fatalf("emptyDir = %q (%v, %v); want dir %q mode 0777", paths["cache"], fi, err, want)
	}
	c := &api.Container{Name: "c", VolumeMounts: []api.VolumeMount{
		{Name: "cache", MountPath: "/cache"},
		{Name: "cache", MountPath: "/sub", SubPath: "a/b", ReadOnly: true},
	}}
	mounts, err := Mounts(pod, c, paths)
	if err != nil {
		t.Fatalf("Mounts() = %v", err)
	}
	if len(mounts) != 2 || mounts[0].HostPath != want || mounts[0].ReadOnly || mounts[1].HostPath != filepath.Join(want, "a/b") || !mounts[1].ReadOnly {
		t.Errorf("Mounts() = %+v", mounts)
	}
	if fi, err := os.Stat(filepath.Join(want, "a/b")); err != nil || !fi.IsDir() {
		t.Errorf("subPath dir not created: %v", err)
	}

	bad := []api.VolumeMount{
		{Name: "nope", MountPath: "/x"},
		{Name: "cache", MountPath: "/x", SubPath: "../../etc"},
		{Name: "cache", MountPath: "/x", SubPath: "/etc"},
		{Name: "cache", MountPath: "relative"},
	}
	for _, vm := range bad {
		if _, err := Mounts(pod, &api.Container{Name: "c", VolumeMounts: []api.VolumeMount{vm}}, paths); !errors.Is(err, ErrBadMount) {
			t.Errorf("Mounts(%+v) = %v; want ErrBadMount", vm, err)
		}
	}
	// a symlink planted inside the volume must not lead out of it
	if err := os.Symlink("/etc", filepath.Join(want, "escape")); err != nil {
		t.Fatal(err)
	}
	vm := api.VolumeMount{Name: "cache", MountPath: "/x", SubPath: "escape"}
	if _, err := Mounts(pod, &api.Container{Name: "c", VolumeMounts: []api.VolumeMount{vm}}, paths); !errors.Is(err, ErrBadMount) {
		t.Errorf("Mounts(symlink escape) = %v; want ErrBadMount", err)
	}

	if err := m.Cleanup(PodDir(dir, pod)); err != nil {
		t.Fatalf("Cleanup() = %v", err)
	}
	if _, err := os.Stat(want); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("emptyDir after Cleanup: %v; want gone", err)
	}
}

func TestHostPathTypes(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "s.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	tests := []struct {
		path, typ string
		ok        bool
	}{
		{dir, "", true},
		{filepath.Join(dir, "missing"), "", true},
		{dir, "Directory", true},
		{file, "Directory", false},
		{filepath.Join(dir, "missing"), "Directory", false},
		{filepath.Join(dir, "new-dir"), "DirectoryOrCreate", true},
		{file, "DirectoryOrCreate", false},
		{file, "File", true},
		{dir, "File", false},
		{filepath.Join(dir, "new-file"), "FileOrCreate", true},
		{filepath.Join(dir, "no-parent", "f"), "FileOrCreate", false},
		{dir, "FileOrCreate", false},
		{sock, "Socket", true},
		{file, "Socket", false},
		{file, "CharDevice", false},
		{"/dev/null", "CharDevice", true},
		{file, "BlockDevice", false},
		{file, "Weird", false},
		{"relative", "", false},
	}
	for _, tt := range tests {
		err := checkHostPath(tt.path, tt.typ)
		if (err == nil) != tt.ok {
			t.Errorf("checkHostPath(%q, %q) = %v; want ok %v", tt.path, tt.typ, err, tt.ok)
		}
		if err != nil && tt.path != filepath.Join(dir, "no-parent", "f") && !errors.Is(err, ErrHostPathType) {
			t.Errorf("checkHostPath(%q, %q) = %v; want ErrHostPathType", tt.path, tt.typ, err)
		}
	}
	if fi, err := os.Stat(filepath.Join(dir, "new-dir")); err != nil || !fi.IsDir() {
		t.Errorf("DirectoryOrCreate did not create: %v", err)
	}
	if fi, err := os.Stat(filepath.Join(dir, "new-file")); err != nil || !fi.Mode().IsRegular() || fi.Size() != 0 {
		t.Errorf("FileOrCreate did not create an empty file: %v", err)
	}
}

func TestConfigMapAndSecretVolumes(t *testing.T) {
	dir := t.TempDir()
	obj := &objects{
		configMaps: map[string]*api.ConfigMap{"ns/cfg": {Data: map[string]string{"a.conf": "A1", "b.conf": "B1"}}},
		secrets:    map[string]*api.Secret{"ns/creds": {Data: map[string][]byte{"token": []byte("t0k")}}},
	}
	m := &Manager{PodsDir: dir, Objects: obj}
	pod := podWith(
		api.Volume{Name: "cfg", VolumeSource: api.VolumeSource{ConfigMap: &api.ConfigMapVolumeSource{LocalObjectReference: api.LocalObjectReference{Name: "cfg"}}}},
		api.Volume{Name: "one", VolumeSource: api.VolumeSource{ConfigMap: &api.ConfigMapVolumeSource{
			LocalObjectReference: api.LocalObjectReference{Name: "cfg"},
			Items:                []api.KeyToPath{{Key: "b.conf", Path: "sub/b", Mode: ptr(int32(0o600))}},
			Optional:             ptr(true)}}}, // optional: a vanished key is skipped
		api.Volume{Name: "creds", VolumeSource: api.VolumeSource{Secret: &api.SecretVolumeSource{SecretName: "creds", DefaultMode: ptr(int32(0o400))}}},
		api.Volume{Name: "opt", VolumeSource: api.VolumeSource{Secret: &api.SecretVolumeSource{SecretName: "absent", Optional: ptr(true)}}},
	)
	paths, err := m.Prepare(context.Background(), pod)
	if err != nil {
		t.Fatalf("Prepare() = %v", err)
	}
	if got := readFile(t, filepath.Join(paths["cfg"], "a.conf")); got != "A1" {
		t.Errorf("cfg/a.conf = %q; want A1", got)
	}
	if _, err := os.Stat(filepath.Join(paths["one"], "a.conf")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("items volume has a.conf: %v", err)
	}
	p := filepath.Join(paths["one"], "sub", "b")
	if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o600 || readFile(t, p) != "B1" {
		t.Errorf("one/sub/b = %v, %v; want B1 with mode 0600", fi, err)
	}
	if fi, err := os.Stat(filepath.Join(paths["creds"], "token")); err != nil || fi.Mode().Perm() != 0o400 {
		t.Errorf("creds/token mode: %v, %v; want 0400", fi, err)
	}
	if entries, err := os.ReadDir(paths["opt"]); err != nil {
		t.Errorf("optional missing secret: %v", err)
	} else {
		for _, e := range entries {
			if e.Name()[0] != '.' {
				t.Errorf("optional missing secret has file %s", e.Name())
			}
		}
	}
	mounts, err := Mounts(pod, &api.Container{Name: "c", VolumeMounts: []api.VolumeMount{{Name: "creds", MountPath: "/creds"}}}, paths)
	if err != nil || !mounts[0].ReadOnly {
		t.Errorf("secret mount = %+v, %v; want read-only", mounts, err)
	}

	// An update switches atomically: a.conf changes, b.conf goes away.
	oldGen, _ := os.Readlink(filepath.Join(paths["cfg"], "..data"))
	obj.configMaps["ns/cfg"] = &api.ConfigMap{Data: map[string]string{"a.conf": "A2"}}
	if _, err := m.Prepare(context.Background(), pod); err != nil {
		t.Fatalf("Prepare(update) = %v", err)
	}
	newGen, _ := os.Readlink(filepath.Join(paths["cfg"], "..data"))
	if newGen == oldGen || readFile(t, filepath.Join(paths["cfg"], "a.conf")) != "A2" {
		t.Errorf("after update: gen %q→%q, a.conf %q; want a new generation with A2", oldGen, newGen, readFile(t, filepath.Join(paths["cfg"], "a.conf")))
	}
	if _, err := os.Lstat(filepath.Join(paths["cfg"], "b.conf")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("b.conf after its key went: %v; want gone", err)
	}
	if _, err := os.Stat(filepath.Join(paths["cfg"], oldGen)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("old generation kept: %v", err)
	}
	// unchanged content is not rewritten
	if _, err := m.Prepare(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	if again, _ := os.Readlink(filepath.Join(paths["cfg"], "..data")); again != newGen {
		t.Errorf("unchanged volume rewritten: %q → %q", newGen, again)
	}
}

func TestProjectionErrors(t *testing.T) {
	obj := &objects{configMaps: map[string]*api.ConfigMap{"ns/cfg": {Data: map[string]string{"a": "1"}}}, secrets: map[string]*api.Secret{}}
	tests := []struct {
		name string
		vol  api.Volume
		want error
	}{
		{"missing configmap", api.Volume{Name: "v", VolumeSource: api.VolumeSource{ConfigMap: &api.ConfigMapVolumeSource{LocalObjectReference: api.LocalObjectReference{Name: "nope"}}}}, ErrObjectNotFound},
		{"missing secret", api.Volume{Name: "v", VolumeSource: api.VolumeSource{Secret: &api.SecretVolumeSource{SecretName: "nope"}}}, ErrObjectNotFound},
		{"missing key", api.Volume{Name: "v", VolumeSource: api.VolumeSource{ConfigMap: &api.ConfigMapVolumeSource{
			LocalObjectReference: api.LocalObjectReference{Name: "cfg"}, Items: []api.KeyToPath{{Key: "b", Path: "b"}}}}}, ErrMissingKey},
		{"escaping path", api.Volume{Name: "v", VolumeSource: api.VolumeSource{ConfigMap: &api.ConfigMapVolumeSource{
			LocalObjectReference: api.LocalObjectReference{Name: "cfg"}, Items: []api.KeyToPath{{Key: "a", Path: "../a"}}}}}, nil},
		{"bad hostPath type", api.Volume{Name: "v", VolumeSource: api.VolumeSource{HostPath: &api.HostPathVolumeSource{Path: "/nonexistent-skiff", Type: ptr("Directory")}}}, ErrHostPathType},
	}
	for _, tt := range tests {
		m := &Manager{PodsDir: t.TempDir(), Objects: obj}
		_, err := m.Prepare(context.Background(), podWith(tt.vol))
		if err == nil || (tt.want != nil && !errors.Is(err, tt.want)) {
			t.Errorf("%s: Prepare() = %v; want %v", tt.name, err, tt.want)
		}
	}
	m := &Manager{PodsDir: t.TempDir(), Objects: obj}
	if _, err := m.Prepare(context.Background(), &api.Pod{}); err == nil {
		t.Error("Prepare(pod without uid) = nil; want error")
	}
}

// TestClaimVolumes: a bound claim's volume is a directory under
// VolumesDir named after the volume and claim, kept after the pod's
// volumes are cleaned up; an unbound claim waits; a read-only claim
// mounts read-only.
func TestClaimVolumes(t *testing.T) {
	obj := &objects{claims: map[string]*api.PersistentVolumeClaim{
		"ns/data":    {ObjectMeta: api.ObjectMeta{Name: "data", Namespace: "ns"}, Spec: api.PersistentVolumeClaimSpec{VolumeName: "pvc-1"}},
		"ns/pending": {ObjectMeta: api.ObjectMeta{Name: "pending", Namespace: "ns"}},
		"ns/evil":    {ObjectMeta: api.ObjectMeta{Name: "evil", Namespace: "ns"}, Spec: api.PersistentVolumeClaimSpec{VolumeName: "../../etc"}},
	}}
	vols := t.TempDir()
	m := &Manager{PodsDir: t.TempDir(), Objects: obj, VolumesDir: vols}
	claim := func(name string, ro bool) api.Volume {
		return api.Volume{Name: "v", VolumeSource: api.VolumeSource{PersistentVolumeClaim: &api.PersistentVolumeClaimVolumeSource{ClaimName: name, ReadOnly: ro}}}
	}
	pod := podWith(claim("data", true))
	paths, err := m.Prepare(context.Background(), pod)
	want := filepath.Join(vols, "pvc-1_ns_data")
	if err != nil || paths["v"] != want {
		t.Fatalf("Prepare(claim) = %v, %v; want %s", paths, err, want)
	}
	if err := os.WriteFile(filepath.Join(want, "f"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := m.Cleanup(PodDir(m.PodsDir, pod)); err != nil {
		t.Fatal(err)
	}
	if readFile(t, filepath.Join(want, "f")) != "x" {
		t.Error("claim data gone after the pod's cleanup")
	}
	c := &api.Container{Name: "c", VolumeMounts: []api.VolumeMount{{Name: "v", MountPath: "/data"}}}
	ms, err := Mounts(pod, c, paths)
	if err != nil || len(ms) != 1 || !ms[0].ReadOnly || ms[0].HostPath != want {
		t.Errorf("Mounts = %+v, %v; want %s read-only", ms, err, want)
	}
	for name, wantErr := range map[string]error{"pending": ErrClaimNotBound, "evil": ErrClaimNotBound, "absent": ErrObjectNotFound} {
		if _, err := m.Prepare(context.Background(), podWith(claim(name, false))); !errors.Is(err, wantErr) {
			t.Errorf("Prepare(claim %s) = %v; want %v", name, err, wantErr)
		}
	}
	if _, err := (&Manager{PodsDir: t.TempDir(), Objects: obj}).Prepare(context.Background(), podWith(claim("data", false))); err == nil {
		t.Error("Prepare without VolumesDir succeeded; want an error")
	}
}

// TestClaimVolumeElsewhere: a claim whose volume the server will not show
// this node (pinned elsewhere, or deleted) does not get a directory here.
func TestClaimVolumeElsewhere(t *testing.T) {
	obj := objectsWithVolumes{objects: &objects{claims: map[string]*api.PersistentVolumeClaim{
		"ns/here":  {ObjectMeta: api.ObjectMeta{Name: "here", Namespace: "ns"}, Spec: api.PersistentVolumeClaimSpec{VolumeName: "pvc-here"}},
		"ns/there": {ObjectMeta: api.ObjectMeta{Name: "there", Namespace: "ns"}, Spec: api.PersistentVolumeClaimSpec{VolumeName: "pvc-there"}},
	}}, volumes: map[string]*api.PersistentVolume{"pvc-here": {ObjectMeta: api.ObjectMeta{Name: "pvc-here"}}}}
	vols := t.TempDir()
	m := &Manager{PodsDir: t.TempDir(), Objects: obj, VolumesDir: vols}
	claim := func(name string) *api.Pod {
		return podWith(api.Volume{Name: "v", VolumeSource: api.VolumeSource{PersistentVolumeClaim: &api.PersistentVolumeClaimVolumeSource{ClaimName: name}}})
	}
	if _, err := m.Prepare(context.Background(), claim("here")); err != nil {
		t.Errorf("Prepare(claim here) = %v; want nil", err)
	}
	if _, err := m.Prepare(context.Background(), claim("there")); !errors.Is(err, ErrVolumeElsewhere) {
		t.Errorf("Prepare(claim there) = %v; want ErrVolumeElsewhere", err)
	}
	if _, err := os.Stat(filepath.Join(vols, "pvc-there_ns_there")); !os.IsNotExist(err) {
		t.Errorf("a directory was made for a volume of another node (%v)", err)
	}
}
