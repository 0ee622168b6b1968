"""examples/*.py run against a real server on loopback, as a user runs them."""

import os
import subprocess
import sys

import pytest

from conftest import REPO

EXAMPLES = os.path.join(REPO, "examples")


def run(server, script, *args):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    return subprocess.run([sys.executable, os.path.join(EXAMPLES, script), "--server", server.address,
                           "--plaintext", *args], capture_output=True, text=True, timeout=300, env=env)


def test_optuna_constraint(server):
    pytest.importorskip("optuna")
    done = run(server, "optuna_constraint.py", "--trials", "25", "--budget", "64KiB")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    fit, _, total = lines[0].split()[:3]
    assert total == "25" and 0 < int(fit) < 25, lines[0]  # the budget splits the search space
    assert lines[0].endswith("trials fit 65,536 bytes (fast baseline orders)")
    assert lines[-1].startswith("best: widths") and "fits" in lines[-1] and "does not fit" not in lines[-1]


def test_nas_filter(server):
    done = run(server, "nas_filter.py", "--candidates", "12", "--budget", "128KiB")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 13
    assert sorted(l.split(":")[0] for l in lines[:-1]) == sorted(f"candidate{i}" for i in range(12))
    fits = sum(l.endswith("fits") for l in lines[:-1])
    for line in lines[:-1]:  # "fits" means the printed peak is within 128 KiB
        peak = int(line.split("peak ")[1].split(" bytes")[0].replace(",", ""))
        assert (peak <= 128 * 1024) == line.endswith("fits"), line
    assert lines[-1] == f"{fits} of 12 candidates fit 128KiB"
    assert 0 < fits < 12  # the budget splits this population
