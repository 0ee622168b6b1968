"""serenity.Local (serenity-client --local as a subprocess) gives what the server gives."""

import pytest

import serenity
from conftest import binary, diamond_graph, onnx_model


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
