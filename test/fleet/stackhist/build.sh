#!/bin/sh
# Builds a measurement-only skiff (-tags fleetprof) whose pprof address
# (SKIFF_PPROF_ADDR) also serves /debug/stacks: the goroutines grouped by
# the function they started in and their stack's size, with the stack
# each one uses while it waits. The Go runtime has no API for a
# goroutine's stack size, so this adds one to the runtime package for
# this build alone, with go build -overlay. Never in a release binary.
#
#   test/fleet/stackhist/build.sh /tmp/skiff-stacks
#   SKIFF_PPROF_ADDR=127.0.0.1:6061 fleetsim -skiff /tmp/skiff-stacks ...
#   curl -s 127.0.0.1:6061/debug/stacks
set -eu
out=${1:?usage: build.sh OUTPUT}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
goroot=$(go env GOROOT)
cat > "$tmp/overlay.json" <<JSON
{"Replace":{
  "$goroot/src/runtime/zz_stackhist.go":"$here/runtime_stackhist.go.in",
  "$root/cmd/skiff/zz_stacks.go":"$here/skiff_stacks.go.in"
}}
JSON
cd "$root"
go build -overlay "$tmp/overlay.json" -tags fleetprof -o "$out" ./cmd/skiff
