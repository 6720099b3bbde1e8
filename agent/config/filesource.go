package config

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/internal/clock"
)

// DefaultFilePeriod is how often the file source rereads its directory.
const DefaultFilePeriod = 5 * time.Second

// MaxManifestBytes bounds a static pod file; larger files are rejected.
const MaxManifestBytes = 1 << 20

// FileSourceConfig configures a FileSource.
type FileSourceConfig struct {
	// Dir holds the static pod files: <data-dir>/agent/pod-manifests.
	// A missing directory means no static pods.
	Dir string
	// NodeName is appended to every pod name and set as spec.nodeName.
	NodeName string
	// Period between scans. Default DefaultFilePeriod.
	Period time.Duration
	// Clock drives the scans. Default clock.Real.
	Clock clock.Clock
	// Logger. Default slog.Default().
	Logger *slog.Logger
}

// Validate reports what is wrong with c.
func (c FileSourceConfig) Validate() error {
	var errs []error
	if c.Dir == "" {
		errs = append(errs, errors.New("file source: a directory is required"))
	}
	if c.NodeName == "" {
		errs = append(errs, errors.New("file source: a node name is required"))
	}
	if c.Period < 0 {
		errs = append(errs, fmt.Errorf("file source: negative period %v", c.Period))
	}
	return errors.Join(errs...)
}

// FileSource reads static pods from *.yaml, *.yml and *.json files in a
// directory, one pod per file, and hands the whole set to its Sink at
// start and every Period (polling: no inotify needed, and an edit made
// while the agent was down is seen at start). As in the kubelet, the pod
// is named <name>-<node>, its namespace defaults to "default", its UID is
// a digest of the node name, the file name and the content (so an edit
// makes a new pod: REMOVE of the old, ADD of the new), spec.nodeName is
// the node, and it is annotated with ConfigSourceAnnotation and
// ConfigHashAnnotation. Defaults and validation are the API server's. A
// file that does not make a valid pod is logged (once per content) and
// ignored.
type FileSource struct {
	cfg   FileSourceConfig
	sink  Sink
	clock clock.Clock
	log   *slog.Logger

	// cache maps a file's path to what its content made last time, so
	// unchanged files are not parsed, nor their errors logged, again.
	// Only Run's goroutine touches it.
	cache map[string]fileResult
}

type fileResult struct {
	digest string   // of the raw content
	pod    *api.Pod // nil if the file is bad
}

