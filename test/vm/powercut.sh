#!/bin/busybox sh
# Stage 2 of the power-cut run: mount the disk, then either write to a
# store on it and cut the power (phase cut), or check the writes
# acknowledged before the cut (phase verify). @TOKEN@ marks the lines
# the harness parses; /etc/skiff-vm/phase sets PHASE, ROUND and DELAY.
. /etc/skiff-vm/prelude
. /etc/skiff-vm/phase
mkdir -p /data
if [ "$fail" = 0 ] && ! mount -t ext4 /dev/vda /data; then
  echo "SKIFF-VM-ERROR @TOKEN@ mount /dev/vda failed"
  fail=1
fi
echo "SKIFF-VM-BOOTED @TOKEN@ $(cut -d' ' -f1 /proc/uptime)"
if [ "$fail" != 0 ]; then
  echo "SKIFF-VM-DONE @TOKEN@ rc=1 uptime=$(cut -d' ' -f1 /proc/uptime)"
  poweroff -f
fi
export SKIFF_STORAGE_CRASH_DB=sqlite:///data/state.db SKIFF_STORAGE_CRASH_ROUND=$ROUND
cd /skiff/src/storage
if [ "$PHASE" = cut ]; then
  echo 1 >/proc/sys/kernel/sysrq
  # The child prints "ACK ..." on the console after each acknowledged
  # write, until the power goes.
  /skiff/bin/storage.test -test.run='^TestCrashChild$' -test.count=1 </dev/null &
  while [ ! -s /data/state.db-wal ]; do sleep 0.1; done
  sleep "$DELAY"
  echo "SKIFF-VM-DONE @TOKEN@ rc=0 uptime=$(cut -d' ' -f1 /proc/uptime)"
  # The power cut: reboot at once, with no sync and no unmount; qemu
  # (-no-reboot) exits, and what the guest had not flushed is gone.
  echo b >/proc/sysrq-trigger
  sleep 600
fi
echo "SKIFF-VM-START @TOKEN@ storage"
start=$(cut -d' ' -f1 /proc/uptime)
SKIFF_STORAGE_POWERCUT_ACKED=/etc/skiff-vm/acked /skiff/bin/storage.test -test.run='^TestPowerCutVerify$' -test.count=1 -test.v </dev/null
rc=$?
echo "SKIFF-VM-SUITE @TOKEN@ storage rc=$rc start=$start end=$(cut -d' ' -f1 /proc/uptime)"
umount /data
echo "SKIFF-VM-DONE @TOKEN@ rc=$rc uptime=$(cut -d' ' -f1 /proc/uptime)"
poweroff -f
