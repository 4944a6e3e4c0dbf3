"""The scripts under ``bench/`` against the code they call, and the device scripts of ``bench/hw`` on a machine
without CuPy (no GPU; each check is shown to fail on a deliberately broken input).

* Every ``from ctasim... import NAME`` / ``from ctahw... import NAME`` / ``import ctasim.x`` of every ``bench/**/*.py``
  names a module and an attribute that exist, and so does every ``ALIAS.NAME`` of a module bound by such an import
  (``from ctahw import pipelined as pl`` ... ``pl._clusters``), read from the sources: a device script's imports
  mostly sit inside its ``main``, which nothing here runs to the end. A sibling script imported by name
  (``probe_common``, ``clock_trajectory``) is checked the same way against its file.
* Every ``bench/hw`` script is a ``main(argv=None)`` that does nothing at import; called in-process with a bad output
  path, a missing input or a bad value (:data:`BAD`), and with good arguments but no CuPy (:data:`NO_CUPY`), it
  exits 2 with one line on stderr, no traceback, nothing written, before any work.
* The two scripts ported from ``ctahw.baselines.Sweep`` to the device session (``ctapipe_checks.py``,
  ``ctapipe_persistent_diag.py``) call what they should, on a faked session.

Left out: what the scripts measure on a GPU (``tests/hw``, the device calls).
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import sys
import time
from pathlib import Path

import pytest

from tests.helpers import BENCH

ROOT = BENCH.parent
HW = BENCH / "hw"
PACKAGES = ("ctasim", "ctahw")


# --------------------------------------------------------------------------------------------------
# (a) imports of ctasim / ctahw names that exist


def _top_level_names(tree: ast.Module) -> set[str] | None:
    """The names a module's source binds at its top level (defs, classes, assignments, imports, in ``if`` / ``try``
    / ``with`` blocks too); None if it defines a module ``__getattr__`` (then any name may exist)."""
    names: set[str] = set()

    def targets(t):
        if isinstance(t, ast.Name):
            names.add(t.id)
        elif isinstance(t, (ast.Tuple, ast.List)):
            for e in t.elts:
                targets(e)
        elif isinstance(t, ast.Starred):
            targets(t.value)

    def block(body):
        for s in body:
            if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(s.name)
            elif isinstance(s, ast.Assign):
                for t in s.targets:
                    targets(t)
            elif isinstance(s, (ast.AnnAssign, ast.AugAssign)):
                targets(s.target)
            elif isinstance(s, ast.Import):
                names.update(a.asname or a.name.split(".")[0] for a in s.names)
            elif isinstance(s, ast.ImportFrom):
                names.update(a.asname or a.name for a in s.names)
            elif isinstance(s, ast.If):
                block(s.body)
                block(s.orelse)
            elif isinstance(s, ast.Try):
                block(s.body)
                for h in s.handlers:
                    block(h.body)
                block(s.orelse)
                block(s.finalbody)
            elif isinstance(s, (ast.With, ast.For, ast.While)):
                block(s.body)
    block(tree.body)
    return None if "__getattr__" in names else names


class Resolver:
    """Whether a module and a name in it exist: by importing it (every ctasim and ctahw module imports without
    CuPy), or, where the import fails, by its source's top-level names. Sibling scripts (``siblings``: stem ->
    file) are read, never imported."""

    def __init__(self, siblings: dict[str, Path] | None = None):
        self.siblings = siblings or {}
        self._mods: dict[str, object] = {}

    def source_of(self, module: str) -> Path | None:
        if module in self.siblings:
            return self.siblings[module]
        spec = None
        try:
            spec = importlib.util.find_spec(module)
        except (ImportError, ValueError):
            return None
        if spec is None or not spec.origin or not spec.origin.endswith(".py"):
            return None
        return Path(spec.origin)

    def module(self, module: str):
        """The imported module, a set of names (read from its source), or None if there is no such module."""
        if module in self._mods:
            return self._mods[module]
        got: object = None
        if module in self.siblings:
            got = _top_level_names(ast.parse(self.siblings[module].read_text()))
        elif module.split(".")[0] in PACKAGES and not module.endswith("__main__"):
            try:
                got = importlib.import_module(module)
            except ModuleNotFoundError as e:
                if e.name == module or module.startswith(f"{e.name}."):
                    got = None  # the module itself (or its package) is not there
                else:
                    got = self._from_source(module)
            except Exception:  # noqa: BLE001 - imports something missing here (CuPy, a GPU): read its source
                got = self._from_source(module)
        self._mods[module] = got
        return got

    def _from_source(self, module: str):
        src = self.source_of(module)
        if src is None:
            return None
        names = _top_level_names(ast.parse(src.read_text()))
        return names if names is not None else {"*"}

    def is_module(self, module: str) -> bool:
        return self.module(module) is not None

    def has(self, module: str, name: str) -> bool:
        """``name`` is defined in ``module`` (or is its submodule)."""
        mod = self.module(module)
        if mod is None:
            return False
        if isinstance(mod, set):
            return "*" in mod or name in mod or (module not in self.siblings and self.is_module(f"{module}.{name}"))
        return hasattr(mod, name) or self.is_module(f"{module}.{name}")


def _shadowed_attributes(tree: ast.Module, aliases: set[str]) -> set[int]:
    """The ids of the ``NAME.attr`` nodes whose ``NAME`` is, where they stand, a function's own variable (a parameter,
    an assignment, a loop or ``with`` target) rather than a module alias of the same name."""
    out: set[int] = set()

    def local_names(fn) -> set[str]:
        a = fn.args
        names = {x.arg for x in a.posonlyargs + a.args + a.kwonlyargs}
        names.update(x.arg for x in (a.vararg, a.kwarg) if x is not None)
        for n in ast.walk(fn):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                names.add(n.id)
            elif isinstance(n, ast.ExceptHandler) and n.name:
                names.add(n.name)
        return names & aliases

    def visit(node, hidden: frozenset):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            hidden = hidden | local_names(node)
        if isinstance(node, ast.Attribute) and hidden:
            root = node
            while isinstance(root, ast.Attribute):
                root = root.value
            if isinstance(root, ast.Name) and root.id in hidden:
                out.add(id(node))
        for child in ast.iter_child_nodes(node):
            visit(child, hidden)

    visit(tree, frozenset())
    return out


def missing_names(source: str, filename: str, resolver: Resolver) -> list[str]:
    """What ``source`` imports from ctasim / ctahw (or a sibling script) that does not exist: one line each,
    ``file:line: what``. Also each ``ALIAS.NAME`` where ``ALIAS`` is a module bound by such an import."""
    tree = ast.parse(source, filename)
    ours = lambda m: m.split(".")[0] in PACKAGES or m in resolver.siblings  # noqa: E731
    problems: list[str] = []
    aliases: dict[str, str] = {}  # local name -> module it is bound to
    for n in ast.walk(tree):
        if isinstance(n, ast.ImportFrom) and n.level == 0 and n.module and ours(n.module):
            if not resolver.is_module(n.module):
                problems.append(f"{filename}:{n.lineno}: no module {n.module}")
                continue
            for a in n.names:
                if a.name == "*":
                    continue
                if not resolver.has(n.module, a.name):
                    problems.append(f"{filename}:{n.lineno}: {n.module} has no {a.name}")
                elif resolver.is_module(f"{n.module}.{a.name}") and n.module not in resolver.siblings:
                    aliases[a.asname or a.name] = f"{n.module}.{a.name}"
        elif isinstance(n, ast.Import):
            for a in n.names:
                if not ours(a.name):
                    continue
                if not resolver.is_module(a.name):
                    problems.append(f"{filename}:{n.lineno}: no module {a.name}")
                elif a.asname:
                    aliases[a.asname] = a.name
                else:
                    aliases.setdefault(a.name.split(".")[0], a.name.split(".")[0])
    shadowed = _shadowed_attributes(tree, set(aliases))
    for n in ast.walk(tree):  # ALIAS.NAME(.NAME...) on a module alias: the longest module prefix, then one name
        if id(n) in shadowed:
            continue
        chain, root = [], n
        while isinstance(root, ast.Attribute):
            chain.insert(0, root.attr)
            root = root.value
        if not (chain and isinstance(root, ast.Name) and root.id in aliases):
            continue
        module = aliases[root.id]
        for i, name in enumerate(chain):
            if not resolver.has(module, name):
                problems.append(f"{filename}:{n.lineno}: {module} has no {name} "
                                f"({'.'.join([root.id] + chain[:i + 1])})")
                break
            if not resolver.is_module(f"{module}.{name}"):
                break
            module = f"{module}.{name}"
    return sorted(set(problems), key=lambda p: (p.split(":")[0], int(p.split(":")[1]), p))


def bench_sources() -> list[Path]:
    return sorted(p for p in BENCH.rglob("*.py") if "results" not in p.relative_to(BENCH).parts)


def import_problems(paths) -> list[str]:
    """:func:`missing_names` of every source in ``paths``, each resolving its sibling scripts' names."""
    problems = []
    for p in paths:
        siblings = {q.stem: q for q in p.parent.glob("*.py") if q != p}
        problems += missing_names(p.read_text(), str(p.relative_to(ROOT)), Resolver(siblings))
    return problems


