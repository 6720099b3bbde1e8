package volumes

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/skiffhq/skiff/agent/runtime"
	"github.com/skiffhq/skiff/api"
)

// ObjectGetter reads the secrets and config maps that volumes project. It
// returns an error wrapping ErrObjectNotFound when the object does not
// exist. agent/kubelet's ObjectGetter has the same methods.
type ObjectGetter interface {
	GetSecret(ctx context.Context, ns, name string) (*api.Secret, error)
	GetConfigMap(ctx context.Context, ns, name string) (*api.ConfigMap, error)
}

// ClaimGetter reads the PersistentVolumeClaims that volumes mount. An
// ObjectGetter that also has this method serves persistentVolumeClaim
// volumes (checked at run time).
type ClaimGetter interface {
	GetPersistentVolumeClaim(ctx context.Context, ns, name string) (*api.PersistentVolumeClaim, error)
}

// VolumeGetter reads PersistentVolumes; the server lets a node read only
// the volumes pinned to it. An ObjectGetter that also has this method
// makes claimDir refuse a claim whose volume lives on another node.
type VolumeGetter interface {
	GetPersistentVolume(ctx context.Context, name string) (*api.PersistentVolume, error)
}

// Errors of this package (wrapped; test with errors.Is).
var (
	// ErrObjectNotFound is what an ObjectGetter wraps for a missing object.
	ErrObjectNotFound = errors.New("object not found")
	// ErrHostPathType: a hostPath is not of the type the volume demands.
	ErrHostPathType = errors.New("hostPath type check failed")
	// ErrMissingKey: an item names a key the object lacks.
	ErrMissingKey = errors.New("key not found")
	// ErrBadMount: a volumeMount names an unknown volume or a bad subPath.
	ErrBadMount = errors.New("invalid volume mount")
	// ErrClaimNotBound: a persistentVolumeClaim volume's claim has no
	// volume yet (the pod waits).
	ErrClaimNotBound = errors.New("persistentvolumeclaim is not bound")
	// ErrVolumeElsewhere: the claim's volume is pinned to another node
	// (or gone); its data is not here, so the pod does not start.
	ErrVolumeElsewhere = errors.New("the volume is not on this node")
)

// Volume kinds, as directory names under <pod dir>/volumes.
const (
	kindEmptyDir  = "empty-dir"
	kindSecret    = "secret"
	kindConfigMap = "configmap"
)

// PodDir is the directory of pod under podsDir:
// <podsDir>/<namespace>_<name>_<uid>. Its logs and volumes live there.
func PodDir(podsDir string, pod *api.Pod) string {
	return filepath.Join(podsDir, PodDirName(pod.Namespace, pod.Name, pod.UID))
}

// PodDirName is "<namespace>_<name>_<uid>".
func PodDirName(ns, name, uid string) string { return ns + "_" + name + "_" + uid }

// Manager prepares and removes volumes. Its fields are set once before
// use; its methods are safe for concurrent use on different pods (the
// kubelet's pod workers serialise calls per pod).
type Manager struct {
	// PodsDir is <data-dir>/agent/pods.
	PodsDir string
	// Objects reads secrets and config maps; nil fails such volumes.
	Objects ObjectGetter
	// VolumesDir is <data-dir>/agent/volumes, where local-path volumes
	// live: they outlive pods. "" fails persistentVolumeClaim volumes.
	VolumesDir string
}

// Paths maps a pod's volume names to their directories (or files) on the
// host.
type Paths map[string]string

// Prepare makes every volume of pod ready and returns where each one is.
// It is idempotent; configMap and secret volumes are rewritten only when
// their content changed, atomically. The first failure is returned,
// wrapped with the volume's name.
func (m *Manager) Prepare(ctx context.Context, pod *api.Pod) (Paths, error) {
	if pod == nil || pod.UID == "" {
		return nil, errors.New("prepare volumes: pod without uid")
	}
	podDir := PodDir(m.PodsDir, pod)
	paths := Paths{}
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		p, err := m.prepare(ctx, pod, podDir, v)
		if err != nil {
			return nil, fmt.Errorf("volume %q: %w", v.Name, err)
		}
		paths[v.Name] = p
	}
	return paths, nil
}

