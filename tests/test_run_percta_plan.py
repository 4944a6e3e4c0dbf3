"""bench/hw/run_percta_plan.sh's checks before anything runs (no GPU: a stand-in nvidia-smi names one): the arguments,
the device tree, the plan's script in it, and the GPU the plan is registered for."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "bench/hw/run_percta_plan.sh"


def _run(tmp_path, *args, gpu="NVIDIA H200, GPU-398827a0"):
    bin_ = tmp_path / "bin"
    bin_.mkdir(exist_ok=True)
    smi = bin_ / "nvidia-smi"
    smi.write_text(f"#!/bin/sh\necho '{gpu}'\n")
    smi.chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_}:{os.environ['PATH']}", "OUT": str(tmp_path / "out")}
    return subprocess.run(["bash", str(SCRIPT), *args], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=60)


@pytest.fixture
def tree(tmp_path):
    t = tmp_path / ".cache" / "p86"
    (t / ".kcache").mkdir(parents=True)
    (t / "bench").mkdir()
    (t / "bench" / "plan86_x8_exposed.py").write_text("")
    return t


def test_the_arguments_are_four(tmp_path):
    r = _run(tmp_path, "plan86_x8_exposed", ".cache/p86")
    assert r.returncode == 2 and r.stderr.strip() == "usage: run_percta_plan.sh PLAN TREE COMMIT GPU[,GPU...]"


def test_no_tree_or_no_plan_script_is_refused(tmp_path, tree):
    r = _run(tmp_path, "plan86_x8_exposed", ".cache/p99", "abc", "H100")
    assert r.returncode == 2 and "no device tree .cache/p99" in r.stderr
    r = _run(tmp_path, "plan99_none", ".cache/p86", "abc", "H100")
    assert r.returncode == 2 and "no bench/plan99_none.py in .cache/p86" in r.stderr


def test_a_gpu_the_plan_is_not_registered_for_is_refused_before_anything_runs(tmp_path, tree):
    r = _run(tmp_path, "plan86_x8_exposed", ".cache/p86", "abc", "H100")
    assert r.returncode == 3 and "registered for H100, not 'NVIDIA H200, GPU-398827a0'" in r.stderr
    assert not (tmp_path / "out").exists()
    r = _run(tmp_path, "plan86_x8_exposed", ".cache/p86", "abc", "H100,H200", gpu="NVIDIA B200, GPU-1")
    assert r.returncode == 3 and "registered for H100,H200" in r.stderr