def test_every_bench_script_imports_names_that_exist():
    """Each ``bench/**/*.py``: its ctasim / ctahw imports (function bodies included) and its module aliases'
    attributes, against the code at HEAD. A script whose import was renamed away (``ctahw.baselines.Sweep``, now
    ``Session``) fails here, not on the next device call."""
    paths = bench_sources()
    assert len(paths) >= 60 and HW / "ctapipe_checks.py" in paths
    assert import_problems(paths) == []


def test_every_project_source_imports_names_that_exist():
    """The same over ``ctasim``, ``ctahw`` and ``tests`` (function-level imports and the GPU tests of ``tests/hw``,
    which no CPU run executes, included)."""
    paths = sorted(p for d in ("ctasim", "ctahw", "tests") for p in (ROOT / d).rglob("*.py"))
    assert len(paths) >= 150 and ROOT / "tests/hw/test_hw_gpu.py" in paths
    assert import_problems(paths) == []


def test_the_import_check_reports_a_name_that_is_gone():
    """The checker on made-up sources: the Sweep import acf0209 removed, a private helper since moved
    (``pl._clusters``), a module that does not exist, a missing name of a sibling script; the good ones pass."""
    r = Resolver({"probe_common": HW / "probe_common.py"})
    bad = ("from ctahw.baselines import Sweep, SweepConfig\n"
           "def main():\n"
           "    from ctahw import pipelined as pl\n"
           "    import ctasim.nowhere\n"
           "    from probe_common import no_gpu\n"
           "    import ctasim.spec\n"
           "    return pl._clusters(1, 2), pl.variant_plan, ctasim.spec.load_hardwar\n")
    assert missing_names(bad, "x.py", r) == [
        "x.py:1: ctahw.baselines has no Sweep",
        "x.py:4: no module ctasim.nowhere",
        "x.py:5: probe_common has no no_gpu",
        "x.py:7: ctahw.pipelined has no _clusters (pl._clusters)",
        "x.py:7: ctasim.spec has no load_hardwar (ctasim.spec.load_hardwar)",
    ]
    shadow = ("from ctasim import ticket_rate as tr\n"
              "def span(tr):\n"
              "    return tr.ops\n"  # a parameter named like the alias: not the module
              "def rate():\n"
              "    return tr.ops\n")  # the module: reported
    assert missing_names(shadow, "s.py", r) == ["s.py:5: ctasim.ticket_rate has no ops (tr.ops)"]
    good = ("from ctahw.baselines import Session, SweepConfig\n"
            "import ctasim.spec\n"
            "import ctahw.pipelined as pl\n"
            "from ctasim import l2\n"
            "from probe_common import no_gpus, sweep_ms\n"
            "x = (pl.VARIANTS, pl._weights, l2.ticket_rereads, ctasim.spec.load_hardware, ctasim.plan)\n")
    assert missing_names(good, "y.py", r) == []


