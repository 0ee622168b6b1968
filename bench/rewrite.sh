#!/usr/bin/env bash
# What --rewrite (identity graph rewriting, issue 17; docs/rewriting.md)
# changes on the shared models: the best peak without rewriting, with the
# standard form and with the accumulate form (each with its certificate),
# the arena of each form, sites applied, op counts, and the wall time of the
# plan without and with (the client's total_ms). Prints a markdown table,
# then, per model where no site was kept, the report's last note (why).
# Usage: bench/rewrite.sh [TIME_LIMIT_SECONDS] [EXTRA_FLAGS...]   (10)
# The models come from ../shared/bench/models (SERENITY_MODELS_DIR points
# elsewhere): the benchmark models placed beside this checkout, not part of
# the repository.
set -euo pipefail
cd "$(dirname "$0")/.."
LIMIT=${1:-10}
shift || true
CLIENT=${SERENITY_BUILD_DIR:-build}/client/serenity-client
MODELS=${SERENITY_MODELS_DIR:-../shared/bench/models}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
echo "| model | peak without | standard | accumulate | arena std / acc | sites applied std / acc | ops before -> std / acc | ms without / std / acc |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|"
for f in "$MODELS"/*.onnx; do
  "$CLIENT" plan "$f" --local --json --time-limit "$LIMIT" "$@" >"$dir/without.json"
  "$CLIENT" plan "$f" --local --json --time-limit "$LIMIT" --rewrite "$@" >"$dir/standard.json"
  "$CLIENT" plan "$f" --local --json --time-limit "$LIMIT" --rewrite --rewrite-form accumulate "$@" >"$dir/accumulate.json"
  /usr/bin/python3 - "$dir" >>"$dir/rows.txt" <<'PY'
import json, sys
d = sys.argv[1]
a, s, c = (json.load(open(f"{d}/{n}.json")) for n in ("without", "standard", "accumulate"))
rs, rc = s["rewrite"], c["rewrite"]
cert = lambda p: "" if p["certificate"] == "optimal" else f" ({p['certificate']})"
print(f"| {a['model']} | {a['peak_bytes']:,}{cert(a)} | {s['peak_bytes']:,}{cert(s)} | {c['peak_bytes']:,}{cert(c)} | "
      f"{s['arena']['size_bytes']:,} / {c['arena']['size_bytes']:,} | {rs['sites_applied']} / {rc['sites_applied']} of "
      f"{rs['sites_found']} | {rs['ops_before']} -> {rs['ops_after']} / {rc['ops_after']} | "
      f"{a['stats']['total_ms']:.0f} / {s['stats']['total_ms']:.0f} / {c['stats']['total_ms']:.0f} |", file=sys.stdout)
if rc["sites_applied"] == 0:
    print(f"WHY {a['model']}: {rc['notes'][-1] if rc['notes'] else ''}", file=sys.stderr)
PY
done 2>"$dir/notes.txt"
cat "$dir/rows.txt"
echo
sed 's/^WHY /- /' "$dir/notes.txt"
