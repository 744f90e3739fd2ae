#!/usr/bin/env bash
# Configures and builds gantry into ./build (binaries in build/bin/).
set -euo pipefail
cd "$(dirname "$0")/.."
tools/deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGANTRY_WERROR=ON >/dev/null
cmake --build build -j"$(nproc)"