def test_the_import_check_reads_the_source_of_a_module_that_cannot_import(tmp_path, monkeypatch):
    """A module that fails to import (as one needing CuPy would) is judged by its top-level names."""
    pkg = tmp_path / "ctahw_fake"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "needs_gpu.py").write_text("import cupy_not_here\nfrom os import path as there\nX = 1\n"
                                      "try:\n    Y = 2\nexcept Exception:\n    Z = 3\nclass K:\n    inner = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(sys.modules[__name__], "PACKAGES", PACKAGES + ("ctahw_fake",))
    r = Resolver()
    src = "from ctahw_fake.needs_gpu import X, Y, Z, K, there, inner, nothing\n"
    assert missing_names(src, "z.py", r) == ["z.py:1: ctahw_fake.needs_gpu has no inner",
                                             "z.py:1: ctahw_fake.needs_gpu has no nothing"]


# --------------------------------------------------------------------------------------------------
# (b) the device scripts on bad input and without CuPy: one line, exit 2, nothing written, before any work

LIBRARIES = {"probe_common"}
"""``bench/hw`` modules that are imported by the scripts, not run."""

CPU_ONLY = {"convert_raw_traces", "copy_wait_report", "ctapipe_report", "summarize"}
"""``bench/hw`` scripts that read committed results and need no GPU."""

BAD = [
    # (script, argv, words the one line must hold); {afile}: a plain file, {nowhere}: a path that does not exist,
    # {tmp}: the (existing) folder holding afile
    ("activation_probe", ["{afile}/sub.csv"], "out: {afile}/sub.csv: {afile} is a file"),
    ("chain_probe", ["{afile}/sub"], "out: {afile}/sub: {afile} is a file"),
    ("clock_probe", ["{afile}/sub.json"], "out: {afile}/sub.json: {afile} is a file"),
    ("clock_probe", ["{tmp}/o.json", "--ms", "128,x"], "argument --ms: takes positive integers, comma-separated"),
    ("clock_trajectory", ["{afile}/sub.csv"], "out: {afile}/sub.csv: {afile} is a file"),
    ("convert_raw_traces", ["{nowhere}"], "{nowhere}: no such folder"),
    ("convert_raw_traces", ["{afile}", "--check"], "{afile}: not a folder"),
    ("copy_wait_probe", ["{afile}/sub.json"], "out: {afile}/sub.json: {afile} is a file"),
    ("copy_wait_probe", ["{tmp}/o.json", "--chunks", "0"], "argument --chunks: takes positive integers"),
    ("copy_wait_report", ["{nowhere}.json"], "{nowhere}.json: No such file"),
    ("copy_wait_report", ["{tmp}"], "{tmp}: Is a directory"),
    ("copy_wait_report", ["{afile}"], "{afile}: not a copy_wait_probe.py result"),
    ("ctapipe_checks", ["{afile}/sub.json"], "out: {afile}/sub.json: {afile} is a file"),
    ("ctapipe_checks", ["{tmp}/o.json", "--variants", "cutlass_ctapipe,nope"], "--variants: unknown 'nope'"),
    ("ctapipe_checks", ["{tmp}/o.json", "--ms", "4096,"], "argument --ms: takes positive integers"),
    ("ctapipe_epilogue_diag", ["{afile}/sub.jsonl"], "out: {afile}/sub.jsonl: {afile} is a file"),
    ("ctapipe_onegpu", ["{afile}/sub"], "out: {afile}/sub: {afile} is a file"),
    ("ctapipe_onegpu", ["{tmp}/o", "--variants", "nope"], "--variants: unknown 'nope'"),
    ("ctapipe_persistent_diag", ["nope"], "unknown variant 'nope'"),
    ("ctapipe_report", ["{nowhere}"], "{nowhere}: no such folder"),
    ("ctapipe_report", ["{tmp}"], "{tmp}: no baselines.csv"),
    ("epilogue_rowwise_probe", ["nope"], "invalid choice: 'nope'"),
    ("executor_overhead", ["{afile}/sub.csv"], "out: {afile}/sub.csv: {afile} is a file"),
    ("executor_overhead", ["{tmp}/o.csv", "--ms", "3072,-1"], "argument --ms: takes positive integers"),
    ("gemm_shape_probe", ["{afile}/sub.csv"], "out: {afile}/sub.csv: {afile} is a file"),
    ("gemm_bytes_probe", ["{afile}/sub", "{afile}"], "out: {afile}/sub: {afile} is a file"),
    ("gemm_bytes_probe", ["{tmp}/o", "{nowhere}.csv"], "No such file"),
    ("gemm_bytes_probe", ["{tmp}/o", "{afile}"], "needs columns ['m', 'n', 'k', 'raster', 'swizzle']"),
    ("hbm_bytes_probe", ["{afile}/sub", "{afile}"], "out: {afile}/sub: {afile} is a file"),
    ("hbm_bytes_probe", ["{tmp}/o", "{nowhere}.csv"], "No such file"),
    ("hbm_bytes_probe", ["{tmp}/o", "{afile}"], "needs columns ['group', 'h', 'm']"),
    ("l2_survival_probe", ["{afile}/sub"], "out: {afile}/sub: {afile} is a file"),
    ("l2_survival_probe", ["{tmp}/o", "--hot-mib", "100"], "--hot-mib must be in [0, 64]"),
    ("l2_survival_probe", ["{tmp}/o", "--hot-rounds", "0"], "--hot-rounds in 1..64"),
    ("l2_rate_probe", ["{afile}/sub"], "out: {afile}/sub: {afile} is a file"),
    ("l2_rate_probe", ["{tmp}/o", "--reps", "0"], "--reps must be in 1..100, got 0"),
    ("l2_rate_probe", ["{tmp}/o", "--iters", "0"], "--iters must be in 1..1000000, got 0"),
    ("mlp_block_breakdown", ["{afile}/sub.csv"], "out: {afile}/sub.csv: {afile} is a file"),
    ("mlp_block_breakdown", ["{tmp}/o.csv", "--model", "nope"], "no models spec named 'nope'"),
    ("mlp_block_breakdown", ["{tmp}/o.csv", "--ms", "4096,x"], "argument --ms: takes positive integers"),
    ("mlp_block_breakdown", ["{tmp}/o.csv", "--tune-rounds", "0"], "--tune-rounds: 0 is not a positive integer"),
    ("persistent_tile_cv", ["{tmp}/o.json", "--ms", "0"], "argument --ms: takes positive integers"),
    ("order_trace_probe", ["{afile}/sub"], "out: {afile}/sub: {afile} is a file"),
    ("pass_rate_probe", ["{afile}/sub.csv"], "out: {afile}/sub.csv: {afile} is a file"),
    ("persistent_tile_cv", ["{afile}/sub.json"], "out: {afile}/sub.json: {afile} is a file"),
    ("power_probe", ["{afile}/sub", "--kernels", "a=128x256x64"], "out: {afile}/sub: {afile} is a file"),
    ("protocol_stress", ["--out", "{afile}/sub"], "--out: {afile}/sub: {afile} is a file"),
    ("run_length_probe", ["{afile}/sub.csv"], "out: {afile}/sub.csv: {afile} is a file"),
    ("summarize", ["{nowhere}"], "{nowhere}: no such folder"),
    ("summarize", ["{tmp}"], "no baselines.csv, baselines_config.json, calibration.json"),
]
"""Bad input per script: an output under a plain file, a missing or wrong input, a bad value."""

NO_CUPY = {
    "activation_probe": ["{tmp}/o.csv"], "chain_probe": ["{tmp}/o"], "clock_probe": ["{tmp}/o.json"],
    "clock_trajectory": ["{tmp}/o.csv"], "copy_wait_probe": ["{tmp}/o.json"], "ctapipe_checks": ["{tmp}/o.json"],
    "ctapipe_epilogue_diag": ["{tmp}/o.jsonl"], "ctapipe_onegpu": ["{tmp}/o"],
    "ctapipe_persistent_diag": ["cutlass_ctapipe_p_trace"], "epilogue_rowwise_probe": [],
    "executor_overhead": ["{tmp}/o.csv"], "gemm_shape_probe": ["{tmp}/o.csv"], "l2_survival_probe": ["{tmp}/o"],
    "l2_rate_probe": ["{tmp}/o"],
    "hbm_bytes_probe": ["{tmp}/o", str(ROOT / "bench/predictions/reg78-hbm-bytes/predicted.csv")],
    "gemm_bytes_probe": ["{tmp}/o", str(ROOT / "bench/predictions/reg79-gemm-bytes/predicted.csv")],
    "mlp_block_breakdown": ["{tmp}/o.csv"], "order_trace_probe": ["{tmp}/o"], "pass_rate_probe": ["{tmp}/o.csv"],
    "persistent_tile_cv": ["{tmp}/o.json"], "power_probe": ["{tmp}/o", "--kernels", "a=128x256x64"],
    "protocol_stress": ["--out", "{tmp}/o"], "run_length_probe": ["{tmp}/o.csv"],
}
"""Good arguments per device script (new output paths): without CuPy each must say so in one line, exit 2."""

DEADLINE_S = 10.0
"""A script still running after this long did not stop at its checks: it is stopped, not run whole."""


def command_scripts(folder: Path = HW) -> list[str]:
    """Every ``folder/*.py`` run as a command (all but :data:`LIBRARIES`), by stem."""
    return sorted(p.stem for p in folder.glob("*.py") if p.stem not in LIBRARIES)


def _is_path_setup(s: ast.stmt) -> bool:
    """``sys.path.insert(...)``, or an ``if`` holding only that: what a script may run at import besides defining."""
    if isinstance(s, ast.Expr) and isinstance(s.value, ast.Call):
        return ast.unparse(s.value.func).startswith("sys.path.")
    return isinstance(s, ast.If) and all(_is_path_setup(b) for b in s.body) and not s.orelse


def entry_problems(source: str) -> list[str]:
    """What keeps a script from being called in-process (empty: a ``main(argv=None)``, called only under
    ``if __name__ == "__main__"``, and nothing else run at import but imports, definitions and ``sys.path`` setup)."""
    tree = ast.parse(source)
    problems = []
    mains = [s for s in tree.body if isinstance(s, ast.FunctionDef) and s.name == "main"]
    if not mains:
        problems.append("no main()")
    else:
        args = mains[0].args
        if [a.arg for a in args.args] != ["argv"] or len(args.defaults) != 1 or \
                not (isinstance(args.defaults[0], ast.Constant) and args.defaults[0].value is None):
            problems.append("main does not take argv=None")
    guard = 'if __name__ == "__main__"'
    for i, s in enumerate(tree.body):
        if i == 0 and isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant):
            continue  # the docstring
        if isinstance(s, (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.ClassDef, ast.Assign, ast.AnnAssign)):
            continue
        if isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant) and isinstance(s.value.value, str):
            continue  # an attribute docstring
        if isinstance(s, ast.If) and ast.unparse(s.test).replace("'", '"') == guard[3:]:
            continue
        if _is_path_setup(s):
            continue
        problems.append(f"line {s.lineno}: runs at import ({ast.unparse(s).splitlines()[0][:60]})")
    if not any(isinstance(s, ast.If) and ast.unparse(s.test).replace("'", '"') == guard[3:] for s in tree.body):
        problems.append(f"no {guard}")
    return problems


