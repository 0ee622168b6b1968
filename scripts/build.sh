#!/usr/bin/env bash
# Configures and builds Serenity (Release, Ninja, ccache when present) into
# build/. Extra arguments go to cmake's configure step, e.g.
#   scripts/build.sh -DSERENITY_SANITIZE=ON
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${SERENITY_BUILD_DIR:-build}
if [ ! -f "$BUILD_DIR/build.ninja" ] || [ $# -gt 0 ]; then
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
fi
cmake --build "$BUILD_DIR" -j"$(nproc)"
