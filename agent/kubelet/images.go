package kubelet

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/skiffhq/skiff/agent/runtime"
	"github.com/skiffhq/skiff/api"
)

// Secret types that carry registry credentials.
const (
	secretTypeDockerConfigJSON = "kubernetes.io/dockerconfigjson"
	secretTypeDockercfg        = "kubernetes.io/dockercfg"
)

// pullPolicy is c's imagePullPolicy, or Kubernetes' default when unset:
// Always for an image tagged "latest" or with neither tag nor digest,
// IfNotPresent otherwise.
func pullPolicy(c *api.Container) api.PullPolicy {
	if c.ImagePullPolicy != "" {
		return c.ImagePullPolicy
	}
	name, _, hasDigest := strings.Cut(c.Image, "@")
	tag := ""
	if i := strings.LastIndexByte(name, ':'); i > strings.LastIndexByte(name, '/') {
		tag = name[i+1:]
	}
	if tag == "latest" || (tag == "" && !hasDigest) {
		return api.PullAlways
	}
	return api.PullIfNotPresent
}

// dockerConfig is the shape of .dockerconfigjson ({"auths": {...}}); a
// .dockercfg is the inner map alone.
type dockerConfig struct {
	Auths map[string]dockerAuth `json:"auths"`
}

type dockerAuth struct {
	Username string `json:"username"`
	Password string `json:"password"`
	Auth     string `json:"auth"` // base64 "user:password"
}

// pullAuth reads the credentials of pod's imagePullSecrets, in order. A
// missing or malformed secret is skipped (the pull may still work
// anonymously) and reported in the returned warnings, which never hold
// secret material.
func pullAuth(ctx context.Context, objects ObjectGetter, pod *api.Pod) ([]runtime.RegistryAuth, []string) {
	var auths []runtime.RegistryAuth
	var warnings []string
	for _, ref := range pod.Spec.ImagePullSecrets {
		if objects == nil || ref.Name == "" {
			continue
		}
		s, err := objects.GetSecret(ctx, pod.Namespace, ref.Name)
		if err != nil {
			warnings = append(warnings, fmt.Sprintf("image pull secret %q: %v", ref.Name, err))
			continue
		}
		a, err := parseDockerSecret(s)
		if err != nil {
			warnings = append(warnings, fmt.Sprintf("image pull secret %q: %v", ref.Name, err))
			continue
		}
		auths = append(auths, a...)
	}
	return auths, warnings
}

// parseDockerSecret turns a dockerconfigjson or dockercfg secret into
// credentials, sorted by host.
func parseDockerSecret(s *api.Secret) ([]runtime.RegistryAuth, error) {
	var entries map[string]dockerAuth
	switch s.Type {
	case secretTypeDockerConfigJSON:
		var cfg dockerConfig
		if err := json.Unmarshal(s.Data[".dockerconfigjson"], &cfg); err != nil {
			return nil, errors.New("malformed .dockerconfigjson")
		}
		entries = cfg.Auths
	case secretTypeDockercfg:
		if err := json.Unmarshal(s.Data[".dockercfg"], &entries); err != nil {
			return nil, errors.New("malformed .dockercfg")
		}
	default:
		return nil, fmt.Errorf("type %q is not %s", s.Type, secretTypeDockerConfigJSON)
	}
	var out []runtime.RegistryAuth
	for _, host := range slices.Sorted(maps.Keys(entries)) {
		e := entries[host]
		user, pass := e.Username, e.Password
		if e.Auth != "" {
			raw, err := base64.StdEncoding.DecodeString(e.Auth)
			if err != nil {
				return nil, fmt.Errorf("auth of %s is not base64", host)
			}
			u, p, ok := strings.Cut(string(raw), ":")
			if !ok {
				return nil, fmt.Errorf("auth of %s is not user:password", host)
			}
			user, pass = u, p
		}
		out = append(out, runtime.RegistryAuth{Host: registryHost(host), Username: user, Password: pass})
	}
	return out, nil
}

// registryHost normalises a docker config key ("https://index.docker.io/v1/")
// to a registry host ("docker.io").
func registryHost(key string) string {
	h := key
	if i := strings.Index(h, "://"); i >= 0 {
		h = h[i+3:]
	}
	h, _, _ = strings.Cut(h, "/")
	switch h {
	case "index.docker.io", "registry-1.docker.io", "registry.hub.docker.com":
		return "docker.io"
	}
	return h
}
