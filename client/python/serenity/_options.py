"""Keyword options of plan/score/peak_bytes, checked once, into PlanOptions."""

from ._sizes import parse_size
from .v1 import scheduler_pb2

# Python name -> PlanOptions field (aliases included).
_NUMBERS = {
    "time_limit": "time_limit_seconds", "time_limit_seconds": "time_limit_seconds",
    "step_time_limit": "step_time_limit_seconds", "step_time_limit_seconds": "step_time_limit_seconds",
    "max_states": "max_search_states", "max_search_states": "max_search_states",
    "max_time_us": "max_time_us", "max_pareto_points": "max_pareto_points",
}
_STRINGS = ("algorithm", "objective")
_MEMORY_MODEL = ("alias_views", "count_weights", "in_place", "concat_in_place")
_DICTS = {"dims": "dim_values", "dim_values": "dim_values", "workspace": "workspace_bytes",
          "workspace_bytes": "workspace_bytes"}
OPTION_NAMES = sorted([*_NUMBERS, *_STRINGS, *_MEMORY_MODEL, *_DICTS, "alignment", "onchip", "onchip_bytes",
                       "order", "fast", "levels", "switch_points", "rewrite", "rewrite_form", "memories", "pins",
                       "primitives", "layout_transforms", "pareto", "catalogue", "budgets",
                       "primitive_baselines"])


