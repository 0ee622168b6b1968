"""Parts of the package that need no server: sizes, options, records, models."""

import pytest

import serenity
from serenity import _options
from serenity._records import enum_name, to_record
from serenity.v1 import scheduler_pb2
from conftest import chain_graph, onnx_model


@pytest.mark.parametrize("text,value", [
    (0, 0), (12345, 12345), ("512", 512), ("2K", 2048), ("2KiB", 2048), ("3MiB", 3 << 20), ("1G", 1 << 30),
    ("1GiB", 1 << 30), ("5KB", 5000), ("2MB", 2_000_000), ("1GB", 10**9), ("1.5KiB", 1536), ("7B", 7),
    ("2mib", 2 << 20),
])
def test_parse_size(text, value):
    assert serenity.parse_size(text) == value


@pytest.mark.parametrize("text", ["-1", -1, "1.3B", "2 parsecs", "", "K", "1e3", True, 1.5])
def test_parse_size_refuses(text):
    with pytest.raises(ValueError):
        serenity.parse_size(text)


def test_enum_names_are_short_and_lowercase():
    d = scheduler_pb2.DESCRIPTOR.enum_types_by_name
    assert enum_name(d["Certificate"], scheduler_pb2.CERTIFICATE_OPTIMAL) == "optimal"
    assert enum_name(d["Certificate"], scheduler_pb2.CERTIFICATE_BEST_FOUND) == "best_found"
    assert enum_name(d["BufferKind"], scheduler_pb2.BUFFER_KIND_WORKSPACE) == "workspace"


def test_record_has_every_field_with_ints():
    plan = scheduler_pb2.Plan(model="m", peak_bytes=1 << 40, certificate=scheduler_pb2.CERTIFICATE_BASELINE)
    plan.step_bytes.extend([1, 1 << 40])
    plan.stats.phase_ms["search"] = 1.5
    r = to_record(plan)
    assert r.peak_bytes == 1 << 40 and isinstance(r.peak_bytes, int)
    assert r.certificate == "baseline"
    assert r.headroom_bytes == 0 and r.feasible is False and r.order == [] and r.plan_id == ""
    assert r.stats.phase_ms == {"search": 1.5}
    assert "arena" not in r  # sub-messages only when set
    assert list(r)[:3] == ["model", "nodes", "order"]  # field-number order
    with pytest.raises(AttributeError):
        r.no_such_field


def test_options_map_to_plan_options():
    options, given = _options.plan_options("1MiB", time_limit=2.5, alias_views=True, dims={"batch": 1},
                                           workspace={"conv": "1K"}, onchip=["64K", 131072], order=[2, 0, 1],
                                           alignment="16B", max_states=1000)
    assert options.memory_budget_bytes == 1 << 20
    assert options.time_limit_seconds == 2.5 and options.memory_model.alias_views
    assert dict(options.dim_values) == {"batch": 1} and dict(options.workspace_bytes) == {"conv": 1024}
    assert list(options.onchip_bytes) == [65536, 131072] and list(given.indices) == [2, 0, 1]
    assert options.alignment == 16 and options.max_search_states == 1000
    assert _options.plan_options(fast=True)[0].algorithm == "baseline"
    with pytest.raises(ValueError):
        _options.plan_options(fast=True, algorithm="auto")
    with pytest.raises(ValueError):
        _options.plan_options(order=[0, "a"])
    with pytest.raises(TypeError):
        _options.plan_options(budgt=1)
    assert list(_options.plan_options(objective="time", budgets=["1KiB", 2048])[0].budgets) == [1024, 2048]
    with pytest.raises(ValueError):
        _options.plan_options(objective="time", budgets="1KiB")


def test_primitives_carry_weight_bytes():
    # weight_bytes, fifth in a tuple or a key of a dict, reaches the request's alternatives.
    options, _ = _options.plan_options(objective="time", primitives={
        "conv": [("direct", 10, 0), ("winograd", 4, "1KiB", "NHWC", "2KiB"),
                 {"name": "packed", "time_us": 5, "workspace_bytes": 64, "weight_bytes": 300}],
        "fc": [("naive", 3, 0, "NCHW")]})
    conv, fc = options.primitives
    assert [(a.name, a.workspace_bytes, a.layout, a.weight_bytes) for a in conv.alternatives] == [
        ("direct", 0, "", 0), ("winograd", 1024, "NHWC", 2048), ("packed", 64, "", 300)]
    assert fc.alternatives[0].weight_bytes == 0 and fc.alternatives[0].layout == "NCHW"
    for bad in ([("w", 1, 0, "", -1)], [("w", 1, 0, "", "lots")], [{"name": "w", "weight_bytes": True}],
                [("w", 1, 0, "", 5, "extra")], [{"name": "w", "weights": 5}]):
        with pytest.raises(ValueError):
            _options.plan_options(objective="time", primitives={"conv": bad})


def test_catalogue_option():
    assert not _options.plan_options()[0].no_catalogue
    assert not _options.plan_options(catalogue=True)[0].no_catalogue
    assert _options.plan_options(catalogue=False)[0].no_catalogue
    with pytest.raises(ValueError):
        _options.plan_options(catalogue="no")


def test_model_request_kinds(tmp_path):
    g = chain_graph("g")
    assert serenity.model_request(g).graph == g
    (tmp_path / "g.pb").write_bytes(g.SerializeToString())
    (tmp_path / "g.pbtxt").write_text(str(g))
    assert serenity.model_request(str(tmp_path / "g.pb")).graph == g
    assert serenity.model_request(tmp_path / "g.pbtxt").graph == g
    assert serenity.model_request(tmp_path / "g.pbtxt").model_name == "g"
    (tmp_path / "bad.pb").write_bytes(b"\xff\xff\xff")
    with pytest.raises(ValueError):
        serenity.model_request(str(tmp_path / "bad.pb"))
    with pytest.raises(FileNotFoundError):
        serenity.model_request(str(tmp_path / "missing.onnx"))
    with pytest.raises(TypeError):
        serenity.model_request(42)
    m = onnx_model()
    request = serenity.model_request(m)
    assert request.model_name == "cell" and len(request.onnx_model) > 0


def test_strip_keeps_small_constants():
    onnx = pytest.importorskip("onnx")
    from onnx import helper, numpy_helper
    import numpy as np
    shape = numpy_helper.from_array(np.array([1, -1], np.int64), "shape")
    big = numpy_helper.from_array(np.ones(1000, np.float32), "big")
    graph = helper.make_graph([], "g", [], [], initializer=[shape, big])
    stripped = serenity.strip_onnx(helper.make_model(graph))
    kept = {i.name: i for i in stripped.graph.initializer}
    assert numpy_helper.to_array(kept["shape"]).tolist() == [1, -1]
    assert not kept["big"].raw_data and list(kept["big"].dims) == [1000]
    assert onnx  # imported


def test_package_version_is_the_projects():
    import re
    from conftest import REPO
    cmake = open(f"{REPO}/CMakeLists.txt").read()
    assert serenity.__version__ == re.search(r"project\(serenity VERSION ([0-9.]+)", cmake).group(1)
