// Package testenv is test support for packages that need real system
// pieces: StartContainerd runs a throwaway containerd daemon (Debian's
// containerd and runc) with its own root, state and socket, cleaned up
// with the test; BusyboxImage builds a small OCI image from the host's
// static busybox for those daemons to run.
//
// Missing prerequisites fail the test with a message saying what to
// install; they never skip it. Only test code imports this package.
package testenv
