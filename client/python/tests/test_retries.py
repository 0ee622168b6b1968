"""Retry policy and Score re-sending, against an in-process fake Scheduler whose failures are scripted."""

import threading
from concurrent import futures

import grpc
import pytest

import serenity
from serenity.v1 import scheduler_pb2, scheduler_pb2_grpc
from conftest import chain_graph


class FakeScheduler(scheduler_pb2_grpc.SchedulerServicer):
    """Plan fails with the scripted codes, then answers; Score answers `answer_first` candidates of its
    first stream and then breaks it with `break_code`."""

    def __init__(self, plan_failures=(), break_code=None, answer_first=0):
        self.plan_failures = list(plan_failures)
        self.plan_calls = 0
        self.break_code = break_code
        self.answer_first = answer_first
        self.streams = []  # candidate ids seen, per stream
        self.lock = threading.Lock()

    def Plan(self, request, context):
        with self.lock:
            self.plan_calls += 1
            failure = self.plan_failures.pop(0) if self.plan_failures else None
        if failure is not None:
            context.abort(failure, f"scripted {failure.name}")
        return scheduler_pb2.Plan(model=request.model_name or request.graph.name, peak_bytes=42)

    def Score(self, request_iterator, context):
        seen = []
        with self.lock:
            self.streams.append(seen)
            first = len(self.streams) == 1
        for candidate in request_iterator:
            seen.append(candidate.id)
            if first and self.break_code is not None and len(seen) > self.answer_first:
                context.abort(self.break_code, "scripted break")
            yield scheduler_pb2.ScoreResult(id=candidate.id, peak_bytes=100 + int(candidate.id),
                                            feasible=True, certificate=scheduler_pb2.CERTIFICATE_OPTIMAL)


@pytest.fixture
def fake():
    servers = []

    def start(servicer):
        server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        scheduler_pb2_grpc.add_SchedulerServicer_to_server(servicer, server)
        port = server.add_insecure_port("127.0.0.1:0")
        server.start()
        servers.append(server)
        return serenity.Client(f"127.0.0.1:{port}", plaintext=True, timeout=10, retries=3, backoff=0.01)

    yield start
    for server in servers:
        server.stop(0)


@pytest.mark.parametrize("code", [grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.RESOURCE_EXHAUSTED])
def test_retries_unavailable_and_resource_exhausted(fake, code):
    servicer = FakeScheduler(plan_failures=[code, code])
    plan = fake(servicer).plan(chain_graph("m"))
    assert plan.peak_bytes == 42 and servicer.plan_calls == 3


@pytest.mark.parametrize("code", [grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.FAILED_PRECONDITION,
                                  grpc.StatusCode.PERMISSION_DENIED])
def test_never_retries_other_codes(fake, code):
    servicer = FakeScheduler(plan_failures=[code])
    with pytest.raises(serenity.SerenityError) as raised:
        fake(servicer).plan(chain_graph())
    assert raised.value.code == code and servicer.plan_calls == 1


def test_retries_are_bounded(fake):
    servicer = FakeScheduler(plan_failures=[grpc.StatusCode.UNAVAILABLE] * 10)
    with pytest.raises(serenity.SerenityError) as raised:
        fake(servicer).plan(chain_graph())
    assert raised.value.code == grpc.StatusCode.UNAVAILABLE and servicer.plan_calls == 4  # 1 + retries


def test_broken_score_stream_resends_only_unanswered_candidates(fake):
    servicer = FakeScheduler(break_code=grpc.StatusCode.UNAVAILABLE, answer_first=3)
    results = list(fake(servicer).score([chain_graph(f"m{i}") for i in range(8)]))
    assert sorted(r.index for r in results) == list(range(8))  # each exactly once
    assert all(r.error is None and r.peak_bytes == 100 + r.index for r in results)
    assert len(servicer.streams) == 2
    answered_first = set(servicer.streams[0][:3])
    assert answered_first.isdisjoint(servicer.streams[1])  # answered ones are not sent again
    assert set(servicer.streams[0]) - answered_first <= set(servicer.streams[1])  # unanswered ones are


def test_score_stream_broken_for_good_raises(fake):
    servicer = FakeScheduler(break_code=grpc.StatusCode.UNAUTHENTICATED, answer_first=1)
    with pytest.raises(serenity.SerenityError) as raised:
        list(fake(servicer).score([chain_graph(f"m{i}") for i in range(4)]))
    assert raised.value.code == grpc.StatusCode.UNAUTHENTICATED and len(servicer.streams) == 1
