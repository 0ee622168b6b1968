#!/usr/bin/python3
"""The rewrite's numerical check (numerics.py) on real models whose weights
were stripped (bench/rewrite_numerics.sh; issue 17).

Per model: every initializer without data (stripped, or external data that
is absent) is filled with random values of its dims and type: Conv, Gemm and
MatMul weights N(0, 1/fan_in), BatchNormalization scale and variance
uniform in [0.5, 1.5] (the variance positive), its bias and mean N(0, 0.1^2),
Conv and Gemm biases N(0, 0.1^2), any other float constant uniform in
[0.5, 1.5]. Integer constants read only by Slice and Pad are derived from
the shapes the model states for the op's input and output: a Slice that
shrinks exactly one axis keeps its tail (starts = in - out, ends = in, axes
= that axis, steps = 1), a Pad splits each axis's growth evenly between its
two ends. These are values consistent with the shapes, not necessarily the
original ones (which were stripped); the original and the rewritten model
read the same values, which is what the check needs. Other integer
constants (Reshape shapes, ...) are not filled: their values decide what the
model computes and cannot be made up, so a model with such a data-less
integer initializer cannot be run, and the row says so; it still gets the structural checks
(its data-less initializers read as typed inputs, as ExportOrderedModel
checks a stripped model), and its runnable prefix (every op that does not
depend on those constants, with the tensors it hands on as outputs) gets a
row of its own, planned and checked as a model of its own (so its rewrites
need not be those of the whole model). Then, for each form (standard,
accumulate):
  serenity-client plan FILLED.onnx --local --rewrite [--rewrite-form F]
      --export-ordered R.onnx --json --time-limit LIMIT
  the export checked (onnx.checker full check; accumulate form:
      serenity_ops.check_model), and re-planned in its file order
      (--algorithm file_order) at the reported peak;
  ONNX Runtime runs FILLED.onnx and R.onnx (the accumulate form through
      serenity_ops.to_standard_form) on one random input: the outputs must
      match within |a - b| <= 1e-5 + 1e-5 max|a| + 1e-4 |a|; and, where
      something was applied, the negative control of numerics.py (a weight
      slice one index early, or a reordered sum adding an operand twice)
      must not match.
Prints a markdown table.
Usage: bench_models.py --client CLIENT --work DIR [--time-limit S] MODEL.onnx...
"""
import argparse
import json
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, mapping

import numerics
import serenity_ops

HERE = os.path.dirname(os.path.abspath(__file__))
FLOATS = {TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.DOUBLE}


def has_data(t):
    return t.data_location != TensorProto.EXTERNAL and any(
        (t.raw_data, t.float_data, t.int32_data, t.int64_data, t.double_data, t.uint64_data, t.string_data))


def readers(graph):
    """tensor name -> [(node, input index)]."""
    out = {}
    for node in graph.node:
        for i, name in enumerate(node.input):
            out.setdefault(name, []).append((node, i))
    return out


