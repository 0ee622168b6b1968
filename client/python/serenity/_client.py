"""serenity.Client: the Scheduler service over gRPC, for NAS pipelines."""

import collections
import concurrent.futures
import itertools
import random
import threading
import time
from collections.abc import Mapping

import grpc

from ._errors import SerenityError, from_rpc_error, read_error, status_code
from ._model import model_label, model_request
from ._options import plan_options
from ._records import Record, to_record
from ._sizes import positive_budget
from .v1 import scheduler_pb2, scheduler_pb2_grpc

# Retried with backoff: the server is away (restarting, draining) or busy.
# Never retried: INVALID_ARGUMENT, FAILED_PRECONDITION and the rest, which
# would fail again.
RETRYABLE = frozenset({grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.RESOURCE_EXHAUSTED})


def _retryable(error):
    """UNAVAILABLE, RESOURCE_EXHAUSTED, or a stream a proxy reset when its replica went away.

    gRPC reports an HTTP/2 RST_STREAM as INTERNAL ("Received RST_STREAM with
    error code 2"): nginx resets a stream whose upstream died after the reply
    began. The server never sends that, and Plan and Score are idempotent, so
    it is retried like UNAVAILABLE."""
    if error.code() in RETRYABLE:
        return True
    return error.code() == grpc.StatusCode.INTERNAL and "RST_STREAM" in (error.details() or "")
_MESSAGE_LIMIT = 256 * 1024 * 1024


def _read(path):
    if path is None:
        return None
    with open(path, "rb") as f:
        return f.read()


def _score_result(result, label):
    """A ScoreResult as a Record in the CLI's score line format."""
    record = to_record(result)
    code, message = record.pop("code"), record.pop("error")
    record["source"] = label
    record["error"] = None if code == 0 else Record(code=status_code(code).name, message=message)
    return record


