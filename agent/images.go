package agent

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/skiffhq/skiff/agent/runtime"
	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/internal/clock"
)

// imagesScanEvery is how often the images directory is checked for new
// tarballs.
const imagesScanEvery = 10 * time.Second

// imageImporter imports the tarballs dropped into <data-dir>/agent/images
// (air-gapped installs): every file at start, then each new or changed
// one. A file that fails is retried only when it changes.
type imageImporter struct {
	dir string
	rt  runtime.Runtime
	clk clock.Clock
	log *slog.Logger
	// imported and lastSeen map a file name to its mtime/size key when
	// last imported (or tried) and when last seen.
	imported map[string]string
	lastSeen map[string]string
	// first is set for the scan at start: files there before the agent
	// started are complete.
	first bool
}

// settleTime is how old a new tarball must be to be imported on first
// sight.
const settleTime = 2 * time.Second

func newImageImporter(dir string, rt runtime.Runtime, clk clock.Clock, log *slog.Logger) *imageImporter {
	return &imageImporter{dir: dir, rt: rt, clk: clock.Or(clk), log: log, imported: map[string]string{}, lastSeen: map[string]string{}, first: true}
}

// scan imports what is new and returns the number of files imported.
func (im *imageImporter) scan(ctx context.Context) int {
	entries, err := os.ReadDir(im.dir)
	if err != nil {
		if !os.IsNotExist(err) {
			im.log.Warn("read images dir", "dir", im.dir, "err", err)
		}
		return 0
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].Name() < entries[j].Name() })
	n := 0
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || strings.HasPrefix(name, ".") || !(strings.HasSuffix(name, ".tar") || strings.HasSuffix(name, ".tar.gz")) {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue
		}
		key := info.ModTime().UTC().Format(time.RFC3339Nano) + "/" + strconv.FormatInt(info.Size(), 10)
		if im.imported[name] == key {
			continue
		}
		// A file still being copied in changes between scans: import it
		// once it held still for a scan, or is older than settleTime.
		stable := im.first || im.lastSeen[name] == key || im.clk.Now().Sub(info.ModTime()) >= settleTime
		im.lastSeen[name] = key
		if !stable {
			continue
		}
		im.imported[name] = key
		path := filepath.Join(im.dir, name)
		if err := im.importFile(ctx, path); err != nil {
			im.log.Warn("import image tarball", "file", path, "err", err)
			continue
		}
		n++
	}
	im.first = false
	return n
}

func (im *imageImporter) importFile(ctx context.Context, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	imgs, err := im.rt.ImportImages(ctx, f)
	if err != nil {
		return err
	}
	for _, img := range imgs {
		im.log.Info("imported image", "file", filepath.Base(path), "image", img.Ref)
	}
	return nil
}

// run scans until ctx ends, then returns ctx's error.
func (im *imageImporter) run(ctx context.Context) error {
	for {
		im.scan(ctx)
		if !clock.Sleep(ctx, im.clk, imagesScanEvery) {
			return ctx.Err()
		}
	}
}

// containerImages lists the runtime's images for the node status.
func containerImages(rt runtime.Runtime) func(ctx context.Context) ([]api.ContainerImage, error) {
	return func(ctx context.Context) ([]api.ContainerImage, error) {
		imgs, err := rt.ListImages(ctx)
		if err != nil {
			return nil, err
		}
		sort.Slice(imgs, func(i, j int) bool { return imgs[i].Size > imgs[j].Size })
		out := make([]api.ContainerImage, 0, len(imgs))
		for _, img := range imgs {
			names := []string{img.Ref}
			if img.ID != "" {
				names = append(names, img.ID)
			}
			out = append(out, api.ContainerImage{Names: names, SizeBytes: img.Size})
		}
		return out, nil
	}
}
