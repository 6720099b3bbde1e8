// Package qemuarm runs the real skiff binary, cross-compiled for armv7
// (GOARCH=arm GOARM=7) and arm64, under qemu user-mode emulation
// (qemu-arm-static, qemu-aarch64-static from Debian's qemu-user-static),
// invoked explicitly so that no binfmt_misc registration is needed.
//
// Each test starts `skiff server --disable-agent` on a temporary data dir
// and 127.0.0.1:0, reads the URL, CA and admin token from the skiff.yaml
// the server writes, creates a pod over HTTPS, reads it back, checks that
// validation refuses a bad one, waits for the scheduler's verdict, runs
// the emulated `skiff get pods` against it, stops the server with SIGTERM
// and, after moving the store's revision past 2^32, restarts it on the
// same SQLite file, reads the pod again and writes past that revision.
//
// `make test-arm` runs this package (scripts/test-arm runs the portable
// packages' unit tests under the same emulators); the main `go test`
// line of `make test` leaves it out so that it runs once. A missing
// emulator fails the test with the package to install; it never skips.
// Every request goes to 127.0.0.1 only. The package has no non-test code
// and must not be imported.
package qemuarm
