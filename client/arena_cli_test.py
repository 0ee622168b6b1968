#!/usr/bin/python3
"""End-to-end test of `serenity-client arena` as a MiniMalloc drop-in.

Runs the real binary on a few instances (normal, pinned, over --capacity,
bad CSV, missing file), validates every --json line against
schema/arena-output.schema.json, and checks the --output CSV round trip,
the exit statuses and the --capacity message.

Usage: arena_cli_test.py SERENITY_CLIENT SCHEMA_JSON
"""

import csv
import json
import os
import subprocess
import sys
import tempfile
import unittest

import jsonschema

CLIENT = ""
SCHEMA = {}

NORMAL = "id,lower,upper,size\na,0,3,100\nb,2,4,50\nc,3,6,70\nd,0,6,8\n"
# b pinned at 0 and d at 200: a (live with both) must go elsewhere.
PINNED = "id,lower,upper,size,offset\na,0,3,100,\nb,2,4,50,0\nc,3,6,70,\nd,0,6,8,200\n"
OVERLAPPING_PINS = "id,lower,upper,size,offset\na,0,3,100,0\nb,2,4,50,60\n"
BAD = "id,lower,upper,size\na,0,3\n"


class ArenaCliTest(unittest.TestCase):

    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.addCleanup(self.dir.cleanup)

    def write(self, name, text):
        path = os.path.join(self.dir.name, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    def run_client(self, *args):
        return subprocess.run([CLIENT, "arena", "--time-limit", "0.2", *args], capture_output=True, text=True,
                              timeout=120)

    def json_lines(self, stdout):
        """Every line is one object, valid under the schema."""
        lines = stdout.splitlines()
        objects = []
        for line in lines:
            obj = json.loads(line)
            jsonschema.Draft202012Validator(SCHEMA).validate(obj)
            self.assertEqual(list(obj)[:2], ["schema_version", "source"])
            objects.append(obj)
        return objects

    def test_every_line_validates_and_failures_are_objects(self):
        paths = [self.write("normal.csv", NORMAL), self.write("pinned.csv", PINNED),
                 self.write("bad.csv", BAD), self.write("overlap.csv", OVERLAPPING_PINS),
                 os.path.join(self.dir.name, "missing.csv")]
        run = self.run_client("--json", *paths)
        self.assertEqual(run.returncode, 1, run.stderr)
        objects = self.json_lines(run.stdout)
        self.assertEqual([o["source"] for o in objects], paths)
        normal, pinned, bad, overlap, missing = objects
        self.assertEqual(normal["size_bytes"], 158)
        self.assertEqual(normal["lower_bound_bytes"], 158)
        self.assertEqual([b["id"] for b in normal["buffers"]], ["a", "b", "c", "d"])
        self.assertEqual(pinned["buffers"][1], {"id": "b", "offset": 0, "pinned": True})
        self.assertEqual(pinned["buffers"][3], {"id": "d", "offset": 200, "pinned": True})
        self.assertFalse(pinned["buffers"][0]["pinned"])
        self.assertGreaterEqual(pinned["buffers"][0]["offset"], 50)  # above b, which it meets at steps 2-3
        self.assertEqual(bad["error"]["code"], "INVALID_ARGUMENT")
        self.assertIn("line 2: expected 4 fields", bad["error"]["message"])
        self.assertEqual(overlap["error"]["code"], "INVALID_ARGUMENT")
        self.assertIn("overlap in memory", overlap["error"]["message"])
        self.assertEqual(missing["error"]["code"], "NOT_FOUND")

    def test_one_object_per_line_even_for_one_instance_and_pretty_on_request(self):
        path = self.write("normal.csv", NORMAL)
        run = self.run_client("--json", path)
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertEqual(len(run.stdout.splitlines()), 1)
        self.json_lines(run.stdout)
        pretty = self.run_client("--json", "--pretty", path)
        self.assertGreater(len(pretty.stdout.splitlines()), 1)
        jsonschema.Draft202012Validator(SCHEMA).validate(json.loads(pretty.stdout))

    def test_budget_adds_moves_and_refuses_to_move_pinned_buffers(self):
        normal, pinned = self.write("normal.csv", NORMAL), self.write("pinned.csv", PINNED)
        run = self.run_client("--json", "--budget", "1KiB", normal, pinned)
        self.assertEqual(run.returncode, 0, run.stderr)
        for obj in self.json_lines(run.stdout):
            self.assertEqual((obj["budget_bytes"], obj["moves"], obj["moved_bytes"]), (1024, [], 0))
        # The pinned arena ends at 208; fitting 160 would need moving pinned buffers.
        run = self.run_client("--json", "--budget", "160", pinned)
        self.assertEqual(run.returncode, 1)
        (obj,) = self.json_lines(run.stdout)
        self.assertEqual(obj["error"]["code"], "INVALID_ARGUMENT")
        self.assertIn("cannot move the pinned buffers", obj["error"]["message"])

    def test_capacity_failure_exits_1_with_the_best_size_and_the_bound(self):
        path = self.write("normal.csv", NORMAL)
        run = self.run_client("--capacity", "100", path)
        self.assertEqual(run.returncode, 1)
        self.assertIn("no packing fits --capacity 100 bytes: the best arena found is 158 bytes, "
                      "the lower bound 158 bytes", run.stderr)
        run = self.run_client("--json", "--capacity=100B", path)
        self.assertEqual(run.returncode, 1)
        (obj,) = self.json_lines(run.stdout)
        self.assertEqual(obj["error"]["code"], "RESOURCE_EXHAUSTED")
        run = self.run_client("--json", "--capacity", "1KiB", path)
        self.assertEqual(run.returncode, 0, run.stderr)
        (obj,) = self.json_lines(run.stdout)
        self.assertEqual(obj["capacity_bytes"], 1024)
        self.assertLessEqual(obj["size_bytes"], 1024)

    def test_output_round_trip(self):
        path = self.write("in.csv", "id,start,end,size\na,0,2,100\nb,2,3,50\nc,3,5,70\nd,0,5,8\n")
        out = os.path.join(self.dir.name, "out.csv")
        run = self.run_client(f"--input={path}", f"--output={out}", "--json")
        self.assertEqual(run.returncode, 0, run.stderr)
        (first,) = self.json_lines(run.stdout)
        with open(out) as f:
            rows = list(csv.reader(f))
        # MiniMalloc's solution format: its header, input order, half-open upper.
        self.assertEqual(rows[0], ["id", "lower", "upper", "size", "offset"])
        self.assertEqual([r[:4] for r in rows[1:]],
                         [["a", "0", "3", "100"], ["b", "2", "4", "50"], ["c", "3", "6", "70"], ["d", "0", "6", "8"]])
        self.assertEqual([int(r[4]) for r in rows[1:]], [b["offset"] for b in first["buffers"]])
        # Planning the output again checks it: the same offsets and size.
        again_out = os.path.join(self.dir.name, "again.csv")
        again = self.run_client("--input", out, "--output", again_out, "--json")
        self.assertEqual(again.returncode, 0, again.stderr)
        (second,) = self.json_lines(again.stdout)
        self.assertEqual(second["size_bytes"], first["size_bytes"])
        self.assertEqual([b["offset"] for b in second["buffers"]], [b["offset"] for b in first["buffers"]])
        self.assertTrue(all(b["pinned"] for b in second["buffers"]))
        with open(out) as a, open(again_out) as b:
            self.assertEqual(a.read(), b.read())

    def test_input_flags_come_before_positional_files(self):
        a, b = self.write("a.csv", NORMAL), self.write("b.csv", PINNED)
        run = self.run_client("--json", b, f"--input={a}")
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertEqual([o["source"] for o in self.json_lines(run.stdout)], [a, b])

    def test_invalid_utf8_ids_and_paths_still_give_valid_lines(self):
        # Bytes that are not UTF-8 (a buffer id, a file name) are replaced in the JSON, never a crash.
        path = os.path.join(self.dir.name, "latin1.csv")
        with open(path, "wb") as f:
            f.write(b"id,lower,upper,size\n\xffa,0,2,4\n")
        missing = os.path.join(self.dir.name, "missing_\udcff.csv")
        done = subprocess.run([CLIENT, "arena", "--json", path, missing], capture_output=True, timeout=300)
        self.assertEqual(done.returncode, 1, done.stderr)
        lines = [json.loads(l) for l in done.stdout.decode("utf-8").splitlines()]
        self.assertEqual(len(lines), 2)
        self.assertEqual(lines[0]["size_bytes"], 4)
        self.assertEqual(lines[1]["error"]["code"], "NOT_FOUND")

    def test_usage_errors_exit_2(self):
        path = self.write("normal.csv", NORMAL)
        run = self.run_client("--output", os.path.join(self.dir.name, "o.csv"), path, path)
        self.assertEqual(run.returncode, 2)
        self.assertIn("--output takes one instance", run.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.dir.name, "o.csv")))
        run = self.run_client("--capacity", "1.5.3", path)
        self.assertEqual(run.returncode, 2)
        self.assertIn("not a byte size", run.stderr)
        self.assertEqual(self.run_client().returncode, 2)


if __name__ == "__main__":
    CLIENT = sys.argv[1]
    with open(sys.argv[2]) as f:
        SCHEMA = json.load(f)
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    unittest.main(argv=sys.argv[:1])
