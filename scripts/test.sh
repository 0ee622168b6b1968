#!/usr/bin/env bash
# The whole test suite: installs missing packages, builds, and runs every
# test through ctest (unit tests and the integration tests that start the
# real server). Needs ../shared/ beside this repository.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh
scripts/build.sh
ctest --test-dir "${SERENITY_BUILD_DIR:-build}" --output-on-failure -j"$(nproc)" --timeout 600
