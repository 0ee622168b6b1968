#!/usr/bin/python3
"""An Optuna study whose constraint is Serenity's memory slack.

Searches the branch widths of a small inception-style cell for the most
channels (a stand-in for accuracy) whose peak activation memory, in the
best order Serenity finds, fits a budget. Optuna's constraints_func reads
Serenity's slack (peak - budget: > 0 violates), so the sampler learns the
feasible region. Rejection-sampling trials use fast=True (the best baseline
order, milliseconds); the final pick is re-planned exactly.

  /usr/bin/python3 examples/optuna_constraint.py --server 127.0.0.1:50051 --plaintext
"""

import argparse
import sys
import warnings

import optuna

import serenity
from serenity.v1 import graph_pb2


def make_cell(widths, size=16, stem=16):
    """A Graph: a stem tensor feeding one expand -> reduce branch per width, concatenated."""
    g = graph_pb2.Graph(name="cell_" + "_".join(map(str, widths)))
    g.tensors.add(name="x", shape=[1, stem, size, size])
    outs = []
    for b, width in enumerate(widths):
        g.tensors.add(name=f"mid{b}", shape=[1, width, size, size])
        g.tensors.add(name=f"out{b}", shape=[1, 8, size, size])
        g.ops.add(name=f"expand{b}", type="Conv", inputs=["x"], outputs=[f"mid{b}"])
        g.ops.add(name=f"reduce{b}", type="Conv", inputs=[f"mid{b}"], outputs=[f"out{b}"])
        outs.append(f"out{b}")
    g.tensors.add(name="y", shape=[1, 8 * len(widths), size, size])
    g.ops.add(name="concat", type="Concat", inputs=outs, outputs=["y"])
    g.inputs.append("x")
    g.outputs.append("y")
    return g


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--server", required=True, help="serenity-server address, HOST:PORT")
    parser.add_argument("--plaintext", action="store_true", help="no TLS (loopback)")
    parser.add_argument("--trials", type=int, default=40)
    parser.add_argument("--budget", default="64KiB", help="peak activation budget (default: 64KiB)")
    args = parser.parse_args(argv)
    budget = serenity.parse_size(args.budget)

    client = serenity.Client(args.server, plaintext=args.plaintext, timeout=60)

    def objective(trial):
        widths = [trial.suggest_int(f"width{b}", 8, 64, step=8) for b in range(4)]
        slack = client.slack(make_cell(widths), budget, fast=True)
        trial.set_user_attr("slack", slack)
        return sum(widths)

    def constraints(trial):
        return [trial.user_attrs["slack"]]

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    # constraints_func is marked experimental in Optuna 3.1.
    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
    sampler = optuna.samplers.TPESampler(seed=1, constraints_func=constraints)
    study = optuna.create_study(direction="maximize", sampler=sampler)
    study.optimize(objective, n_trials=args.trials)

    feasible = [t for t in study.trials if t.user_attrs["slack"] <= 0]
    print(f"{len(feasible)} of {len(study.trials)} trials fit {budget:,} bytes (fast baseline orders)")
    if not feasible:
        return 1
    best = max(feasible, key=lambda t: t.value)
    widths = [best.params[f"width{b}"] for b in range(4)]
    plan = client.plan(make_cell(widths), budget)
    print(f"best: widths {widths}, {best.value} channels; exact plan: peak {plan.peak_bytes:,} bytes "
          f"({plan.certificate}), {'fits' if plan.feasible else 'does not fit'}")
    # The exact order is never worse than the fast one the trial used.
    return 0 if plan.feasible else 1


if __name__ == "__main__":
    sys.exit(main())
