#!/usr/bin/python3
"""Proves the identity rewrites of issue 17 keep the maths, with a real
runtime, and checks their exports structurally.

The cases, with random float32 weights of the real shapes:
  - Concat -> Conv read directly (CASES here): k = 2..6 Concat inputs of
    uneven channel counts, strides, padding, grouped Convs where whole
    groups allow (group_concat), bias and none, and one case built to be
    skipped (a Concat input covering part of a group);
  - cases.py: a Concat reaching its Convs through per-channel ops
    (BatchNormalization -> Relu as in DenseNet; Relu read by two Convs as a
    NASNet cell output; Mul by a [C, 1, 1] constant and by a scalar;
    MaxPool -> AveragePool; a Slice of the spatial axes), a depthwise Conv
    with channel multiplier 2 (kernel_wise), and a sum ((a + b) + c) + d whose
    operands the plan makes in another order (add_order).
Each is planned in the standard form and, where it splits group-1 Convs,
also in the accumulate form (serenity.ConvAccumulate); check_rewrite says
what each run checks: the rewrite applied as expected and the peak lower,
  serenity-client plan CASE.onnx --local --rewrite [--rewrite-form
      accumulate] --export-ordered R.onnx --json
  onnx.checker.check_model(R.onnx, full_check=True) (standard form), or
      serenity_ops.check_model (accumulate form: the checker, then the
      serenity nodes' rules and shapes);
  serenity-client plan R.onnx --local --algorithm file_order: the reported
      peak;
  ONNX Runtime (onnxruntime-node, run_ort.js) on CASE.onnx and R.onnx (the
      accumulate form through serenity_ops.to_standard_form, as ONNX Runtime
      cannot run serenity.ConvAccumulate) on the same random input: outputs
      equal within rtol 1e-4, atol 1e-5;
  a negative control: R.onnx with one weight slice taken one index early
      (or, for a reordered sum, an Add reading one operand twice) must NOT
      match, so the comparison can catch an off-by-one.
Then one case stripped of its weight data (as the bundled models are): the
export has dims-only slices, passes the checker with data-less initializers
read as typed inputs (as ExportOrderedModel checks it), and its file-order
re-plan reproduces the peak.
Usage: numerics.py --client BUILD/client/serenity-client --work DIR
"""
import argparse
import json
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

import cases
import serenity_ops

HERE = os.path.dirname(os.path.abspath(__file__))

def spec(out, group, kernel, strides, pads, bias):
    return dict(out=out, group=group, kernel=kernel, strides=strides, pads=pads, bias=bias)


# name, Concat input channels, Conv (spec): out channels, group, kernel,
# strides, pads, bias; expect: the form of the Conv split (ConvSplit.form;
# none: the site is not applied).
SUM, GROUPS = ["conv_sum"], ["group_concat"]
CASES = [
    ("k2_bias", [3, 5], spec(2, 1, [3, 3], [1, 1], [1, 1, 1, 1], True), SUM),
    ("k3_1x1_nobias", [4, 7, 2], spec(3, 1, [1, 1], [1, 1], [0, 0, 0, 0], False), SUM),
    ("k4_stride2", [6, 1, 9, 3], spec(4, 1, [3, 3], [2, 2], [1, 1, 1, 1], True), SUM),
    ("k5_nopad", [2, 3, 5, 7, 11], spec(2, 1, [3, 3], [2, 2], [0, 0, 0, 0], False), SUM),
    ("k6_bias", [5, 4, 3, 6, 2, 8], spec(3, 1, [3, 3], [1, 1], [1, 1, 1, 1], True), SUM),
    ("k4_asym", [4, 6, 2, 5], spec(2, 1, [3, 2], [2, 1], [0, 1, 1, 0], True), SUM),
    ("group4_bias", [4, 8, 4], spec(4, 4, [3, 3], [1, 1], [1, 1, 1, 1], True), GROUPS),
    ("group2_stride2", [6, 6], spec(2, 2, [1, 1], [2, 2], [0, 0, 0, 0], False), GROUPS),
    ("group2_partial_skipped", [3, 5], spec(2, 2, [1, 1], [1, 1], [0, 0, 0, 0], True), []),
]


