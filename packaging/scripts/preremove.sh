#!/bin/sh
# skiff preremove (deb prerm, rpm %preun). On removal (not on upgrade) it
# stops and disables the units. Pods' containers stay in containerd
# (namespace "skiff") and skiff's data stays in /var/lib/skiff.
set -e

remove=no
case "$1" in
  remove) remove=yes ;;   # deb
  0) remove=yes ;;        # rpm: no version left after this
esac

if [ "$remove" = yes ] && command -v systemctl >/dev/null 2>&1; then
  if [ -d /run/systemd/system ]; then
    systemctl stop skiff-server.service skiff-agent.service || true
  fi
  systemctl disable skiff-server.service skiff-agent.service >/dev/null 2>&1 || true
fi
exit 0
