// Command vm runs the agent's real-containerd suites inside a cgroup v2
// virtual machine, because the machines skiff's users run (Debian 12,
// Ubuntu 22.04+, Raspberry Pi OS bookworm, Fedora) mount only cgroup v2
// while the build hosts mount v1.
//
//	go run ./test/vm            # or: make test-vm
//
// It takes the kernel from Debian's linux-image-amd64 (fetched with
// apt-get download into a cache directory outside the tree and reused),
// builds each suite with `go test -c`, packs an initramfs (busybox,
// containerd, runc, iproute2, nft, curl, the shared libraries they load,
// the kernel modules the suites need and the test binaries) and boots it
// with qemu-system-x86_64 under TCG. Inside, /init copies itself onto a
// tmpfs and switch_roots to it (runc needs pivot_root), mounts cgroup2
// alone at /sys/fs/cgroup, runs every suite and powers off. Each suite's
// verdict and the final one are printed on the serial console as marker
// lines carrying a random token given on the kernel command line, so no
// test output can forge them. The command fails when a suite fails, when
// a marker is missing, or when the VM does not finish within -timeout,
// in which case qemu is killed.
//
// With -powercut N it runs no suites: it gives the VM a disk and cuts its
// power N times under storage's crash child, which writes to a store on
// that disk, and after each cut boots again and checks every write
// acknowledged before it (powercut.go).
//
// The package holds this command and its tests only; nothing imports it.
package main