def random_values(t, uses, rng):
    dims = list(t.dims)
    size = int(np.prod(dims)) if dims else 1

    def normal(scale):
        return rng.standard_normal(dims) * scale

    for node, i in uses:
        if node.op_type == "Conv" and i == 1:
            return normal(1 / np.sqrt(max(1, size // dims[0])))
        if node.op_type == "Gemm" and i == 1:
            trans_b = next((a.i for a in node.attribute if a.name == "transB"), 0)
            return normal(1 / np.sqrt(dims[1] if trans_b else dims[0]))
        if node.op_type == "MatMul" and i == 1 and len(dims) >= 2:
            return normal(1 / np.sqrt(dims[-2]))
        if node.op_type == "BatchNormalization" and i in (1, 4):
            return rng.uniform(0.5, 1.5, dims)
        if (node.op_type == "BatchNormalization" and i in (2, 3)) or (node.op_type in ("Conv", "Gemm") and i == 2):
            return normal(0.1)
    return rng.uniform(0.5, 1.5, dims)


def stated_shapes(graph):
    """tensor name -> dims, for the values whose every dim is known."""
    out = {}
    for v in list(graph.value_info) + list(graph.input) + list(graph.output):
        dims = [d.dim_value if d.HasField("dim_value") else 0 for d in v.type.tensor_type.shape.dim]
        if v.type.tensor_type.HasField("shape") and all(dims):
            out[v.name] = dims
    return out


def derived_value(t, uses, shapes):
    """The values of data-less integer initializer `t` that every reader's
    stated shapes agree on (module docstring), or None."""
    value = None
    for node, i in uses:
        if len(node.input) == 0 or node.input[0] not in shapes or node.output[0] not in shapes:
            return None
        a, b = shapes[node.input[0]], shapes[node.output[0]]
        if len(a) != len(b):
            return None
        if node.op_type == "Slice" and 1 <= i <= 4 and list(t.dims) == [1]:
            axes = [k for k in range(len(a)) if a[k] != b[k]]
            if len(axes) != 1 or b[axes[0]] > a[axes[0]]:
                return None
            k = axes[0]
            v = [[a[k] - b[k]], [a[k]], [k], [1]][i - 1]
        elif node.op_type == "Pad" and i == 1 and list(t.dims) == [2 * len(a)]:
            grow = [b[k] - a[k] for k in range(len(a))]
            if min(grow) < 0:
                return None
            v = [g // 2 for g in grow] + [g - g // 2 for g in grow]
        else:
            return None
        if value is not None and v != value:
            return None
        value = v
    return value


def fill(model, rng):
    """Fills `model`'s data-less float initializers in place, and the integer
    ones read by Slice and Pad that the stated shapes determine (module
    docstring), and makes the others dims only (no reference to absent
    external data). Returns the latter, as (name, their readers' ops), and
    the names of the derived integer constants."""
    uses = readers(model.graph)
    shapes = stated_shapes(model.graph)
    missing, derived = [], []
    for t in model.graph.initializer:
        if has_data(t):
            continue
        del t.external_data[:]
        t.data_location = TensorProto.DEFAULT
        if t.data_type in (TensorProto.INT64, TensorProto.INT32):
            value = derived_value(t, uses.get(t.name, []), shapes) if uses.get(t.name) else None
            if value is not None:
                t.raw_data = np.array(value, dtype=mapping.TENSOR_TYPE_TO_NP_TYPE[t.data_type]).tobytes()
                derived.append(t.name)
                continue
        if t.data_type not in FLOATS:
            ops = sorted({n.op_type for n, _ in uses.get(t.name, [])})
            missing.append((t.name, ops))
            continue
        values = random_values(t, uses.get(t.name, []), rng).astype(mapping.TENSOR_TYPE_TO_NP_TYPE[t.data_type])
        t.raw_data = values.tobytes()
    return missing, derived


def client(args, *argv):
    out = subprocess.run([args.client, *argv], capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"serenity-client {' '.join(argv[:2])} failed ({out.returncode}): {out.stderr.strip()}")
    return json.loads(out.stdout)


def ort_compare(work, a, b, inputs):
    return numerics.ort_runner().compare({"dir": work, "a": a, "b": b, "rtol": 1e-4, "atol": 1e-5,
                                          "atol_scale": 1e-5, "inputs": inputs})


def with_dataless_as_inputs(model):
    """A copy of `model` whose initializers without data are typed graph
    inputs instead (as ExportOrderedModel checks a stripped model)."""
    out = onnx.ModelProto()
    out.CopyFrom(model)
    kept = [t for t in out.graph.initializer if has_data(t)]
    for t in out.graph.initializer:
        if not has_data(t):
            out.graph.input.append(helper.make_tensor_value_info(t.name, t.data_type, list(t.dims)))
    del out.graph.initializer[:]
    out.graph.initializer.extend(kept)
    return out


def check_form(args, work, form, inputs):
    """One row's cells for FILLED.onnx in `work` planned in `form`; `inputs`
    None when the model cannot run (the structural checks only, with its
    data-less initializers read as typed inputs)."""
    exported = os.path.join(work, f"rewritten.{form}.onnx")
    plan = client(args, "plan", os.path.join(work, "filled.onnx"), "--local", "--rewrite", "--rewrite-form", form,
                  "--export-ordered", exported, "--json", "--time-limit", str(args.time_limit))
    report = plan["rewrite"]
    forms = {}
    for site in report.get("recipe", {}).get("sites", []):
        for f in [s["form"] for s in site["splits"]] or [site["form"]]:
            forms[f] = forms.get(f, 0) + 1
    problems = []
    model = onnx.load(exported)
    checked = model if inputs else with_dataless_as_inputs(model)
    if form == "standard":
        onnx.checker.check_model(checked, full_check=True)
        runnable = f"rewritten.{form}.onnx"
    else:
        serenity_ops.check_model(checked)
        runnable = f"runnable.{form}.onnx"
        if inputs:
            onnx.save(serenity_ops.to_standard_form(model), os.path.join(work, runnable))
    del model, checked
    replan = client(args, "plan", exported, "--local", "--algorithm", "file_order", "--json")
    if replan["peak_bytes"] != plan["peak_bytes"]:
        problems.append(f"file-order re-plan {replan['peak_bytes']:,}")
    diff, scale, control = "-", "-", "-"
    if inputs:
        result = ort_compare(work, "filled.onnx", runnable, inputs)
        diff, scale = f"{result['max_abs_diff']:.2e}", f"{result['max_abs']:.3g}"
        if not result["ok"]:
            problems.append("outputs differ")
        if report["sites_applied"]:
            bad, what = numerics.broken_copy(onnx.load(exported), onnx.load(os.path.join(work, "filled.onnx")),
                                             report)
            if bad is not None:
                onnx.save(serenity_ops.to_standard_form(bad), os.path.join(work, "broken.onnx"))
                caught = not ort_compare(work, "filled.onnx", "broken.onnx", inputs)["ok"]
                control = "caught" if caught else "MISSED"
                if not caught:
                    problems.append(f"{what} still matches")
    sites = f"{report['sites_applied']} of {report['sites_found']}"
    if forms:
        sites += " (" + ", ".join(f"{n} {f}" for f, n in sorted(forms.items())) + ")"
    verdict = "ok" if inputs else "export checks ok; cannot run"
    if problems:
        verdict = "FAIL: " + "; ".join(problems)
    return [sites, f"{report['peak_bytes_without']:,} -> {plan['peak_bytes']:,}", diff, scale, control, verdict]


def runnable_prefix(model, stripped):
    """The part of `model` computable without the initializers named in
    `stripped`: every node that does not depend on them, in order, with the
    tensors it hands to the rest (and the graph outputs it makes) as outputs,
    their shapes inferred. None when that is no node."""
    blocked = set(stripped)
    nodes = []
    for node in model.graph.node:
        if any(i in blocked for i in node.input):
            blocked.update(node.output)
        else:
            nodes.append(node)
    made = {o for n in nodes for o in n.output}
    wanted = {i for n in model.graph.node if any(o in blocked for o in n.output) for i in n.input}
    wanted |= {v.name for v in model.graph.output}
    outputs = [o for n in nodes for o in n.output if o in made & wanted]
    if not nodes:
        return None
    read = {i for n in nodes for i in n.input}
    graph = helper.make_graph(nodes, model.graph.name + "_prefix",
                              [v for v in model.graph.input if v.name in read],
                              [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outputs],
                              [t for t in model.graph.initializer if t.name in read])
    prefix = helper.make_model(graph, opset_imports=model.opset_import, ir_version=model.ir_version)
    inferred = {v.name: v for v in onnx.shape_inference.infer_shapes(prefix, strict_mode=True).graph.output}
    del prefix.graph.output[:]
    prefix.graph.output.extend(inferred[o] for o in outputs)
    return prefix


def model_rows(args, name, work, model, rng, why):
    """The rows of `model` (filled) in both forms; `why` it cannot run, or
    None."""
    os.makedirs(work, exist_ok=True)
    onnx.save(model, os.path.join(work, "filled.onnx"))
    initializers = {t.name for t in model.graph.initializer}
    inputs = {}
    for value in model.graph.input:
        if why:
            break
        if value.name in initializers:
            continue
        tensor = value.type.tensor_type
        dims = [d.dim_value for d in tensor.shape.dim]
        if tensor.elem_type != TensorProto.FLOAT or not all(dims):
            why = f"input '{value.name}' is not float32 of known dims"
            break
        data = f"{len(inputs)}.bin"
        rng.standard_normal(dims).astype(np.float32).tofile(os.path.join(work, data))
        inputs[value.name] = {"dims": dims, "data": data}
    rows = []
    for form in ("standard", "accumulate"):
        try:
            rows.append([name, form] + check_form(args, work, form, None if why else inputs))
            if why:
                rows[-1][-1] += f": {why}"
        except (RuntimeError, onnx.checker.ValidationError, onnx.shape_inference.InferenceError,
                serenity_ops.SerenityOpError) as e:
            rows.append([name, form, "-", "-", "-", "-", "-", f"FAIL: {str(e)[:200]}"])
        print(f"{name} {form}: {rows[-1][-1]}", file=sys.stderr)
    return rows


def run_model(args, path, rng):
    """The rows of one model file: the model itself, and, when stripped
    integer constants keep it from running, its runnable prefix."""
    name = os.path.splitext(os.path.basename(path))[0]
    model = onnx.load(path, load_external_data=False)
    missing, derived = fill(model, rng)
    label = name + (f" ({len(derived)} Slice/Pad constants from shapes)" if derived else "")
    why = None
    if missing:
        ops = sorted({op for _, readers_ops in missing for op in readers_ops})
        why = f"{len(missing)} integer constants read by {', '.join(ops)} have no data (e.g. {missing[0][0]})"
    rows = model_rows(args, label, os.path.join(args.work, name), model, rng, why)
    prefix = runnable_prefix(model, [m for m, _ in missing]) if missing else None
    if prefix is not None:
        label = f"{name} prefix ({len(prefix.graph.node)} of {len(model.graph.node)} ops)"
        rows += model_rows(args, label, os.path.join(args.work, name + ".prefix"), prefix, rng, None)
    return rows


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--client", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--time-limit", type=float, default=10)
    parser.add_argument("models", nargs="+")
    args = parser.parse_args()
    rng = np.random.default_rng(17)
    print("| model | form | sites applied of found (forms) | peak without -> with | max abs diff | max abs output | "
          "negative control | verdict |")
    print("|---|---|---|---:|---:|---:|---|---|")
    failures = 0
    for path in args.models:
        for row in run_model(args, path, rng):
            print("| " + " | ".join(row) + " |", flush=True)
            failures += row[-1].startswith("FAIL")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
