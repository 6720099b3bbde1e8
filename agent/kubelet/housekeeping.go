package kubelet

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/skiffhq/skiff/api"
)

// housekeeping runs every HousekeepingPeriod in the sync loop. Once every
// source has delivered its first state it kills pods only the runtime
// knows, stops workers whose pod no source wants any more, removes
// directories of pods that are gone and forgets finished pods no source
// wants; always it caps log files and trims back-off
// entries. It must not block the loop: kills go through pod workers.
func (k *Kubelet) housekeeping(ctx context.Context) {
	now := k.clock.Now()
	k.crash.gc(now)
	k.pulls.gc(now)
	if err := k.rotateLogs(); err != nil {
		k.log.Warn("rotate logs", "err", err)
	}
	if !k.cfg.SourcesReady() {
		return
	}
	wanted := func(uid string) bool { return k.desired(uid) != nil }
	for _, rs := range k.pleg.all() {
		if wanted(rs.UID) || k.workers.active(rs.UID) {
			continue
		}
		k.log.Info("killing orphaned pod", "pod", rs.Namespace+"/"+rs.Name, "uid", rs.UID)
		orphan := &api.Pod{ObjectMeta: api.ObjectMeta{UID: rs.UID, Name: rs.Name, Namespace: rs.Namespace}}
		k.workers.killOrphan(orphan, int64(k.cfg.OrphanGrace.Seconds()))
	}
	for _, uid := range k.workers.removeUnwanted(wanted) {
		k.log.Warn("pod worker outlived its pod; stopping it", "uid", uid)
	}
	k.workers.forgetFinished(wanted)
	k.reconcileNetwork(ctx)
	if err := k.removeDeadPodDirs(wanted); err != nil {
		k.log.Warn("remove pod directories", "err", err)
	}
}

// removeDeadPodDirs removes the directories of pods no source wants, that
// no worker handles and of which the runtime holds nothing.
func (k *Kubelet) removeDeadPodDirs(wanted func(string) bool) error {
	entries, err := os.ReadDir(k.cfg.PodsDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read pods dir: %w", err)
	}
	var errs []error
	for _, e := range entries {
		uid := podDirUID(e.Name())
		if !e.IsDir() || uid == "" || wanted(uid) || k.workers.active(uid) || k.pleg.get(uid) != nil {
			continue
		}
		dir := filepath.Join(k.cfg.PodsDir, e.Name())
		if err := k.volumes.Cleanup(dir); err != nil {
			errs = append(errs, err)
			continue
		}
		if err := os.RemoveAll(dir); err != nil {
			errs = append(errs, fmt.Errorf("remove %s: %w", dir, err))
		}
	}
	return errors.Join(errs...)
}

// podDirUID is the UID of a "<ns>_<name>_<uid>" directory name, "" when
// the name has another shape.
func podDirUID(name string) string {
	parts := strings.Split(name, "_")
	if len(parts) != 3 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
		return ""
	}
	return parts[2]
}

// rotateLogs caps every container log under PodsDir at MaxLogSize: a
// larger file is copied to "<file>.1" (replacing the older copy) and
// truncated in place — copytruncate, because the runtime's shim keeps
// the file open and writes at its end.
func (k *Kubelet) rotateLogs() error {
	logs, err := filepath.Glob(filepath.Join(k.cfg.PodsDir, "*", "*", "*.log"))
	if err != nil {
		return fmt.Errorf("list logs: %w", err)
	}
	var errs []error
	for _, p := range logs {
		fi, err := os.Lstat(p)
		if err != nil || !fi.Mode().IsRegular() || fi.Size() <= k.cfg.MaxLogSize {
			continue
		}
		if err := copyTruncate(p, p+".1"); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func copyTruncate(src, dst string) error {
	in, err := os.OpenFile(src, os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("open log: %w", err)
	}
	defer in.Close()
	tmp := dst + ".tmp"
	out, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o640)
	if err != nil {
		return fmt.Errorf("create rotated log: %w", err)
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return fmt.Errorf("copy log: %w", err)
	}
	if err := out.Close(); err != nil {
		return fmt.Errorf("close rotated log: %w", err)
	}
	if err := os.Rename(tmp, dst); err != nil {
		return fmt.Errorf("rename rotated log: %w", err)
	}
	if err := in.Truncate(0); err != nil {
		return fmt.Errorf("truncate log: %w", err)
	}
	return nil
}
