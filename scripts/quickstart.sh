#!/usr/bin/env bash
# The main job, end to end: installs what is missing, builds, starts
# serenity-server on loopback, plans models through serenity-client, prints
# the comparison, and stops the server.
#
# Models: always the small samples bundled in models/ (written by
# models/make_samples.py). When the benchmark models are present beside this
# checkout, in ../shared/bench/models (a directory of benchmark data that is
# not part of this repository; SERENITY_MODELS_DIR points elsewhere), a
# selection of them is planned too; without it they are skipped.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh --build   # what building needs; scripts/test.sh installs the test tools
scripts/build.sh
BUILD_DIR=${SERENITY_BUILD_DIR:-build}
MODELS_DIR=${SERENITY_MODELS_DIR:-../shared/bench/models}
CLIENT=$BUILD_DIR/client/serenity-client

port_file=$(mktemp)
"$BUILD_DIR/server/serenity-server" --plaintext --port 0 --port-file "$port_file" 2>"$BUILD_DIR/quickstart-server.log" &
server_pid=$!
trap 'kill "$server_pid" 2>/dev/null || true; rm -f "$port_file"' EXIT
for _ in $(seq 100); do [ -s "$port_file" ] && break; sleep 0.1; done
[ -s "$port_file" ] || { echo "serenity-server did not start; see $BUILD_DIR/quickstart-server.log" >&2; exit 1; }
port=$(cat "$port_file")
server=127.0.0.1:$port
echo "serenity-server listening on $server"
echo

samples=(models/inception_cell.onnx models/mobilenet_heads.onnx models/randwire_small.onnx)
echo "Planning the ${#samples[@]} sample models in models/ (bytes of peak activation memory per order;"
echo "no view aliasing, weights excluded):"
"$CLIENT" plan "${samples[@]}" --server "$server"
echo
echo "One model in detail:"
"$CLIENT" plan models/randwire_small.onnx --server "$server"

benchmark=(
  darts_v2_cifar10_normal_cell nasnet_a_cifar10_normal_cell amoebanet_a_cifar10_normal_cell
  randwire_ws_cifar10_stage1 randwire_ws_cifar10_stage2 randwire_ws_cifar10_stage3
  darts_v2_cifar10 nasnet_a_cifar10 tv_googlenet tv_inception_v3 tv_mobilenet_v3_small
)
score_paths=("${samples[@]}")
echo
if [ -d "$MODELS_DIR" ]; then
  paths=()
  for m in "${benchmark[@]}"; do paths+=("$MODELS_DIR/$m.onnx"); done
  score_paths+=("${paths[@]}")
  echo "Planning ${#benchmark[@]} benchmark models from $MODELS_DIR (the benchmark data beside this"
  echo "checkout, not part of the repository; search limit 3 s each, RandWire stages 2 and 3 use all of it):"
  "$CLIENT" plan "${paths[@]}" --server "$server" --time-limit 3
else
  echo "Skipping the benchmark models: $MODELS_DIR is absent (the benchmark data that may be"
  echo "placed beside this checkout; it is not part of the repository)."
fi

echo
echo "Scoring the same models against a 1 MiB budget in one streaming call (NAS mode;"
echo "the plans above answer any budget, so these come from the server's cache):"
"$CLIENT" score "${score_paths[@]}" --server "$server" --time-limit 3 --budget 1048576

kill -TERM "$server_pid"
wait "$server_pid"
trap - EXIT
rm -f "$port_file"
echo
echo "serenity-server stopped."
