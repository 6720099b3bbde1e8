package testenv

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// RemoveCgroupRoot removes a test's cgroup root (say "/skiff-test-x") and
// everything under it, deepest first, in every hierarchy: the unified
// one, and each v1 controller (and the hybrid "unified" and "systemd"
// mounts). Call it after the containers in it are gone: a cgroup with
// processes cannot be removed, and that is reported as a test error.
func RemoveCgroupRoot(t testing.TB, root string) {
	t.Helper()
	hier, _ := filepath.Glob("/sys/fs/cgroup/*")
	for _, h := range append(hier, "/sys/fs/cgroup") {
		var dirs []string
		_ = filepath.WalkDir(filepath.Join(h, root), func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		for i := len(dirs) - 1; i >= 0; i-- {
			if err := os.Remove(dirs[i]); err != nil && !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("cleanup cgroup %s: %v", dirs[i], err)
			}
		}
	}
}
