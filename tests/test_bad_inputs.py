"""Bad input through the command lines, each in a process of its own: exit 2, one line on stderr, no traceback, nothing
written. The commands run through tests/bad_input_runner.py (one interpreter imports the project, a forked process
per command runs it as ``python -m`` does), which a test holds to real subprocesses.

Each row is what a user might type; the run happens in an empty folder holding only a file (``afile``), a binary
file posing as a spec (``bin.toml``), a truncated TOML (``cut.toml``) and a results file that is not one
(``garbage.csv``), and a truncated ``baselines.csv``. After each command the folder must hold exactly those files.

The same for every ``bench/`` script that writes into an output option, in-process (``main(argv)``; a subprocess
each would take most of the suite's time): an output path under ``afile`` is refused before anything runs.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.helpers import BENCH, load_bench

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
    (CTAHW + ["ptx-diff", "--base", "no-such-rev"], "no-such-rev"),
    (CTAHW + ["ptx-diff", "--base", "HEAD", "--jobs", "0"], "--jobs"),
    (CTAHW + ["ptx-diff", "--base", "HEAD", "--out", "afile/d"], "not a folder"),
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


RUNNER = Path(__file__).resolve().parent / "bad_input_runner.py"


def _run_many(cmds, folders):
    """Each ``python -m ...`` command of ``cmds`` run in its folder as :func:`_run` runs one, through
    tests/bad_input_runner.py: one interpreter imports the project once and forks a process per command (the same
    exit code and stderr, without ~0.6 s of imports each)."""
    assert all(c[0] == sys.executable and c[1] == "-m" for c in cmds), "the runner takes 'python -m' commands only"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.getcwd(), os.environ.get("PYTHONPATH", "")]))
    rows = [{"argv": c[1:], "cwd": str(d)} for c, d in zip(cmds, folders)]
    r = subprocess.run([sys.executable, str(RUNNER)], input=json.dumps(rows), capture_output=True, text=True,
                       timeout=600, env=env)
    assert r.returncode == 0, r.stderr[-2000:]
    return [SimpleNamespace(**x) for x in json.loads(r.stdout)]


def test_the_runner_reports_what_the_interpreter_does(tmp_path):
    """The runner against real subprocesses: the same exit code and stderr for a good command, a usage error, a bad
    input and an uncaught exception (a traceback, exit 1)."""
    cmds = [[sys.executable, "-m", "ctasim", "list"], [sys.executable, "-m", "ctasim", "--frob"],
            [sys.executable, "-m", "ctasim", "run", "nope"], [sys.executable, "-m", "json.tool", "missing.json"],
            [sys.executable, "-m", "bad_input_raises"]]
    (tmp_path / "bad_input_raises.py").write_text("raise ValueError('boom')\n")
    folders = [tmp_path] * len(cmds)
    many = _run_many(cmds, folders)
    for cmd, got in zip(cmds, many):
        want = _run(cmd, tmp_path)
        assert got.returncode == want.returncode, (cmd, got, want.stderr)
        if "bad_input_raises" in cmd[-1]:
            assert "ValueError: boom" in got.stderr and "Traceback" in got.stderr
        else:
            assert got.stderr.strip().splitlines()[-1:] == want.stderr.strip().splitlines()[-1:], cmd


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
    results = _run_many([cmd for cmd, _ in rows], folders)
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


OUTPUT_OPTION = re.compile(r"""add_argument\(\s*(?:["']-\w["']\s*,\s*)?["']--out["']|\bjudge_main\(|\bregistered_plan\.main\(""")
"""A ``bench/`` script that takes ``--out``: it adds the option, or its command is ``plan49_judge.judge_main``'s or
``registered_plan.main``'s."""

OTHER_OUTPUTS = {"mutation": "--workdir", "plan_judge": "--reports"}
"""Scripts whose folder written into is named by another option than ``--out``."""

NEEDS = {"plan38_judge": ["--fig4", "{run}", "--fig7", "{run}"], "plan40_judge": ["{run}"], "plan42_judge": ["{run}"],
         "plan49_judge": ["{run}"], "plan50_judge": ["{run}"], "plan52_judge": ["{run}"], "plan53_judge": ["{run}"],
         "plan54_judge": ["{run}"], "posthoc_onset": ["{run}", "reg25-nope"], "plan_judge": ["20"],
         "plan55_order_tiles": ["--judge", "{run}"], "plan56_gradual": ["--judge", "{run}"],
         "plan57_l2_hot": ["--judge", "{run}"],
         "plan58_gap_law": ["--judge", "{run}"], "plan59_adopted": ["--judge", "{run}"],
         "plan60_sm_groups": ["--judge", "{run}"], "plan61_state_prices": ["--judge", "{run}"],
         "plan62_gap_calibrate": ["--judge", "{run}"], "plan63_reference_scaled": ["--judge", "{run}"],
         "plan64_h100_datasheet": ["--judge", "{run}"], "plan65_h100_edge": ["--judge", "{run}"],
         "plan66_h100_tickets": ["--judge", "{run}"], "plan67_l2_reuse": ["--judge", "{run}"],
         "plan68_chain_reuse": ["--judge", "{run}"], "plan69_h100_own": ["--judge", "{run}"],
         "plan70_round0": ["--judge", "{run}"], "plan71_h100_clock": ["--judge", "{run}"],
         "plan72_h100_drift": ["--judge", "{run}"], "plan73_drift_absolute": ["--judge", "{run}"],
         "plan74_h100_blocks": ["--judge", "{run}"], "plan75_h100_exposed": ["--judge", "{run}"],
         "plan76_h100_exposed_default": ["--judge", "{run}"], "plan77_h100_pairs_edge": ["--judge", "{run}"],
         "plan78_hbm_bytes": ["--judge", "{run}"], "plan79_gemm_bytes": ["--judge", "{run}"],
         "plan80_traced_drift": ["--judge", "{run}"], "plan81_drift_tile_own": ["--judge", "{run}"],
         "plan82_judge": ["--reports", "{run}"], "plan83_alone_edge": ["--judge", "{run}"],
         "plan84_edge_runs": ["--judge", "{run}"], "plan85_grouped_kept": ["--judge", "{run}"],
         "plan86_x8_exposed": ["--judge", "{run}"],
         "plan87_exposed_rate": ["--judge", "{run}"], "plan88_local_spread": ["--judge", "{run}"],
         "plan89_adopted_alone": ["--judge", "{run}"], "plan90_cluster_wave0": ["--judge", "{run}"],
         "plan91_l2_rate_wave0": ["--judge", "{run}"], "plan92_tile_rate_wave0": ["--judge", "{run}"],
         "plan93_tile_rate_domain": ["--judge", "{run}"], "plan94_cold_wave0": ["--judge", "{run}"],
         "plan95_k_apart": ["--judge", "{run}"], "plan96_small_blocks": ["--judge", "{run}"],
         "plan97_small_gemms": ["--judge", "{run}"], "plan98_capped_drift": ["--judge", "{run}"],
         "plan99_capped_blocks": ["--judge", "{run}"], "plan100_block_gemms": ["--judge", "{run}"],
         "plan101_block_ops": ["--judge", "{run}"], "plan102_own_ops": ["--judge", "{run}"],
         "plan103_pass_rates": ["--judge", "{run}"], "plan104_reference_scaled": ["--judge", "{run}"],
         "plan105_long_k_route": ["--judge", "{run}"], "plan106_harness_or_unit": ["--judge", "{run}"],
         "plan107_tuned_harness": ["--judge", "{run}"], "plan108_reference_units": ["--judge", "{run}"]}
"""What each script's parser requires besides the output option ("{run}": an existing empty folder). No mode flag
(``--register``, ``--factor``): the output is checked as the arguments are parsed, so none is needed, and one here
would make a script that forgot the check do that mode's work (a registration written into bench/predictions)."""

DEADLINE_S = 20.0
"""A script still running after this long did not stop at its output check: it is stopped, not run whole."""


def bench_outputs() -> list[tuple[str, str, bool]]:
    """Every ``bench/*.py`` that writes into an output option, found by reading the sources: (script, option, whether
    the option names a file, as its ``parse_outputs(..., files=...)`` says)."""
    found = []
    for path in sorted(BENCH.glob("*.py")):
        src = path.read_text()
        if "__main__" not in src:
            continue  # a module the scripts share (bench/registered_plan.py), not a command
        flags = ["--out"] if OUTPUT_OPTION.search(src) else []
        for flag in flags + ([OTHER_OUTPUTS[path.stem]] if path.stem in OTHER_OUTPUTS else []):
            found.append((path.stem, flag, bool(re.search(rf"""files=\([^)]*["']{flag}["']""", src))))
    return found


@contextlib.contextmanager
def _deadline(seconds: float):
    """TimeoutError in the block after ``seconds`` (SIGALRM; in the main thread only, elsewhere no limit)."""
    if not hasattr(signal, "setitimer") or threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum, frame):
        raise TimeoutError(f"still running after {seconds:g} s: the output was not checked before the work")

    old = signal.signal(signal.SIGALRM, stop)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def _main_problems(main, argv, flag: str, bad, folder, capsys, deadline: float = DEADLINE_S) -> list[str]:
    """:func:`_problems` of ``main(argv)`` run in-process as its command would run: its return or SystemExit code the
    exit status, anything it raises a traceback (exit 1, named); the one line must name ``flag`` and ``bad``."""
    capsys.readouterr()
    code, crash, raised = 0, "", []
    try:
        with _deadline(deadline):
            code = main(argv)
    except SystemExit as e:
        code = e.code
    except Exception as e:  # noqa: BLE001 - what would reach the user as a traceback
        code, crash, raised = 1, f"Traceback (in-process)\n{type(e).__name__}: {e}\n", [f"{type(e).__name__}: {e}"]
    err = capsys.readouterr().err + crash
    return _problems(f"{flag}: {bad}", folder, SimpleNamespace(returncode=code, stderr=err)) + raised


def test_every_bench_output_under_a_file_is_refused_in_one_line_before_any_work(tmp_path, capsys):
    """Each script found by :func:`bench_outputs`, its output option under ``afile`` (``afile/sub``, ``afile/sub.csv``
    for a file): exit 2, one line naming the option and the path, no traceback, nothing written."""
    scripts = bench_outputs()
    names = {name for name, _, _ in scripts}
    assert len(scripts) >= 45 and {"plan50_judge", "posthoc_ticket_law", "sim_speed", "mutation"} <= names
    folder, run = tmp_path / "out", tmp_path / "run"
    folder.mkdir()
    run.mkdir()
    for name, data in FIXTURES.items():
        (folder / name).write_bytes(data)
    bad = []
    for name, flag, is_file in scripts:
        path = folder / "afile" / ("sub.csv" if is_file else "sub")
        argv = [a.replace("{run}", str(run)) for a in NEEDS.get(name, [])] + [flag, str(path)]
        problems = _main_problems(load_bench(name).main, argv, flag, path, folder, capsys)
        if list(run.iterdir()):
            problems.append(f"wrote into {run}")
        if problems:
            bad.append(f"{name} {flag}: {', '.join(problems)}")
    assert not bad, "\n".join(bad)


def test_the_in_process_check_flags_a_main_that_writes_raises_returns_0_or_runs_on(tmp_path, capsys):
    """The checker itself on stand-ins for a broken script's main: each is reported, a good one is not."""
    for name, data in FIXTURES.items():
        (tmp_path / name).write_bytes(data)
    bad = tmp_path / "afile" / "sub"

    def mkdirs(argv):  # no check: the folder made where it cannot be
        Path(argv[1]).mkdir(parents=True, exist_ok=True)
        return 0

    def half_written(argv):  # checks, but after writing
        (tmp_path / "half.csv").write_text("a\n")
        print(f"x: {argv[0]}: {argv[1]}: not a folder", file=sys.stderr)
        return 2

    def two_lines(argv):  # the usage block and the error
        print("usage: x [--out OUT]", file=sys.stderr)
        print(f"x: error: {argv[0]}: {argv[1]}: not a folder", file=sys.stderr)
        return 2

    def no_path(argv):
        print("x: error: bad output", file=sys.stderr)
        return 2

    def ignores(argv):  # takes the option and never looks at it
        return 0

    def runs_on(argv):
        while True:
            time.sleep(0.01)

    def good(argv):
        print(f"x: error: {argv[0]}: {argv[1]}: {bad.parent} is a file, not a folder", file=sys.stderr)
        raise SystemExit(2)

    def check(main, deadline=DEADLINE_S):
        return set(_main_problems(main, ["--out", str(bad)], "--out", bad, tmp_path, capsys, deadline))

    made = check(mkdirs)
    assert {"exit 1", "traceback"} <= made and any(p.startswith("NotADirectoryError") for p in made)
    assert check(half_written) == {"left behind: ['half.csv']"}
    (tmp_path / "half.csv").unlink()
    assert "2 stderr lines" in check(two_lines)
    assert check(no_path) == {f"no '--out: {bad}' in the message"}
    assert check(ignores) == {"exit 0", "0 stderr lines"}
    stopped = check(runs_on, deadline=0.2)
    assert {"exit 1", "traceback"} <= stopped and any(p.startswith("TimeoutError: still running") for p in stopped)
    assert check(good) == set()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(FIXTURES)