def uncovered(scripts, rows) -> list[str]:
    """Scripts without a row in ``rows`` (names, or rows whose first item is the name)."""
    have = {r if isinstance(r, str) else r[0] for r in rows}
    return sorted(set(scripts) - have)


@pytest.fixture
def hw_path(monkeypatch):
    """``bench/hw`` on ``sys.path``, as ``python bench/hw/X.py`` has it (``probe_common``, ``clock_trajectory``)."""
    monkeypatch.syspath_prepend(str(HW))


def _load(name: str):
    """The script as a module (loaded in the check: a script that fails at import is a traceback there)."""
    from tests.helpers import load_bench

    return load_bench(f"hw/{name}")


def _listing(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def call_problems(main, argv, word: str, folder: Path, capsys, deadline: float = DEADLINE_S) -> list[str]:
    """What is wrong with ``main(argv)`` run in-process on bad input (empty: exit 2 by return or SystemExit, one
    non-empty stderr line holding ``word``, no traceback, ``folder`` as it was, within ``deadline`` s)."""
    import signal
    import threading

    before = _listing(folder)
    capsys.readouterr()
    code, crash = 0, ""
    alarm = hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()

    def stop(signum, frame):
        raise TimeoutError(f"still running after {deadline:g} s")

    old = signal.signal(signal.SIGALRM, stop) if alarm else None
    if alarm:
        signal.setitimer(signal.ITIMER_REAL, deadline)
    try:
        code = main(argv)
    except SystemExit as e:
        code = e.code
    except BaseException as e:  # noqa: BLE001 - what would reach the user as a traceback
        code, crash = 1, f"Traceback (in-process)\n{type(e).__name__}: {e}\n"
    finally:
        if alarm:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, old)
    err = capsys.readouterr().err + crash
    lines = [line for line in err.splitlines() if line.strip()]
    problems = []
    if code != 2:
        problems.append(f"exit {code}")
    if len(lines) != 1:
        problems.append(f"{len(lines)} stderr lines")
    if "Traceback" in err:
        problems.append("traceback: " + crash.strip().splitlines()[-1] if crash else "traceback")
    if lines and word not in lines[0]:
        problems.append(f"no {word!r} in {lines[0][:200]!r}")
    after = _listing(folder)
    if after != before:
        problems.append(f"wrote {sorted(set(after) - set(before))}")
    return problems


