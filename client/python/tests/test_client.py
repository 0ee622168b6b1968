"""serenity.Client against a real serenity-server on loopback."""

import concurrent.futures
import json

import grpc
import pytest

import serenity
from conftest import branches_model, chain_graph, diamond_graph, onnx_model


@pytest.fixture(scope="module")
def client(server):
    with serenity.Client(server.address, plaintext=True, timeout=60) as c:
        yield c


def check_plan_record(plan):
    # The JSON format: proto field names, int64 as ints, enums short and lowercase.
    assert isinstance(plan.peak_bytes, int) and plan.peak_bytes > 0
    assert plan.certificate in ("optimal", "best_found", "baseline")
    assert len(plan.order) == plan.nodes == len(plan.step_bytes) == len(plan.order_names)
    assert max(plan.step_bytes) == plan.peak_bytes
    assert plan.lower_bound_bytes <= plan.peak_bytes
    assert all(b.kind in ("tensor", "workspace", "weight") for b in plan.arena.buffers)
    json.dumps(plan)  # plain data


def test_plan_graph_is_optimal_and_beats_file_order(client):
    plan = client.plan(diamond_graph())
    check_plan_record(plan)
    assert plan.model == "diamond"
    assert plan.certificate == "optimal"
    # Each branch reduced before the next expands: one big tensor live at a time.
    assert plan.peak_bytes < plan.baselines.kahn.peak_bytes
    assert plan["peak_bytes"] == plan.peak_bytes


def test_same_onnx_model_as_proto_path_and_bytes(client, tmp_path):
    model = onnx_model()
    path = tmp_path / "cell.onnx"
    path.write_bytes(model.SerializeToString())
    plans = [client.plan(model), client.plan(str(path)), client.plan(path), client.plan(path.read_bytes(), name="cell")]
    for plan in plans:
        check_plan_record(plan)
    assert len({p.peak_bytes for p in plans}) == 1
    assert len({tuple(p.order) for p in plans}) == 1
    assert plans[1].model == "cell"


def test_weights_are_stripped_before_sending(client):
    model = onnx_model(big_weights=True)
    assert model.ByteSize() > 64 * 1024 * 1024  # the server's request limit
    stripped = serenity.strip_onnx(model)
    assert stripped.ByteSize() < 100_000
    assert [list(i.dims) for i in stripped.graph.initializer] == [list(i.dims) for i in model.graph.initializer]
    plan = client.plan(model)
    check_plan_record(plan)
    assert plan.weight_bytes == sum(4 * _prod(i.dims) for i in model.graph.initializer)


def _prod(dims):
    out = 1
    for d in dims:
        out *= d
    return out


def test_fast_is_the_best_baseline(client):
    plan = client.plan(diamond_graph(branches=4), fast=True)
    assert plan.certificate in ("baseline", "optimal")  # optimal when it meets the lower bound
    assert plan.stats.algorithm in ("file_order", "kahn", "greedy", "inductor", "xla")
    baselines = plan.baselines
    assert plan.peak_bytes == min(baselines[k].peak_bytes for k in ("file_order", "kahn", "greedy", "inductor", "xla"))


def test_budget_fits_and_slack(client):
    g = diamond_graph()
    peak = client.peak_bytes(g)
    assert client.fits(g, peak) is True
    assert client.fits(g, peak - 1) is False
    assert client.slack(g, peak - 100) == 100
    assert client.slack(g, f"{peak + 24}B") == -24
    with pytest.raises(ValueError):
        client.slack(g, 0)
    plan = client.plan(g, budget=peak - 1)
    assert plan.feasible is False and plan.headroom_bytes == -1 and plan.memory_budget_bytes == peak - 1


def test_score_yields_every_model_and_one_failure_fails_only_itself(client, tmp_path):
    models = [diamond_graph(f"d{i}", branches=2 + i % 3) for i in range(6)]
    broken = tmp_path / "broken.onnx"
    broken.write_bytes(b"not an onnx model at all")
    inputs = models[:3] + [str(tmp_path / "missing.onnx"), str(broken)] + models[3:]
    results = list(client.score(inputs, budget="1MiB"))
    assert sorted(r.index for r in results) == list(range(len(inputs)))
    by_index = {r.index: r for r in results}
    assert by_index[3].error.code == "NOT_FOUND"
    assert by_index[4].error.code == "INVALID_ARGUMENT"
    for i in (0, 1, 2, 5, 6, 7):
        r = by_index[i]
        assert r.error is None, r
        assert r.peak_bytes == client.plan(inputs[i]).peak_bytes  # the unary Plan path
        assert r.feasible is True and r.slack_bytes == r.peak_bytes - 1024 * 1024
        assert r.certificate == "optimal"


def test_score_mapping_ids_and_full_plan(client):
    results = {r.id: r for r in client.score({"a": diamond_graph("a"), "b": chain_graph("b")}, full_plan=True)}
    assert set(results) == {"a", "b"}
    assert results["a"].plan.peak_bytes == results["a"].peak_bytes
    assert results["b"].plan.model == "b"


