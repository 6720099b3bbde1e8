#!/bin/sh
# skiff postremove (deb postrm, rpm %postun). Reloads systemd after the
# units are gone. skiff's data in /var/lib/skiff is kept, also on purge,
# unless asked for: SKIFF_PURGE_DATA=yes apt-get purge skiff (or rpm -e).
# Mounts under it (pod network namespaces) are unmounted first.
set -e

gone=no
case "$1" in
  remove|purge) gone=yes ;;   # deb
  0) gone=yes ;;              # rpm: no version left
esac

if [ "$gone" = yes ] && [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; then
  systemctl daemon-reload || true
fi

purge=no
case "$1" in
  purge|0) purge=yes ;;
esac
if [ "$purge" = yes ] && [ "${SKIFF_PURGE_DATA:-}" = yes ] && [ -d /var/lib/skiff ]; then
  # Deepest mounts first.
  awk '$2 ~ "^/var/lib/skiff/" {print $2}' /proc/self/mounts | sort -r | while read -r m; do
    umount "$m" || umount -l "$m" || true
  done
  rm -rf /var/lib/skiff
  echo "skiff: removed /var/lib/skiff (SKIFF_PURGE_DATA=yes)"
fi
exit 0
