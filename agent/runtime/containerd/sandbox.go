package containerd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/skiffhq/skiff/agent/cgroups"
	"github.com/skiffhq/skiff/agent/runtime"
	"github.com/skiffhq/skiff/api"
)

func netnsDir(data string) string  { return filepath.Join(data, "netns") }
func recordDir(data string) string { return filepath.Join(data, "sandboxes") }

// sandboxRecord is what a sandbox keeps on disk besides its netns and
// cgroup: enough to list a pod that has no containers.
type sandboxRecord struct {
	UID         string          `json:"uid"`
	Name        string          `json:"name"`
	Namespace   string          `json:"namespace"`
	HostNetwork bool            `json:"hostNetwork"`
	QOSClass    api.PodQOSClass `json:"qosClass"`
}

// validPodUID rejects UIDs that are unsafe as file names or container ID
// parts.
func validPodUID(uid string) error {
	if uid == "" || len(uid) > 64 {
		return fmt.Errorf("%w: pod uid %q", runtime.ErrInvalidConfig, uid)
	}
	for _, c := range uid {
		if !(c == '-' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return fmt.Errorf("%w: pod uid %q", runtime.ErrInvalidConfig, uid)
		}
	}
	return nil
}

// CreateSandbox makes (or updates) the pod's cgroup and, unless
// HostNetwork, its network namespace.
func (r *Runtime) CreateSandbox(ctx context.Context, cfg runtime.SandboxConfig) (runtime.Sandbox, error) {
	if err := validPodUID(cfg.PodUID); err != nil {
		return runtime.Sandbox{}, err
	}
	qos := cfg.QOSClass
	if qos == "" {
		qos = api.PodQOSBestEffort
	}
	rec := sandboxRecord{UID: cfg.PodUID, Name: cfg.PodName, Namespace: cfg.Namespace, HostNetwork: cfg.HostNetwork, QOSClass: qos}
	if err := r.writeRecord(rec); err != nil {
		return runtime.Sandbox{}, err
	}
	res := cgroups.PodResources(cfg.CPURequestMilli, cfg.CPULimitMilli, cfg.MemoryLimit)
	res.PIDsLimit = r.pids
	cg, err := r.cg.EnsurePod(qos, cfg.PodUID, res)
	if err != nil {
		return runtime.Sandbox{}, fmt.Errorf("sandbox %s: %w", cfg.PodUID, err)
	}
	sb := runtime.Sandbox{PodUID: cfg.PodUID, CgroupParent: cg}
	if !cfg.HostNetwork {
		sb.NetNSPath = filepath.Join(netnsDir(r.data), cfg.PodUID)
		if err := createNetNS(sb.NetNSPath); err != nil {
			return runtime.Sandbox{}, fmt.Errorf("sandbox %s: %w", cfg.PodUID, err)
		}
	}
	return sb, nil
}

// RemoveSandbox removes the pod's network namespace, cgroup and record.
// Removing what is gone succeeds.
func (r *Runtime) RemoveSandbox(ctx context.Context, podUID string) error {
	if err := validPodUID(podUID); err != nil {
		return err
	}
	if err := removeNetNS(filepath.Join(netnsDir(r.data), podUID)); err != nil {
		return fmt.Errorf("sandbox %s: %w", podUID, err)
	}
	if err := r.cg.RemovePod(podUID); err != nil {
		return fmt.Errorf("sandbox %s: %w", podUID, err)
	}
	if err := os.Remove(filepath.Join(recordDir(r.data), podUID+".json")); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("sandbox %s: %w", podUID, err)
	}
	return nil
}

func (r *Runtime) writeRecord(rec sandboxRecord) error {
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	p := filepath.Join(recordDir(r.data), rec.UID+".json")
	tmp := p + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return fmt.Errorf("write sandbox record: %w", err)
	}
	if err := os.Rename(tmp, p); err != nil {
		return fmt.Errorf("write sandbox record: %w", err)
	}
	return nil
}

// sandboxOf returns pod uid's sandbox on disk — from its record, netns
// file and cgroup — with its record when there is one; nil when there is
// none.
func (r *Runtime) sandboxOf(uid string) (*runtime.Sandbox, *sandboxRecord, error) {
	var sb *runtime.Sandbox
	get := func() *runtime.Sandbox {
		if sb == nil {
			sb = &runtime.Sandbox{PodUID: uid}
		}
		return sb
	}
	var rec *sandboxRecord
	b, err := os.ReadFile(filepath.Join(recordDir(r.data), uid+".json"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, nil, fmt.Errorf("read sandbox record: %w", err)
	}
	if err == nil {
		var rc sandboxRecord
		if json.Unmarshal(b, &rc) == nil && rc.UID == uid {
			rec = &rc
			get()
		}
	}
	if p := filepath.Join(netnsDir(r.data), uid); isNetNS(p) {
		get().NetNSPath = p
	}
	switch p, err := r.cg.Pod(uid); {
	case err == nil:
		get().CgroupParent = p.Path
	case !errors.Is(err, cgroups.ErrNotFound):
		return nil, nil, fmt.Errorf("sandbox of pod %s: %w", uid, err)
	}
	return sb, rec, nil
}

// sandboxes returns every sandbox on disk — from records, netns files
// and pod cgroups — with its record when there is one.
func (r *Runtime) sandboxes() (map[string]*runtime.Sandbox, map[string]sandboxRecord, error) {
	sbs := map[string]*runtime.Sandbox{}
	recs := map[string]sandboxRecord{}
	get := func(uid string) *runtime.Sandbox {
		if sbs[uid] == nil {
			sbs[uid] = &runtime.Sandbox{PodUID: uid}
		}
		return sbs[uid]
	}
	ents, err := os.ReadDir(recordDir(r.data))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, nil, fmt.Errorf("list sandbox records: %w", err)
	}
	for _, e := range ents {
		uid, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || validPodUID(uid) != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join(recordDir(r.data), e.Name()))
		if err != nil {
			continue
		}
		var rec sandboxRecord
		if json.Unmarshal(b, &rec) == nil && rec.UID == uid {
			recs[uid] = rec
			get(uid)
		}
	}
	ents, err = os.ReadDir(netnsDir(r.data))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, nil, fmt.Errorf("list netns: %w", err)
	}
	for _, e := range ents {
		if validPodUID(e.Name()) != nil {
			continue
		}
		p := filepath.Join(netnsDir(r.data), e.Name())
		if isNetNS(p) {
			get(e.Name()).NetNSPath = p
		}
	}
	pods, err := r.cg.Pods()
	if err != nil {
		return nil, nil, err
	}
	for _, p := range pods {
		get(p.UID).CgroupParent = p.Path
	}
	return sbs, recs, nil
}
