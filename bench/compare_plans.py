#!/usr/bin/env python3
r"""Compares two runs of `serenity-client plan MODEL --json` (a before and an
after), one JSON file per model, MODEL.json, in each of two directories.

On every model whose 'before' plan is certified optimal the 'after' plan
must have the same order, peak and certificate; on the others its peak must
be no worse (a time-limited search may land elsewhere). The baselines'
peaks, which no search changes, must be the same on every model. Exit
status 0 when every model passes, 1 otherwise.

Reads only `order`, `peak_bytes`, `certificate` and
`baselines.<name>.peak_bytes`, so it accepts the client's JSON before and
after its format change (pretty or one object per line, with or without
schema_version) and protobuf's JSON mapping (camelCase names, int64 as
strings, CERTIFICATE_OPTIMAL).

With --arenas, also the arenas: the plan's arena size and TFLite-style
arena, every baseline's arenas (`arena_bytes`, `arena_bytes_ours`) and the
phases of the fallbacks must be the same on every model (for changes that
mean to keep every plan as it was; bench/compare_plans.sh runs both builds
in four modes and calls this).

usage: compare_plans.py [--arenas] BEFORE_DIR AFTER_DIR

Each directory as made by, e.g.,
  for m in ../shared/bench/models/*.onnx; do
    build/client/serenity-client plan "$m" --local --json --time-limit 10 \
        > DIR/"$(basename "$m" .onnx)".json
  done
"""
import json
import os
import sys

BASELINES = ("file_order", "kahn", "greedy", "inductor", "xla")


def field(obj, snake):
    """obj[snake], or its lowerCamelCase form (protobuf's JSON mapping)."""
    if snake in obj:
        return obj[snake]
    head, *rest = snake.split("_")
    camel = head + "".join(word.capitalize() for word in rest)
    return obj.get(camel)


def certificate(value):
    """'optimal', 'best_found' or 'baseline' from either spelling."""
    if value is None:
        return None
    value = str(value).lower()
    return value[len("certificate_"):] if value.startswith("certificate_") else value


def load_plan(path):
    """The plan object in `path`: the whole file, or the first line that
    holds a plan (one object per line); None when there is none."""
    with open(path) as f:
        text = f.read()
    candidates = []
    try:
        candidates.append(json.loads(text))
    except json.JSONDecodeError:
        for line in text.splitlines():
            line = line.strip()
            if line:
                try:
                    candidates.append(json.loads(line))
                except json.JSONDecodeError:
                    pass
    for obj in candidates:
        if isinstance(obj, dict) and field(obj, "peak_bytes") is not None and "error" not in obj:
            return obj
    return None


def summary(plan):
    baselines = field(plan, "baselines") or {}
    peaks = {}
    arenas = {}
    for name in BASELINES:
        entry = field(baselines, name) or {}
        peak = field(entry, "peak_bytes")
        peaks[name] = int(peak) if peak is not None else 0  # proto3 JSON omits zeros
        arenas[name] = (int(field(entry, "arena_bytes") or 0), int(field(entry, "arena_bytes_ours") or 0))
    arena = field(plan, "arena") or {}
    arenas["plan"] = (int(field(arena, "size_bytes") or 0), int(field(arena, "tflite_size_bytes") or 0))
    return {
        "order": [int(u) for u in (field(plan, "order") or [])],
        "peak": int(field(plan, "peak_bytes") or 0),
        "certificate": certificate(field(plan, "certificate")) or "baseline",
        "baselines": peaks,
        "arenas": arenas,
        "fallbacks": sorted(field(f, "phase") or "" for f in (field(plan, "fallbacks") or [])),
    }


def compare(before, after, arenas=False):
    """Problems with `after` against `before`, as strings (empty: passes);
    with `arenas`, the arenas and fallbacks must be the same too."""
    problems = []
    if before["certificate"] == "optimal":
        if after["peak"] != before["peak"]:
            problems.append(f"peak {before['peak']} -> {after['peak']}")
        if after["certificate"] != before["certificate"]:
            problems.append(f"certificate {before['certificate']} -> {after['certificate']}")
        if after["order"] != before["order"]:
            differ = next((i for i, (a, b) in enumerate(zip(before["order"], after["order"])) if a != b),
                          min(len(before["order"]), len(after["order"])))
            problems.append(f"order differs from position {differ}")
    elif after["peak"] > before["peak"]:
        problems.append(f"peak worse: {before['peak']} -> {after['peak']}")
    # The baselines do not depend on the search: the same peaks everywhere.
    for name in BASELINES:
        if after["baselines"][name] != before["baselines"][name]:
            problems.append(f"{name} peak {before['baselines'][name]} -> {after['baselines'][name]}")
    if arenas:
        for name, sizes in before["arenas"].items():
            if after["arenas"][name] != sizes:
                problems.append(f"{name} arenas {sizes} -> {after['arenas'][name]}")
        if after["fallbacks"] != before["fallbacks"]:
            problems.append(f"fallbacks {before['fallbacks']} -> {after['fallbacks']}")
    return problems


def main(argv):
    arenas = len(argv) > 1 and argv[1] == "--arenas"
    if arenas:
        argv = argv[:1] + argv[2:]
    if len(argv) != 3:
        sys.stderr.write(__doc__)
        return 2
    before_dir, after_dir = argv[1], argv[2]
    models = sorted(name[:-len(".json")] for name in os.listdir(before_dir) if name.endswith(".json"))
    failed = skipped = 0
    print(f"{'model':40} {'before':>22} {'after':>22}  result")
    for model in models:
        before_plan = load_plan(os.path.join(before_dir, model + ".json"))
        after_path = os.path.join(after_dir, model + ".json")
        after_plan = load_plan(after_path) if os.path.exists(after_path) else None
        if before_plan is None:
            print(f"{model:40} {'(no plan)':>22} {'':>22}  skipped")
            skipped += 1
            continue
        before = summary(before_plan)
        if after_plan is None:
            failed += 1
            print(f"{model:40} {before['peak']:>12} {before['certificate']:>9} {'(no plan)':>22}  FAIL")
            continue
        after = summary(after_plan)
        problems = compare(before, after, arenas)
        failed += bool(problems)
        kind = "identical" if before["certificate"] == "optimal" else "no worse"
        result = "FAIL: " + "; ".join(problems) if problems else f"ok ({kind})"
        print(f"{model:40} {before['peak']:>12} {before['certificate']:>9} "
              f"{after['peak']:>12} {after['certificate']:>9}  {result}")
    compared = len(models) - skipped
    print(f"{compared - failed} of {compared} models pass" + (f", {skipped} skipped (no before plan)" if skipped else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