def _fill(items, tmp: Path) -> list[str]:
    where = dict(afile=tmp / "afile", nowhere=tmp / "nowhere", tmp=tmp)
    return [a.format(**where) for a in items]


def test_every_bench_hw_script_is_a_main_that_does_nothing_at_import():
    scripts = command_scripts()
    assert len(scripts) >= 24 and {"ctapipe_checks", "summarize", "epilogue_rowwise_probe"} <= set(scripts)
    bad = {n: entry_problems((HW / f"{n}.py").read_text()) for n in scripts}
    assert {n: p for n, p in bad.items() if p} == {}


def test_every_bench_hw_script_has_a_bad_input_row_and_a_device_or_cpu_one():
    """A new script is covered: it needs a row of :data:`BAD`, and one of :data:`NO_CUPY` or :data:`CPU_ONLY`."""
    scripts = command_scripts()
    assert uncovered(scripts, BAD) == []
    assert uncovered(scripts, list(NO_CUPY) + sorted(CPU_ONLY)) == []
    assert not set(NO_CUPY) & CPU_ONLY and set(NO_CUPY) | CPU_ONLY <= set(scripts)


def _without_cupy():
    if importlib.util.find_spec("cupy") is not None:
        pytest.skip("CuPy is installed here: the scripts would go on to the GPU instead of refusing")


