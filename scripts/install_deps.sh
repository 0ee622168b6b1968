#!/usr/bin/env bash
# Installs the Debian 12 packages Serenity needs to build and test, if any
# are missing. Idempotent; prints nothing when everything is there.
set -euo pipefail

PACKAGES=(
  build-essential cmake ninja-build ccache pkg-config
  protobuf-compiler libprotobuf-dev
  libgrpc++-dev protobuf-compiler-grpc
  libabsl-dev libonnx-dev nlohmann-json3-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  prometheus-cpp-dev libhiredis-dev redis-server openssl libssl-dev prometheus
  clang libclang-rt-14-dev
  python3-jsonschema
  python3-pip python3-setuptools python3-grpcio python3-protobuf python3-onnx python3-pytest
  python3-torch python3-optuna
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "install_deps: need root (or sudo) to install: ${missing[*]}" >&2; exit 1; }
  SUDO=sudo
fi
echo "install_deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
