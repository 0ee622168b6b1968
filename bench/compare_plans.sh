#!/usr/bin/env bash
# Whether two serenity-client builds plan the shared models alike, arenas
# and fallbacks included: every model of ../shared/bench/models in four
# modes (plain, --concat-in-place, --rewrite, --rewrite --rewrite-form
# accumulate), `plan MODEL --local --json` by each build, then
# `bench/compare_plans.py --arenas` per mode. Exit 1 when any mode fails.
# Usage: bench/compare_plans.sh BEFORE_CLIENT AFTER_CLIENT [MODELS_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
BEFORE=$1
AFTER=$2
DIR=${3:-../shared/bench/models}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
status=0
for mode in "" "--concat-in-place" "--rewrite" "--rewrite --rewrite-form accumulate"; do
  echo "== mode: ${mode:-plain}"
  mkdir -p "$work/before" "$work/after"
  rm -f "$work"/before/* "$work"/after/*
  for model in "$DIR"/*.onnx; do
    name=$(basename "$model" .onnx)
    # shellcheck disable=SC2086
    "$BEFORE" plan "$model" --local --json $mode >"$work/before/$name.json" 2>/dev/null || true
    # shellcheck disable=SC2086
    "$AFTER" plan "$model" --local --json $mode >"$work/after/$name.json" 2>/dev/null || true
  done
  out=$(/usr/bin/python3 bench/compare_plans.py --arenas "$work/before" "$work/after") || status=1
  grep -E 'FAIL|models pass' <<<"$out"
done
exit "$status"