func (m *Manager) prepare(ctx context.Context, pod *api.Pod, podDir string, v *api.Volume) (string, error) {
	if strings.ContainsAny(v.Name, `/\`) || v.Name == "" || v.Name == "." || v.Name == ".." {
		return "", fmt.Errorf("invalid volume name %q", v.Name)
	}
	switch {
	case v.HostPath != nil:
		t := ""
		if v.HostPath.Type != nil {
			t = *v.HostPath.Type
		}
		return v.HostPath.Path, checkHostPath(v.HostPath.Path, t)
	case v.Secret != nil:
		dir := filepath.Join(podDir, "volumes", kindSecret, v.Name)
		files, err := m.secretFiles(ctx, pod.Namespace, v.Secret)
		if err != nil {
			return "", err
		}
		return dir, writeAtomic(dir, files)
	case v.PersistentVolumeClaim != nil:
		return m.claimDir(ctx, pod.Namespace, v.PersistentVolumeClaim.ClaimName)
	case v.ConfigMap != nil:
		dir := filepath.Join(podDir, "volumes", kindConfigMap, v.Name)
		files, err := m.configMapFiles(ctx, pod.Namespace, v.ConfigMap)
		if err != nil {
			return "", err
		}
		return dir, writeAtomic(dir, files)
	default: // emptyDir, also the default when nothing is set
		dir := filepath.Join(podDir, "volumes", kindEmptyDir, v.Name)
		if err := os.MkdirAll(dir, 0o750); err != nil {
			return "", fmt.Errorf("create emptyDir: %w", err)
		}
		// Any user of the container may write, as in Kubernetes.
		if err := os.Chmod(dir, 0o777); err != nil { //nolint:gosec // emptyDir is world-writable by design
			return "", fmt.Errorf("chmod emptyDir: %w", err)
		}
		return dir, nil
	}
}

// claimDir returns (creating it) the local-path directory of the volume
// bound to claim ns/name. The directory outlives the pod: a pod of the
// claim that comes back on this node finds its data.
func (m *Manager) claimDir(ctx context.Context, ns, name string) (string, error) {
	cg, ok := m.Objects.(ClaimGetter)
	if !ok || m.VolumesDir == "" {
		return "", errors.New("persistentVolumeClaim volumes are not available on this agent")
	}
	claim, err := cg.GetPersistentVolumeClaim(ctx, ns, name)
	if err != nil {
		return "", fmt.Errorf("persistentvolumeclaim %s/%s: %w", ns, name, err)
	}
	v := claim.Spec.VolumeName
	if v == "" || strings.ContainsAny(v, `/\`) || v == "." || v == ".." {
		return "", fmt.Errorf("persistentvolumeclaim %s/%s: %w", ns, name, ErrClaimNotBound)
	}
	if vg, ok := m.Objects.(VolumeGetter); ok {
		if _, err := vg.GetPersistentVolume(ctx, v); err != nil {
			if errors.Is(err, ErrObjectNotFound) {
				return "", fmt.Errorf("persistentvolumeclaim %s/%s: volume %s: %w", ns, name, v, ErrVolumeElsewhere)
			}
			return "", fmt.Errorf("persistentvolumeclaim %s/%s: volume %s: %w", ns, name, v, err)
		}
	}
	dir := filepath.Join(m.VolumesDir, api.LocalPathDir(v, ns, name))
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return "", fmt.Errorf("create local-path volume: %w", err)
	}
	// Any user of the container may write, as with k3s's local-path.
	if err := os.Chmod(dir, 0o777); err != nil { //nolint:gosec // shared volume by design
		return "", fmt.Errorf("chmod local-path volume: %w", err)
	}
	return dir, nil
}

// Cleanup removes the volumes of the pod whose directory is podDir (see
// PodDir). hostPath volumes are never touched: they live outside it.
// Call it only once no container of the pod exists.
func (m *Manager) Cleanup(podDir string) error {
	if err := os.RemoveAll(filepath.Join(podDir, "volumes")); err != nil {
		return fmt.Errorf("remove volumes: %w", err)
	}
	return nil
}

// Mounts returns the mounts of container c of pod, given the volume
// paths Prepare returned. subPath must stay inside its volume; a subPath
// of an emptyDir is created when missing. Secret and configMap volumes
// are always mounted read-only.
func Mounts(pod *api.Pod, c *api.Container, paths Paths) ([]runtime.Mount, error) {
	kinds := map[string]*api.Volume{}
	for i := range pod.Spec.Volumes {
		kinds[pod.Spec.Volumes[i].Name] = &pod.Spec.Volumes[i]
	}
	var out []runtime.Mount
	for _, vm := range c.VolumeMounts {
		host, ok := paths[vm.Name]
		v := kinds[vm.Name]
		if !ok || v == nil {
			return nil, fmt.Errorf("%w: container %q mounts unknown volume %q", ErrBadMount, c.Name, vm.Name)
		}
		ro := vm.ReadOnly || v.Secret != nil || v.ConfigMap != nil || (v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ReadOnly)
		if vm.SubPath != "" {
			sub := filepath.Clean(vm.SubPath)
			if filepath.IsAbs(sub) || sub == ".." || strings.HasPrefix(sub, "../") {
				return nil, fmt.Errorf("%w: subPath %q of volume %q leaves the volume", ErrBadMount, vm.SubPath, vm.Name)
			}
			host = filepath.Join(host, sub)
			if v.HostPath == nil && v.Secret == nil && v.ConfigMap == nil {
				if err := os.MkdirAll(host, 0o777); err != nil { //nolint:gosec // inside an emptyDir
					return nil, fmt.Errorf("create subPath %q: %w", vm.SubPath, err)
				}
			}
			if err := checkInside(paths[vm.Name], host); err != nil {
				return nil, err
			}
		}
		if vm.MountPath == "" || !strings.HasPrefix(vm.MountPath, "/") {
			return nil, fmt.Errorf("%w: mountPath %q must be absolute", ErrBadMount, vm.MountPath)
		}
		out = append(out, runtime.Mount{HostPath: host, ContainerPath: vm.MountPath, ReadOnly: ro})
	}
	return out, nil
}

// checkInside fails when p, with symlinks resolved, is not under root:
// a container must not reach outside its volume through a symlink it
// planted.
func checkInside(root, p string) error {
	r, err := filepath.EvalSymlinks(root)
	if err != nil {
		return fmt.Errorf("%w: resolve volume: %w", ErrBadMount, err)
	}
	q, err := filepath.EvalSymlinks(p)
	if errors.Is(err, os.ErrNotExist) {
		return nil // the runtime reports a missing source
	}
	if err != nil {
		return fmt.Errorf("%w: resolve subPath: %w", ErrBadMount, err)
	}
	if q != r && !strings.HasPrefix(q, r+string(filepath.Separator)) {
		return fmt.Errorf("%w: subPath resolves to %s, outside the volume", ErrBadMount, q)
	}
	return nil
}
