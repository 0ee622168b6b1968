#!/usr/bin/env bash
# The main job, end to end: installs what is missing, builds, starts
# serenity-server on loopback, plans the bundled models through
# serenity-client, prints the comparison, and stops the server.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh
scripts/build.sh
BUILD_DIR=${SERENITY_BUILD_DIR:-build}
MODELS_DIR=${SERENITY_MODELS_DIR:-../shared/bench/models}

port_file=$(mktemp)
"$BUILD_DIR/server/serenity-server" --plaintext --port 0 --port-file "$port_file" 2>"$BUILD_DIR/quickstart-server.log" &
server_pid=$!
trap 'kill "$server_pid" 2>/dev/null || true; rm -f "$port_file"' EXIT
for _ in $(seq 100); do [ -s "$port_file" ] && break; sleep 0.1; done
[ -s "$port_file" ] || { echo "serenity-server did not start; see $BUILD_DIR/quickstart-server.log" >&2; exit 1; }
port=$(cat "$port_file")
echo "serenity-server listening on 127.0.0.1:$port"
echo

models=(
  darts_v2_cifar10_normal_cell nasnet_a_cifar10_normal_cell amoebanet_a_cifar10_normal_cell
  randwire_ws_cifar10_stage1 randwire_ws_cifar10_stage2 randwire_ws_cifar10_stage3
  darts_v2_cifar10 nasnet_a_cifar10 tv_googlenet tv_inception_v3 tv_mobilenet_v3_small
)
paths=()
for m in "${models[@]}"; do paths+=("$MODELS_DIR/$m.onnx"); done

echo "Planning ${#models[@]} models (search limit 3 s each; RandWire stages 2 and 3 use all of it)..."
echo "Peak activation bytes per order (no view aliasing, weights excluded):"
"$BUILD_DIR/client/serenity-client" plan "${paths[@]}" --server "127.0.0.1:$port" --time-limit 3
echo
echo "One model in detail:"
"$BUILD_DIR/client/serenity-client" plan "$MODELS_DIR/randwire_ws_cifar10_stage1.onnx" --server "127.0.0.1:$port"
echo
echo "Scoring the same models against a 1 MiB budget in one streaming call (NAS mode;"
echo "the plans above answer any budget, so these come from the server's cache):"
"$BUILD_DIR/client/serenity-client" score "${paths[@]}" --server "127.0.0.1:$port" --time-limit 3 --budget 1048576

kill -TERM "$server_pid"
wait "$server_pid"
trap - EXIT
rm -f "$port_file"
echo
echo "serenity-server stopped."
