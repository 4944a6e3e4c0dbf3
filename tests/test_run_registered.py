"""bench/hw/run_registered.sh's command line (CPU only): what a device call runs, with python3 and the device
environment stubbed so that only the script's own choices are exercised."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "bench" / "hw" / "run_registered.sh"

pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")

STUB_ENV = """R=$OUT/run; mkdir -p "$R"
say() { echo "== $*"; }
run_begin() { :; }
run_end() { echo run_end; }
"""


def _run(tmp_path: Path, *args: str, gpu: str = "NVIDIA H200", want: str | None = None
         ) -> tuple[subprocess.CompletedProcess, list[str]]:
    hw = tmp_path / "bench" / "hw"
    hw.mkdir(parents=True, exist_ok=True)
    shutil.copy(SCRIPT, hw / "run_registered.sh")
    (hw / "device_env.sh").write_text(STUB_ENV)
    bin_ = tmp_path / "bin"
    bin_.mkdir(exist_ok=True)
    calls = tmp_path / "calls.txt"
    (bin_ / "python3").write_text(f'#!/usr/bin/env bash\necho "$*" >> {calls}\n')
    (bin_ / "python3").chmod(0o755)
    (bin_ / "nvidia-smi").write_text(f'#!/usr/bin/env bash\necho "{gpu}"\n')
    (bin_ / "nvidia-smi").chmod(0o755)
    env = dict(os.environ, PATH=f"{bin_}:{os.environ['PATH']}", OUT=str(tmp_path / "out"))
    env.pop("CTAHW_GPU", None)
    if want is not None:
        env["CTAHW_GPU"] = want
    p = subprocess.run(["bash", str(hw / "run_registered.sh"), *args], cwd=tmp_path, capture_output=True, text=True,
                       env=env)
    return p, calls.read_text().splitlines() if calls.exists() else []


def test_gemm_shapes_run_the_probe_first_and_no_hw_tests_skips_the_tests(tmp_path):
    p, calls = _run(tmp_path, "--no-hw-tests", "--gemm-shapes", "32768x5120x20480,16384x49152x12288", "reg25-a",
                    "reg25-b")
    assert p.returncode == 0, p.stderr
    assert len(calls) == 3 and "gemm_shape_probe.py" in calls[0]
    assert "--shapes 32768x5120x20480,16384x49152x12288" in calls[0] and "--reps 3" in calls[0]
    assert calls[1].startswith("-m ctahw.cli run reg25-a --registration bench/predictions/reg25-a --tune-rounds 2")
    assert calls[2].startswith("-m ctahw.cli run reg25-b")
    assert not any(c.startswith("-m pytest") for c in calls)


def test_by_default_the_gpu_tests_run_first_and_no_probe(tmp_path):
    p, calls = _run(tmp_path, "reg25-a")
    assert p.returncode == 0, p.stderr
    assert [c.split()[1] for c in calls] == ["pytest", "ctahw.cli"]


@pytest.mark.parametrize("args", [(), ("--gemm-shapes",), ("--bogus", "reg25-a"), ("--no-hw-tests",)])
def test_bad_command_lines_get_the_usage_line_and_exit_2(tmp_path, args):
    p, calls = _run(tmp_path, *args)
    assert p.returncode == 2 and p.stderr.strip().startswith("usage: run_registered.sh") and calls == []


def test_another_gpu_than_the_registrations_is_refused_before_anything_runs(tmp_path):
    p, calls = _run(tmp_path, "--no-hw-tests", "reg59-a", gpu="NVIDIA H100 80GB HBM3")
    assert p.returncode == 3 and calls == []
    err = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert len(err) == 1 and "'NVIDIA H100 80GB HBM3'" in err[0] and "for an H200" in err[0]
    p, calls = _run(tmp_path / "none", "--no-hw-tests", "reg59-a", gpu="")
    assert p.returncode == 3 and "'none'" in p.stderr and calls == []
    p, calls = _run(tmp_path / "named", "--no-hw-tests", "reg59-a", gpu="NVIDIA H100 80GB HBM3", want="H100")
    assert p.returncode == 0 and len(calls) == 1
