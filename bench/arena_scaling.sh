#!/usr/bin/env bash
# Large arena instances (issue 18, section 3): random instances of N buffers
# made by bench/make_arena_instances.py (seed 1), and the arena buffers of
# long graphs' schedules (bench/make_long_graphs.py, planned by
# `serenity-client plan --local --json`, converted by make_arena_instances.py
# from-plan), each planned as a bare instance by `serenity-client arena`
# (alignment 1) under /usr/bin/time. Prints a markdown table: buffers, the
# lower bound (the most bytes live at one step), our arena, their ratio, the
# planner's own seconds (reading and writing aside), the wall seconds and
# the max RSS of the whole client run.
# Usage: bench/arena_scaling.sh [SIZES] [GRAPHS]
#   SIZES: N:TIME_LIMIT pairs (default
#     1000:0.9,10000:0.9,100000:0.9,100000:4,1000000:0.9,1000000:55);
#   GRAPHS: FAMILY:OPS:TIME_LIMIT triples (default
#     train:20000:0.9,train:20000:30,gpt:20000:0.9,layered:100000:0.9; "none"
#     for none).
# Env: ARENA_SCALING_DIR keeps the instances there (made once, else a
# temporary directory); ARENA_SCALING_TIMEOUT (default 600) seconds per run.
set -euo pipefail
cd "$(dirname "$0")/.."
CLIENT=${SERENITY_BUILD_DIR:-build}/client/serenity-client
SIZES=${1:-1000:0.9,10000:0.9,100000:0.9,100000:4,1000000:0.9,1000000:55}
GRAPHS=${2:-train:20000:0.9,train:20000:30,gpt:20000:0.9,layered:100000:0.9}
TIMEOUT=${ARENA_SCALING_TIMEOUT:-600}
dir=${ARENA_SCALING_DIR:-$(mktemp -d)}
mkdir -p "$dir"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

row() {  # row NAME CSV TIME_LIMIT
  local rc=0
  /usr/bin/time -v -o "$out/time" timeout "$TIMEOUT" "$CLIENT" arena "$2" --time-limit "$3" >"$out/arena" \
    2>"$out/err" || rc=$?
  /usr/bin/python3 - "$1" "$3" "$rc" "$out" <<'PY'
import re, sys
name, limit, rc, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
timing = open(f"{out}/time").read()
wall = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (\S+)", timing).group(1)
seconds = 0.0
for part in wall.split(":"):
    seconds = seconds * 60 + float(part)
rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", timing).group(1)) / 1024
text = open(f"{out}/arena").read()
m = re.search(r": (\d+) buffers, arena ([\d,]+) bytes, lower bound ([\d,]+) \(([\d.]+)x\), ([\d.]+) ms", text)
if rc != 0 or not m:
    err = open(f"{out}/err").read().strip().splitlines()
    print(f"| {name} | | | | | {limit} | failed (exit {rc}: {err[-1] if err else ''}) | {seconds:.2f} | {rss:.0f} |")
else:
    n, arena, bound, ratio, ms = m.groups()
    print(f"| {name} | {int(n):,} | {bound} | {arena} | {ratio} | {limit} | {float(ms) / 1000:.2f} | "
          f"{seconds:.2f} | {rss:.0f} |")
PY
}

echo "| instance | buffers | lower bound | ours | ours / bound | --time-limit | planner s | wall s | max RSS MB |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|"
for pair in ${SIZES//,/ }; do
  n=${pair%%:*}
  limit=${pair#*:}
  f="$dir/random_${n}.csv"
  [ -s "$f" ] || /usr/bin/python3 bench/make_arena_instances.py random "$n" --seed 1 -o "$f"
  row "random_${n}" "$f" "$limit"
done
[ "$GRAPHS" = none ] && exit 0
for triple in ${GRAPHS//,/ }; do
  family=${triple%%:*}
  rest=${triple#*:}
  ops=${rest%%:*}
  limit=${rest#*:}
  f="$dir/${family}_${ops}.csv"
  if [ ! -s "$f" ]; then
    /usr/bin/python3 bench/make_long_graphs.py "$family" --ops "$ops" -o "$out/graph.pbtxt" 2>/dev/null
    "$CLIENT" plan "$out/graph.pbtxt" --local --json --max-ops 10000000 --time-limit 1 >"$out/plan.json"
    /usr/bin/python3 bench/make_arena_instances.py from-plan "$out/plan.json" -o "$f" 2>/dev/null
    rm -f "$out/graph.pbtxt" "$out/plan.json"
  fi
  row "${family}_${ops} schedule" "$f" "$limit"
done
