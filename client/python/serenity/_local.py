"""serenity.Local: the same calls as Client, planned in-process by serenity-client --local.

There is no Python binding of the C++ planner; Local runs
`serenity-client plan MODEL --local --json` per model (a subprocess) and
reads its JSON line, so plans are the same as the server's."""

import concurrent.futures
import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Mapping

import grpc
from google.protobuf import json_format

from ._errors import SerenityError, read_error, status_code
from ._model import model_label, model_request
from ._options import plan_options
from ._records import Record, to_records
from ._sizes import positive_budget
from .v1 import scheduler_pb2


def _find_binary(binary):
    binary = binary or os.environ.get("SERENITY_CLIENT") or shutil.which("serenity-client")
    if not binary or not os.access(binary, os.X_OK):
        raise FileNotFoundError("serenity-client not found: pass Local(binary=...), set SERENITY_CLIENT, or put "
                                "build/client/serenity-client on PATH (scripts/build.sh builds it)")
    return binary


class Local:
    """Client's methods without a server. binary: the serenity-client to run (default: $SERENITY_CLIENT,
    else serenity-client on PATH). workers: models planned at once by score() (default: the core
    count). timeout: seconds per model (None: none)."""

    def __init__(self, binary=None, *, workers=None, timeout=None):
        self.binary = _find_binary(binary)
        self.workers = workers or os.cpu_count() or 1
        self.timeout = timeout
        self._pool = concurrent.futures.ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="serenity")

    def close(self):
        """Stops the submit() pool."""
        self._pool.shutdown(wait=False, cancel_futures=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _args(self, directory, request, given):
        o = request.options
        args = []
        if o.memory_budget_bytes:
            args += ["--budget", str(o.memory_budget_bytes)]
        if o.time_limit_seconds:
            args += ["--time-limit", repr(o.time_limit_seconds)]
        if o.step_time_limit_seconds:
            args += ["--step-time-limit", repr(o.step_time_limit_seconds)]
        if o.algorithm:
            args += ["--algorithm", o.algorithm]
        if o.objective:
            args += ["--objective", o.objective]
        if o.alignment:
            args += ["--alignment", str(o.alignment)]
        if o.max_search_states:
            args += ["--max-states", str(o.max_search_states)]
        if o.onchip_bytes:
            args += ["--onchip", ",".join(str(b) for b in o.onchip_bytes)]
        for flag in ("alias_views", "count_weights", "in_place", "concat_in_place"):
            if getattr(o.memory_model, flag):
                args.append("--" + flag.replace("_", "-"))
        for name, value in o.dim_values.items():
            args += ["--dim", f"{name}={value}"]
        if o.workspace_bytes:
            path = os.path.join(directory, "workspace.json")
            with open(path, "w") as f:
                json.dump(dict(o.workspace_bytes), f)
            args += ["--workspace", path]
        if o.levels or o.switch_points:
            path = os.path.join(directory, "levels.json")
            levels = [{"name": l.name, "density": dict(l.density), "time_us": l.time_us} for l in o.levels]
            with open(path, "w") as f:
                json.dump({"levels": levels, "switch_points": list(o.switch_points)}, f)
            args += ["--levels", path]
        if o.rewrite:
            args.append("--rewrite")
        if o.rewrite_form:
            args += ["--rewrite-form", o.rewrite_form]
        for m in o.memories:
            args += ["--memory", f"{m.name}:{m.capacity_bytes}" + (f":{m.alignment}" if m.alignment else "")]
        for p in o.pins:
            args += ["--pin", f"{p.tensor}={p.memory}" + (f"@{p.offset}" if p.HasField("offset") else "")]
        if o.budgets:
            args += ["--budgets", ",".join(str(b) for b in o.budgets)]
        if o.pareto:
            args.append("--pareto")
        if o.max_pareto_points:
            args += ["--max-pareto-points", str(o.max_pareto_points)]
        if o.max_time_us:
            args += ["--max-time-us", repr(o.max_time_us)]
        if o.no_catalogue:
            args.append("--no-catalogue")
        if o.primitive_baselines:
            args.append("--primitive-baselines")
        if o.primitives or o.layout_transforms:
            path = os.path.join(directory, "primitives.json")
            primitive_set = scheduler_pb2.PrimitiveSet(ops=list(o.primitives),
                                                       layout_transforms=list(o.layout_transforms))
            with open(path, "w") as f:
                f.write(json_format.MessageToJson(primitive_set, preserving_proto_field_name=True))
            args += ["--primitives", path]
        if given.indices or given.names:
            path = os.path.join(directory, "order.json")
            with open(path, "w") as f:
                json.dump(list(given.indices) or list(given.names), f)
            args += ["--order", path]
        return args

    def _run(self, model, budget, name, options):
        request = model_request(model, name)
        options_message, given = plan_options(budget, **options)
        request.options.CopyFrom(options_message)
        label = model_label(model)
        with tempfile.TemporaryDirectory(prefix="serenity-") as directory:
            # The file's stem names the plan, as the server's model_name does.
            stem = request.model_name or "model"
            if request.HasField("graph"):
                path = os.path.join(directory, stem + ".pb")
                data = request.graph.SerializeToString()
            else:
                path = os.path.join(directory, stem + ".onnx")
                data = request.onnx_model
            with open(path, "wb") as f:
                f.write(data)
            command = [self.binary, "plan", path, "--local", "--json",
                       *self._args(directory, request, given)]
            try:
                done = subprocess.run(command, capture_output=True, text=True, timeout=self.timeout)
            except subprocess.TimeoutExpired:
                raise SerenityError(grpc.StatusCode.DEADLINE_EXCEEDED,
                                    f"serenity-client took more than {self.timeout} s", label) from None
        line = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""
        try:
            record = to_records(json.loads(line))
        except ValueError:
            raise SerenityError(grpc.StatusCode.INTERNAL if done.returncode != 2 else grpc.StatusCode.INVALID_ARGUMENT,
                                (done.stderr.strip() or f"serenity-client exited with {done.returncode}"),
                                label) from None
        record.pop("schema_version", None)
        record.pop("source", None)
        if "error" in record:
            raise SerenityError(status_code(record["error"]["code"]), record["error"]["message"], label)
        return record

    def plan(self, model, budget=None, *, name=None, **options):
        """As Client.plan."""
        return self._run(model, budget, name, options)

    def submit(self, model, budget=None, **options):
        """plan() on a worker thread: a concurrent.futures.Future."""
        return self._pool.submit(self.plan, model, budget, **options)

    def score(self, models, budget=None, *, full_plan=False, **options):
        """As Client.score: Records as each model finishes; a failed model gives a Record whose error
        is {code, message}."""
        items = list(models.items()) if isinstance(models, Mapping) else [(None, m) for m in models]
        with concurrent.futures.ThreadPoolExecutor(max_workers=self.workers) as pool:
            futures = {pool.submit(self._run, m, budget, None, options): (i, ident, m)
                       for i, (ident, m) in enumerate(items)}
            for future in concurrent.futures.as_completed(futures):
                index, ident, model = futures[future]
                label = model_label(model)
                record = Record(index=index, id=label if ident is None else str(ident), source=label)
                try:
                    plan = future.result()
                except SerenityError as error:
                    record["error"] = Record(code=error.code_name, message=error.message)
                except (OSError, ValueError, TypeError) as error:
                    record["error"] = read_error(error)
                else:
                    record.update(peak_bytes=plan["peak_bytes"], feasible=plan["feasible"],
                                  slack_bytes=-plan["headroom_bytes"] if plan["memory_budget_bytes"] else 0,
                                  certificate=plan["certificate"], lower_bound_bytes=plan["lower_bound_bytes"],
                                  cache="", plan_id="", total_ms=plan["stats"]["total_ms"], error=None)
                    if full_plan:
                        record["plan"] = plan
                yield record

    def peak_bytes(self, model, **options):
        """As Client.peak_bytes."""
        return self.plan(model, **options)["peak_bytes"]

    def fits(self, model, budget, **options):
        """As Client.fits."""
        return self.plan(model, positive_budget(budget), **options)["feasible"]

    def slack(self, model, budget, **options):
        """As Client.slack: peak - budget."""
        plan = self.plan(model, positive_budget(budget), **options)
        return plan["peak_bytes"] - plan["memory_budget_bytes"]