def test_bad_input_to_a_bench_hw_script_is_one_line_and_exit_2_before_any_work(tmp_path, capsys, hw_path):
    """Each row of :data:`BAD`, in-process in a folder holding only ``afile``: exit 2, one line naming the problem,
    no traceback, nothing written; the whole table in a few seconds (no script reaches its work)."""
    _without_cupy()
    (tmp_path / "afile").write_text("a plain file\n")
    t0 = time.perf_counter()
    bad = []
    for name, argv, word in BAD:
        problems = call_problems(lambda a, name=name: _load(name).main(a), _fill(argv, tmp_path),
                                 _fill([word], tmp_path)[0], tmp_path, capsys)
        if problems:
            bad.append(f"{name} {' '.join(argv)}: {', '.join(problems)}")
    assert bad == []
    assert time.perf_counter() - t0 < 30


def test_a_bench_hw_script_without_cupy_says_so_in_one_line_and_writes_nothing(tmp_path, capsys, hw_path):
    """Each device script (:data:`NO_CUPY`) with good arguments and new output paths, CuPy absent: exit 2, one line
    naming CuPy, no traceback, nothing written (no output folder made before the GPU check)."""
    _without_cupy()
    bad = []
    for name, argv in NO_CUPY.items():
        problems = call_problems(lambda a, name=name: _load(name).main(a), _fill(argv, tmp_path),
                                 "CuPy is not installed", tmp_path, capsys)
        if problems:
            bad.append(f"{name}: {', '.join(problems)}")
    assert bad == []


