#!/bin/sh
# skiff postinstall (deb postinst, rpm %post). Creates skiff's directories
# and tells systemd about the units. It enables and starts nothing: run
# `systemctl enable --now skiff-server` (or skiff-agent) yourself. On an
# upgrade it restarts the units that were running; pods' containers keep
# running across that restart (KillMode=process).
set -e

mkdir -p /var/lib/skiff /etc/skiff/config.yaml.d
chmod 0700 /var/lib/skiff

upgrade=no
case "$1" in
  configure)  # deb: configure [<old-version>]
    if [ -n "${2:-}" ]; then upgrade=yes; fi ;;
  [0-9]*)     # rpm: how many versions are installed after this one
    if [ "$1" -ge 2 ]; then upgrade=yes; fi ;;
esac

if [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; then
  systemctl daemon-reload || true
  if [ "$upgrade" = yes ]; then
    systemctl try-restart skiff-server.service skiff-agent.service || true
  fi
fi
exit 0
