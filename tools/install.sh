#!/usr/bin/env bash
# Installs gantry as a systemd service: binary, unit, example configuration.
# Run as root after tools/build.sh. Idempotent; keeps an existing gantry.yaml.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x build/bin/gantry ] || tools/build.sh
install -D -m 0755 build/bin/gantry /usr/local/bin/gantry
install -D -m 0644 systemd/gantry.service /etc/systemd/system/gantry.service
install -d -m 0755 /etc/gantry /etc/gantry/clusters.d
[ -f /etc/gantry/gantry.yaml ] || install -m 0644 config/gantry.example.yaml /etc/gantry/gantry.yaml
install -D -m 0644 README.md /usr/local/share/doc/gantry/README.md
install -D -m 0644 config/worker-rbac.yaml /usr/local/share/doc/gantry/worker-rbac.yaml  # for each worker cluster
if [ -d /run/systemd/system ]; then
  systemctl daemon-reload
  echo "installed; start with: systemctl enable --now gantry"
else
  echo "installed; systemd is not running here, so the unit was not loaded"
fi
