package version

import "runtime"

var (
	version = "dev"
	commit  = "unknown"
)

// Info describes the running binary; it is what `skiff version` prints
// and what GET /version returns.
type Info struct {
	Version   string `json:"version"`
	Commit    string `json:"commit"`
	GoVersion string `json:"goVersion"`
	Platform  string `json:"platform"`
}

// Get returns the build information of this binary.
func Get() Info {
	return Info{Version: version, Commit: commit, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
}
