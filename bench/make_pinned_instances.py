#!/usr/bin/python3
"""Makes an arena instance with pinned buffers from an instance and a packing.

Reads an arena instance in MiniMalloc's CSV (core/arena/arena_csv.h) and a
packing of it (a CSV with `id` and `offset` columns, e.g. what
`serenity-client arena INSTANCE.csv --output SOLUTION.csv` writes), chooses a
fraction of the buffers at random (seeded: the same inputs and seed give the
same file) and writes the instance with an `offset` column: the packing's
offset for the chosen buffers, empty for the others. The pinned instance is
feasible at the packing's size (the packing itself fits), so that size is the
target a planner should reach; it is printed on stderr as `target BYTES`
(the highest offset + size over the packing's buffers).

Usage:
  bench/make_pinned_instances.py INSTANCE.csv SOLUTION.csv OUT.csv \
      [--fraction 0.1] [--seed 1]

Standard library only (Debian's /usr/bin/python3).
"""

import argparse
import csv
import random
import sys


def read_rows(path):
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        fields = [name.strip() for name in reader.fieldnames or []]
        rows = []
        for row in reader:
            if not any((value or "").strip() for value in row.values()):
                continue  # blank line
            rows.append({key.strip(): (value or "").strip() for key, value in row.items()})
    return fields, rows


def id_column(fields, path):
    for name in ("id", "buffer", "buffer_id"):
        if name in fields:
            return name
    sys.exit(f"{path}: no id column (id, buffer or buffer_id)")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("instance")
    parser.add_argument("solution")
    parser.add_argument("output")
    parser.add_argument("--fraction", type=float, default=0.1,
                        help="share of the buffers to pin (rounded to the nearest count, at least 1)")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    if not 0 < args.fraction <= 1:
        sys.exit("--fraction must be in (0, 1]")

    fields, rows = read_rows(args.instance)
    if "offset" in fields:
        sys.exit(f"{args.instance}: already has an offset column")
    key = id_column(fields, args.instance)
    sol_fields, sol_rows = read_rows(args.solution)
    if "offset" not in sol_fields or "size" not in sol_fields:
        sys.exit(f"{args.solution}: needs offset and size columns")
    sol_key = id_column(sol_fields, args.solution)
    solution = {}
    for row in sol_rows:
        if row[sol_key] in solution:
            sys.exit(f"{args.solution}: id {row[sol_key]} appears twice")
        solution[row[sol_key]] = row
    ids = [row[key] for row in rows]
    if len(set(ids)) != len(ids):
        sys.exit(f"{args.instance}: repeated ids")
    if set(ids) != set(solution):
        sys.exit(f"{args.solution}: its ids differ from the instance's")
    for row in rows:
        if row["size"] != solution[row[key]]["size"]:
            sys.exit(f"{args.solution}: buffer {row[key]} has another size than in the instance")

    target = max(int(s["offset"]) + int(s["size"]) for s in solution.values())
    count = max(1, round(len(rows) * args.fraction))
    chosen = set(random.Random(args.seed).sample(range(len(rows)), count))
    with open(args.output, "w", newline="") as f:
        writer = csv.writer(f, lineterminator="\n")
        writer.writerow(fields + ["offset"])
        for i, row in enumerate(rows):
            offset = solution[row[key]]["offset"] if i in chosen else ""
            writer.writerow([row[name] for name in fields] + [offset])
    print(f"target {target}", file=sys.stderr)
    print(f"pinned {count} of {len(rows)}", file=sys.stderr)


if __name__ == "__main__":
    main()