def make_case(channels, conv, rng):
    """in -> k branch Convs (x_i, channels[i] each) -> Concat -> Conv -> y."""
    nodes, inits = [], []
    total = sum(channels)

    def weight(name, shape):
        inits.append(numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32), name))

    xs = []
    for i, n in enumerate(channels):
        weight(f"wb{i}", [n, 2, 1, 1])
        nodes.append(helper.make_node("Conv", ["in", f"wb{i}"], [f"x{i}"], name=f"branch{i}"))
        xs.append(f"x{i}")
    nodes.append(helper.make_node("Concat", xs, ["c"], name="cat", axis=1))
    weight("w", [conv["out"], total // conv["group"]] + conv["kernel"])
    inputs = ["c", "w"]
    if conv["bias"]:
        weight("b", [conv["out"]])
        inputs.append("b")
    nodes.append(helper.make_node("Conv", inputs, ["y"], name="conv", group=conv["group"],
                                  kernel_shape=conv["kernel"], strides=conv["strides"], pads=conv["pads"]))
    k, s, p = conv["kernel"], conv["strides"], conv["pads"]
    y_dims = [1, conv["out"]] + [(12 + p[d] + p[d + 2] - k[d]) // s[d] + 1 for d in range(2)]
    graph = helper.make_graph(nodes, "case", [helper.make_tensor_value_info("in", TensorProto.FLOAT, [1, 2, 12, 12])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, y_dims)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model


def client(args, *argv):
    out = subprocess.run([args.client, *argv], capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"serenity-client {' '.join(argv)} failed ({out.returncode}): {out.stderr}")
    return out.stdout


class OrtRunner:
    """One `node run_ort.js --lines` process for every comparison (loading
    ONNX Runtime costs more than a small comparison)."""

    def __init__(self):
        self.proc = subprocess.Popen(["node", os.path.join(HERE, "run_ort.js"), "--lines"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)

    def compare(self, spec):
        """run_ort.js's result for `spec` (its case format, with "dir"):
        {"max_abs_diff", "max_abs", "ok"}. RuntimeError when it cannot run."""
        self.proc.stdin.write(json.dumps(spec) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"run_ort.js exited ({self.proc.wait()})")
        result = json.loads(line)
        if "error" in result:
            raise RuntimeError(f"onnxruntime failed: {result['error']}")
        return result


_ORT = []


def ort_runner():
    if not _ORT:
        _ORT.append(OrtRunner())
    return _ORT[0]


def ort_compare(work, a, b, input_file):
    """Whether WORK/a and WORK/b match on input WORK/input_file, and
    run_ort.js's result as text."""
    result = ort_runner().compare({"dir": work, "a": a, "b": b, "rtol": 1e-4, "atol": 1e-5,
                                   "inputs": {"in": {"dims": cases.INPUT_DIMS, "data": input_file}}})
    return result["ok"], json.dumps(result)


def split_forms(report):
    """The forms of the Convs split at the Concat sites applied, in order, and
    the number of sums reordered (add_order sites)."""
    forms, sums = [], 0
    for site in report.get("recipe", {}).get("sites", []):
        if site["form"] == "add_order":
            sums += 1
        else:
            forms += [split["form"] for split in site["splits"]]
    return forms, sums


def broken_copy(model, original, report):
    """A negative control: `model` (a rewritten export) with one mistake the
    comparison must catch, and what it is. The last weight slice that does
    not start at 0 taken one index early (from `original`'s weights), or,
    with no weight slices, the first Add of the first reordered sum reading
    its first operand twice. (None, None) when neither applies."""
    bad = onnx.ModelProto()
    bad.CopyFrom(model)
    weights = {t.name: numpy_helper.to_array(t) for t in original.graph.initializer}
    sites = report.get("recipe", {}).get("sites", [])
    slices = [s for site in sites for s in site["weight_slices"] if s["source"] in weights and s["begin"] >= 1]
    if slices:
        s = slices[-1]
        shifted = np.take(weights[s["source"]], range(s["begin"] - 1, s["end"] - 1), axis=s["axis"])
        for t in bad.graph.initializer:
            if t.name == s["name"]:
                t.CopyFrom(numpy_helper.from_array(shifted, s["name"]))
        return bad, f"slice '{s['name']}' one early"
    sums = [site for site in sites if site["form"] == "add_order"]
    if not sums:
        return None, None
    node = next(n for n in bad.graph.node if n.name == sums[0]["new_ops"][0])
    node.input[1] = node.input[0]
    return bad, f"'{node.name}' adding '{node.input[0]}' twice"


def check_rewrite(args, work, original, expect, form):
    """Plans WORK/case.onnx (`original`) with --rewrite in `form`
    ("standard" or "accumulate") and checks what came out: the Convs split
    as `expect` says (conv_sum read as conv_accumulate in the accumulate
    form; "add_order": at least one sum reordered; empty: nothing applied),
    the peak lower (equal when nothing applies), the export valid
    (onnx.checker full check, or serenity_ops.check_model with its
    ConvAccumulate nodes counted), its file-order re-plan at the reported
    peak, its outputs (through serenity_ops.to_standard_form) equal to the
    original's in ONNX Runtime on WORK/in.bin, and the negative control
    caught. Prints one line; returns the problems found."""
    tag = "" if form == "standard" else ".acc"
    exported = os.path.join(work, f"rewritten{tag}.onnx")
    argv = ["plan", os.path.join(work, "case.onnx"), "--local", "--rewrite", "--export-ordered", exported, "--json",
            "--time-limit", "5"]
    if form != "standard":
        argv += ["--rewrite-form", form]
    plan = json.loads(client(args, *argv))
    report = plan["rewrite"]
    problems = []
    forms, sums = split_forms(report)
    want = [f for f in expect if f != "add_order"]
    if form == "accumulate":
        want = ["conv_accumulate" if f == "conv_sum" else f for f in want]
    if forms != want or ("add_order" in expect and not sums):
        problems.append(f"splits {forms} and {sums} sums reordered, expected {expect}: {report['notes']}")
    if report["form"] != form:
        problems.append(f"report form {report['form']}, asked for {form}")
    lowered = plan["peak_bytes"] < report["peak_bytes_without"]
    if lowered != bool(expect) or plan["peak_bytes"] > report["peak_bytes_without"]:
        problems.append(f"peak {report['peak_bytes_without']} -> {plan['peak_bytes']}")
    model = onnx.load(exported)
    accumulating = sum(n.domain == serenity_ops.DOMAIN for n in model.graph.node)
    if form == "standard":
        onnx.checker.check_model(model, full_check=True)
        runnable = model
        expected_accumulating = 0
    else:
        serenity_ops.check_model(model)
        runnable = serenity_ops.to_standard_form(model)
        onnx.checker.check_model(runnable, full_check=True)
        expected_accumulating = sum(len(site["channels"]) - 1 for site in report.get("recipe", {}).get("sites", [])
                                    for split in site["splits"] if split["form"] == "conv_accumulate")
    if accumulating != expected_accumulating:
        problems.append(f"{accumulating} serenity.ConvAccumulate nodes, expected {expected_accumulating}")
    onnx.save(runnable, os.path.join(work, f"runnable{tag}.onnx"))
    replan = json.loads(client(args, "plan", exported, "--local", "--algorithm", "file_order", "--json"))
    if replan["peak_bytes"] != plan["peak_bytes"]:
        problems.append(f"file-order re-plan peak {replan['peak_bytes']} != reported {plan['peak_bytes']}")
    ok, detail = ort_compare(work, "case.onnx", f"runnable{tag}.onnx", "in.bin")  # against the model as written
    if not ok:
        problems.append(f"outputs differ: {detail}")
    control = "-"
    if report["sites_applied"]:
        bad, what = broken_copy(model, original, report)
        if bad is None:
            problems.append("no negative control possible")
        else:
            onnx.save(serenity_ops.to_standard_form(bad), os.path.join(work, "broken.onnx"))
            bad_ok, bad_detail = ort_compare(work, "case.onnx", "broken.onnx", "in.bin")
            control = "caught" if not bad_ok else "MISSED"
            if bad_ok:
                problems.append(f"{what} still matches: {bad_detail}")
    print(f"{os.path.basename(work) + tag:26s} sites {report['sites_applied']} {'+'.join(forms + ['add_order'] * sums)}"
          f"  peak {report['peak_bytes_without']} -> {plan['peak_bytes']} (file order {replan['peak_bytes']})"
          f"  ops {report['ops_before']} -> {report['ops_after']}"
          f"  ConvAccumulate {accumulating}  diff {json.loads(detail)['max_abs_diff']:.2e}  control {control}")
    for p in problems:
        print(f"  FAIL: {p}")
    return problems

def check_stripped(args, rng):
    name, channels, conv, _ = CASES[2]
    work = os.path.join(args.work, "stripped")
    os.makedirs(work, exist_ok=True)
    model = make_case(channels, conv, rng)
    for t in model.graph.initializer:
        t.ClearField("raw_data")
    case = os.path.join(work, "case.onnx")
    onnx.save(model, case)
    rewritten = os.path.join(work, "rewritten.onnx")
    plan = json.loads(client(args, "plan", case, "--local", "--rewrite", "--export-ordered", rewritten, "--json"))
    out = onnx.load(rewritten)
    slices = [t for t in out.graph.initializer if "/part" in t.name]
    checked = onnx.ModelProto()
    checked.CopyFrom(out)
    del checked.graph.initializer[:]
    for t in out.graph.initializer:
        checked.graph.input.append(helper.make_tensor_value_info(t.name, t.data_type, list(t.dims)))
    onnx.checker.check_model(checked, full_check=True)
    replan = json.loads(client(args, "plan", rewritten, "--local", "--algorithm", "file_order", "--json"))
    ok = (plan["rewrite"]["sites_applied"] == 1 and len(slices) == len(channels) and
          all(not t.raw_data and not t.float_data for t in slices) and replan["peak_bytes"] == plan["peak_bytes"])
    print(f"{'stripped_' + name:24s} sites {plan['rewrite']['sites_applied']}  peak "
          f"{plan['rewrite']['peak_bytes_without']} -> {plan['peak_bytes']}  dims-only slices {len(slices)}  "
          f"file-order re-plan {replan['peak_bytes']}" + ("" if ok else "  FAIL"))
    return ok


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--client", required=True)
    parser.add_argument("--work", required=True)
    args = parser.parse_args()
    rng = np.random.default_rng(17)
    # name, build(rng), expected split forms, also in the accumulate form.
    all_cases = [(name, lambda r, ch=channels, cv=conv: make_case(ch, cv, r), expect, conv["group"] == 1)
                 for name, channels, conv, expect in CASES] + cases.CASES
    failures = 0
    for name, build, expect, accumulate in all_cases:
        work = os.path.join(args.work, name)
        os.makedirs(work, exist_ok=True)
        model = build(rng)
        onnx.save(model, os.path.join(work, "case.onnx"))
        rng.standard_normal(cases.INPUT_DIMS).astype(np.float32).tofile(os.path.join(work, "in.bin"))
        problems = check_rewrite(args, work, model, expect, "standard")
        if accumulate:
            problems += check_rewrite(args, work, model, expect, "accumulate")
        failures += bool(problems)
    failures += not check_stripped(args, rng)
    print(f"{len(all_cases) + 1 - failures} of {len(all_cases) + 1} cases pass")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
