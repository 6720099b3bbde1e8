// Package packaging holds what turns the skiff binary into .deb and .rpm
// packages: the nfpm configuration (nfpm.yaml), the systemd units
// (systemd/), the kept config and environment files (config.yaml,
// skiff.env) and the maintainer scripts (scripts/). `make package` builds
// the packages; see README.md.
//
// The Go code here is tests only: they build the amd64 packages with
// `make package`, check their files, conffiles, dependencies and scripts
// with dpkg-deb and rpm, and install and purge the .deb on the machine
// running them (as root). They change the machine and must run as part of
// `make test`, which first installs the tools they need.
package packaging