class Client:
    """A connection to serenity-server.

    address: "host:port", or any gRPC target ("dns:///serenity:50051", "ipv4:10.0.0.1:50051,10.0.0.2:50051").
    balance=True spreads calls over every address the target resolves to (round_robin; for a headless
    Kubernetes Service, whose name resolves to every ready pod) instead of one connection. TLS by default: ca (PEM file of the server's CA;
    None: the system roots), cert and key (PEM files) for mTLS;
    plaintext=True for an unencrypted channel (loopback, tests). token: a
    bearer token (sent as "authorization: Bearer <token>"); refused over
    plaintext unless allow_insecure_token=True. timeout: seconds per unary
    call (None: none). retries: attempts after the first on UNAVAILABLE or
    RESOURCE_EXHAUSTED, with exponential backoff from `backoff` seconds up
    to `max_backoff`. Score streams use a channel (a TCP connection) of
    their own, so a long stream never starves plan() calls."""

    def __init__(self, address, *, plaintext=False, ca=None, cert=None, key=None, token=None, timeout=None,
                 retries=4, backoff=0.1, max_backoff=5.0, allow_insecure_token=False, workers=8, balance=False):
        if (cert is None) != (key is None):
            raise ValueError("give cert and key together (mTLS)")
        if plaintext and (ca or cert):
            raise ValueError("plaintext=True takes no TLS files")
        if token is not None and plaintext and not allow_insecure_token:
            raise ValueError("a token over plaintext crosses the network unencrypted; use TLS, or "
                             "allow_insecure_token=True on loopback")
        if retries < 0:
            raise ValueError("retries must not be negative")
        self.address = address
        self.timeout = timeout
        self.retries = retries
        self.backoff = backoff
        self.max_backoff = max_backoff
        self._metadata = (("authorization", f"Bearer {token}"),) if token else ()
        args = [("grpc.max_receive_message_length", _MESSAGE_LIMIT),
                ("grpc.max_send_message_length", _MESSAGE_LIMIT)]
        if balance:
            args.append(("grpc.lb_policy_name", "round_robin"))
            if ":///" not in address and not address.startswith(("ipv4:", "ipv6:", "unix:")):
                address = "dns:///" + address
        if plaintext:
            make = lambda extra: grpc.insecure_channel(address, options=args + extra)  # noqa: E731
        else:
            credentials = grpc.ssl_channel_credentials(root_certificates=_read(ca), private_key=_read(key),
                                                       certificate_chain=_read(cert))
            make = lambda extra: grpc.secure_channel(address, credentials, options=args + extra)  # noqa: E731
        self._channel = make([])
        # Its own subchannel pool: a separate connection, not a shared one.
        self._score_channel = make([("grpc.use_local_subchannel_pool", 1)])
        self._stub = scheduler_pb2_grpc.SchedulerStub(self._channel)
        self._score_stub = scheduler_pb2_grpc.SchedulerStub(self._score_channel)
        self._pool = concurrent.futures.ThreadPoolExecutor(max_workers=workers, thread_name_prefix="serenity")

    def close(self):
        """Closes both channels and the submit() pool."""
        self._pool.shutdown(wait=False, cancel_futures=True)
        self._channel.close()
        self._score_channel.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _sleep(self, attempt):
        delay = min(self.max_backoff, self.backoff * (2 ** attempt))
        time.sleep(delay * (0.5 + random.random() / 2))

    def _unary(self, method, request, label):
        for attempt in itertools.count():
            try:
                return method(request, timeout=self.timeout, metadata=self._metadata)
            except grpc.RpcError as error:
                if _retryable(error) and attempt < self.retries:
                    self._sleep(attempt)
                    continue
                raise from_rpc_error(error, label) from None

    def plan(self, model, budget=None, *, name=None, **options):
        """The plan of `model` (see serenity.model_request for what a model may be) as a Record in the
        CLI's JSON format: order, peak_bytes, lower_bound_bytes, certificate ("optimal", "best_found",
        "baseline"), arena, steps, step_bytes, baselines, ... budget: bytes or "2MiB". Options:
        time_limit, algorithm, objective, alignment, onchip, alias_views, count_weights, in_place,
        concat_in_place, dims, workspace, max_states, step_time_limit, order, fast, levels,
        switch_points, rewrite (True: identity graph rewriting of an ONNX model; the plan is the
        rewritten graph's and plan.rewrite reports the peak without, the sites applied and their
        recipe). SerenityError when the service refuses it."""
        request = model_request(model, name)
        options_message, given = plan_options(budget, **options)
        request.options.CopyFrom(options_message)
        request.given_order.CopyFrom(given)
        return to_record(self._unary(self._stub.Plan, request, model_label(model)))

    def submit(self, model, budget=None, **options):
        """plan() on a worker thread: a concurrent.futures.Future of the Record."""
        return self._pool.submit(self.plan, model, budget, **options)

    def get_plan(self, plan_id):
        """A plan the server stored (by its plan_id) for this tenant; SerenityError NOT_FOUND once gone."""
        return to_record(self._unary(self._stub.GetPlan, scheduler_pb2.GetPlanRequest(plan_id=plan_id), plan_id))

    def score(self, models, budget=None, *, full_plan=False, **options):
        """Scores many models over one Score stream, yielding a Record per model as each finishes (not in
        input order): index (position in `models`), id, source, peak_bytes, feasible, slack_bytes
        (peak - budget), certificate, lower_bound_bytes, cache, plan_id, total_ms, error (None, or
        {code, message} for a model that failed: one failure never fails the rest), and plan with
        full_plan=True. With rewrite=True, peak_bytes is the rewritten graph's; its report is
        plan.rewrite (ask full_plan=True for it). `models` is an iterable of models (read lazily,
        while results arrive) or a mapping {id: model}. When the stream breaks with UNAVAILABLE or
        RESOURCE_EXHAUSTED, the candidates without an answer are sent again on a new stream (up to
        `retries` times)."""
        options_message, given = plan_options(budget, **options)
        items = models.items() if isinstance(models, Mapping) else ((None, m) for m in models)
        source = enumerate(items)
        lock = threading.Lock()
        pending = collections.OrderedDict()  # index -> (id, label, ScoreRequest)
        local_errors = collections.deque()   # Records of models that could not be read
        state = {"exhausted": False}

        def candidates(resend):
            for request in resend:
                yield request
            for index, (ident, model) in source:
                label = model_label(model)
                ident = label if ident is None else str(ident)
                try:
                    request = model_request(model)
                except (OSError, ValueError, TypeError) as error:
                    local_errors.append(Record(index=index, id=ident, source=label, error=read_error(error)))
                    continue
                request.options.CopyFrom(options_message)
                request.given_order.CopyFrom(given)
                candidate = scheduler_pb2.ScoreRequest(id=str(index), request=request, full_plan=full_plan)
                with lock:
                    pending[index] = (ident, label, candidate)
                yield candidate
            state["exhausted"] = True

        attempt = 0
        while True:
            with lock:
                resend = [c for (_, _, c) in pending.values()]
            try:
                for result in self._score_stub.Score(candidates(resend), metadata=self._metadata):
                    index = int(result.id)
                    with lock:
                        ident, label, _ = pending.pop(index)
                    record = _score_result(result, label)
                    record["index"], record["id"] = index, ident
                    while local_errors:
                        yield local_errors.popleft()
                    yield record
            except grpc.RpcError as error:
                if _retryable(error) and attempt < self.retries:
                    self._sleep(attempt)
                    attempt += 1
                    continue
                raise from_rpc_error(error, f"{len(pending)} candidates unanswered") from None
            while local_errors:
                yield local_errors.popleft()
            with lock:
                done = state["exhausted"] and not pending
            if done:
                return
            if attempt >= self.retries:
                raise SerenityError(grpc.StatusCode.UNAVAILABLE,
                                    f"the Score stream ended with {len(pending)} candidates unanswered")
            attempt += 1

    def _score_one(self, model, budget, options):
        for record in self.score([model], budget, **options):
            if record["error"] is not None:
                raise SerenityError(status_code(record["error"]["code"]), record["error"]["message"],
                                    model_label(model))
            return record
        raise SerenityError(grpc.StatusCode.INTERNAL, "the Score stream returned no result", model_label(model))

    def peak_bytes(self, model, **options):
        """The least peak found for `model` in bytes (score only: no arena). fast=True: the best baseline."""
        return self._score_one(model, None, options)["peak_bytes"]

    def fits(self, model, budget, **options):
        """True when `model`'s peak fits `budget` (bytes or "2MiB")."""
        return self._score_one(model, positive_budget(budget), options)["feasible"]

    def slack(self, model, budget, **options):
        """peak - budget in bytes: > 0 violates the budget (Optuna's constraints_func convention)."""
        return self._score_one(model, positive_budget(budget), options)["slack_bytes"]
