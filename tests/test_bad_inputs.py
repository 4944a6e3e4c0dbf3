"""Bad input through the command lines, in subprocesses: exit 2, one line on stderr, no traceback, nothing written.

Each row is what a user might type; the run happens in an empty folder holding only a file (``afile``), a binary
file posing as a spec (``bin.toml``), a truncated TOML (``cut.toml``) and a results file that is not one
(``garbage.csv``), and a truncated ``baselines.csv``. After each command the folder must hold exactly those files.
"""

from __future__ import annotations

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest

CTASIM = [sys.executable, "-m", "ctasim"]
CTAHW = [sys.executable, "-m", "ctahw"]

BAD = [
    # (command, a word the one line must contain)
    (CTASIM + ["sweep", "fig5", "--set", "m=abc", "--out", "s.csv"], "integer"),
    (CTASIM + ["sweep", "fig5", "--set", "layers=abc", "--out", "s.csv"], "integer"),
    (CTASIM + ["sweep", "fig5", "--set", "layers=0", "--out", "s.csv"], ">= 1"),
    (CTASIM + ["sweep", "fig5", "--set", "layers=9", "--out", "s.csv"], "GPUs"),
    (CTASIM + ["sweep", "fig5", "--set", "m=1000000000000", "--out", "s.csv"], "--max-ctas"),
    (CTASIM + ["sweep", "fig5", "--set", "m=16777216", "--out", "s.csv"], "--max-ctas"),
    (CTASIM + ["sweep", "fig5", "--set", "m=1000", "--out", "s.csv"], "m"),
    (CTASIM + ["sweep", "fig5", "--set", "k=100", "--out", "s.csv"], "tile_k"),
    (CTASIM + ["sweep", "fig5", "--set", "hardware.nope=1", "--out", "s.csv"], "unknown"),
    (CTASIM + ["sweep", "fig5", "--set", "hardware.link_gbps=-5", "--out", "s.csv"], "positive"),
    (CTASIM + ["sweep", "fig5", "--set", "m", "--out", "s.csv"], "FIELD="),
    (CTASIM + ["sweep", "fig5", "--out", "s.csv"], "--set"),
    (CTASIM + ["sweep", "fig5", "--set", "m=1024", "--out", "s.txt"], ".csv"),
    (CTASIM + ["sweep", "fig5", "--set", "m=1024", "--out", "afile/s.csv"], "not a folder"),
    (CTASIM + ["run", "fig5", "--jitter", "-1"], "jitter"),
    (CTASIM + ["run", "fig5", "--jitter", "nan"], "jitter"),
    (CTASIM + ["run", "fig5", "--jitter", "5"], "jitter"),
    (CTASIM + ["run", "fig5", "--jitter", "abc"], "jitter"),
    (CTASIM + ["run", "fig5", "--max-ctas", "0"], "max-ctas"),
    (CTASIM + ["run", "fig5", "--max-ctas", "1000"], "--max-ctas"),
    (CTASIM + ["run", "bin.toml"], "not a text file"),
    (CTASIM + ["run", "cut.toml"], "not valid TOML"),
    (CTASIM + ["run", "no-such-experiment"], "no experiments spec"),
    (CTASIM + ["run", "fig5", "--out", "afile"], "not a folder"),
    (CTASIM + ["run", "fig5", "--out", "afile/x"], "not a folder"),
    (CTASIM + ["run", "fig5", "--format", "xlsx", "--out", "o"], "format"),
    (CTASIM + ["run", "fig5", "--seed", "x"], "seed"),
    (CTASIM + ["run", "fig5", "--seed", "-1", "--jitter", "0.01"], "seed"),
    (CTASIM + ["trace", "default", "--out", "afile"], "not a folder"),
    (CTASIM + ["trace", "raster", "--case", "m=7", "--out", "t"], "no case"),
    (CTASIM + ["trace", "raster", "--strategy", "nope", "--out", "t"], "no strategy"),
    (CTASIM + ["predict", "fig5", "--out", "afile"], "exists"),
    (CTASIM + ["predict", "fig5", "--out", "p", "--naive-from", "garbage.csv"], "baselines.csv"),
    (CTASIM + ["predict", "fig5", "--out", "p", "--harness", "nope"], "nope"),
    (CTASIM + ["compare", "nowhere", "nowhere-either", "--out", "r"], "no such"),
    (CTASIM + ["list", "extra"], "unrecognized"),
    (CTASIM + ["advise", "--model", "nope", "--hardware", "h200-x8"], "no models spec"),
    (CTASIM + ["advise", "--model", "llama3.1-8b"], "--model/--hardware"),
    (CTASIM + ["advise", "--model", "llama3.1-8b", "--hardware", "h200-x8", "--tokens", "abc"], "token"),
    (CTASIM + ["advise", "--model", "llama3.1-8b", "--hardware", "h200-x8", "--gpus", "9"], "has 8 GPUs"),
    (CTASIM + ["advise", "--model", "llama3.1-8b", "--hardware", "h200-x8", "--tokens", "1000"], "tile_m"),
    (CTASIM + ["run", "raster", "--jobs", "-1"], "jobs"),
    (CTASIM + ["run", "raster", "--scheduler", "no-port-here"], "--scheduler"),
    (CTASIM + ["frobnicate"], "invalid choice"),
    (CTASIM, "required"),
    (CTAHW + ["run", "fig5", "--dry-run", "--out", "afile"], "not a folder"),
    (CTAHW + ["run", "fig5", "--dry-run", "--reps", "0"], "--reps"),
    (CTAHW + ["run", "gemm", "--dry-run", "--ms", "abc"], "integers"),
    (CTAHW + ["run", "gemm", "--dry-run", "--ms", "0"], "--ms"),
    (CTAHW + ["run", "gemm", "--dry-run", "--h", "1000"], "multiple of 64"),
    (CTAHW + ["run", "gemm", "--dry-run", "--chunks", "0"], "--chunks"),
    (CTAHW + ["run", "fig5", "--dry-run", "--rest-ms", "-1"], "--rest-ms"),
    (CTAHW + ["build", "--jobs", "0"], "--jobs"),
    (CTAHW + ["build", "--only", "nope"], "unknown library"),
    (CTAHW + ["run", "fig5", "--dry-run", "--gate-ms", "nan"], "--gate-ms"),
    (CTAHW + ["run", "bin.toml", "--dry-run"], "not a text file"),
    (CTAHW + ["run", "ring1.toml", "--dry-run"], "placement"),
    (CTAHW + ["run", "reg16-mlp-chain-pair", "--dry-run", "--strategies", "tp,nope"], "nope"),
    (CTAHW + ["run", "gemm", "--dry-run", "--strategies", "tp"], "--strategies"),
    (CTASIM + ["run", "ring1.toml"], "placement"),
    (CTAHW + ["run", "fig5", "--dry-run", "--registration", "nowhere"], "registration"),
    (CTAHW + ["run", "gemm,frob", "--dry-run"], "no experiments spec"),
    (CTAHW + ["calibrate", "--dry-run", "--base", "nope"], "nope"),
    (CTAHW + ["calibrate", "--dry-run", "--out", "afile/p.toml"], "not a folder"),
    (CTAHW + ["calibrate", "--dry-run", "--reps", "0"], "--reps"),
    (CTAHW + ["calibrate", "--dry-run", "--probe-out", "afile"], "not a folder"),
    (CTAHW + ["calibrate", "--dry-run", "--no-memory", "--no-percta", "--no-fold", "--probe-out", "probes"], "--no-fold"),
    ([sys.executable, "-m", "ctasim.validation", "nowhere"], "no such file"),
    ([sys.executable, "-m", "ctasim.validation", "."], "truncated"),
    ([sys.executable, "-m", "ctasim.validation", "--runs", "nowhere"], "--runs"),
    ([sys.executable, "-m", "ctasim.validation", "--out", "afile"], "not a folder"),
]

