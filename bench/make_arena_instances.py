#!/usr/bin/python3
"""Writes large arena instances in MiniMalloc's CSV (id,lower,upper,size).

Two sources:

  random N     N buffers drawn at random (seeded: the same N and --seed give
               the same file), shaped like a schedule's tensors:
                 - time: T = N steps; each buffer starts at a step drawn
                   uniformly from [0, T) (about one buffer made per step);
                 - lifetime (steps live, upper - lower, cut at T): 85% short,
                   1 + a geometric count of mean 1 (1-10 steps, mean 2: an
                   op's output read by the next op or two); 14% medium,
                   log-uniform in [8, 512] (skip connections, a block's
                   inputs); 1% long, log-uniform in [512, 65536] (saved
                   activations, caches). About 150 buffers are live at a
                   step once N is large;
                 - size: log-uniform in [64 B, 1 MiB], rounded up to a
                   multiple of 64 bytes.
  long-lived N N buffers with long lifetimes (seeded as random): each
               starts at a step uniform in [0, --steps) (default 10 N) and
               lives a number of steps uniform in [1, --max-life) (default
               4 N), 64 to 4,032 bytes (multiples of 64). Thousands of time
               sections, each buffer across hundreds: with pins
               (make_pinned_instances.py) the instance that took seconds past
               its time limit before the pinned search's setup stopped at the
               deadline.
  from-plan J  The arena buffers of a plan, as `serenity-client plan MODEL
               --local --json` prints it (J is that JSON, `-` for stdin):
               each buffer of the plan's arena is live from its first_step
               to its last_step (upper = last_step + 1), ids numbered from
               0 in the plan's order. Slices of a Concat laid out in place
               (slice_of set) are left out: a CSV has no anchors.

Usage:
  bench/make_arena_instances.py random 100000 [--seed 1] -o random_100k.csv
  bench/make_arena_instances.py long-lived 2000 --steps 20000 --max-life 8000 -o long.csv
  bench/make_arena_instances.py from-plan plan.json -o graph.csv

Standard library only (Debian's /usr/bin/python3).
"""

import argparse
import json
import math
import random
import sys


def log_uniform(rng, low, high):
    return math.exp(rng.uniform(math.log(low), math.log(high)))


def random_instance(n, seed, out):
    rng = random.Random(seed)
    steps = n
    out.write("id,lower,upper,size\n")
    for i in range(n):
        lower = rng.randrange(steps)
        kind = rng.random()
        if kind < 0.85:
            length = 1
            while rng.random() < 0.5 and length < 10:
                length += 1
        elif kind < 0.99:
            length = int(log_uniform(rng, 8, 512))
        else:
            length = int(log_uniform(rng, 512, 65536))
        upper = min(steps, lower + length)
        size = -(-int(log_uniform(rng, 64, 1 << 20)) // 64) * 64
        out.write(f"{i},{lower},{upper},{size}\n")


def long_lived_instance(n, seed, steps, max_life, out):
    rng = random.Random(seed)
    out.write("id,lower,upper,size\n")
    for i in range(n):
        lower = rng.randrange(0, steps)
        length = rng.randrange(1, max_life)
        out.write(f"{i},{lower},{lower + length},{rng.randrange(1, 64) * 64}\n")


def plan_instance(path, out):
    plan = json.load(sys.stdin if path == "-" else open(path))
    buffers = plan.get("arena", {}).get("buffers", [])
    if not buffers:
        sys.exit(f"{path}: no arena buffers (a plan from serenity-client plan --json?)")
    out.write("id,lower,upper,size\n")
    count = 0
    for b in buffers:
        if b.get("slice_of"):
            continue
        out.write(f"{count},{b.get('first_step', 0)},{b.get('last_step', 0) + 1},{b.get('size', 0)}\n")
        count += 1
    print(f"{count} buffers", file=sys.stderr)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="source", required=True)
    r = sub.add_parser("random", help="N random buffers shaped like a schedule's")
    r.add_argument("n", type=int)
    r.add_argument("--seed", type=int, default=1)
    r.add_argument("-o", "--out", default="-")
    g = sub.add_parser("long-lived", help="N random buffers with long lifetimes")
    g.add_argument("n", type=int)
    g.add_argument("--seed", type=int, default=1)
    g.add_argument("--steps", type=int, default=0, help="default 10 N")
    g.add_argument("--max-life", type=int, default=0, help="default 4 N")
    g.add_argument("-o", "--out", default="-")
    p = sub.add_parser("from-plan", help="the arena buffers of a serenity-client plan --json")
    p.add_argument("plan")
    p.add_argument("-o", "--out", default="-")
    args = parser.parse_args()
    out = sys.stdout if args.out == "-" else open(args.out, "w")
    if args.source == "random":
        if args.n < 1:
            sys.exit("N must be at least 1")
        random_instance(args.n, args.seed, out)
    elif args.source == "long-lived":
        if args.n < 1:
            sys.exit("N must be at least 1")
        steps = args.steps or 10 * args.n
        max_life = args.max_life or 4 * args.n
        if steps < 1 or max_life < 2:
            sys.exit("--steps must be at least 1 and --max-life at least 2")
        long_lived_instance(args.n, args.seed, steps, max_life, out)
    else:
        plan_instance(args.plan, out)
    out.close()


if __name__ == "__main__":
    main()
