#!/usr/bin/python3
"""Proves the Concat -> Conv rewrite keeps the maths (issue 17), with a real
runtime, and checks its export structurally.

For each generated case (k = 2..6 Concat inputs of uneven channel counts,
strides, padding, grouped Convs where whole groups allow, bias and none),
with random float32 weights of the real shapes:
  1. serenity-client plan CASE.onnx --local --rewrite --export-ordered R.onnx
     --json: the rewrite must be applied (or, for a case built to be skipped,
     not applied), and R.onnx has the sliced weights;
  2. serenity-client plan CASE.onnx --local --export-ordered O.onnx (the
     original, exported in its planned order);
  3. onnx.checker.check_model(R.onnx, full_check=True);
  4. serenity-client plan R.onnx --local --algorithm file_order: the same
     peak as step 1 reported;
  5. ONNX Runtime (onnxruntime-node, run_ort.js) runs O.onnx and R.onnx on
     the same random inputs: outputs equal within rtol 1e-4, atol 1e-5;
  6. a negative control: R.onnx with one weight slice shifted by one input
     channel must NOT match (so the comparison can catch an off-by-one).
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

HERE = os.path.dirname(os.path.abspath(__file__))

# name, Concat input channels, Conv: out channels, group, kernel, strides,
# pads, bias; expect: sites applied.
CASES = [
    ("k2_bias", [3, 5], dict(out=2, group=1, kernel=[3, 3], strides=[1, 1], pads=[1, 1, 1, 1], bias=True), 1),
    ("k3_1x1_nobias", [4, 7, 2], dict(out=3, group=1, kernel=[1, 1], strides=[1, 1], pads=[0, 0, 0, 0], bias=False), 1),
    ("k4_stride2", [6, 1, 9, 3], dict(out=4, group=1, kernel=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], bias=True), 1),
    ("k5_nopad", [2, 3, 5, 7, 11], dict(out=2, group=1, kernel=[3, 3], strides=[2, 2], pads=[0, 0, 0, 0], bias=False), 1),
    ("k6_bias", [5, 4, 3, 6, 2, 8], dict(out=3, group=1, kernel=[3, 3], strides=[1, 1], pads=[1, 1, 1, 1], bias=True), 1),
    ("k4_asym", [4, 6, 2, 5], dict(out=2, group=1, kernel=[3, 2], strides=[2, 1], pads=[0, 1, 1, 0], bias=True), 1),
    ("group4_bias", [4, 8, 4], dict(out=4, group=4, kernel=[3, 3], strides=[1, 1], pads=[1, 1, 1, 1], bias=True), 1),
    ("group2_stride2", [6, 6], dict(out=2, group=2, kernel=[1, 1], strides=[2, 2], pads=[0, 0, 0, 0], bias=False), 1),
    ("group2_partial_skipped", [3, 5], dict(out=2, group=2, kernel=[1, 1], strides=[1, 1], pads=[0, 0, 0, 0], bias=True), 0),
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


def ort_compare(work, a, b, input_file):
    spec = {"a": a, "b": b, "rtol": 1e-4, "atol": 1e-5,
            "inputs": {"in": {"dims": [1, 2, 12, 12], "data": input_file}}}
    with open(os.path.join(work, "compare.json"), "w") as f:
        json.dump(spec, f)
    out = subprocess.run(["node", os.path.join(HERE, "run_ort.js"), os.path.join(work, "compare.json")],
                         capture_output=True, text=True)
    if out.returncode == 2:
        raise SystemExit(f"onnxruntime failed: {out.stderr}")
    return out.returncode == 0, out.stdout.strip()


def shifted_slice(rewritten_path, original, recipe, work):
    """R with the last slice of the Conv's weight W taken one channel early."""
    model = onnx.load(rewritten_path)
    w = next(numpy_helper.to_array(t) for t in original.graph.initializer if t.name == "w")
    s = [s for s in recipe["sites"][0]["weight_slices"] if s["source"] == "w"][-1]
    axis, begin, end = s["axis"], s["begin"] - 1, s["end"] - 1
    bad = np.take(w, range(begin, end), axis=axis)
    for i, t in enumerate(model.graph.initializer):
        if t.name == s["name"]:
            model.graph.initializer[i].CopyFrom(numpy_helper.from_array(bad.astype(np.float32), s["name"]))
    path = os.path.join(work, "shifted.onnx")
    onnx.save(model, path)
    return "shifted.onnx"


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
    failures = 0
    for name, channels, conv, expect_sites in CASES:
        work = os.path.join(args.work, name)
        os.makedirs(work, exist_ok=True)
        model = make_case(channels, conv, rng)
        case = os.path.join(work, "case.onnx")
        onnx.save(model, case)
        rewritten = os.path.join(work, "rewritten.onnx")
        plan = json.loads(client(args, "plan", case, "--local", "--rewrite", "--export-ordered", rewritten, "--json",
                                 "--time-limit", "5"))
        report = plan["rewrite"]
        problems = []
        if report["sites_applied"] != expect_sites:
            problems.append(f"sites applied {report['sites_applied']}, expected {expect_sites}: {report['notes']}")
        onnx.checker.check_model(onnx.load(rewritten), full_check=True)
        replan = json.loads(client(args, "plan", rewritten, "--local", "--algorithm", "file_order", "--json"))
        if replan["peak_bytes"] != plan["peak_bytes"]:
            problems.append(f"file-order re-plan peak {replan['peak_bytes']} != reported {plan['peak_bytes']}")
        x = rng.standard_normal([1, 2, 12, 12]).astype(np.float32)
        x.tofile(os.path.join(work, "in.bin"))
        ok, detail = ort_compare(work, "case.onnx", "rewritten.onnx", "in.bin")  # against the model as written
        if not ok:
            problems.append(f"outputs differ: {detail}")
        control = "-"
        if expect_sites:
            bad_ok, bad_detail = ort_compare(work, "case.onnx",
                                             shifted_slice(rewritten, model, report["recipe"], work), "in.bin")
            control = "caught" if not bad_ok else "MISSED"
            if bad_ok:
                problems.append(f"a weight slice shifted by one still matches: {bad_detail}")
        print(f"{name:24s} sites {report['sites_applied']}  peak {report['peak_bytes_without']} -> "
              f"{plan['peak_bytes']}  ops {report['ops_before']} -> {report['ops_after']}  {detail}  "
              f"off-by-one {control}")
        for p in problems:
            print(f"  FAIL: {p}")
        failures += bool(problems)
    failures += not check_stripped(args, rng)
    print(f"{len(CASES) + 1 - failures} of {len(CASES) + 1} cases pass")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
