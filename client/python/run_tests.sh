#!/usr/bin/env bash
# Installs the Python package the way a user does (pip, offline, --target)
# into BUILD_DIR/python-client and runs its pytest suite against the
# binaries in BUILD_DIR. CTest runs this (test python_client).
# Usage: client/python/run_tests.sh BUILD_DIR [pytest args]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
build="$(cd "${1:?usage: run_tests.sh BUILD_DIR}" && pwd)"
shift
work="$build/python-client"
rm -rf "$work"
mkdir -p "$work/src/client"
# pip builds in the source tree: build from a copy, so the checkout stays clean
# and parallel runs do not meet.
cp -r "$here" "$work/src/client/python"
cp -r "$repo/proto" "$work/src/proto"
rm -rf "$work/src/client/python/build" "$work/src/client/python/"*.egg-info
/usr/bin/python3 -m pip install --quiet --no-build-isolation --no-deps --no-index --disable-pip-version-check \
  --root-user-action=ignore --target "$work/site" "$work/src/client/python"
cd "$here/tests"
SERENITY_BUILD_DIR="$build" PYTHONPATH="$work/site" PYTHONDONTWRITEBYTECODE=1 \
  exec /usr/bin/python3 -m pytest -q -p no:cacheprovider "${@:-.}"
