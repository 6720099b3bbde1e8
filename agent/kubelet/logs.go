package kubelet

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/skiffhq/skiff/agent/volumes"
)

// LogPath returns the log file of container in pod ns/name: the newest
// instance's, or with previous the one before it. It works for pods the
// agent no longer runs as long as their directory is left. Errors wrap
// ErrNotFound.
func (k *Kubelet) LogPath(ns, name, container string, previous bool) (string, error) {
	if ns == "" || name == "" || container == "" || strings.ContainsAny(ns+name+container, "/\\") {
		return "", fmt.Errorf("log of %s/%s container %q: %w", ns, name, container, ErrNotFound)
	}
	dir, uid := "", ""
	k.mu.Lock()
	for _, p := range k.pods {
		if p.Namespace == ns && p.Name == name {
			dir, uid = volumes.PodDir(k.cfg.PodsDir, p), p.UID
		}
	}
	k.mu.Unlock()
	// The runtime knows which instance is the newest even before its
	// log file exists.
	if rs := k.pleg.get(uid); uid != "" && rs != nil {
		var counts []int
		for _, c := range rs.Containers {
			if c.Name == container {
				counts = append(counts, c.RestartCount)
			}
		}
		if len(counts) > 0 {
			return pickLog(dir, container, counts, previous, ns, name)
		}
	}
	if dir == "" {
		matches, _ := filepath.Glob(filepath.Join(k.cfg.PodsDir, volumes.PodDirName(ns, name, "*")))
		if len(matches) == 0 {
			return "", fmt.Errorf("pod %s/%s: %w", ns, name, ErrNotFound)
		}
		dir = matches[len(matches)-1]
	}
	entries, err := os.ReadDir(filepath.Join(dir, container))
	if err != nil {
		return "", fmt.Errorf("logs of container %q of pod %s/%s: %w", container, ns, name, ErrNotFound)
	}
	var counts []int
	for _, e := range entries {
		n, err := strconv.Atoi(strings.TrimSuffix(e.Name(), ".log"))
		if err == nil && strings.HasSuffix(e.Name(), ".log") && n >= 0 {
			counts = append(counts, n)
		}
	}
	return pickLog(dir, container, counts, previous, ns, name)
}

// pickLog returns the log of the newest restart count in counts, or with
// previous the one before it.
func pickLog(dir, container string, counts []int, previous bool, ns, name string) (string, error) {
	newest, prev := -1, -1
	for _, n := range counts {
		switch {
		case n > newest:
			newest, prev = n, newest
		case n > prev && n != newest:
			prev = n
		}
	}
	pick := newest
	if previous {
		pick = prev
	}
	if pick < 0 {
		what := "log"
		if previous {
			what = "previous log"
		}
		return "", fmt.Errorf("%s of container %q of pod %s/%s: %w", what, container, ns, name, ErrNotFound)
	}
	return filepath.Join(dir, container, strconv.Itoa(pick)+".log"), nil
}
