"""serenity.Local (serenity-client --local as a subprocess) gives what the server gives."""

import os

import pytest

import serenity
from conftest import REPO, binary, branches_model, diamond_graph, onnx_model


@pytest.fixture(scope="module")
def local():
    return serenity.Local(binary("serenity-client"), workers=2)


@pytest.fixture(scope="module")
def client(server):
    with serenity.Client(server.address, plaintext=True, timeout=60) as c:
        yield c


def test_plan_matches_the_server(local, client):
    for model in (diamond_graph(branches=4), onnx_model()):
        here, there = local.plan(model, onchip=["1KiB"]), client.plan(model, onchip=["1KiB"])
        assert set(here) - {"plan_id"} == set(there) - {"plan_id"}  # same fields, same format
        for key in ("model", "order", "order_names", "peak_bytes", "lower_bound_bytes", "certificate",
                    "step_bytes", "arena", "steps", "traffic"):
            assert here[key] == there[key], key
        assert here.baselines.greedy.peak_bytes == there.baselines.greedy.peak_bytes


def test_options_reach_the_binary(local):
    g = diamond_graph(branches=3)
    peak = local.peak_bytes(g)
    assert local.fits(g, peak) and not local.fits(g, peak - 1)
    assert local.slack(g, peak - 64) == 64
    fast = local.plan(g, fast=True)
    assert fast.stats.algorithm in ("file_order", "kahn", "greedy", "inductor", "xla")
    given = local.plan(g, order=["expand0", "expand1", "expand2", "reduce0", "reduce1", "reduce2", "concat"])
    assert given.stats.algorithm == "given" and given.peak_bytes > peak
    assert local.plan(g, alignment="1KiB").arena.alignment == 1024


def test_errors_and_score(local, tmp_path):
    with pytest.raises(serenity.SerenityError) as raised:
        local.plan(diamond_graph(), algorithm="nope")
    assert raised.value.code_name == "INVALID_ARGUMENT" and "nope" in raised.value.message
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"garbage")
    results = list(local.score([diamond_graph("x"), str(bad), str(tmp_path / "missing.onnx")], budget="1MiB"))
    by_index = {r.index: r for r in results}
    assert by_index[0].error is None and by_index[0].slack_bytes == by_index[0].peak_bytes - (1 << 20)
    assert by_index[1].error.code == "INVALID_ARGUMENT"
    assert by_index[2].error.code == "NOT_FOUND"
    assert local.submit(diamond_graph("f")).result(timeout=60).model == "f"


def test_sparsity_levels_same_report_locally_and_on_the_server(local, client):
    model = onnx_model()
    levels = [{"name": "dense", "density": {"w0": 1.0, "w1": 1.0, "w2": 1.0}, "time_us": 100},
              {"name": "half", "density": {"w0": 0.5, "w1": 0.5, "w2": 0.5}, "time_us": 60}]
    here = local.plan(model, levels=levels, switch_points=["relu0"])
    there = client.plan(model, levels=levels, switch_points=["relu0"])
    assert here.sparsity == there.sparsity
    report = here.sparsity
    assert report.one_plan_for_all_levels is True
    assert [l.name for l in report.levels] == ["dense", "half"]
    assert report.levels[1].csr_weight_bytes < report.levels[0].csr_weight_bytes
    assert report.nested_weight_bytes < report.separate_weight_bytes
    assert [p.op for p in report.switch_points] == ["relu0"]
    assert "sparsity" not in local.plan(model)  # only when asked
    growing = [levels[1], dict(levels[0], name="denser")]  # density grows: not nested
    for planner in (local, client):
        with pytest.raises(serenity.SerenityError) as raised:
            planner.plan(model, levels=growing)
        assert raised.value.code_name == "INVALID_ARGUMENT"
    with pytest.raises(ValueError):
        serenity.Client("127.0.0.1:1", plaintext=True).plan(model, switch_points="relu0")


def test_rewrite_same_locally_and_on_the_server(local, client):
    model = branches_model()
    here, there = local.plan(model, rewrite=True), client.plan(model, rewrite=True)
    for key in ("order_names", "peak_bytes", "lower_bound_bytes", "certificate", "step_bytes", "arena"):
        assert here[key] == there[key], key
    timing = {"without_ms", "rewrite_ms"}
    assert {k: v for k, v in here.rewrite.items() if k not in timing} == \
        {k: v for k, v in there.rewrite.items() if k not in timing}
    assert here.rewrite.sites_applied == 1 and here.peak_bytes < here.rewrite.peak_bytes_without
    assert "rewrite" not in local.plan(model)
    [scored] = list(local.score([model], rewrite=True, full_plan=True))
    assert scored.error is None and scored.peak_bytes == here.peak_bytes
    assert scored.plan.rewrite.sites_applied == 1
    # The accumulate form: the same here and there, lower still, ConvAccumulate parts.
    here = local.plan(model, rewrite=True, rewrite_form="accumulate")
    there = client.plan(model, rewrite=True, rewrite_form="accumulate")
    assert here.peak_bytes == there.peak_bytes < scored.peak_bytes
    assert here.rewrite.form == there.rewrite.form == "accumulate"
    assert here.rewrite.recipe.sites[0].form == "conv_accumulate"
    with pytest.raises(ValueError):
        local.plan(model, rewrite_form="accumulate")
    with pytest.raises(ValueError):
        client.plan(model, rewrite=True, rewrite_form="fused")


