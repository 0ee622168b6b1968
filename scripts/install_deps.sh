#!/usr/bin/env bash
# Installs what Serenity needs to build and test, if anything is missing:
# Debian 12 packages, and the npm packages of deploy/validate (the
# manifests' schema check) and tests/numerics (ONNX Runtime). Idempotent;
# prints nothing when everything is there.
#   scripts/install_deps.sh          build and test (CI, scripts/test.sh)
#   scripts/install_deps.sh --build  only what building needs (the
#                                    quickstart, the Dockerfile's build stage)
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-all}
case "$mode" in
  all|--build) ;;
  *) echo "usage: scripts/install_deps.sh [--build]" >&2; exit 2 ;;
esac

BUILD_PACKAGES=(
  build-essential cmake ninja-build ccache pkg-config
  protobuf-compiler libprotobuf-dev
  libgrpc++-dev protobuf-compiler-grpc
  libabsl-dev libonnx-dev nlohmann-json3-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  prometheus-cpp-dev libhiredis-dev openssl libssl-dev
)
# Tests: the sanitizer and fuzz builds (clang), Redis and Prometheus for the
# integration tests, the Python client's suite (and nginx for its topology
# test), the JSON schemas, the manifests' lint.
TEST_PACKAGES=(
  redis-server prometheus clang libclang-rt-14-dev
  python3-jsonschema
  python3-pip python3-setuptools python3-grpcio python3-protobuf python3-onnx python3-pytest
  python3-torch python3-optuna yamllint nginx-light clang-format
)
PACKAGES=("${BUILD_PACKAGES[@]}")
if [ "$mode" = all ]; then
  PACKAGES+=("${TEST_PACKAGES[@]}")
  command -v npm >/dev/null || PACKAGES+=(npm)
fi

# deploy/validate's pinned npm packages (package-lock.json), from the npm
# registry.
install_node_modules() {
  if [ "$mode" = all ] && [ ! -d deploy/validate/node_modules ]; then
    echo "install_deps: npm ci in deploy/validate" >&2
    (cd deploy/validate && npm ci --ignore-scripts --no-audit --no-fund --silent)
  fi
  # tests/numerics' onnxruntime-node (the rewrite's numerical proof); its
  # install script would download extras, the CPU library ships inside.
  if [ "$mode" = all ] && [ ! -d tests/numerics/node_modules ]; then
    echo "install_deps: npm ci in tests/numerics" >&2
    (cd tests/numerics && npm ci --ignore-scripts --no-audit --no-fund --silent)
  fi
}

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -eq 0 ]; then
  install_node_modules
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "install_deps: need root (or sudo) to install: ${missing[*]}" >&2; exit 1; }
  SUDO=sudo
fi
echo "install_deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
install_node_modules
