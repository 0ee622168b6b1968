#!/usr/bin/python3
"""Writes a chain of small blocks as serenity.v1.Graph text (issue 18 §2).

Each block reads the output of the block before, runs 2-4 parallel branches
of 1-3 ops on it, and joins them with a Concat: every join is a cut point,
so a graph of B blocks has B segments of 3-13 ops. The blocks repeat a few
templates (--templates, drawn from --seed) whose tensor sizes are random,
so the blocks' peaks are alike and the best baseline is not already optimal
in each: every segment needs a search, and the search runs segment after
segment.

  /usr/bin/python3 bench/make_tiny_segments.py --blocks 8000 -o tiny_8k.pbtxt
"""
import argparse
import random
import sys


def make_template(rng):
    """Branches of a block: a list of branches, each a list of output sizes."""
    branches = []
    for _ in range(rng.randint(2, 4)):
        branches.append([rng.choice([1, 2, 4, 8, 16, 32]) * 1024 for _ in range(rng.randint(1, 3))])
    return branches


def write(out, blocks, templates, seed):
    rng = random.Random(seed)
    shapes = [make_template(rng) for _ in range(templates)]
    w = out.write
    w('name: "tiny_segments_b%d_t%d_s%d"\n' % (blocks, templates, seed))
    tensors = [("x", 16 * 1024)]
    current = "x"
    for i in range(blocks):
        shape = shapes[i % templates]
        ends = []
        for j, branch in enumerate(shape):
            previous = current
            for k, nbytes in enumerate(branch):
                name = "b%d_%d_%d" % (i, j, k)
                w('ops { name: "%s" type: "Conv" inputs: "%s" outputs: "%s" }\n' % (name, previous, name))
                tensors.append((name, nbytes))
                previous = name
            ends.append(previous)
        join = "j%d" % i
        w('ops { name: "%s" type: "Concat"' % join)
        for e in ends:
            w(' inputs: "%s"' % e)
        w(' outputs: "%s" }\n' % join)
        tensors.append((join, 16 * 1024))
        current = join
    for name, nbytes in tensors:
        w('tensors { name: "%s" bytes: %d }\n' % (name, nbytes))
    w('inputs: "x"\n')
    w('outputs: "%s"\n' % current)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--blocks", type=int, default=8000)
    parser.add_argument("--templates", type=int, default=4)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("-o", "--output", default="-")
    args = parser.parse_args()
    out = sys.stdout if args.output == "-" else open(args.output, "w")
    write(out, args.blocks, args.templates, args.seed)


if __name__ == "__main__":
    main()
