#!/bin/busybox sh
# Stage 1, the initramfs's /init: copy the image onto a tmpfs and make
# that the root, because runc cannot pivot_root out of the initramfs.
bb=/bin/busybox
$bb mount -t proc proc /proc
$bb mkdir -p /newroot
$bb mount -t tmpfs -o mode=0755,size=80% root /newroot
for e in /*; do
  case "$e" in /newroot|/proc|/sys|/dev) continue ;; esac
  $bb cp -a "$e" /newroot/
done
$bb mkdir -p /newroot/proc /newroot/sys /newroot/dev
$bb umount /proc
exec $bb switch_root /newroot /etc/skiff-vm/stage2