def test_the_in_process_check_flags_a_main_that_succeeds_writes_talks_raises_or_runs_on(tmp_path, capsys):
    """The checker on stand-ins for a broken script's main; a good one passes."""
    out = tmp_path / "afile" / "sub"
    (tmp_path / "afile").write_text("x\n")

    def ignores(argv):  # takes the option and never looks at it
        return 0

    def mkdirs_first(argv):  # makes its output folder before it checks anything
        (tmp_path / "o").mkdir()
        print("x: error: out: bad", file=sys.stderr)
        return 2

    def usage_block(argv):  # argparse's usage and the error
        print("usage: x [-h] out", file=sys.stderr)
        print(f"x: error: out: {out}: is a file", file=sys.stderr)
        raise SystemExit(2)

    def no_cupy(argv):  # what an unguarded `import cupy` gives
        import cupy_is_not_here  # noqa: F401

    def runs_on(argv):
        while True:
            time.sleep(0.01)

    def wrong_reason(argv):
        print("x: error: something else", file=sys.stderr)
        return 2

    def good(argv):
        print(f"x: error: out: {out}: {out.parent} is a file, not a folder", file=sys.stderr)
        raise SystemExit(2)

    def check(main, deadline=DEADLINE_S):
        return call_problems(main, [str(out)], f"out: {out}", tmp_path, capsys, deadline)

    assert set(check(ignores)) == {"exit 0", "0 stderr lines"}
    made = check(mkdirs_first)
    assert "wrote ['o']" in made and any(p.startswith("no 'out: ") for p in made)
    (tmp_path / "o").rmdir()
    assert "2 stderr lines" in check(usage_block)
    crashed = check(no_cupy)
    assert "exit 1" in crashed and "traceback: ModuleNotFoundError: No module named 'cupy_is_not_here'" in crashed
    stopped = check(runs_on, deadline=0.2)
    assert "exit 1" in stopped and any("TimeoutError: still running after 0.2 s" in p for p in stopped)
    assert check(wrong_reason) == [f"no 'out: {out}' in 'x: error: something else'"]
    assert check(good) == []


def test_the_entry_check_flags_a_script_without_main_or_with_work_at_import(tmp_path):
    """The static checks on made-up scripts: top-level work (as epilogue_rowwise_probe.py had), a main without argv,
    no ``__main__`` guard; a script left out of the tables is named."""
    top_level = '"""doc."""\nimport sys\nimport cupy as cp\nx = cp.zeros(3)\nprint(x)\nfor i in range(2):\n    pass\n'
    assert entry_problems(top_level) == ["no main()", "line 5: runs at import (print(x))",
                                         "line 6: runs at import (for i in range(2):)",
                                         'no if __name__ == "__main__"']
    no_argv = 'def main():\n    return 0\nif __name__ == "__main__":\n    main()\n'
    assert entry_problems(no_argv) == ["main does not take argv=None"]
    good = ('"""doc."""\nimport sys\nfrom pathlib import Path\nROOT = Path(__file__).parent\n'
            'if str(ROOT) not in sys.path:\n    sys.path.insert(0, str(ROOT))\nsys.path.insert(0, "x")\n'
            'def main(argv=None):\n    return 0\n\n\nif __name__ == "__main__":\n    sys.exit(main())\n')
    assert entry_problems(good) == []
    for name in ("probe_common", "new_probe", "old_probe"):
        (tmp_path / f"{name}.py").write_text(good)
    assert command_scripts(tmp_path) == ["new_probe", "old_probe"]
    assert uncovered(command_scripts(tmp_path), [("old_probe", [], "")]) == ["new_probe"]


# --------------------------------------------------------------------------------------------------
# The two scripts ported from the Sweep class to the device session: what they call, on the CPU


class _FakeSession:
    """Stands in for ``ctahw.baselines.Session``: records its config; inputs are (gpu, shape, salt) tuples."""

    made: list = []

    def __init__(self, cfg, log=None):
        self.cfg, self.cp, self.devices = cfg, None, list(range(cfg.gpus))
        self.data = type("Data", (), {"rand": staticmethod(lambda gpu, shape, scale=1.0, salt=0: (gpu, shape, salt))})()
        _FakeSession.made.append(self)


@pytest.fixture
def fake_device(monkeypatch, hw_path):
    """GPUs that pass the check, and the device session faked (nothing here touches CUDA)."""
    import ctahw.baselines
    import ctahw.device

    _FakeSession.made = []
    monkeypatch.setattr(ctahw.device, "require_gpus", lambda n, sm90=True: [])
    monkeypatch.setattr(ctahw.baselines, "Session", _FakeSession)
    return _FakeSession