def test_score_reads_a_generator_lazily(client):
    seen = []

    def generate():
        for i in range(5):
            seen.append(i)
            yield chain_graph(f"c{i}", widths=(4, 8 + i, 2))

    results = list(client.score(generate()))
    assert seen == list(range(5)) and len(results) == 5


def test_submit_returns_futures(client):
    futures = [client.submit(diamond_graph(f"s{i}", branches=2 + i)) for i in range(4)]
    plans = [f.result(timeout=60) for f in concurrent.futures.as_completed(futures)]
    assert sorted(p.model for p in plans) == ["s0", "s1", "s2", "s3"]


def test_errors_carry_status_and_message(client):
    with pytest.raises(serenity.SerenityError) as raised:
        client.plan(diamond_graph(), algorithm="no_such_algorithm")
    assert raised.value.code == grpc.StatusCode.INVALID_ARGUMENT
    assert raised.value.code_name == "INVALID_ARGUMENT"
    assert "no_such_algorithm" in raised.value.message
    with pytest.raises(TypeError):
        client.plan(diamond_graph(), no_such_option=1)
    with pytest.raises(ValueError):
        client.plan(diamond_graph(), budget="2 parsecs")


def test_get_plan_by_id(client):
    plan = client.plan(diamond_graph("stored"))
    assert plan.plan_id
    again = client.get_plan(plan.plan_id)
    assert again.order == plan.order and again.peak_bytes == plan.peak_bytes
    with pytest.raises(serenity.SerenityError) as raised:
        client.get_plan("0" * 64)
    assert raised.value.code in (grpc.StatusCode.NOT_FOUND, grpc.StatusCode.INVALID_ARGUMENT)


def test_given_order_is_evaluated(client):
    g = diamond_graph(branches=2)
    names = ["expand0", "expand1", "reduce0", "reduce1", "concat"]
    plan = client.plan(g, order=names)
    assert plan.order_names == names
    assert plan.stats.algorithm == "given"
    assert plan.baselines.serenity.peak_bytes < plan.peak_bytes


def test_token_over_plaintext_is_refused_locally():
    with pytest.raises(ValueError):
        serenity.Client("127.0.0.1:1", plaintext=True, token="secret")


def test_balance_spreads_calls_over_replicas():
    from conftest import Server
    replicas = [Server(), Server()]
    try:
        target = "ipv4:" + ",".join(f"127.0.0.1:{r.port}" for r in replicas)
        g = diamond_graph("balanced")
        with serenity.Client(target, plaintext=True, balance=True) as balanced:
            caches = [balanced.plan(g).stats.cache for _ in range(4)]
        # Round robin: each replica plans it once (a miss), then answers from its own cache.
        assert caches.count("miss") == 2, caches
        with serenity.Client(target, plaintext=True) as pinned:
            caches = [pinned.plan(diamond_graph("pinned", branches=5)).stats.cache for _ in range(4)]
        assert caches.count("miss") == 1, caches  # pick_first: one connection, one replica
    finally:
        for r in replicas:
            r.stop()


def test_rewrite_lowers_the_peak_and_reports_it(client):
    model = branches_model()
    plain = client.plan(model)
    assert "rewrite" not in plain and plain.nodes == 6
    rewritten = client.plan(model, rewrite=True)
    check_plan_record(rewritten)
    report = rewritten.rewrite
    assert report.sites_applied == report.sites_found == 1
    assert report.peak_bytes_without == plain.peak_bytes
    assert report.peak_bytes_with == rewritten.peak_bytes < plain.peak_bytes
    assert report.certificate_without == "optimal"
    assert (report.ops_before, report.ops_after) == (6, 11) and rewritten.nodes == 11
    site = report.recipe.sites[0]
    assert (site.concat, site.conv) == ("cat", "reduce")
    assert site.new_ops[:3] == ["reduce/part0", "reduce/part1", "reduce/sum1"]
    assert set(site.new_ops) <= set(rewritten.order_names)
    assert rewritten.stats.cache == "miss" and rewritten.plan_id == ""  # planned afresh, not stored
    json.dumps(rewritten)
    # Score: the peak is the rewritten graph's; the report comes with the full plan.
    assert client.peak_bytes(model, rewrite=True) == rewritten.peak_bytes
    assert client.peak_bytes(model) == plain.peak_bytes
    [full] = list(client.score([model], rewrite=True, full_plan=True))
    assert full.error is None and full.peak_bytes == rewritten.peak_bytes
    assert full.plan.rewrite.recipe == report.recipe
    assert client.fits(model, rewritten.peak_bytes, rewrite=True)
    assert not client.fits(model, rewritten.peak_bytes, rewrite=False)


def test_rewrite_refusals(client):
    with pytest.raises(serenity.SerenityError) as raised:
        client.plan(diamond_graph(), rewrite=True)
    assert raised.value.code_name == "INVALID_ARGUMENT" and "ONNX models only" in raised.value.message
    [record] = list(client.score([diamond_graph()], rewrite=True))
    assert record.error.code == "INVALID_ARGUMENT"
    with pytest.raises(ValueError):
        client.plan(branches_model(), rewrite=True, order=[0, 1, 2, 3, 4, 5])
    with pytest.raises(ValueError):
        client.plan(branches_model(), rewrite="yes")
