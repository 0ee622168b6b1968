#!/usr/bin/python3
"""serenity-client's JSON output against schema/serenity-output.schema.json.

Runs the real serenity-client (plan --local; score and get against a real
serenity-server on a free port) on tiny Graph models written here and, when
the shared benchmark models are beside the checkout, on one ONNX cell, and
validates EVERY line it writes against the schema, each against the line type
it must be (plan_line, score_line, error_line). Also checks that the schema is
strict: a renamed, retyped or missing field fails it.

Usage: cli_json_test.py --build-dir BUILD [--shared-dir SHARED]
(CTest runs it with /usr/bin/python3, whose python3-jsonschema it needs.)
"""
import argparse
import copy
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest
from xml.etree import ElementTree

import jsonschema

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCHEMA_PATH = os.path.join(REPO, "schema", "serenity-output.schema.json")
ARGS = None  # set in main

DIAMOND = """
name: "diamond"
ops { name: "a" type: "Conv" inputs: "x" inputs: "w" outputs: "t1" workspace_bytes: 512 }
ops { name: "b" type: "Relu" inputs: "x" outputs: "t2" }
ops { name: "c" type: "Relu" inputs: "t1" outputs: "t3" }
ops { name: "d" type: "Add" inputs: "t2" inputs: "t3" outputs: "y" }
tensors { name: "x" bytes: 1024 }
tensors { name: "w" bytes: 256 is_weight: true }
tensors { name: "t1" bytes: 4096 }
tensors { name: "t2" bytes: 2048 }
tensors { name: "t3" bytes: 4096 }
tensors { name: "y" bytes: 2048 }
inputs: "x"
outputs: "y"
"""

CHAIN = """
name: "chain"
ops { name: "p" type: "Relu" inputs: "in" outputs: "u" }
ops { name: "q" type: "Relu" inputs: "u" outputs: "v" }
ops { name: "r" type: "Relu" inputs: "v" outputs: "out" }
tensors { name: "in" bytes: 100 }
tensors { name: "u" bytes: 300 }
tensors { name: "v" bytes: 200 }
tensors { name: "out" bytes: 100 }
inputs: "in"
outputs: "out"
"""


def load_schema():
    with open(SCHEMA_PATH) as f:
        return json.load(f)


def validator(schema, line_type):
    """A validator of one line type: the schema with its top-level oneOf
    replaced by a reference to $defs/line_type."""
    sub = {k: v for k, v in schema.items() if k != "oneOf"}
    sub["$ref"] = "#/$defs/" + line_type
    return jsonschema.Draft202012Validator(sub)


def read_text(path):
    with open(path) as f:
        return f.read()


def parse_lines(stdout):
    """One JSON object per line, nothing else on stdout."""
    lines = stdout.splitlines()
    assert lines, "no output"
    return [json.loads(line) for line in lines]


def parse_pretty(stdout):
    """Concatenated indented objects."""
    decoder, objects, at = json.JSONDecoder(), [], 0
    while at < len(stdout):
        while at < len(stdout) and stdout[at].isspace():
            at += 1
        if at == len(stdout):
            break
        obj, at = decoder.raw_decode(stdout, at)
        objects.append(obj)
    return objects


class CliJsonTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.schema = load_schema()
        jsonschema.Draft202012Validator.check_schema(cls.schema)
        cls.any_line = jsonschema.Draft202012Validator(cls.schema)
        cls.validators = {t: validator(cls.schema, t) for t in ("plan_line", "score_line", "error_line")}
        cls.client = os.path.join(ARGS.build_dir, "client", "serenity-client")
        cls.server_binary = os.path.join(ARGS.build_dir, "server", "serenity-server")
        cls.dir = tempfile.mkdtemp(prefix="serenity_cli_json_")
        cls.diamond = cls.write("diamond.pbtxt", DIAMOND)
        cls.chain = cls.write("chain.pbtxt", CHAIN)
        cls.garbage = cls.write("garbage.onnx", "\x12\xff\xfe not a model at all")
        cls.missing = os.path.join(cls.dir, "missing.onnx")
        cell = os.path.join(ARGS.shared_dir or "", "bench", "models", "nasnet_a_cifar10_normal_cell.onnx")
        cls.cell = cell if ARGS.shared_dir and os.path.exists(cell) else None
        cls.server = None

    @classmethod
    def tearDownClass(cls):
        if cls.server is not None:
            cls.server.send_signal(signal.SIGTERM)
            cls.server.wait(timeout=30)
        shutil.rmtree(cls.dir, ignore_errors=True)

    @classmethod
    def write(cls, name, text):
        path = os.path.join(cls.dir, name)
        with open(path, "w", encoding="latin-1") as f:
            f.write(text)
        return path

    @classmethod
    def server_address(cls):
        """A real serenity-server on a free port, started once."""
        if cls.server is None:
            port_file = os.path.join(cls.dir, "port")
            log_path = os.path.join(cls.dir, "server.log")
            with open(log_path, "w") as log:
                cls.server = subprocess.Popen(
                    [cls.server_binary, "--plaintext", "--port", "0", "--port-file", port_file],
                    stdout=log, stderr=subprocess.STDOUT)
            for _ in range(600):
                if os.path.exists(port_file) and read_text(port_file).strip():
                    break
                if cls.server.poll() is not None:
                    raise AssertionError("serenity-server exited: " + read_text(log_path))
                time.sleep(0.05)
            cls.port = int(read_text(port_file).strip())
        return "127.0.0.1:%d" % cls.port

    def run_client(self, *args, stdin=None, expect=0):
        r = subprocess.run([self.client, *args], input=stdin, capture_output=True, text=True, timeout=300)
        self.assertEqual(r.returncode, expect, "%s\nstdout: %s\nstderr: %s" % (args, r.stdout, r.stderr))
        return r

    def check(self, line, line_type):
        """`line` is valid as `line_type` and as exactly one line type."""
        errors = sorted(self.validators[line_type].iter_errors(line), key=str)
        self.assertEqual(errors, [], "%s\n%s" % (line_type, "\n".join(e.message for e in errors[:5])))
        self.any_line.validate(line)
        self.assertEqual(list(line)[:2], ["schema_version", "source"])
        self.assertEqual(line["schema_version"], 1)

    def plan_keys(self, line):
        """The keys `line` must have, in field-number order: every required
        field of Plan, and the optional ones (sparsity) when present."""
        plan = self.schema["$defs"]["Plan"]
        return ["schema_version", "source"] + [k for k in plan["properties"] if k in plan["required"] or k in line]

    # --- plan --------------------------------------------------------------

    def test_plan_one_model_is_one_line(self):
        r = self.run_client("plan", self.diamond, "--local", "--json")
        self.assertEqual(r.stdout.count("\n"), 1)
        (line,) = parse_lines(r.stdout)
        self.check(line, "plan_line")
        self.assertEqual(line["source"], self.diamond)
        self.assertEqual(line["model"], "diamond")
        # Every field, in field-number order (the schema lists them so).
        self.assertEqual(list(line), self.plan_keys(line))
        self.assertNotIn("sparsity", line)
        self.assertEqual(line["certificate"], "optimal")
        self.assertEqual(len(line["step_bytes"]), line["nodes"])
        self.assertEqual(max(line["step_bytes"]), line["peak_bytes"])
        self.assertIsInstance(line["peak_bytes"], int)
        kinds = {b["kind"] for b in line["arena"]["buffers"]}
        self.assertIn("workspace", kinds)
        self.assertNotIn("serenity", line["baselines"])
        for name in ("file_order", "kahn", "greedy", "inductor", "xla"):
            self.assertEqual(len(line["baselines"][name]["step_bytes"]), line["nodes"])

    def test_plan_with_weights_budget_and_onchip(self):
        r = self.run_client("plan", self.diamond, "--local", "--json", "--count-weights", "--budget", "8000",
                            "--onchip", "4096,100000", expect=0)
        (line,) = parse_lines(r.stdout)
        self.check(line, "plan_line")
        self.assertEqual(line["memory_budget_bytes"], 8000)
        self.assertFalse(line["feasible"])
        self.assertEqual(line["headroom_bytes"], 8000 - line["peak_bytes"])
        self.assertIn("weight", {b["kind"] for b in line["arena"]["buffers"]})
        self.assertTrue(line["memory_model"]["count_weights"])
        self.assertEqual(len(line["traffic"]), 6)
        for order in line["traffic"]:
            self.assertEqual([p["onchip_bytes"] for p in order["points"]], [4096, 100000])
        fits = self.run_client("plan", self.diamond, "--local", "--json", "--budget", "1048576")
        (line,) = parse_lines(fits.stdout)
        self.check(line, "plan_line")
        self.assertTrue(line["feasible"])
        self.assertTrue(line["arena_fits_budget"])

    def test_plan_given_order_reports_serenity_baseline(self):
        order = self.write("order.json", json.dumps(["b", "a", "c", "d"]))
        r = self.run_client("plan", self.diamond, "--local", "--json", "--order", order)
        (line,) = parse_lines(r.stdout)
        self.check(line, "plan_line")
        self.assertEqual(line["order_names"], ["b", "a", "c", "d"])
        self.assertEqual(line["stats"]["algorithm"], "given")
        self.assertIn("serenity", line["baselines"])
        self.assertLessEqual(line["baselines"]["serenity"]["peak_bytes"], line["peak_bytes"])

    def test_several_models_and_failures_give_one_line_each(self):
        args = [self.diamond, self.missing, self.garbage, self.chain]
        r = self.run_client("plan", *args, "--local", "--json", expect=1)
        lines = parse_lines(r.stdout)
        self.assertEqual([l["source"] for l in lines], args)
        self.assertEqual(r.stderr, "")
        for line, arg in zip(lines, args):
            if arg in (self.missing, self.garbage):
                self.check(line, "error_line")
                self.assertEqual(line["model"], arg)
                self.assertNotIn("peak_bytes", line)
                self.assertTrue(line["error"]["message"])
            else:
                self.check(line, "plan_line")
        self.assertEqual(lines[1]["error"]["code"], "NOT_FOUND")
        self.assertEqual(lines[2]["error"]["code"], "INVALID_ARGUMENT")
        self.assertEqual(lines[3]["model"], "chain")

    # --- several memories and pinned buffers (issue 18) ----------------------

    def test_plan_with_memories_and_pins(self):
        for where in (["--local"], ["--server", self.server_address()]):
            r = self.run_client("plan", self.diamond, *where, "--json", "--memory", "sram:4KiB:32",
                                "--memory", "dram:64KiB", "--pin", "x=dram", "--pin", "y=sram@0")
            (line,) = parse_lines(r.stdout)
            self.check(line, "plan_line")
            sram, dram = line["memories"]
            self.assertEqual((sram["name"], sram["capacity_bytes"], sram["alignment"]), ("sram", 4096, 32))
            self.assertEqual((dram["name"], dram["alignment"]), ("dram", 64))  # --alignment's default
            placed = {b["tensor"]: (m["name"], b["offset"]) for m in line["memories"] for b in m["buffers"]}
            self.assertEqual(sorted(placed), sorted(b["tensor"] for b in line["arena"]["buffers"]))
            self.assertEqual(placed["x"][0], "dram")
            self.assertEqual(placed["y"], ("sram", 0))
            for m in line["memories"]:
                self.assertLessEqual(m["arena_bytes"], m["capacity_bytes"])
                self.assertEqual(m["byte_steps"],
                                 sum(b["size"] * (b["last_step"] - b["first_step"] + 1) for b in m["buffers"]))
                self.assertLessEqual(m["byte_steps"], m["byte_steps_bound"])
                self.assertGreater(m["access_bytes"], 0)
            # The first memory's capacity is the on-chip size of the traffic estimate.
            self.assertEqual([p["onchip_bytes"] for p in line["traffic"][0]["points"]], [4096])
            if where[0] == "--server":
                self.assertEqual(line["stats"]["cache"], "miss")
        # The bytes live at one step exceed both memories: an error line.
        r = self.run_client("plan", self.diamond, "--local", "--json", "--memory", "sram:1KiB", "--memory",
                            "dram:2KiB", expect=1)
        (line,) = parse_lines(r.stdout)
        self.check(line, "error_line")
        self.assertEqual(line["error"]["code"], "FAILED_PRECONDITION")
        self.assertIn("bytes are live, more than all memories hold together", line["error"]["message"])
        r = self.run_client("plan", self.diamond, "--local", "--json", "--memory", "sram:64KiB", "--pin",
                            "x=dram", expect=1)
        (line,) = parse_lines(r.stdout)
        self.check(line, "error_line")
        self.assertEqual(line["error"]["code"], "INVALID_ARGUMENT")
        self.assertIn("pinned to memory 'dram', which is not given", line["error"]["message"])

    # --- primitive selection (issue 19) --------------------------------------

    PRIMITIVES = {"ops": [{"op": "a", "alternatives": [
        {"name": "winograd", "time_us": 10, "workspace_bytes": 6000},
        {"name": "direct", "time_us": 30, "workspace_bytes": 0}]}]}

    def test_plan_objective_time(self):
        primitives = self.write("primitives.json", json.dumps(self.PRIMITIVES))
        # a's step holds x and t1 (5,120 bytes) beside its workspace.
        for where in (["--local"], ["--server", self.server_address()]):
            for budget, name, time_us in (("12000", "winograd", 10), ("10000", "direct", 30)):
                r = self.run_client("plan", self.diamond, *where, "--json", "--objective", "time", "--budget", budget,
                                    "--primitives", primitives)
                (line,) = parse_lines(r.stdout)
                self.check(line, "plan_line")
                self.assertEqual(list(line), self.plan_keys(line))
                self.assertTrue(line["feasible"])
                self.assertEqual(line["time"]["time_us"], time_us)
                self.assertEqual(line["time"]["certificate"], "optimal")
                self.assertEqual([(p["op"], p["name"]) for p in line["time"]["primitives"]], [("a", name)])
                self.assertEqual(line["stats"]["algorithm"], "time")
                if where[0] == "--server":
                    self.assertEqual(line["stats"]["cache"], "miss")
        # Below the least peak: feasible false, with the least-workspace choice.
        r = self.run_client("plan", self.diamond, "--local", "--json", "--objective", "time", "--budget", "9000",
                            "--primitives", primitives)
        (line,) = parse_lines(r.stdout)
        self.check(line, "plan_line")
        self.assertFalse(line["feasible"])
        self.assertEqual(line["peak_bytes"], 9216)
        self.assertEqual(line["time"]["primitives"][0]["name"], "direct")
        # The frontier: direct at the least peak, winograd beside x and t1.
        r = self.run_client("plan", self.diamond, "--local", "--json", "--pareto", "--primitives", primitives)
        (line,) = parse_lines(r.stdout)
        self.check(line, "plan_line")
        points = [(p["peak_bytes"], p["time_us"]) for p in line["time"]["pareto"]]
        self.assertEqual(points, [(9216, 30), (11120, 10)])
        self.assertTrue(line["time"]["pareto_proven"])
        self.assertEqual(line["peak_bytes"], 9216)
        r = self.run_client("plan", self.diamond, "--local", "--json", "--objective", "peak", "--max-time-us", "10",
                            "--primitives", primitives)
        (line,) = parse_lines(r.stdout)
        self.check(line, "plan_line")
        self.assertEqual((line["peak_bytes"], line["time"]["time_us"], line["time"]["max_time_us"]), (11120, 10, 10))
        # Primitives are read only with objective time; a bad file is named.
        r = self.run_client("plan", self.diamond, "--local", "--json", "--primitives", primitives, expect=1)
        (line,) = parse_lines(r.stdout)
        self.check(line, "error_line")
        self.assertIn("read only with objective time", line["error"]["message"])
        bad = self.write("bad_primitives.json", '{"ops": [{"op": "a", "alternatives": [{"nme": "x"}]}]}')
        r = self.run_client("plan", self.diamond, "--local", "--json", "--objective", "time", "--budget", "9000",
                            "--primitives", bad, expect=2)  # a usage error, as a bad --workspace file
        self.assertIn("is not a primitives file", r.stderr)
        self.assertIn("nme: Cannot find field", r.stderr)

    def test_plan_catalogue(self):
        # An ONNX model asking for time gets the built-in catalogue (docs/primitives.md); --no-catalogue none.
        model = os.path.join(REPO, "models", "inception_cell.onnx")
        common = ("plan", model, "--local", "--json", "--objective", "time", "--budget", "4MiB")
        (line,) = parse_lines(self.run_client(*common).stdout)
        self.check(line, "plan_line")
        self.assertGreater(line["time"]["catalogue_ops"], 0)
        self.assertEqual(len(line["time"]["primitives"]), line["time"]["catalogue_ops"])
        (line,) = parse_lines(self.run_client(*common, "--no-catalogue").stdout)
        self.check(line, "plan_line")
        self.assertEqual((line["time"]["catalogue_ops"], line["time"]["primitives"]), (0, []))

    def test_plan_budgets(self):
        primitives = self.write("primitives.json", json.dumps(self.PRIMITIVES))
        # One plan per budget: winograd fits 12000, direct 10000, nothing 9000.
        for where in (["--local"], ["--server", self.server_address()]):
            r = self.run_client("plan", self.diamond, *where, "--json", "--objective", "time", "--budgets",
                                "12000,10000,9000", "--primitives", primitives)
            (line,) = parse_lines(r.stdout)
            self.check(line, "plan_line")
            levels = line["time"]["levels"]
            self.assertEqual([(l["budget_bytes"], l["feasible"], l["time_us"]) for l in levels],
                             [(12000, True, 10), (10000, True, 30), (9000, False, 30)])
            self.assertEqual([l["primitives"][0]["name"] for l in levels], ["winograd", "direct", "direct"])
            self.assertEqual(levels[0]["moved_tensors"], [])
            self.assertEqual((line["memory_budget_bytes"], line["time"]["time_us"]), (12000, 10))
            self.assertEqual(levels[0]["arena"], line["arena"])
        r = self.run_client("plan", self.diamond, "--local", "--objective", "time", "--budgets", "12000,10000",
                            "--primitives", primitives)
        self.assertIn("levels       2 budgets", r.stdout)
        r = self.run_client("plan", self.diamond, "--local", "--json", "--objective", "time", "--budgets",
                            "12000,10000", "--budget", "12000", "--primitives", primitives, expect=1)
        (line,) = parse_lines(r.stdout)
        self.check(line, "error_line")
        self.assertEqual(line["error"]["code"], "INVALID_ARGUMENT")
        self.assertIn("not both", line["error"]["message"])
    def test_plan_primitive_baselines(self):
        primitives = self.write("primitives.json", json.dumps(self.PRIMITIVES))
        # At 10,000 bytes winograd does not fit a's step (11,120 bytes).
        r = self.run_client("plan", self.diamond, "--local", "--json", "--objective", "time", "--budget", "10000",
                            "--primitives", primitives, "--primitive-baselines")
        (line,) = parse_lines(r.stdout)
        self.check(line, "plan_line")
        baselines = {b["name"]: b for b in line["time"]["baselines"]}
        self.assertEqual(list(baselines), ["fastest", "least_workspace", "one:direct", "one:winograd", "order_first",
                                           "primitives_first", "file_order", "summed_footprint"])
        fastest = baselines["fastest"]
        self.assertEqual((fastest["time_us"], fastest["peak_bytes"], fastest["fits"]), (10, 11120, False))
        self.assertEqual((baselines["order_first"]["time_us"], baselines["order_first"]["fits"]), (30, True))
        self.assertEqual(line["time"]["time_us"], 30)
        self.assertGreater(line["time"]["summed_footprint_bytes"], 0)
        r = self.run_client("plan", self.diamond, "--local", "--primitive-baselines", expect=2)
        self.assertIn("--primitive-baselines needs --objective time", r.stderr)
        # The frontier as SVG: one dot per point.
        svg = os.path.join(self.dir, "pareto.svg")
        self.run_client("plan", self.diamond, "--local", "--pareto", "--primitives", primitives, "--pareto-svg", svg)
        with open(svg, "rb") as f:
            text = f.read()
        root = ElementTree.fromstring(text)  # well-formed
        self.assertEqual(root.tag, "{http://www.w3.org/2000/svg}svg")
        self.assertEqual(text.count(b'<circle class="point"'), 2)
        r = self.run_client("plan", self.diamond, "--local", "--pareto-svg", svg, expect=2)
        self.assertIn("--pareto-svg needs --pareto", r.stderr)

    # --- nested sparse models (issue 20) -------------------------------------

    LEVELS = {"levels": [{"name": "full", "density": {"w": 1}, "time_us": 100},
                         {"name": "half", "density": {"w": 0.5}, "time_us": 60}],
              "switch_points": ["a", "c"]}

    def test_plan_with_levels(self):
        levels = self.write("levels.json", json.dumps(self.LEVELS))
        r = self.run_client("plan", self.diamond, "--local", "--json", "--levels", levels, "--budget", "1MiB")
        (line,) = parse_lines(r.stdout)
        self.check(line, "plan_line")
        self.assertEqual(list(line), self.plan_keys(line))
        report = line["sparsity"]
        self.assertTrue(report["one_plan_for_all_levels"])
        self.assertEqual(report["activation_peak_bytes"], line["peak_bytes"])
        # w: 256 bytes with no shape: one 1 x 1 matrix of 256-byte elements.
        self.assertEqual([l["csr_weight_bytes"] for l in report["levels"]], [256 + 4 + 8, 256 + 4 + 8])
        self.assertEqual(report["densest_fitting_level"], "full")
        self.assertEqual([p["op"] for p in report["switch_points"]], ["a", "c"])
        for point in report["switch_points"]:
            self.assertEqual(point["step"], line["order_names"].index(point["op"]))
            self.assertEqual(len(point["switches"]), 1)
        summary = self.run_client("plan", self.diamond, "--local", "--levels", levels).stdout
        self.assertIn("one order and one arena serve every level", summary)

    def test_levels_through_the_server_and_its_cache(self):
        address = self.server_address()
        levels = self.write("levels_server.json", json.dumps(self.LEVELS))
        (first,) = parse_lines(self.run_client("plan", self.chain, "--server", address, "--json").stdout)
        self.assertNotIn("sparsity", first)
        # The same graph again (a cache hit) with levels: its own report.
        chain_levels = self.write("chain_levels.json", json.dumps({"levels": [{"name": "only"}],
                                                                    "switch_points": ["q"]}))
        (line,) = parse_lines(self.run_client("plan", self.chain, "--server", address, "--json",
                                              "--levels", chain_levels).stdout)
        self.check(line, "plan_line")
        self.assertEqual(line["stats"]["cache"], "local")
        self.assertEqual(line["order"], first["order"])
        self.assertEqual(line["sparsity"]["switch_points"][0]["op"], "q")
        live = line["sparsity"]["switch_points"][0]["live"]
        self.assertEqual([t["tensor"] for t in live], ["v"])
        (diamond,) = parse_lines(self.run_client("plan", self.diamond, "--server", address, "--json",
                                                 "--levels", levels).stdout)
        self.check(diamond, "plan_line")
        self.assertEqual(len(diamond["sparsity"]["levels"]), 2)

    def test_bad_levels_files_are_usage_errors(self):
        cases = {
            "{not json": "not JSON",
            json.dumps({"levels": []}): "must be a non-empty list",
            json.dumps({"levels": [{"name": "a", "density": {"w": 0.25}},
                                   {"name": "b", "density": {"w": 0.5}}]}): "do not nest",
            json.dumps({"levels": [{"name": "a", "dens": {}}]}): "unknown key 'dens'",
        }
        for i, (text, message) in enumerate(cases.items()):
            path = self.write("bad_levels_%d.json" % i, text)
            r = self.run_client("plan", self.diamond, "--local", "--json", "--levels", path, expect=2)
            self.assertEqual(r.stdout, "")
            self.assertIn(message, r.stderr)
        self.run_client("plan", self.diamond, "--local", "--levels", os.path.join(self.dir, "none.json"), expect=2)
        # What only the model shows (an unknown op or tensor) fails that model: an error line, exit 1.
        path = self.write("unknown_op.json", json.dumps({"levels": [{"name": "a", "density": {"w": 0.5}}],
                                                         "switch_points": ["nope"]}))
        r = self.run_client("plan", self.diamond, "--local", "--json", "--levels", path, expect=1)
        (line,) = parse_lines(r.stdout)
        self.check(line, "error_line")
        self.assertEqual(line["error"]["code"], "INVALID_ARGUMENT")
        self.assertIn("'nope'", line["error"]["message"])

    def test_pretty_is_the_same_objects_indented(self):
        compact = parse_lines(self.run_client("plan", self.chain, self.missing, "--local", "--json",
                                              expect=1).stdout)
        r = self.run_client("plan", self.chain, self.missing, "--local", "--pretty", expect=1)
        self.assertIn('\n  "schema_version": 1,\n  "source": ', r.stdout)
        pretty = parse_pretty(r.stdout)
        self.assertEqual(len(pretty), 2)
        self.check(pretty[0], "plan_line")
        self.check(pretty[1], "error_line")
        for a, b in ((compact[0], pretty[0]), (compact[1], pretty[1])):
            a, b = copy.deepcopy(a), copy.deepcopy(b)
            for line in (a, b):
                line.pop("stats", None)  # times differ between runs
            self.assertEqual(a, b)

    def test_onnx_cell_with_concat_slices(self):
        if self.cell is None:
            self.skipTest("shared benchmark models not found")
        r = self.run_client("plan", self.cell, "--local", "--json", "--concat-in-place", "--in-place")
        (line,) = parse_lines(r.stdout)
        self.check(line, "plan_line")
        self.assertTrue(any(b["slice_of"] for b in line["arena"]["buffers"]))
        self.assertTrue(line["memory_model"]["concat_in_place"])
        self.assertTrue(any(b["aliases"] for b in line["arena"]["buffers"]))

    def test_plan_rewrite(self):
        import numpy as np
        from onnx import TensorProto, helper, numpy_helper
        nodes, inits, xs = [], [], []
        for i in range(3):
            inits.append(numpy_helper.from_array(np.ones([16, 1, 1, 1], np.float32), f"wb{i}"))
            nodes.append(helper.make_node("Conv", ["in", f"wb{i}"], [f"x{i}"], name=f"branch{i}"))
            xs.append(f"x{i}")
        inits.append(numpy_helper.from_array(np.ones([2, 48, 1, 1], np.float32), "w"))
        nodes += [helper.make_node("Concat", xs, ["c"], name="cat", axis=1),
                  helper.make_node("Conv", ["c", "w"], ["y"], name="reduce")]
        graph = helper.make_graph(nodes, "branches", [helper.make_tensor_value_info("in", TensorProto.FLOAT, [1, 1, 8, 8])],
                                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2, 8, 8])], inits)
        path = os.path.join(self.dir, "branches.onnx")
        with open(path, "wb") as f:
            f.write(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]).SerializeToString())
        (line,) = parse_lines(self.run_client("plan", path, "--local", "--json", "--rewrite").stdout)
        self.check(line, "plan_line")
        rewrite = line["rewrite"]
        self.assertEqual(rewrite["sites_applied"], 1)
        self.assertLess(rewrite["peak_bytes_with"], rewrite["peak_bytes_without"])
        self.assertEqual(rewrite["recipe"]["sites"][0]["form"], "conv_sum")
        self.assertIn("reduce/sum2", line["order_names"])
        self.assertEqual(list(line), self.plan_keys(line))
        # Without --rewrite there is no rewrite object.
        (plain,) = parse_lines(self.run_client("plan", path, "--local", "--json").stdout)
        self.assertNotIn("rewrite", plain)
        r = self.run_client("plan", path, "--local", "--rewrite", "--order", self.write("o.json", "[0]"), expect=2)
        self.assertIn("--order cannot be combined with --rewrite", r.stderr)

    # --- score and get against a server ------------------------------------

    def test_score_lines(self):
        address = self.server_address()
        args = [self.diamond, self.missing, self.chain]
        r = self.run_client("score", *args, "--server", address, "--budget", "5000", "--json", expect=1)
        lines = parse_lines(r.stdout)
        self.assertEqual(sorted(l["source"] for l in lines), sorted(args))
        for line in lines:
            if line["source"] == self.missing:
                self.check(line, "error_line")
                self.assertEqual(line["error"]["code"], "NOT_FOUND")
                self.assertEqual(line["id"], "1")
                self.assertEqual(line["index"], -1)
            else:
                self.check(line, "score_line")
                self.assertNotIn("error", line)
                self.assertNotIn("code", line)
                self.assertEqual(line["slack_bytes"], line["peak_bytes"] - 5000)
                self.assertEqual(line["certificate"], "optimal")
                self.assertEqual(len(line["plan_id"]), 32)
        # The same models from a list file, and from a list on stdin.
        listing = self.write("models.txt", "# candidates\n\n%s\n  %s  \n" % (self.diamond, self.chain))
        from_file = parse_lines(self.run_client("score", "--from-file", listing, "--server", address,
                                                "--json").stdout)
        from_stdin = parse_pretty(self.run_client("score", "--from-file", "-", "--server", address, "--pretty",
                                                  stdin=read_text(listing)).stdout)
        for lines in (from_file, from_stdin):
            self.assertEqual(sorted(l["source"] for l in lines), sorted([self.diamond, self.chain]))
            for line in lines:
                self.check(line, "score_line")
        combined = parse_lines(self.run_client("score", self.diamond, "--from-file", listing, "--server", address,
                                               "--json").stdout)
        self.assertEqual(len(combined), 3)
        for line in combined:
            self.check(line, "score_line")
        self.run_client("score", "--from-file", os.path.join(self.dir, "no_such_list"), "--server", address,
                        expect=2)

    def test_get_returns_the_stored_plan(self):
        address = self.server_address()
        (planned,) = parse_lines(self.run_client("plan", self.diamond, "--server", address, "--json").stdout)
        self.check(planned, "plan_line")
        plan_id = planned["plan_id"]
        self.assertEqual(len(plan_id), 32)
        (got,) = parse_lines(self.run_client("get", plan_id, "--server", address, "--json").stdout)
        self.check(got, "plan_line")
        self.assertEqual(got["source"], plan_id)
        for key in ("model", "order", "peak_bytes", "arena", "step_bytes", "baselines", "plan_id"):
            self.assertEqual(got[key], planned[key], key)
        summary = self.run_client("get", plan_id, "--server", address).stdout
        self.assertIn("certificate optimal", summary)
        unknown = "0" * 32
        r = self.run_client("get", unknown, plan_id, "--server", address, "--json", expect=1)
        lines = parse_lines(r.stdout)
        self.check(lines[0], "error_line")
        self.assertEqual(lines[0]["error"]["code"], "NOT_FOUND")
        self.assertEqual(lines[0]["model"], unknown)
        self.check(lines[1], "plan_line")
        r = self.run_client("get", unknown, "--server", address, expect=1)
        self.assertIn("no stored plan", r.stderr)
        self.assertEqual(r.stdout, "")

    def test_unreachable_server_gives_an_error_line_per_model(self):
        for command in ("plan", "score"):
            r = self.run_client(command, self.diamond, self.chain, "--server", "127.0.0.1:1", "--timeout", "10",
                                "--json", expect=1)
            lines = parse_lines(r.stdout)
            self.assertEqual(sorted(l["source"] for l in lines), sorted([self.diamond, self.chain]), command)
            for line in lines:
                self.check(line, "error_line")
                self.assertEqual(line["error"]["code"], "UNAVAILABLE")

    # --- the schema is strict ----------------------------------------------

    def test_documented_examples_are_valid_lines(self):
        text = read_text(os.path.join(REPO, "docs", "json-format.md"))
        examples = [json.loads(block) for block in re.findall(r"```json\n(.*?)```", text, re.S)]
        self.assertEqual(len(examples), 3)
        for example, line_type in zip(examples, ("plan_line", "score_line", "error_line")):
            self.check(example, line_type)

    def test_schema_rejects_renamed_retyped_and_missing_fields(self):
        (line,) = parse_lines(self.run_client("plan", self.diamond, "--local", "--json").stdout)
        self.check(line, "plan_line")
        plan = self.validators["plan_line"]

        def invalid(mutate):
            broken = copy.deepcopy(line)
            mutate(broken)
            return not plan.is_valid(broken) and not self.any_line.is_valid(broken)

        def rename(obj, old, new):
            obj[new] = obj.pop(old)

        self.assertTrue(invalid(lambda l: rename(l, "peak_bytes", "peakBytes")))
        self.assertTrue(invalid(lambda l: rename(l["arena"]["buffers"][0], "size", "bytes")))
        self.assertTrue(invalid(lambda l: rename(l["stats"], "solve_ms", "solve_time")))
        self.assertTrue(invalid(lambda l: l.__setitem__("peak_bytes", str(l["peak_bytes"]))))
        self.assertTrue(invalid(lambda l: l.__setitem__("certificate", "CERTIFICATE_OPTIMAL")))
        self.assertTrue(invalid(lambda l: l["arena"]["buffers"][0].__setitem__("kind", 1)))
        self.assertTrue(invalid(lambda l: l["baselines"]["kahn"].__setitem__("step_bytes", [1.5])))
        self.assertTrue(invalid(lambda l: l.__setitem__("schema_version", 2)))
        self.assertTrue(invalid(lambda l: l.pop("step_bytes")))
        self.assertTrue(invalid(lambda l: l.pop("source")))
        self.assertTrue(invalid(lambda l: l["steps"][0].pop("workspace")))
        self.assertTrue(invalid(lambda l: l.__setitem__("error", {"code": "INTERNAL", "message": "x"})))


def main():
    global ARGS
    parser = argparse.ArgumentParser()
    parser.add_argument("--build-dir", required=True)
    parser.add_argument("--shared-dir", default=os.environ.get("SERENITY_SHARED_DIR"))
    ARGS, rest = parser.parse_known_args()
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)


if __name__ == "__main__":
    main()
