"""bench/hw/run_percta_plan.sh (no GPU: a stand-in nvidia-smi names one, a stand-in ctahw.percta records its
arguments): the checks before anything runs -- the arguments, the device tree, the plan's script in it, the GPU the
plan is registered for -- and a whole call of a made-up plan: the cases read from its script, one probe per H, the run
packed, and the exit status when a probe fails."""

from __future__ import annotations

import os
import shutil
import subprocess
import tarfile
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


PERCTA = """import pathlib, sys
args = sys.argv[1:]
out = pathlib.Path(args[0]); out.mkdir(parents=True)
(out / "args.txt").write_text(" ".join(args[1:]))
sys.exit(7 if "--h 300" in " ".join(args) else 0)
"""
"""The stand-in probe: writes its arguments into its output folder; fails (7) at H = 300."""


@pytest.mark.parametrize("hs, rc", [((100, 200), 0), ((100, 300), 5)])
def test_a_whole_call_reads_its_cases_from_the_plan(tmp_path, hs, rc):
    t = tmp_path / ".cache" / "pzz"
    (t / ".kcache").mkdir(parents=True)
    (t / "bench" / "hw").mkdir(parents=True)
    shutil.copy(ROOT / "bench/hw/device_env.sh", t / "bench/hw/device_env.sh")
    (t / "bench" / "planzz.py").write_text(f"M = 4096\nHS = {hs!r}\nRUNS = 3\nVARIANTS = ('a_v', 'b_v')\n")
    (t / "ctahw").mkdir()
    (t / "ctahw" / "__init__.py").write_text("")
    (t / "ctahw" / "percta.py").write_text(PERCTA)
    r = _run(tmp_path, "planzz", ".cache/pzz", "abc1234", "H100", gpu="NVIDIA H100 80GB HBM3, GPU-d3274ca1")
    assert r.returncode == rc, (r.stdout, r.stderr)
    assert "planzz: M = 4096, H = " + ",".join(map(str, hs)) + ", a_v,b_v, 3 runs each" in r.stdout
    with tarfile.open(tmp_path / "out" / "pzz" / "run.tar.gz") as tar:
        names = set(tar.getnames())
        assert {"run/env.txt", "run/log.txt", *(f"run/percta-H{h}.log" for h in hs)} <= names
        args = tar.extractfile(f"run/OUT_H{hs[0]}/args.txt").read().decode()
    assert args == f"--h {hs[0]} --ms 4096 --variants a_v,b_v --reps 3"
    if rc:
        assert "1 of the H failed" in r.stderr


@pytest.mark.parametrize("fails", [False, True])
def test_a_plans_before_command_runs_first_in_the_run_folder(tmp_path, fails):
    """Plan 91's BEFORE (its probe): run before the first H with {run} the run folder, its output in before.log; a
    failing one counts as a failure (exit 5) while the H still run."""
    t = tmp_path / ".cache" / "pyy"
    (t / ".kcache").mkdir(parents=True)
    (t / "bench" / "hw").mkdir(parents=True)
    shutil.copy(ROOT / "bench/hw/device_env.sh", t / "bench/hw/device_env.sh")
    (t / "bench" / "hw" / "stand_in_probe.py").write_text(
        "import pathlib, sys\nout = pathlib.Path(sys.argv[1]); out.mkdir(parents=True)\n"
        "(out / 'when.txt').write_text('ran')\nprint('probe ran')\n"
        f"sys.exit({3 if fails else 0})\n")
    (t / "bench" / "planyy.py").write_text("M = 4096\nHS = (100,)\nRUNS = 3\nVARIANTS = ('a_v',)\n"
                                           "BEFORE = 'python3 bench/hw/stand_in_probe.py {run}/probe'\n")
    (t / "ctahw").mkdir()
    (t / "ctahw" / "__init__.py").write_text("")
    (t / "ctahw" / "percta.py").write_text(PERCTA)
    r = _run(tmp_path, "planyy", ".cache/pyy", "abc1234", "H100", gpu="NVIDIA H100 80GB HBM3, GPU-d3274ca1")
    assert r.returncode == (5 if fails else 0), (r.stdout, r.stderr)
    assert "probe ran" in r.stdout and f"rc={3 if fails else 0}" in r.stdout
    with tarfile.open(tmp_path / "out" / "pyy" / "run.tar.gz") as tar:
        assert {"run/before.log", "run/probe/when.txt", "run/OUT_H100/args.txt"} <= set(tar.getnames())
    assert r.stdout.index("before (python3 bench/hw/stand_in_probe.py") < r.stdout.index("H = 100 rc=")  # first


def test_a_plan_with_hk_runs_each_h_at_its_own_k_into_its_own_folder(tmp_path):
    """Plan 95's cases: (H, K) pairs (``HK``), each probe given ``--k`` and its own folder OUT_H<h>_K<k>."""
    t = tmp_path / ".cache" / "pxx"
    (t / ".kcache").mkdir(parents=True)
    (t / "bench" / "hw").mkdir(parents=True)
    shutil.copy(ROOT / "bench/hw/device_env.sh", t / "bench/hw/device_env.sh")
    (t / "bench" / "planxx.py").write_text("M = 4096\nHS = (100, 100)\nHK = ((100, 64), (100, 128))\nRUNS = 2\n"
                                           "VARIANTS = ('a_v',)\n")
    (t / "ctahw").mkdir()
    (t / "ctahw" / "__init__.py").write_text("")
    (t / "ctahw" / "percta.py").write_text(PERCTA)
    r = _run(tmp_path, "planxx", ".cache/pxx", "abc1234", "H100", gpu="NVIDIA H100 80GB HBM3, GPU-d3274ca1")
    assert r.returncode == 0, (r.stdout, r.stderr)
    assert "planxx: M = 4096, H = 100:64,100:128, a_v, 2 runs each" in r.stdout
    with tarfile.open(tmp_path / "out" / "pxx" / "run.tar.gz") as tar:
        for k in (64, 128):
            args = tar.extractfile(f"run/OUT_H100_K{k}/args.txt").read().decode()
            assert args == f"--h 100 --k {k} --ms 4096 --variants a_v --reps 2"
            assert f"run/percta-H100_K{k}.log" in tar.getnames()
