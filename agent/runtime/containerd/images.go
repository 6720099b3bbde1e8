package containerd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"

	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/images"
	"github.com/containerd/containerd/v2/core/remotes"
	"github.com/containerd/containerd/v2/core/remotes/docker"
	dconfig "github.com/containerd/containerd/v2/core/remotes/docker/config"
	"github.com/containerd/errdefs"
	"github.com/distribution/reference"

	"github.com/skiffhq/skiff/agent/runtime"
	"github.com/skiffhq/skiff/api"
)

// NormalizeRef returns ref in containerd's full form
// ("busybox" → "docker.io/library/busybox:latest").
func NormalizeRef(ref string) (string, error) {
	n, err := reference.ParseDockerRef(ref)
	if err != nil {
		return "", fmt.Errorf("%w: image %q: %w", runtime.ErrInvalidConfig, ref, err)
	}
	return n.String(), nil
}

// EnsureImage makes ref present per policy and unpacked into the
// snapshotter.
func (r *Runtime) EnsureImage(ctx context.Context, ref string, policy api.PullPolicy, auth []runtime.RegistryAuth) (runtime.Image, error) {
	ctx = r.nsctx(ctx)
	name, err := NormalizeRef(ref)
	if err != nil {
		return runtime.Image{}, err
	}
	if policy != api.PullAlways {
		img, err := r.client.GetImage(ctx, name)
		switch {
		case err == nil:
			if err := r.unpack(ctx, img); err != nil {
				return runtime.Image{}, err
			}
			return r.describe(ctx, img)
		case !errdefs.IsNotFound(err):
			return runtime.Image{}, translate("get image "+name, err)
		case policy == api.PullNever:
			return runtime.Image{}, fmt.Errorf("image %s: %w", name, runtime.ErrImageNeverPull)
		}
	}
	img, err := r.client.Pull(ctx, name,
		client.WithPullUnpack,
		client.WithPullSnapshotter(r.snap),
		client.WithResolver(r.resolver(ctx, auth)))
	if err != nil {
		return runtime.Image{}, fmt.Errorf("pull %s: %w: %w", name, runtime.ErrImagePull, err)
	}
	r.log.Info("pulled image", "image", name)
	return r.describe(ctx, img)
}

// resolver resolves with the first credential given for each host.
func (r *Runtime) resolver(ctx context.Context, auth []runtime.RegistryAuth) remotes.Resolver {
	creds := func(host string) (string, string, error) {
		for _, a := range auth {
			if a.Host == host || (a.Host == "docker.io" && host == "registry-1.docker.io") {
				return a.Username, a.Password, nil
			}
		}
		return "", "", nil
	}
	return docker.NewResolver(docker.ResolverOptions{
		Hosts: dconfig.ConfigureHosts(ctx, dconfig.HostOptions{Credentials: creds}),
	})
}

func (r *Runtime) unpack(ctx context.Context, img client.Image) error {
	ok, err := img.IsUnpacked(ctx, r.snap)
	if err != nil {
		return translate("check image "+img.Name(), err)
	}
	if ok {
		return nil
	}
	if err := img.Unpack(ctx, r.snap); err != nil {
		return translate("unpack image "+img.Name(), err)
	}
	return nil
}

func (r *Runtime) describe(ctx context.Context, img client.Image) (runtime.Image, error) {
	cfg, err := img.Config(ctx)
	if err != nil {
		return runtime.Image{}, translate("image config of "+img.Name(), err)
	}
	size, err := img.Size(ctx)
	if err != nil {
		size = 0 // content may be partly garbage-collected; the size is advisory
	}
	return runtime.Image{Ref: img.Name(), ID: cfg.Digest.String(), Size: size, CreatedAt: img.Metadata().CreatedAt}, nil
}

// ImportImages loads every image of an OCI image layout or docker-archive
// tarball and unpacks it.
func (r *Runtime) ImportImages(ctx context.Context, rd io.Reader) ([]runtime.Image, error) {
	ctx = r.nsctx(ctx)
	imgs, err := r.client.Import(ctx, rd)
	if err != nil {
		return nil, fmt.Errorf("%w: import images: %w", runtime.ErrInvalidConfig, err)
	}
	if len(imgs) == 0 {
		return nil, fmt.Errorf("%w: import images: the archive names no image", runtime.ErrInvalidConfig)
	}
	out := make([]runtime.Image, 0, len(imgs))
	for _, i := range imgs {
		img := client.NewImage(r.client, i)
		if err := r.unpack(ctx, img); err != nil {
			return nil, err
		}
		d, err := r.describe(ctx, img)
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}

// ListImages returns the images in the namespace, sorted by ref.
func (r *Runtime) ListImages(ctx context.Context) ([]runtime.Image, error) {
	ctx = r.nsctx(ctx)
	imgs, err := r.client.ListImages(ctx)
	if err != nil {
		return nil, translate("list images", err)
	}
	var out []runtime.Image
	for _, img := range imgs {
		d, err := r.describe(ctx, img)
		if errors.Is(err, runtime.ErrNotFound) {
			continue // content being removed
		}
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Ref < out[j].Ref })
	return out, nil
}

// RemoveImage deletes the image named ref and waits for the garbage
// collection of its content and snapshots, so the space is free when it
// returns. A missing image is not an error.
func (r *Runtime) RemoveImage(ctx context.Context, ref string) error {
	ctx = r.nsctx(ctx)
	err := r.client.ImageService().Delete(ctx, ref, images.SynchronousDelete())
	if err != nil && !errdefs.IsNotFound(err) {
		return translate("remove image "+ref, err)
	}
	return nil
}