FIXTURES = {"afile": b"a plain file\n", "bin.toml": b"\x00\x01\x02\xff\xfe", "cut.toml": b"[experiment\nname = \"x",
            "garbage.csv": b"\x00\x00not,a\x00results\n",
            "ring1.toml": b'[experiment]\nname = "r"\nhardware = "h200-x2-calibrated"\nworkload = "chain2-16384"\n'
                          b'[[experiment.strategy]]\nkind = "ctapipe"\ngpus = 1\nplacement = "ring"\n',
            "baselines.csv": b"experiment,backend,m,k,chunks,median_ms,compute_ms,copy_ms,idle_ms,ok\ngemm,cutlass,1024"}


def _run(cmd, tmp):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.getcwd(), os.environ.get("PYTHONPATH", "")]))
    return subprocess.run(cmd, cwd=tmp, capture_output=True, text=True, timeout=300, env=env)


def test_there_are_at_least_30_bad_inputs():
    assert len(BAD) >= 30


@pytest.mark.parametrize("chunk", range(4))
def test_bad_inputs_are_one_line_exit_2_and_leave_nothing(tmp_path_factory, chunk):
    rows = BAD[chunk::4]
    folders = []
    for i, _ in enumerate(rows):
        d = tmp_path_factory.mktemp(f"bad{chunk}-{i}")
        for name, data in FIXTURES.items():
            (d / name).write_bytes(data)
        folders.append(d)
    with ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(lambda a: _run(a[0][0], a[1]), zip(rows, folders)))
    bad = []
    for (cmd, word), d, r in zip(rows, folders, results):
        problems = _problems(word, d, r)
        if problems:
            bad.append(f"{' '.join(cmd[2:])}: {', '.join(problems)} :: {r.stderr.strip()[-300:]}")
    assert bad == []


def _problems(word: str, folder, r) -> list[str]:
    """What is wrong with how a bad input was handled (empty: exit 2, one line naming it, nothing written)."""
    lines = [l for l in r.stderr.splitlines() if l.strip()]
    left = sorted(p.name for p in folder.iterdir())
    problems = []
    if r.returncode != 2:
        problems.append(f"exit {r.returncode}")
    if len(lines) != 1:
        problems.append(f"{len(lines)} stderr lines")
    if "Traceback" in r.stderr:
        problems.append("traceback")
    if lines and word.lower() not in lines[0].lower():
        problems.append(f"no {word!r} in the message")
    if left != sorted(FIXTURES):
        problems.append(f"left behind: {sorted(set(left) - set(FIXTURES))}")
    return problems


def test_the_check_flags_a_command_that_succeeds_writes_or_raises(tmp_path):
    """The checker itself: a good command (exit 0, output written) and a traceback are both reported."""
    for name, data in FIXTURES.items():
        (tmp_path / name).write_bytes(data)
    ok = _run(CTASIM + ["run", "raster", "-q", "--out", "o"], tmp_path)
    assert ok.returncode == 0
    assert {"exit 0", "0 stderr lines", "left behind: ['o']"} <= set(_problems("x", tmp_path, ok))
    crash = _run([sys.executable, "-c", "import sys; sys.exit(1 / 0)"], tmp_path)
    assert "traceback" in _problems("x", tmp_path, crash)
