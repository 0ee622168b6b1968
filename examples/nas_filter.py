#!/usr/bin/python3
"""Scores random candidate networks in one streaming call and prints which fit a budget.

Each candidate is a random DAG of convolutions (a RandWire-style cell)
built as a Serenity Graph; all of them go to the server over one Score
stream, and results are printed as they arrive, so a NAS loop can drop the
candidates that do not fit before training any of them.

  /usr/bin/python3 examples/nas_filter.py --server 127.0.0.1:50051 --plaintext --candidates 20
"""

import argparse
import random
import sys

import serenity
from serenity.v1 import graph_pb2


def random_network(seed, nodes=10, size=16):
    """A random DAG: node i reads one to three earlier nodes (summed), with a random width."""
    rng = random.Random(seed)
    g = graph_pb2.Graph(name=f"candidate{seed}")
    g.tensors.add(name="x", shape=[1, 16, size, size])
    made = ["x"]
    for i in range(nodes):
        ins = rng.sample(made, min(len(made), rng.randint(1, 3)))
        width = rng.choice([8, 16, 32, 64])
        g.tensors.add(name=f"n{i}", shape=[1, width, size, size])
        g.ops.add(name=f"conv{i}", type="Conv", inputs=ins, outputs=[f"n{i}"])
        made.append(f"n{i}")
    g.inputs.append("x")
    g.outputs.append(made[-1])
    return g


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--server", required=True, help="serenity-server address, HOST:PORT")
    parser.add_argument("--plaintext", action="store_true", help="no TLS (loopback)")
    parser.add_argument("--candidates", type=int, default=20)
    parser.add_argument("--budget", default="128KiB", help="peak activation budget (default: 128KiB)")
    args = parser.parse_args(argv)

    client = serenity.Client(args.server, plaintext=args.plaintext, timeout=60)
    candidates = {f"candidate{s}": random_network(s) for s in range(args.candidates)}
    fit = failed = 0
    for result in client.score(candidates, budget=args.budget):
        if result.error is not None:
            failed += 1
            print(f"{result.id}: {result.error.code}: {result.error.message}")
            continue
        fit += result.feasible
        verdict = "fits" if result.feasible else f"over by {result.slack_bytes:,} bytes"
        print(f"{result.id}: peak {result.peak_bytes:,} bytes ({result.certificate}), {verdict}")
    print(f"{fit} of {len(candidates)} candidates fit {args.budget}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
