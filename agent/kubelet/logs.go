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
	dir := ""
	k.mu.Lock()
	for _, p := range k.pods {
		if p.Namespace == ns && p.Name == name {
			dir = volumes.PodDir(k.cfg.PodsDir, p)
		}
	}
	k.mu.Unlock()
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
	newest, prev := -1, -1
	for _, e := range entries {
		n, err := strconv.Atoi(strings.TrimSuffix(e.Name(), ".log"))
		if err != nil || !strings.HasSuffix(e.Name(), ".log") || n < 0 {
			continue
		}
		switch {
		case n > newest:
			newest, prev = n, newest
		case n > prev:
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