def test_memories_and_pins_here_and_there(local, client):
    g = diamond_graph(branches=3)
    peak = local.peak_bytes(g)
    options = dict(memories=[("sram", peak // 2, 16), ("dram", "1MiB")], pins={"x": "dram"})
    here, there = local.plan(g, **options), client.plan(g, **options)
    assert here.memories == there.memories
    sram, dram = here.memories
    assert (sram.name, sram.alignment, dram.name) == ("sram", 16, "dram")
    assert "x" in {b.tensor for b in dram.buffers}
    assert sram.arena_bytes <= peak // 2 and sram.byte_steps <= sram.byte_steps_bound
    assert len(sram.buffers) + len(dram.buffers) == len(here.arena.buffers)
    with pytest.raises(serenity.SerenityError) as raised:
        client.plan(g, memories=[("sram", "1MiB")], pins={"x": "dram"})
    assert "pinned to memory 'dram', which is not given" in raised.value.message
    with pytest.raises(ValueError):
        local.plan(g, memories=[("s:ram", "1MiB")])


def test_objective_time_here_and_there(local, client):
    # Each expand has a fast kernel that needs room: only some orders leave it.
    g = diamond_graph(branches=3)
    peak = local.peak_bytes(g)
    kernels = [("fast", 10, 3000), ("slow", 30, 0)]
    options = dict(objective="time", primitives={f"expand{b}": kernels for b in range(3)})
    for budget in (peak + 3000 * 4, peak):
        here, there = local.plan(g, budget, **options), client.plan(g, budget, **options)
        assert here.time == there.time
        assert here.time.certificate == "optimal"
        assert {p.op for p in here.time.primitives} == {"expand0", "expand1", "expand2"}
        assert here.time.time_us == sum(p.time_us for p in here.time.primitives)
        assert here.peak_bytes <= budget
    assert here.time.time_us == 90  # at the least peak no workspace fits: all slow
    with pytest.raises(serenity.SerenityError) as raised:
        client.plan(g, primitives={"expand0": kernels})
    assert "read only with objective time" in raised.value.message
    with pytest.raises(ValueError):
        local.plan(g, peak, objective="time", primitives={"expand0": [("fast", "soon", 0)]})


def test_transformed_weights_here_and_there(local, client):
    # Each expand reads a weight of its own (400 bytes) and runs one way, which keeps it transformed in
    # 900 bytes: the chosen primitives report it, locally (through the primitives file) and on the server.
    g = diamond_graph(branches=2)
    for b in range(2):
        g.tensors.add(name=f"w{b}", shape=[100], is_weight=True)
        next(op for op in g.ops if op.name == f"expand{b}").inputs.append(f"w{b}")
    primitives = {"expand0": [("winograd", 10, 0, "", 900)],
                  "expand1": [{"name": "winograd", "time_us": 10, "workspace_bytes": 0, "weight_bytes": 900}]}
    budget = 2 * local.peak_bytes(g, count_weights=True)
    for count_weights in (False, True):
        options = dict(objective="time", primitives=primitives, count_weights=count_weights)
        here, there = local.plan(g, budget, **options), client.plan(g, budget, **options)
        assert here.time == there.time
        chosen = {p.op: p for p in here.time.primitives}
        assert chosen["expand0"].weight_bytes == chosen["expand1"].weight_bytes == 900


def test_layouts_here_and_there(local, client):
    # Each expand writes NCHW (10 us) or NHWC (12 us); each reduce reads NHWC
    # only, and converting a 4000-byte tensor costs 1 us: NCHW and convert.
    g = diamond_graph(branches=2)
    primitives = {f"expand{b}": [("nchw", 10, 0, "NCHW"), ("nhwc", 12, 0, "NHWC")] for b in range(2)}
    primitives.update({f"reduce{b}": [{"name": "r", "time_us": 5, "workspace_bytes": 0, "layout": "NHWC"}]
                       for b in range(2)})
    options = dict(objective="time", primitives=primitives, layout_transforms=[("NCHW", "NHWC", 262.144, 0)])
    budget = 2 * local.peak_bytes(g)
    here, there = local.plan(g, budget, **options), client.plan(g, budget, **options)
    assert here.time == there.time
    chosen = {p.op: p for p in here.time.primitives}
    assert (chosen["expand0"].name, chosen["expand0"].layout) == ("nchw", "NCHW")
    [transform] = chosen["reduce0"].transforms
    assert (transform.tensor, transform.from_layout, transform.to_layout) == ("big0", "NCHW", "NHWC")
    assert transform.time_us == pytest.approx(1.0)
    assert here.time.time_us == pytest.approx(32.0)
    assert here.time.transform_time_us == pytest.approx(2.0)
    with pytest.raises(serenity.SerenityError) as raised:
        client.plan(g, budget, objective="time", primitives=primitives)
    assert "no transform from 'NCHW' to 'NHWC'" in raised.value.message
    with pytest.raises(ValueError):
        local.plan(g, budget, objective="time", primitives=primitives, layout_transforms=[("NCHW", "NHWC", "x", 0)])


def test_catalogue_here_and_there(local, client):
    # A bundled ONNX model asking for time gets the built-in catalogue's alternatives.
    model = os.path.join(REPO, "models", "inception_cell.onnx")
    here, there = local.plan(model, "4MiB", objective="time"), client.plan(model, "4MiB", objective="time")
    assert here.time.catalogue_ops == there.time.catalogue_ops > 0
    assert here.time.primitives == there.time.primitives
    assert len(here.time.primitives) == here.time.catalogue_ops
    assert {p.name for p in here.time.primitives} <= {"direct", "im2col", "winograd23", "winograd43"}
    for plan in (local.plan(model, "4MiB", objective="time", catalogue=False),
                 client.plan(model, "4MiB", objective="time", catalogue=False)):
        assert plan.time.catalogue_ops == 0 and not plan.time.primitives


def test_pareto_here_and_there(local, client):
    g = diamond_graph(branches=3)
    options = dict(pareto=True, primitives={f"expand{b}": [("fast", 10, 3000), ("slow", 30, 0)] for b in range(3)})
    here, there = local.plan(g, **options), client.plan(g, **options)
    assert here.time.pareto == there.time.pareto
    points = [(p.peak_bytes, p.time_us) for p in here.time.pareto]
    assert len(points) >= 2 and points == sorted(points)
    assert all(a[1] > b[1] for a, b in zip(points, points[1:]))  # strictly faster as the peak grows
    capped = local.plan(g, objective="peak", max_time_us=points[-1][1], primitives=options["primitives"])
    assert (capped.peak_bytes, capped.time.time_us) == points[-1]


def test_budgets_here_and_there(local, client):
    g = diamond_graph(branches=3)
    primitives = {f"expand{b}": [("fast", 10, 3000), ("slow", 30, 0)] for b in range(3)}
    points = [(p.peak_bytes, p.time_us) for p in local.plan(g, pareto=True, primitives=primitives).time.pareto]
    options = dict(objective="time", budgets=[points[0][0], points[-1][0]], primitives=primitives)
    here, there = local.plan(g, **options), client.plan(g, **options)
    levels = [(l.budget_bytes, l.feasible, l.time_us, l.moved_tensors) for l in here.time.levels]
    assert levels == [(l.budget_bytes, l.feasible, l.time_us, l.moved_tensors) for l in there.time.levels]
    assert [(b, t) for b, _, t, _ in levels] == [points[0], points[-1]]  # each level: its budget's least time
    assert here.memory_budget_bytes == points[0][0] and here.time.time_us == points[0][1]
def test_primitive_baselines_here_and_there(local, client):
    g = diamond_graph(branches=3)
    peak = local.peak_bytes(g)
    options = dict(objective="time", primitive_baselines=True,
                   primitives={f"expand{b}": [("fast", 10, 3000), ("slow", 30, 0)] for b in range(3)})
    here, there = local.plan(g, peak + 3000, **options), client.plan(g, peak + 3000, **options)
    names = [b.name for b in here.time.baselines]
    assert names == ["fastest", "least_workspace", "one:fast", "one:slow", "order_first", "primitives_first",
                     "file_order", "summed_footprint"]
    assert [(b.name, b.time_us, b.fits) for b in here.time.baselines] == \
        [(b.name, b.time_us, b.fits) for b in there.time.baselines]
    least = here.time.baselines[1]
    assert (least.time_us, least.peak_bytes, least.fits) == (90, peak, True)
    assert all(here.time.time_us <= b.time_us for b in here.time.baselines if b.fits)
    assert here.time.summed_footprint_bytes > 0
    assert not local.plan(g, peak + 3000, objective="time", primitives=options["primitives"]).time.baselines
    with pytest.raises(ValueError):
        local.plan(g, peak, objective="time", primitive_baselines="yes")
