# Sourced by each stage-2 script (/etc/skiff-vm/prelude): the kernel's
# file systems, busybox's applets, and the console as stdio.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root TMPDIR=/tmp
bb=/bin/busybox
$bb mount -t proc proc /proc
$bb mount -t sysfs sysfs /sys
$bb mount -t devtmpfs devtmpfs /dev
$bb --install -s
exec </dev/console >/dev/console 2>&1
