#!/bin/busybox sh
# Stage 2: the machine a cgroup v2 host gives the agent, then the suites.
# @TOKEN@ is replaced by the harness; it marks the lines it parses.
# Emulation is several times slower: the tests' real-time bounds stretch
# (internal/testenv.Bound).
export SKIFF_TEST_TIMEOUT_SCALE=@SCALE@
. /etc/skiff-vm/prelude
mkdir -p /dev/pts /dev/shm /run /tmp /var/tmp /root /sys/fs/cgroup
mount -t devpts -o newinstance,ptmxmode=0666 devpts /dev/pts
mount -t tmpfs -o mode=1777 shm /dev/shm
mount -t tmpfs -o mode=0755 run /run
chmod 1777 /tmp /var/tmp
ln -sf /proc/self/fd /dev/fd
# cgroup v2 alone, as systemd mounts it (no v1 hierarchy anywhere).
mount -t cgroup2 -o nsdelegate,memory_recursiveprot cgroup2 /sys/fs/cgroup
hostname skiff-vm
echo 127.0.0.1 localhost >/etc/hosts
ip link set lo up
# Processes live in a leaf, as under systemd (init.scope); the agent
# makes its --cgroup-root beside it and enables controllers from the root.
mkdir /sys/fs/cgroup/init.scope
echo $$ >/sys/fs/cgroup/init.scope/cgroup.procs
echo "SKIFF-VM-INFO @TOKEN@ kernel $(uname -r) mounts: $(grep cgroup /proc/mounts | tr '\n' ' ') controllers: $(cat /sys/fs/cgroup/cgroup.controllers) psi: $(ls /proc/pressure | tr '\n' ' ') root: $(cd /sys/fs/cgroup && ls *.pressure memory.* 2>/dev/null | tr '\n' ' ')"
echo "SKIFF-VM-BOOTED @TOKEN@ $(cut -d' ' -f1 /proc/uptime)"
# A line every 10 s while the suites run: the harness takes a silent
# console for a stalled guest (a test that hangs still ends at its
# -test.timeout with its goroutines printed). It names any process in
# uninterruptible sleep, with the kernel function it waits in.
(
  while sleep 10; do
    d=""
    for s in /proc/[0-9]*/stat; do
      { read -r pid comm state rest <"$s"; } 2>/dev/null || continue
      [ "$state" = D ] && d="$d $pid$comm@$(cat "/proc/$pid/wchan" 2>/dev/null)"
    done
    echo "SKIFF-VM-ALIVE @TOKEN@ $(cut -d' ' -f1 /proc/uptime)$d"
  done
) &
alive=$!
if [ "$fail" = 0 ]; then
  # Each line: suite name, then the test binary's arguments.
  while read -r name args; do
    [ -n "$name" ] || continue
    start=$(cut -d' ' -f1 /proc/uptime)
    echo "SKIFF-VM-START @TOKEN@ $name"
    (cd "/skiff/src/$name" && "/skiff/bin/$name.test" $args) </dev/null
    rc=$?
    [ "$rc" = 0 ] || fail=1
    echo "SKIFF-VM-SUITE @TOKEN@ $name rc=$rc start=$start end=$(cut -d' ' -f1 /proc/uptime)"
  done </etc/skiff-vm/suites
fi
kill $alive
echo "SKIFF-VM-DONE @TOKEN@ rc=$fail uptime=$(cut -d' ' -f1 /proc/uptime)"
sync
poweroff -f
