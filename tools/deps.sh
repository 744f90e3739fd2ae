#!/usr/bin/env bash
# Installs the Debian 12 packages gantry builds and tests with. Idempotent:
# when every package is already installed it changes nothing.
set -euo pipefail

PACKAGES=(
  build-essential cmake ninja-build pkg-config
  libboost1.81-dev libssl-dev libsqlite3-dev sqlite3 nlohmann-json3-dev libsimdjson-dev
  libfmt-dev libspdlog-dev libcli11-dev catch2 libyaml-cpp-dev
  prometheus-cpp-dev libsystemd-dev libjemalloc-dev curl
)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
echo "gantry: installing ${missing[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
