package version

import (
	"runtime"
	"strings"
)

var (
	version   = "dev"
	commit    = "unknown"
	buildDate = "1970-01-01T00:00:00Z"
)

// KubernetesMajor and KubernetesMinor are the Kubernetes release whose
// API skiff serves; GET /version reports them so kubectl's version-skew
// check and client-side behaviour match that release.
const (
	KubernetesMajor = "1"
	KubernetesMinor = "32"
)

// Info describes the running binary; it is what `skiff version` prints
// and what GET /version returns. The Kubernetes fields (major, minor,
// gitVersion, gitCommit, gitTreeState, buildDate, compiler) are those of
// Kubernetes' version.Info, so `kubectl version` reads it; version and
// commit are skiff's own.
type Info struct {
	Major        string `json:"major"`
	Minor        string `json:"minor"`
	GitVersion   string `json:"gitVersion"`
	GitCommit    string `json:"gitCommit"`
	GitTreeState string `json:"gitTreeState"`
	BuildDate    string `json:"buildDate"`
	GoVersion    string `json:"goVersion"`
	Compiler     string `json:"compiler"`
	Platform     string `json:"platform"`
	Version      string `json:"version"`
	Commit       string `json:"commit"`
}

// Get returns the build information of this binary.
func Get() Info {
	return Info{
		Major:        KubernetesMajor,
		Minor:        KubernetesMinor,
		GitVersion:   GitVersion(version),
		GitCommit:    commit,
		GitTreeState: "clean",
		BuildDate:    buildDate,
		GoVersion:    runtime.Version(),
		Compiler:     runtime.Compiler,
		Platform:     runtime.GOOS + "/" + runtime.GOARCH,
		Version:      version,
		Commit:       commit,
	}
}

// GitVersion returns the semantic version reported as gitVersion for a
// skiff version v: the Kubernetes release with skiff's version as build
// metadata, as k3s does ("v1.32.0+skiff.0.2.1"). Characters semver does
// not allow in build metadata become '-'.
func GitVersion(v string) string {
	meta := strings.Map(func(r rune) rune {
		switch {
		case r >= '0' && r <= '9', r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r == '-', r == '.':
			return r
		}
		return '-'
	}, strings.TrimPrefix(v, "v"))
	meta = strings.Trim(meta, ".")
	for strings.Contains(meta, "..") {
		meta = strings.ReplaceAll(meta, "..", ".")
	}
	if meta == "" {
		meta = "dev"
	}
	return "v" + KubernetesMajor + "." + KubernetesMinor + ".0+skiff." + meta
}