// NewFileSource returns a FileSource writing to sink (a Merger).
func NewFileSource(cfg FileSourceConfig, sink Sink) (*FileSource, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if sink == nil {
		return nil, errors.New("file source: a sink is required")
	}
	if cfg.Period == 0 {
		cfg.Period = DefaultFilePeriod
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	return &FileSource{cfg: cfg, sink: sink, clock: clock.Or(cfg.Clock), log: log.With("source", SourceFile), cache: map[string]fileResult{}}, nil
}

// Run scans at once and then every Period until ctx ends; it returns
// ctx's error. Call it once.
func (s *FileSource) Run(ctx context.Context) error {
	t := s.clock.NewTicker(s.cfg.Period)
	defer t.Stop()
	for {
		if err := s.scan(ctx); err != nil && ctx.Err() == nil {
			s.log.Warn("scan static pod files", "dir", s.cfg.Dir, "err", err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C():
		}
	}
}

// scan reads the directory and sets the file source's state. When the
// directory cannot be read (other than missing) the state is left as it
// was: a transient error must not stop static pods.
func (s *FileSource) scan(ctx context.Context) error {
	entries, err := os.ReadDir(s.cfg.Dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("read %s: %w", s.cfg.Dir, err)
	}
	var names []string
	for _, e := range entries {
		if !isManifestName(e.Name()) || e.IsDir() {
			continue
		}
		names = append(names, e.Name())
	}
	sort.Strings(names)
	seen := map[string]bool{}
	byName := map[string]string{} // namespace/name → file, to refuse duplicates
	var pods []*api.Pod
	for _, n := range names {
		path := filepath.Join(s.cfg.Dir, n)
		seen[path] = true
		p := s.load(path)
		if p == nil {
			continue
		}
		key := p.Namespace + "/" + p.Name
		if other, dup := byName[key]; dup {
			s.log.Warn("static pod ignored: another file defines the same pod", "file", path, "pod", key, "other", other)
			continue
		}
		byName[key] = path
		pods = append(pods, p)
	}
	for path := range s.cache {
		if !seen[path] {
			delete(s.cache, path)
		}
	}
	return s.sink.Set(ctx, SourceFile, pods)
}

func isManifestName(name string) bool {
	if strings.HasPrefix(name, ".") {
		return false // editors' swap files, atomic writers' temporaries
	}
	switch strings.ToLower(filepath.Ext(name)) {
	case ".yaml", ".yml", ".json":
		return true
	}
	return false
}

// load returns the pod of the file at path, or nil when it is bad (logged
// once per content).
func (s *FileSource) load(path string) *api.Pod {
	data, err := readLimited(path, MaxManifestBytes)
	if err != nil {
		if prev, ok := s.cache[path]; !ok || prev.digest != "unreadable" {
			s.log.Warn("static pod file ignored", "file", path, "err", err)
		}
		s.cache[path] = fileResult{digest: "unreadable"}
		return nil
	}
	sum := sha256.Sum256(data)
	digest := hex.EncodeToString(sum[:])
	if prev, ok := s.cache[path]; ok && prev.digest == digest {
		return prev.pod
	}
	pod, err := StaticPodFromFile(filepath.Base(path), data, s.cfg.NodeName)
	if err != nil {
		s.log.Warn("static pod file ignored", "file", path, "err", err)
	}
	s.cache[path] = fileResult{digest: digest, pod: pod}
	return pod
}

func readLimited(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s is larger than %d bytes", path, limit)
	}
	return data, nil
}

// StaticPodFromFile makes the static pod of one manifest file (fileName
// is its base name; data its content) for node. The error says why the
// file makes no valid pod.
func StaticPodFromFile(fileName string, data []byte, node string) (*api.Pod, error) {
	docs := api.SplitYAML(data)
	switch len(docs) {
	case 0:
		return nil, errors.New("the file is empty")
	case 1:
	default:
		return nil, errors.New("a static pod file must hold exactly one pod")
	}
	pod := &api.Pod{}
	if err := api.Decode(docs[0], pod); err != nil {
		return nil, fmt.Errorf("decode: %w", err)
	}
	if k := pod.Kind; k != "" && k != "Pod" {
		return nil, fmt.Errorf("kind is %q; a static pod file must hold a Pod", k)
	}
	if v := pod.APIVersion; v != "" && v != "v1" {
		return nil, fmt.Errorf("apiVersion is %q; want v1", v)
	}
	if pod.Name == "" {
		return nil, errors.New("metadata.name: Required value")
	}
	h := sha256.New()
	for _, part := range [][]byte{[]byte(node), []byte(fileName), data} {
		h.Write(part)
		h.Write([]byte{0})
	}
	sum := h.Sum(nil)
	hash := hex.EncodeToString(sum[:16])

	api.SetTypeMeta(pod)
	pod.Name = pod.Name + "-" + node
	if pod.Namespace == "" {
		pod.Namespace = "default"
	}
	pod.UID = uuidFromDigest(sum)
	pod.ResourceVersion = ""
	pod.GenerateName = ""
	pod.DeletionTimestamp = nil
	pod.DeletionGracePeriodSeconds = nil
	pod.Spec.NodeName = node
	pod.Status = api.PodStatus{}
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	delete(pod.Annotations, api.MirrorPodAnnotation)
	pod.Annotations[ConfigSourceAnnotation] = SourceFile
	pod.Annotations[ConfigHashAnnotation] = hash
	api.SetDefaults(pod)
	if errs := api.Validate(pod); len(errs) > 0 {
		return nil, fmt.Errorf("invalid pod %s/%s: %w", pod.Namespace, pod.Name, errs)
	}
	return pod, nil
}

// uuidFromDigest formats the first 16 bytes of sum as a version 5 style
// UUID, so static pod UIDs look like every other UID.
func uuidFromDigest(sum []byte) string {
	var u [16]byte
	copy(u[:], sum)
	u[6] = u[6]&0x0f | 0x50
	u[8] = u[8]&0x3f | 0x80
	x := hex.EncodeToString(u[:])
	return x[0:8] + "-" + x[8:12] + "-" + x[12:16] + "-" + x[16:20] + "-" + x[20:32]
}