def test_ctapipe_checks_times_each_point_on_one_two_gpu_session(tmp_path, monkeypatch, capsys, fake_device):
    """``ctapipe_checks.py``: one 2-GPU session (cuBLAS only, one rep, no warm-up, a fresh seed), then
    ``remote_store_cost(session, m, variant, reps)`` for each M and variant in order; OUT.json holds the points."""
    import json

    import ctahw.pipelined

    calls = []

    def cost(sweep, m, variant, reps):
        calls.append((sweep, m, variant, reps))
        if variant == "cutlass_ctapipe_c12":
            raise RuntimeError("a failed point")
        return dict(m=m, variant=variant, producer_remote_ms=1.1, producer_local_ms=1.0, remote_over_local=0.1)

    monkeypatch.setattr(ctahw.pipelined, "remote_store_cost", cost)
    out = tmp_path / "new" / "remote_store.json"
    rc = _load("ctapipe_checks").main([str(out), "--ms", "1024,2048", "--variants",
                                       "cutlass_ctapipe,cutlass_ctapipe_c12", "--reps", "3"])
    assert rc == 1  # a point failed; the others were still measured
    (session,) = fake_device.made
    cfg = session.cfg
    assert (cfg.h, cfg.gpus, cfg.backends, cfg.reps, cfg.warmup) == (8192, 2, ("cublas",), 1, 0)
    assert [(c[0], c[1], c[2], c[3]) for c in calls] == [
        (session, 1024, "cutlass_ctapipe", 3), (session, 1024, "cutlass_ctapipe_c12", 3),
        (session, 2048, "cutlass_ctapipe", 3), (session, 2048, "cutlass_ctapipe_c12", 3)]
    written = json.loads(out.read_text())
    assert written["seed"] == cfg.seed and written["reps"] == 3
    assert [("error" in p) for p in written["points"]] == [False, True, False, True]
    assert "RuntimeError: a failed point" in written["points"][1]["error"]


def test_ctapipe_persistent_diag_builds_the_variants_runner_as_smoke_does(monkeypatch, capsys, fake_device):
    """``ctapipe_persistent_diag.py`` up to its launch: a 2-GPU session, the variant's plan of the M x 8192 2-layer
    chain, the runner with that variant's clusters (``ctasim.variants.clusters_of``), persistence and tracing."""
    from ctahw import pipelined as pl
    from ctahw import runner as rn
    from ctasim.variants import VARIANTS, clusters_of

    made = {}

    class Stop(Exception):
        pass

    def runner(plan, m, dims, x, ws, **kw):
        made.update(plan=plan, m=m, dims=dims, x=x, ws=ws, **kw)
        raise Stop

    monkeypatch.setattr(rn, "CtaPipeRunner", runner)
    with pytest.raises(Stop):
        _load("ctapipe_persistent_diag").main(["cutlass_ctapipe_pr21_trace", "--m", "1024"])
    (session,) = fake_device.made
    assert (session.cfg.h, session.cfg.gpus, session.cfg.backends) == (8192, 2, ("cublas",))
    v = VARIANTS["cutlass_ctapipe_pr21_trace"]
    plan = pl.variant_plan(pl.chain_plan(1024, 8192, 2), v)
    assert made["m"] == 1024 and made["dims"] == [8192] * 3
    assert made["clusters"] == clusters_of(plan, v) and made["persistent"] == v.persistent == "ring"
    assert made["trace"] is True and made["timeout_ns"] == int(2e9)
    first = min(plan.kernels(), key=lambda k: k.layer)
    assert made["x"] == (first.gpu, (1024, 8192), 977)
    assert [w[2] for w in made["ws"]] == [987, 988]


def test_the_block_breakdown_names_the_cutlass_order_each_item_ran():
    """mlp_block_breakdown.py's ``order`` column (registered plan 106 could only infer the tuned orders): GEMM1's
    items run GEMM1's tuned order, GEMM2's GEMM2's, the square GEMM its own, the block both; cuBLAS and the memory
    passes none."""
    order = _load("mlp_block_breakdown").item_order
    o = ("along_m/swizzle8", "heuristic/swizzle4", "along_n/swizzle2")
    want = {"gemm1_plain": o[0], "gemm1_gelu": o[0], "gemm1_relu_x4": o[0], "gemm1_x2": o[0], "swiglu": "",
            "gemm1_cublas": "", "gemm2_plain": o[1], "gemm2_residual": o[1], "gemm2_cublas": "", "rmsnorm": "",
            "layernorm": "", "square_gemm": o[2], "block": f"{o[0]}+{o[1]}"}
    assert {item: order(item, *o) for item in want} == want