def plan_options(budget=None, **options):
    """(PlanOptions, GivenOrder) for `budget` and the keyword options.

    budget: bytes (int) or a size string ("2MiB"); None or 0: none.
    fast=True: the best baseline order (algorithm "baseline"), milliseconds.
    order: a list of op indices or of op names to evaluate instead of
    searching. rewrite=True: identity graph rewriting (ONNX models only, not
    with order): the plan, or score, is then the rewritten graph's, and a
    plan carries a `rewrite` report; rewrite_form="accumulate" writes the
    rewritten sums as serenity.ConvAccumulate ops (default "standard": Conv +
    Add). memories: the device's memories, fastest first, each
    (name, capacity) or (name, capacity, alignment), sizes as ints or
    strings; every buffer is then placed in one (the plan's `memories`).
    pins: {tensor: memory} or {tensor: (memory, offset)}.
    primitives: {op name: [(name, time_us, workspace_bytes[, layout[,
    weight_bytes]]), ...]} (or dicts with those keys), the ways to run each
    op named (weight_bytes, not 0: the bytes the op's own weights take in
    that primitive's form, counted with count_weights);
    layout_transforms: [(from, to, time_us_per_mb, workspace_bytes_per_mb),
    ...] (or dicts with keys from, to and those), the cost of converting a
    tensor between the layouts of its producer's and its reader's
    alternatives (docs/primitives.md, "Layouts"). Both are read with
    objective="time" and a budget, which choose one per op and the order
    for the least total time (the plan's `time`; docs/primitives.md);
    pareto=True adds the (peak, time) frontier (plan.time.pareto, at most
    max_pareto_points), max_time_us the least peak within that time;
    primitive_baselines=True adds the other ways to choose (fastest, least
    workspace or one primitive everywhere, order first, primitives first,
    the file order, the summed-footprint model: plan.time.baselines).
    catalogue=False: no built-in alternatives (by default a plan that asks
    for time gives an ONNX model's Conv, Gemm and MatMul ops those of a
    cost model, except the ops primitives names; plan.time.catalogue_ops).
    budgets: a list of sizes (ints or strings), with objective="time" and
    instead of budget: one plan per budget (plan.time.levels), sharing arena
    offsets where it can; each level lists its moved_tensors.
    TypeError for an unknown option, ValueError for a bad value."""
    out = scheduler_pb2.PlanOptions()
    given = scheduler_pb2.GivenOrder()
    if budget is not None:
        out.memory_budget_bytes = parse_size(budget, "budget")
    for name, value in options.items():
        if value is None:
            continue
        if name in _NUMBERS:
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
                raise ValueError(f"{name} must be a non-negative number, not {value!r}")
            setattr(out, _NUMBERS[name], value)
        elif name in _STRINGS:
            setattr(out, name, str(value))
        elif name in _MEMORY_MODEL:
            setattr(out.memory_model, name, bool(value))
        elif name in _DICTS:
            target = getattr(out, _DICTS[name])
            for key, size in dict(value).items():
                target[str(key)] = parse_size(size, f"{name}[{key!r}]")
        elif name == "alignment":
            out.alignment = parse_size(value, "alignment")
        elif name in ("onchip", "onchip_bytes"):
            sizes = [value] if isinstance(value, (int, str)) else list(value)
            out.onchip_bytes.extend(parse_size(s, "onchip") for s in sizes)
        elif name == "order":
            items = list(value)
            if all(isinstance(i, int) and not isinstance(i, bool) for i in items):
                given.indices.extend(items)
            elif all(isinstance(i, str) for i in items):
                given.names.extend(items)
            else:
                raise ValueError("order is a list of op indices or a list of op names")
        elif name == "levels":
            # Nested sparse models (docs/sparsity.md): [{name, density: {weight: fraction}, time_us}, ...],
            # densest first; the plan then carries a `sparsity` report.
            for level in value:
                if not isinstance(level, dict) or set(level) - {"name", "density", "time_us"}:
                    raise ValueError("a level is a dict with name, density ({weight: fraction}) and time_us")
                entry = out.levels.add(name=str(level.get("name", "")), time_us=float(level.get("time_us", 0)))
                for weight, fraction in dict(level.get("density", {})).items():
                    entry.density[str(weight)] = float(fraction)
        elif name == "switch_points":
            if isinstance(value, str):
                raise ValueError("switch_points is a list of op names")
            out.switch_points.extend(str(op) for op in value)
        elif name == "rewrite":
            # Identity graph rewriting (issue 17; docs/client.md): Concat -> Conv sites rewritten where
            # that lowers the peak. The server refuses it with a given order or a Graph model.
            if not isinstance(value, bool):
                raise ValueError(f"rewrite is True or False, not {value!r}")
            if value and options.get("order"):
                raise ValueError("rewrite cannot be combined with order: the order names the ops before rewriting")
            out.rewrite = value
        elif name == "rewrite_form":
            if value not in ("standard", "accumulate"):
                raise ValueError(f"rewrite_form is 'standard' or 'accumulate', not {value!r}")
            if not options.get("rewrite"):
                raise ValueError("rewrite_form applies only with rewrite=True")
            out.rewrite_form = value
        elif name == "memories":
            # Several memories (issue 18; docs/memories.md).
            for memory in value:
                if isinstance(memory, str) or len(memory) not in (2, 3):
                    raise ValueError(f"a memory is (name, capacity) or (name, capacity, alignment), not {memory!r}")
                memory_name = str(memory[0])
                if not memory_name or set(memory_name) & set(":=@"):
                    raise ValueError(f"a memory name is non-empty, without ':', '=' or '@', not {memory_name!r}")
                entry = out.memories.add(name=memory_name, capacity_bytes=parse_size(memory[1], "capacity"))
                if len(memory) == 3:
                    entry.alignment = parse_size(memory[2], "alignment")
        elif name == "pins":
            for tensor, where in dict(value).items():
                memory, offset = (where, None) if isinstance(where, str) else tuple(where)
                pin = out.pins.add(tensor=str(tensor), memory=str(memory))
                if offset is not None:
                    pin.offset = parse_size(offset, "offset")
        elif name == "primitives":
            # Primitive selection (issue 19; docs/primitives.md).
            if not isinstance(value, dict):
                raise ValueError("primitives is {op name: [(name, time_us, workspace_bytes), ...]}")
            for op, alternatives in value.items():
                entry = out.primitives.add(op=str(op))
                for alternative in alternatives:
                    if isinstance(alternative, dict):
                        if set(alternative) - {"name", "time_us", "workspace_bytes", "layout", "weight_bytes"}:
                            raise ValueError("an alternative has name, time_us, workspace_bytes, layout and "
                                             f"weight_bytes, not {alternative!r}")
                        alt_name = alternative.get("name", "")
                        time_us = alternative.get("time_us", 0)
                        workspace = alternative.get("workspace_bytes", 0)
                        layout = alternative.get("layout", "")
                        weights = alternative.get("weight_bytes", 0)
                    elif isinstance(alternative, (tuple, list)) and len(alternative) in (3, 4, 5):
                        alt_name, time_us, workspace = alternative[:3]
                        layout = alternative[3] if len(alternative) > 3 else ""
                        weights = alternative[4] if len(alternative) > 4 else 0
                    else:
                        raise ValueError("an alternative is (name, time_us, workspace_bytes[, layout[, "
                                         f"weight_bytes]]), not {alternative!r}")
                    if isinstance(time_us, bool) or not isinstance(time_us, (int, float)):
                        raise ValueError(f"time_us of {op!r}'s alternative {alt_name!r} must be a number")
                    entry.alternatives.add(name=str(alt_name), time_us=float(time_us),
                                           workspace_bytes=parse_size(workspace, "workspace_bytes"),
                                           layout=str(layout), weight_bytes=parse_size(weights, "weight_bytes"))
        elif name == "layout_transforms":
            for transform in value:
                if isinstance(transform, dict):
                    if set(transform) - {"from", "to", "time_us_per_mb", "workspace_bytes_per_mb"}:
                        raise ValueError("a layout transform has from, to, time_us_per_mb and "
                                         f"workspace_bytes_per_mb, not {transform!r}")
                    fields = (transform.get("from", ""), transform.get("to", ""),
                              transform.get("time_us_per_mb", 0), transform.get("workspace_bytes_per_mb", 0))
                elif isinstance(transform, (tuple, list)) and len(transform) == 4:
                    fields = tuple(transform)
                else:
                    raise ValueError("a layout transform is (from, to, time_us_per_mb, workspace_bytes_per_mb), "
                                     f"not {transform!r}")
                for rate in fields[2:]:
                    if isinstance(rate, bool) or not isinstance(rate, (int, float)):
                        raise ValueError(f"the rates of layout transform {transform!r} must be numbers")
                out.layout_transforms.add(from_layout=str(fields[0]), to_layout=str(fields[1]),
                                          time_us_per_mb=float(fields[2]),
                                          workspace_bytes_per_mb=float(fields[3]))
        elif name == "budgets":
            # Several budgets (issue 19; docs/primitives.md "Several budgets").
            if isinstance(value, (int, str)):
                raise ValueError("budgets is a list of sizes, e.g. ['1MiB', '2MiB']")
            out.budgets.extend(parse_size(b, "budgets") for b in value)
        elif name == "pareto":
            if not isinstance(value, bool):
                raise ValueError(f"pareto is True or False, not {value!r}")
            out.pareto = value
        elif name == "catalogue":
            if not isinstance(value, bool):
                raise ValueError(f"catalogue is True or False, not {value!r}")
            out.no_catalogue = not value
        elif name == "primitive_baselines":
            if not isinstance(value, bool):
                raise ValueError(f"primitive_baselines is True or False, not {value!r}")
            out.primitive_baselines = value
        elif name == "fast":
            if value:
                if options.get("algorithm") not in (None, "baseline"):
                    raise ValueError("fast=True means algorithm='baseline'; give one or the other")
                out.algorithm = "baseline"
        else:
            raise TypeError(f"unknown option {name!r}; options: {', '.join(OPTION_NAMES)}")
    return out, given
