#!/usr/bin/env bash
# Builds the libFuzzer targets in fuzz/ with clang, ASan and UBSan into
# build-fuzz/, generates seed corpora from the shared benchmark data, and runs
# every target for a bounded time.
#
#   scripts/fuzz.sh [SECONDS_PER_TARGET]      (default 30)
#
# Environment:
#   SERENITY_FUZZ_BUILD_DIR  build directory (default build-fuzz)
#   SERENITY_FUZZ_TARGETS    targets to run (default: all five)
#   SERENITY_SHARED_DIR      the benchmark data placed beside this checkout, not
#                            part of the repository (default ../shared)
#   SERENITY_FUZZ_SEED_MAX   largest ONNX model used as a seed, bytes (default 65536)
#   SERENITY_FUZZ_ARGS       extra libFuzzer flags, e.g. "-jobs=2"
#   SERENITY_FUZZ_CC/_CXX    compilers (default clang/clang++; CC and CXX are ignored)
#
# Corpora live in $BUILD_DIR/corpus/<target> and grow across runs; crash,
# timeout and OOM reproducers go to $BUILD_DIR/artifacts/<target>/. Inputs in
# fuzz/regressions/<target>/ are replayed first. Exits 1 when any target
# found a problem, printing the reproducer paths, and 2 on a build error.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
SECONDS_PER_TARGET=${1:-30}
BUILD_DIR=${SERENITY_FUZZ_BUILD_DIR:-build-fuzz}
SHARED_DIR=${SERENITY_SHARED_DIR:-$ROOT/../shared}
SEED_MAX=${SERENITY_FUZZ_SEED_MAX:-65536}
TARGETS=${SERENITY_FUZZ_TARGETS:-"fuzz_onnx_import fuzz_onnx_ops fuzz_graph_import fuzz_graph_structure fuzz_arena_csv fuzz_memories fuzz_time_search"}

if ! [[ $SECONDS_PER_TARGET =~ ^[0-9]+$ ]] || [ "$SECONDS_PER_TARGET" -lt 1 ]; then
  echo "usage: scripts/fuzz.sh [SECONDS_PER_TARGET]" >&2
  exit 2
fi

# --- configure and build ----------------------------------------------------
SAN_FLAGS="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
if [ ! -f "$BUILD_DIR/build.ninja" ]; then
  # -O2 -g without NDEBUG: asserts stay on.
  CC=${SERENITY_FUZZ_CC:-clang} CXX=${SERENITY_FUZZ_CXX:-clang++} cmake -S . -B "$BUILD_DIR" -G Ninja \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g" \
    -DCMAKE_CXX_FLAGS="$SAN_FLAGS" \
    -DSERENITY_FUZZ=ON -DSERENITY_BUILD_TESTS=OFF >/dev/null || exit 2
fi
cmake --build "$BUILD_DIR" -j"$(nproc)" --target serenity_fuzzers || exit 2

# --- seed corpora -------------------------------------------------------------
CORPUS=$BUILD_DIR/corpus
ARTIFACTS=$BUILD_DIR/artifacts
LOGS=$BUILD_DIR/fuzz-logs
SEEDS=$BUILD_DIR/seeds
rm -rf "$SEEDS"
mkdir -p "$SEEDS"/{fuzz_onnx_import,fuzz_onnx_ops,fuzz_graph_import,fuzz_graph_structure,fuzz_arena_csv,fuzz_memories,fuzz_time_search} "$LOGS"

small_models=()
if [ -d "$SHARED_DIR/bench/models" ]; then
  while IFS= read -r -d '' model; do small_models+=("$model"); done < \
    <(find "$SHARED_DIR/bench/models" -name '*.onnx' -size -"$((SEED_MAX + 1))"c -print0 | sort -z)
fi
for model in ${small_models[@]+"${small_models[@]}"}; do cp "$model" "$SEEDS/fuzz_onnx_import/"; done
"$BUILD_DIR/fuzz/make_graph_seeds" "$SEEDS/fuzz_graph_import" ${small_models[@]+"${small_models[@]}"} || exit 2

# fuzz_graph_structure: one seed per family. Header bytes: family, flags,
# time limit, account size, budget, size mode, base size (2 bytes), op
# pattern; then the family's parameters (fuzz/fuzz_graph_structure.cc).
gs=$SEEDS/fuzz_graph_structure
# fan-out of 2001 from a produced input, 16 MB account, Concat in place
printf '\x00\x41\x00\x80\x00\x00\x80\x00\x00\x07\xd0\x01' >"$gs/fanout_2001"
# chain of 3000, budget, workspace, views and in-place, a size per tensor
printf '\x01\x2a\x00\x00\x10\x01\x40\x00\x03\x0b\xb7\x10\x80\xc0\x30\xf0' >"$gs/chain_3000"
# dense DAG of 59 ops, 2 MB account, weights, edges from a bitmask
printf '\x02\x11\xc0\x20\x00\x02\x90\x00\x01\x3a\x60\xa5\x5a\xff\x0f\x33\xcc\x81\x7e' >"$gs/dense_59"
# layered 40x30, ragged, fan-in <= 3, 1 MB account and a budget
printf '\x03\x03\x00\x00\x08\x01\xa0\x00\x02\x27\x1d\x02\x01' >"$gs/layered_40x30"
# mix: chain of 2000 with a fan-out of 501 in the middle and a skip, fit
printf '\x04\x66\x80\x00\x20\x00\xc0\x00\x05\x07\xd0\x01\xf4\x80\x01' >"$gs/mix_2000_501"

