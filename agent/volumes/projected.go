package volumes

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/skiffhq/skiff/api"
)

// file is one projected file: its bytes and mode.
type file struct {
	data []byte
	mode fs.FileMode
}

const dataLink = "..data"

func (m *Manager) secretFiles(ctx context.Context, ns string, src *api.SecretVolumeSource) (map[string]file, error) {
	optional := src.Optional != nil && *src.Optional
	if m.Objects == nil {
		return nil, errors.New("no object getter to read secrets")
	}
	s, err := m.Objects.GetSecret(ctx, ns, src.SecretName)
	if errors.Is(err, ErrObjectNotFound) && optional {
		return map[string]file{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("get secret %s/%s: %w", ns, src.SecretName, err)
	}
	data := map[string][]byte{}
	for k, v := range s.StringData {
		data[k] = []byte(v)
	}
	for k, v := range s.Data {
		data[k] = v
	}
	return project(data, src.Items, src.DefaultMode, optional, "secret "+ns+"/"+src.SecretName)
}

func (m *Manager) configMapFiles(ctx context.Context, ns string, src *api.ConfigMapVolumeSource) (map[string]file, error) {
	optional := src.Optional != nil && *src.Optional
	if m.Objects == nil {
		return nil, errors.New("no object getter to read config maps")
	}
	cm, err := m.Objects.GetConfigMap(ctx, ns, src.Name)
	if errors.Is(err, ErrObjectNotFound) && optional {
		return map[string]file{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("get configmap %s/%s: %w", ns, src.Name, err)
	}
	data := map[string][]byte{}
	for k, v := range cm.BinaryData {
		data[k] = v
	}
	for k, v := range cm.Data {
		data[k] = []byte(v)
	}
	return project(data, src.Items, src.DefaultMode, optional, "configmap "+ns+"/"+src.Name)
}

// project maps an object's keys to files: every key under its own name,
// or only items under their paths.
func project(data map[string][]byte, items []api.KeyToPath, defaultMode *int32, optional bool, what string) (map[string]file, error) {
	mode := fs.FileMode(api.DefaultVolumeMode)
	if defaultMode != nil {
		mode = fs.FileMode(*defaultMode) & fs.ModePerm
	}
	out := map[string]file{}
	if len(items) == 0 {
		for k, v := range data {
			if err := checkRelPath(k); err != nil {
				return nil, err
			}
			out[k] = file{data: v, mode: mode}
		}
		return out, nil
	}
	for _, it := range items {
		v, ok := data[it.Key]
		if !ok {
			if optional {
				continue
			}
			return nil, fmt.Errorf("%w: %s has no key %q", ErrMissingKey, what, it.Key)
		}
		if err := checkRelPath(it.Path); err != nil {
			return nil, err
		}
		f := file{data: v, mode: mode}
		if it.Mode != nil {
			f.mode = fs.FileMode(*it.Mode) & fs.ModePerm
		}
		out[filepath.Clean(it.Path)] = f
	}
	return out, nil
}

func checkRelPath(p string) error {
	c := filepath.Clean(p)
	if p == "" || filepath.IsAbs(p) || c == ".." || strings.HasPrefix(c, "../") || strings.HasPrefix(c, "..") {
		return fmt.Errorf("invalid file path %q in volume", p)
	}
	return nil
}

// writeAtomic makes dir hold exactly files, switching from the previous
// content in one rename: files live in a fresh "..gen_*" directory,
// "..data" links to it, and each top-level name links into "..data". A
// reader therefore sees the old set or the new one, never a mix. Nothing
// is written when the content is unchanged.
func writeAtomic(dir string, files map[string]file) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create volume dir: %w", err)
	}
	oldGen, _ := os.Readlink(filepath.Join(dir, dataLink))
	if oldGen != "" && sameContent(filepath.Join(dir, oldGen), files) {
		return nil
	}
	gen, err := os.MkdirTemp(dir, "..gen_")
	if err != nil {
		return fmt.Errorf("create volume generation: %w", err)
	}
	if err := os.Chmod(gen, 0o755); err != nil {
		return fmt.Errorf("chmod volume generation: %w", err)
	}
	for p, f := range files {
		full := filepath.Join(gen, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return fmt.Errorf("create %s: %w", p, err)
		}
		if err := os.WriteFile(full, f.data, f.mode); err != nil {
			return fmt.Errorf("write %s: %w", p, err)
		}
		if err := os.Chmod(full, f.mode); err != nil { // WriteFile's mode passes the umask
			return fmt.Errorf("chmod %s: %w", p, err)
		}
	}
	tmp := filepath.Join(dir, "..data_tmp")
	_ = os.Remove(tmp)
	if err := os.Symlink(filepath.Base(gen), tmp); err != nil {
		return fmt.Errorf("link volume data: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, dataLink)); err != nil {
		return fmt.Errorf("switch volume data: %w", err)
	}
	tops := map[string]bool{}
	for p := range files {
		tops[strings.SplitN(filepath.ToSlash(p), "/", 2)[0]] = true
	}
	for top := range tops {
		link := filepath.Join(dir, top)
		if target, err := os.Readlink(link); err == nil && target == filepath.Join(dataLink, top) {
			continue
		}
		if err := os.Symlink(filepath.Join(dataLink, top), link); err != nil {
			return fmt.Errorf("link %s: %w", top, err)
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("read volume dir: %w", err)
	}
	for _, e := range entries {
		name := e.Name()
		switch {
		case name == dataLink || name == filepath.Base(gen):
		case strings.HasPrefix(name, "..gen_"):
			if err := os.RemoveAll(filepath.Join(dir, name)); err != nil {
				return fmt.Errorf("remove old volume generation: %w", err)
			}
		case !tops[name] && e.Type()&fs.ModeSymlink != 0:
			if err := os.Remove(filepath.Join(dir, name)); err != nil {
				return fmt.Errorf("remove stale link %s: %w", name, err)
			}
		}
	}
	return nil
}

// sameContent reports whether gen holds exactly files, bytes and modes.
func sameContent(gen string, files map[string]file) bool {
	var have []string
	err := filepath.WalkDir(gen, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			rel, _ := filepath.Rel(gen, p)
			have = append(have, rel)
		}
		return nil
	})
	if err != nil || len(have) != len(files) {
		return false
	}
	sort.Strings(have)
	for _, rel := range have {
		f, ok := files[rel]
		if !ok {
			return false
		}
		full := filepath.Join(gen, rel)
		fi, err := os.Stat(full)
		if err != nil || fi.Mode().Perm() != f.mode {
			return false
		}
		b, err := os.ReadFile(full)
		if err != nil || !bytes.Equal(b, f.data) {
			return false
		}
	}
	return true
}
