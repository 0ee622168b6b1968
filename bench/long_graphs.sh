#!/usr/bin/env bash
# Long graphs (issue 18): GPT-style decoder stacks, forward + backward
# residual-MLP training graphs and random layered DAGs (width 8) made by
# bench/make_long_graphs.py at several sizes, each planned in-process
# (`serenity-client plan --local`) under /usr/bin/time -v. Prints a markdown
# table: wall time and max RSS of the whole client run, the plan's peak, its
# proven bound and gap, the arena over the peak, the planner's own total ms
# (the wall time adds reading the .pbtxt and printing a JSON plan of tens of
# MB) and the phases' ms.
# Usage: bench/long_graphs.sh [TIME_LIMIT_SECONDS] [SIZES] [FAMILIES] [extra serenity-client flags]
#   (defaults 1, 1000,5000,20000,50000,100000,200000 and gpt,train,layered)
# Env: LONG_GRAPHS_DIR keeps the generated graphs there (made once);
# LONG_GRAPHS_TIMEOUT (default 120) seconds per run; LONG_GRAPHS_MEM_KB
# (default 8000000) caps each run's virtual memory (ulimit -v).
set -euo pipefail
cd "$(dirname "$0")/.."
LIMIT=${1:-1}
SIZES=${2:-1000,5000,20000,50000,100000,200000}
FAMILIES=${3:-gpt,train,layered}
shift 3 || shift $# || true
CLIENT=${SERENITY_BUILD_DIR:-build}/client/serenity-client
TIMEOUT=${LONG_GRAPHS_TIMEOUT:-120}
MEM_KB=${LONG_GRAPHS_MEM_KB:-8000000}
dir=${LONG_GRAPHS_DIR:-$(mktemp -d)}
mkdir -p "$dir"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
echo "| graph | ops | wall s | max RSS MB | peak | bound | gap | arena/peak | certificate | total ms | phases ms |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---|---:|---|"
for family in ${FAMILIES//,/ }; do
  for n in ${SIZES//,/ }; do
    f="$dir/${family}_${n}.pbtxt"
    [ -s "$f" ] || /usr/bin/python3 bench/make_long_graphs.py "$family" --ops "$n" -o "$f" 2>/dev/null
    rc=0
    ( ulimit -v "$MEM_KB"; /usr/bin/time -v -o "$out/time" timeout "$TIMEOUT" \
        "$CLIENT" plan "$f" --local --json --max-ops 10000000 --time-limit "$LIMIT" "$@" >"$out/plan.json" \
        2>"$out/err" ) || rc=$?
    /usr/bin/python3 - "$family" "$n" "$rc" "$out" <<'PY'
import json, re, sys
family, n, rc, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
t = open(out + "/time").read()
wall = re.search(r"Elapsed \(wall clock\) time.*: (?:(\d+):)?(\d+):([\d.]+)", t)
secs = (int(wall.group(1) or 0) * 3600 + int(wall.group(2)) * 60 + float(wall.group(3))) if wall else 0
rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", t).group(1)) / 1024
try:
    d = json.load(open(out + "/plan.json"))
except Exception:
    err = open(out + "/err").read().strip().splitlines()
    why = "timeout" if rc == 124 else (err[-1][:60] if err else f"exit {rc}")
    print(f"| {family} | {n} | {secs:.2f} | {rss:.0f} | - | - | - | - | {why} | - | - |")
    sys.exit(0)
s = d["stats"]
peak, bound = d["peak_bytes"], d["lower_bound_bytes"]
gap = (peak - bound) / peak * 100 if peak else 0
arena = d.get("arena", {}).get("size_bytes", 0) / peak if peak else 0
phases = " ".join(f"{k} {v:.0f}" for k, v in s.get("phase_ms", {}).items())
print(f"| {family} | {d['nodes']} | {secs:.2f} | {rss:.0f} | {peak:,} | {bound:,} | {gap:.1f}% | {arena:.2f} | "
      f"{d['certificate']} | {s['total_ms']:.0f} | {phases} |")
PY
  done
done