# fuzz_time_search: ops, switches, budget (2 bytes, x 4), then 5 bytes per
# op (fuzz/fuzz_time_search.cc). Two branches with two alternatives each,
# and a chain of 13 with in-place and three alternatives per op.
ts=$SEEDS/fuzz_time_search
printf '\x03\x00\x00\x60\x00\x00\x50\x02\x11\x00\x00\x50\x02\x22\x01\x02\x0a\x04\x00' >"$ts/two_branches"
printf '\x0b\x02\x01\x00\x00\x00\x40\x03\x01\x01\x00\x20\x03\x02\x02\x00\x60\x03\x03\x03\x01\x10\x03\x04\x04\x00\x50\x03\x05\x05\x03\x30\x03\x06\x06\x00\x70\x03\x07\x07\x05\x40\x03\x08\x08\x00\x20\x03\x09\x09\x07\x60\x03\x0a\x0a\x00\x10\x03\x0b\x0b\x00\x40\x03\x0c' >"$ts/chain_13"

if [ -d "$SHARED_DIR/bench/arena" ]; then
  find "$SHARED_DIR/bench/arena" -name '*.csv' -exec cp {} "$SEEDS/fuzz_arena_csv/" \;
  # The peer cases ([size, first, last], inclusive) as CSV files.
  if [ -f "$SHARED_DIR/bench/arena/peer_cases.json" ] && command -v python3 >/dev/null; then
    python3 - "$SHARED_DIR/bench/arena/peer_cases.json" "$SEEDS/fuzz_arena_csv" <<'PY' || echo "note: peer_cases.json not converted" >&2
import json, sys
cases = json.load(open(sys.argv[1]))["cases"]
for i, case in enumerate(cases):
    buffers = case.get("buffers")
    if not isinstance(buffers, list):
        continue  # graphs and conflict lists, not interval instances
    lines = ["id,lower,upper,size"]
    for j, buffer in enumerate(buffers):
        if not (isinstance(buffer, list) and len(buffer) == 3):
            break
        size, first, last = buffer
        lines.append(f"{j},{first},{last + 1},{size}")
    with open(f"{sys.argv[2]}/peer_{i:02d}.csv", "w") as f:
        f.write("\n".join(lines) + "\n")
PY
  fi
fi

for target in $TARGETS; do
  mkdir -p "$CORPUS/$target" "$ARTIFACTS/$target"
  if [ -d "fuzz/regressions/$target" ]; then
    find "fuzz/regressions/$target" -type f ! -name '*.md' ! -name '*.txtpb' -exec cp {} "$SEEDS/$target/" \;
  fi
  echo "$target: $(find "$SEEDS/$target" -type f | wc -l) seeds," \
       "$(find "$CORPUS/$target" -type f | wc -l) corpus inputs"
done

# --- run ----------------------------------------------------------------------
# A smaller quarantine than ASan's 256 MB keeps the ONNX target well below
# the RSS limit on long runs.
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1:symbolize=1:quarantine_size_mb=64}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
failed=()
for target in $TARGETS; do
  log=$LOGS/$target.log
  echo "=== $target for ${SECONDS_PER_TARGET}s (log: $log)"
  dict=()
  [ -f "fuzz/$target.dict" ] && dict=(-dict="fuzz/$target.dict")
  rc=0
  # shellcheck disable=SC2086
  "$BUILD_DIR/fuzz/$target" "$CORPUS/$target" "$SEEDS/$target" ${dict[@]+"${dict[@]}"} \
    -max_total_time="$SECONDS_PER_TARGET" -rss_limit_mb=2048 -timeout=10 \
    -artifact_prefix="$ARTIFACTS/$target/" -print_final_stats=1 ${SERENITY_FUZZ_ARGS:-} \
    >"$log" 2>&1 || rc=$?
  grep -E '^(#[0-9]+ +DONE|Done [0-9]+ runs|stat::number_of_executed_units|stat::average_exec_per_sec|stat::peak_rss_mb)' "$log" | awk '!seen[$0]++' || true
  if [ "$rc" -ne 0 ]; then
    echo "!!! $target FAILED (exit $rc)"
    grep -E 'ERROR: (libFuzzer|AddressSanitizer|UndefinedBehaviorSanitizer)|runtime error|SUMMARY' "$log" | head -5 || true
    repro=$(grep -oE '(Test unit|artifact) written to [^ ]+' "$log" | awk '{print $NF}' | tail -1 || true)
    echo "    reproducer: ${repro:-see $log}"
    [ -n "$repro" ] && echo "    replay:     $BUILD_DIR/fuzz/$target $repro"
    failed+=("$target")
  fi
done

if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzzing found problems in: ${failed[*]}"
  exit 1
fi
echo "fuzzing: no crashes in $TARGETS"
