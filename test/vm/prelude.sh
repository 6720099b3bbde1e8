# Sourced by each stage-2 script (/etc/skiff-vm/prelude): the kernel's
# file systems, busybox's applets, the console as stdio, and the image's
# kernel modules in load order (fail=1 when one does not load). @TOKEN@
# is replaced by the harness.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root TMPDIR=/tmp
bb=/bin/busybox
$bb mount -t proc proc /proc
$bb mount -t sysfs sysfs /sys
$bb mount -t devtmpfs devtmpfs /dev
$bb --install -s
exec </dev/console >/dev/console 2>&1
# The image's kernel modules, in load order.
fail=0
while read -r m; do
  [ -n "$m" ] || continue
  insmod "/lib/modules/$(uname -r)/$m" || { echo "SKIFF-VM-ERROR @TOKEN@ insmod $m failed"; fail=1; }
done </etc/skiff-vm/modules
