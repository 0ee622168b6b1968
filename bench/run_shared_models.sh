#!/usr/bin/env bash
# Plans every model in ../shared/bench/models in-process and prints a
# markdown table: baselines (file order, Kahn, greedy, Inductor- and
# XLA-style), Serenity's peak and certificate, the proven lower bound, solve
# time, search states, the process's peak RSS, and the arena of the file
# order under the TFLite-style planner over Serenity's arena (the paper's
# headline ratio).
# Usage: bench/run_shared_models.sh [TIME_LIMIT_SECONDS] [extra serenity-client flags]
# The models come from ../shared/bench/models: the benchmark models placed
# beside this checkout, not part of the repository (SERENITY_MODELS_DIR
# points elsewhere).
set -euo pipefail
cd "$(dirname "$0")/.."
LIMIT=${1:-10}
shift || true
CLIENT=${SERENITY_BUILD_DIR:-build}/client/serenity-client
MODELS=${SERENITY_MODELS_DIR:-../shared/bench/models}
echo "| model | ops | file order | kahn | greedy | inductor | xla | serenity | lower bound | certificate | solve ms | states | peak RSS MiB | arena | file-order TFLite arena / arena |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|"
for f in "$MODELS"/*.onnx; do
  out=$(mktemp)
  /usr/bin/time -f "%M" -o "$out.rss" "$CLIENT" plan "$f" --local --json --time-limit "$LIMIT" "$@" >"$out"
  python3 - "$out" "$(cat "$out.rss")" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
b = d["baselines"]; s = d["stats"]
a = d["arena"]["size_bytes"]
print(f"| {d['model']} | {d['nodes']} | {b['file_order']['peak_bytes']:,} | {b['kahn']['peak_bytes']:,} | "
      f"{b['greedy']['peak_bytes']:,} | {b['inductor']['peak_bytes']:,} | {b['xla']['peak_bytes']:,} | "
      f"{d['peak_bytes']:,} | {d['lower_bound_bytes']:,} | {d['certificate']} | "
      f"{s['solve_ms']:.1f} | {s['states_explored']:,} | {int(sys.argv[2]) / 1024:.0f} | {a:,} | "
      f"{b['file_order']['arena_bytes'] / a:.2f}x |")
PY
  rm -f "$out" "$out.rss"
done
