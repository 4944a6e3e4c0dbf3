"""Mutation testing of the checkers: does the test suite notice when a checker is broken?

    pip install -e '.[mutation]'
    python bench/mutation.py                       # every module below, results as label "after"
    python bench/mutation.py invariants --label before --jobs 2
    python bench/mutation.py --summary-only        # rebuild summary.md / summary.csv from the stored runs

A long profile (minutes per module): it is not part of the default pytest run, and it never touches the
working tree. For each module, in a fresh folder under ``--workdir``:

1. ``git clone`` of this repository (full history: the accuracy tests read the commits that registered the
   predictions), with the working tree's uncommitted and untracked files laid over it;
2. ``mutants/``, mutmut's copy that the tests run in, is made as a second clone of the same history, so that
   bench/, docs/ and specs/ are there, committed, as in the repository;
3. a ``[tool.mutmut]`` section that mutates that one module and selects only the tests that exercise it
   (``MODULES``), so that the stats pass and every mutant run only those;
4. ``mutmut run``; then every mutant's status is read back, and each survivor's diff is matched against
   ``bench/results/mutation/equivalent.toml`` (matched by function and changed lines, not by mutant number).

Results go to ``bench/results/mutation/<label>/<module>.json`` (counts, survivors with their diffs,
provenance) and ``summary.md`` / ``summary.csv`` (one row per module and label). The score is
killed / (mutants - equivalent); a timeout counts as killed (the test run did not pass).
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
import time
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from ctasim.cliargs import OneLineParser, parse_outputs  # noqa: E402

MUTMUT = "3.8.1"
"""The mutmut version the committed results come from (mutant numbering and operators depend on it)."""

MODULES: dict[str, tuple[str, list[str]]] = {
    # name: (file to mutate, the tests that exercise it)
    "invariants": ("ctasim/invariants.py", ["tests/test_invariants.py", "tests/test_chain.py"]),
    "accuracy": ("ctasim/accuracy.py", ["tests/test_accuracy.py", "tests/test_chain.py"]),
    "cases": ("ctasim/cases.py", ["tests/test_spec.py"]),
    "spec": ("ctasim/spec.py", ["tests/test_spec.py"]),
    "costs": ("ctasim/costs.py", ["tests/test_engine.py", "tests/test_plan.py", "tests/test_predict.py",
                                  "tests/test_chain.py"]),
    # the plan's regions and the strategies' use of them are what the plan executor's tests check (numpy, no GPU)
    "plan": ("ctasim/plan.py", ["tests/test_plan.py", "tests/test_engine.py", "tests/test_chain.py",
                                "tests/ctahw/test_executor.py"]),
    # the strategies (one module each), compare.py and machine.py, each
    # with its own tests/test_mutation_*.py written against the survivors
    **{f"strategies.{m}": (f"ctasim/strategies/{m}.py",
                           ["tests/test_plan.py", "tests/test_engine.py", "tests/test_chain.py",
                            "tests/test_predict.py", "tests/test_mutation_strategies.py", "tests/ctahw/test_executor.py"])
       for m in ("sequential", "microbatch", "tp", "hybrid", "ctapipe", "common")},
    "compare": ("ctasim/validation/traces.py", ["tests/test_compare.py", "tests/test_mutation_compare.py"]),
    "machine": ("ctasim/machine.py", ["tests/test_fabric.py", "tests/test_engine.py",
                                      "tests/test_mutation_machine.py"]),
    # the engine: every test that runs a plan reaches almost every function of it, so only the engine's own test
    # files (about 4 s together) and the tests written against its survivors
    "engine": ("ctasim/engine.py", ["tests/test_engine.py", "tests/test_chain.py", "tests/test_fabric.py",
                                    "tests/test_mutation_engine.py", "tests/test_memory.py"]),
}

MUTMUT_OPTIONS: dict[str, dict[str, float]] = {
    # [tool.mutmut] settings beside the defaults, per module. The engine: many of its mutants never end (a CTA
    # that never advances its grid position, a calendar that never empties); mutmut's default CPU limit, 30 x
    # (the tests' time + 1 s), would spend over two minutes on each, so the limit is 6 x (the tests' time + 1 s)
    "engine": {"timeout_multiplier": 3.0},
}

NOT_MUTATED: dict[str, list[str]] = {
    # functions left unmutated ("Class.method", or "Class" for all its methods): the predicted-vs-measured
    # scatter plot's styling (drawing, not judging) and the optional-import probe for tabulate
    "accuracy": ["_plot", "_has_tabulate"],
    # spec: only the validation is mutated (the _validate_*/validate_* checks, the *_from_dict builders,
    # require, build_section, coerce, table_of, parse_experiment); left out: the spec files' lookup and reading, the
    # field reference, the error's formatting and the dataclasses' derived quantities (the model's, tested
    # with the engine)
    "spec": ["_specs_dir", "_f", "SpecError", "KernelConfig", "Hardware", "Layer", "Workload", "Strategy",
             "read_toml", "resolve_ref", "load_hardware", "load_model", "load_workload", "read_experiment",
             "find_spec", "list_specs", "reference_markdown"],
}


def _split(path: str, functions: list[str]) -> tuple[list[str], list[tuple[int, int, int]], list[tuple[int, int, int]]]:
    """The file's lines and its functions and methods as (first line with decorators, def line, last line),
    left out (named in ``functions``, a class name leaving out its methods) and mutated."""
    import ast  # noqa: PLC0415

    src = (ROOT / path).read_text()
    left_out, mutated = [], []
    for node in ast.parse(src).body:
        members = [(node.name, node)] if isinstance(node, ast.FunctionDef) else [
            (f"{node.name}.{m.name}", m) for m in node.body if isinstance(m, ast.FunctionDef)
        ] if isinstance(node, ast.ClassDef) else []
        for name, fn in members:
            skip = name in functions or name.split(".")[0] in functions
            first = min([fn.lineno] + [d.lineno for d in fn.decorator_list])
            (left_out if skip else mutated).append((first, fn.lineno, fn.end_lineno))
    if unknown := [f for f in functions if not any(f == n or f == n.split(".")[0] for n in _names(src))]:
        raise SystemExit(f"NOT_MUTATED names no function of {path}: {unknown}")
    return src.splitlines(), left_out, mutated


def not_mutated_patterns(path: str, functions: list[str]) -> list[str]:
    """mutmut's do_not_mutate_patterns (one regex per source line) for every line of the named functions.

    mutmut matches each pattern against every line of the file, so a body line of a left-out function that also
    occurs in a mutated one (``continue``) is not listed: :func:`prepare` marks it ``# pragma: no mutate`` in the
    copy instead (:func:`shared_lines`)."""
    import re  # noqa: PLC0415

    lines, left_out, mutated = _split(path, functions)
    keep = {lines[i].strip() for a, _, b in mutated for i in range(a - 1, b)}
    out = set()
    for first, _, end in left_out:
        for i in range(first - 1, end):
            line = lines[i]
            if not line.strip():
                continue
            if line.strip() in keep:
                continue
            out.add(f"^{re.escape(line)}$")
    return sorted(out)


def shared_lines(path: str, functions: list[str]) -> list[int]:
    """Line numbers (1-based) of the left-out functions' lines that also occur in a mutated function."""
    lines, left_out, mutated = _split(path, functions)
    keep = {lines[i].strip() for _, a, b in mutated for i in range(a - 1, b)}
    return [i + 1 for _, a, b in left_out for i in range(a - 1, b) if lines[i].strip() and lines[i].strip() in keep]


def _names(src: str) -> list[str]:
    import ast  # noqa: PLC0415

    out = []
    for node in ast.parse(src).body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            out.append(node.name)
        if isinstance(node, ast.ClassDef):
            out += [f"{node.name}.{m.name}" for m in node.body if isinstance(m, ast.FunctionDef)]
    return out

OUT = ROOT / "bench" / "results" / "mutation"
EQUIVALENT = OUT / "equivalent.toml"

# Read back inside the work folder (mutmut reads its configuration from the current directory).
_COLLECT = r"""
import json, sys
from pathlib import Path
from mutmut.mutation.data import SourceFileMutationData
from mutmut.mutation.diff_apply import get_diff_for_mutant
from mutmut.stats import status_by_exit_code
path = Path(sys.argv[1])
m = SourceFileMutationData(path=path)
m.load()
out = []
for name, code in m.exit_code_by_key.items():
    status = status_by_exit_code[code]
    diff = []
    if status not in ("killed", "timeout"):
        d = get_diff_for_mutant(name, path=path)
        diff = [l for l in d.splitlines() if l[:1] in "-+" and not l.startswith(("---", "+++"))]
    out.append({"name": name, "status": status, "diff": diff})
json.dump(out, sys.stdout)
"""


def function_of(mutant: str) -> str:
    """``ctasim.invariants.x_check_queue__mutmut_12`` -> ``check_queue``; methods keep their class."""
    tail = mutant.rsplit(".", 1)[-1].rsplit("__mutmut_", 1)[0]
    tail = tail[2:] if tail.startswith("x_") else tail[1:] if tail.startswith("x") else tail
    return tail.replace("ǁ", ".").strip(".")


def diff_key(diff: list[str]) -> str:
    """A survivor's identity that outlives renumbering: its changed lines, whitespace-normalised."""
    return "\n".join(line[0] + " ".join(line[1:].split()) for line in diff)


def load_equivalent() -> dict[tuple[str, str, str], dict]:
    if not EQUIVALENT.is_file():
        return {}
    data = tomllib.loads(EQUIVALENT.read_text())
    table = {}
    for e in data.get("mutant", []):
        table[(e["module"], e["function"], diff_key(e["diff"].strip("\n").split("\n")))] = e
    return table


def prepare(workdir: Path, module: str, ref: str | None = None) -> Path:
    path, tests = MODULES[module]
    wd = workdir / module
    if wd.exists():
        shutil.rmtree(wd)
    wd.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "clone", "-q", str(ROOT), str(wd)], check=True)
    if ref:
        subprocess.run(["git", "-C", str(wd), "checkout", "-q", ref], check=True)
    # the working tree as it is: modified tracked files and untracked (not ignored) ones
    changed = [] if ref else subprocess.run(["git", "-C", str(ROOT), "ls-files", "-m", "-o", "--exclude-standard", "-z"],
                                            capture_output=True, text=True, check=True).stdout.split("\0")
    for rel in filter(None, changed):
        src = ROOT / rel
        if src.is_file():
            (wd / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, wd / rel)
    subprocess.run(["git", "clone", "-q", str(ROOT), str(wd / "mutants")], check=True)
    if ref:
        subprocess.run(["git", "-C", str(wd / "mutants"), "checkout", "-q", ref], check=True)
    shutil.rmtree(wd / "mutants" / "ctasim")  # mutmut copies (and mutates) the sources itself
    if shared := shared_lines(path, NOT_MUTATED.get(module, [])):  # left-out lines no pattern can single out
        src = (wd / path).read_text().split("\n")
        for n in shared:
            if "#" in src[n - 1]:
                raise SystemExit(f"{path}:{n}: left-out line {src[n - 1].strip()!r} also in a mutated function")
            src[n - 1] += "  # pragma: no mutate"
        (wd / path).write_text("\n".join(src))
    tests = tests_in(wd, tests)
    pp = wd / "pyproject.toml"
    text = pp.read_text().split("\n[tool.mutmut]")[0]
    pp.write_text(text.rstrip("\n") + "\n\n[tool.mutmut]\n"
                  f'source_paths = ["ctasim"]\n'
                  f'only_mutate = ["{path}"]\n'
                  f"pytest_add_cli_args_test_selection = {json.dumps(tests)}\n"
                  f'pytest_add_cli_args = ["-p", "no:cacheprovider", "-q"]\n'
                  f"do_not_mutate_patterns = {json.dumps(not_mutated_patterns(path, NOT_MUTATED.get(module, [])))}\n"
                  f'also_copy = ["tests/", "bench/", "docs/", "specs/", "ctahw/"]\n'
                  + "".join(f"{k} = {v!r}\n" for k, v in MUTMUT_OPTIONS.get(module, {}).items()))
    return wd


def tests_in(wd: Path, tests: list[str]) -> list[str]:
    """The module's test files that the copy has: a ``--ref`` commit that predates a test file (the "before"
    run of a module whose tests were added in a new file) runs without it, and says so."""
    have = [t for t in tests if (wd / t).exists()]
    if missing := [t for t in tests if t not in have]:
        print(f"{wd.name}: not in this copy, run without: {' '.join(missing)}", flush=True)
    if not have:
        raise SystemExit(f"{wd.name}: none of its tests is in the copy: {tests}")
    return have


def run_module(workdir: Path, module: str, jobs: int, label: str, ref: str | None = None,
               collect_only: bool = False) -> dict:
    from provenance import provenance  # noqa: PLC0415

    path, tests = MODULES[module]
    if collect_only:  # read back a run that was stopped (its unfinished mutants count as "not checked")
        wd, rc, wall = workdir / module, 0, None
    else:
        wd = prepare(workdir, module, ref)
        cmd = [sys.executable, "-m", "mutmut", "run", "--max-children", str(jobs)]
        t0 = time.monotonic()
        with open(wd / "mutmut.log", "w") as log:
            rc = subprocess.run(cmd, cwd=wd, stdout=log, stderr=subprocess.STDOUT).returncode
        wall = time.monotonic() - t0
    got = subprocess.run([sys.executable, "-c", _COLLECT, path], cwd=wd, capture_output=True, text=True)
    if got.returncode != 0 or rc != 0:
        tail = (wd / "mutmut.log").read_text()[-3000:]
        raise SystemExit(f"mutmut failed on {module} (rc {rc}); log {wd / 'mutmut.log'}:\n{tail}\n{got.stderr}")
    mutants = json.loads(got.stdout)
    eq = load_equivalent()
    survivors, counts = [], {"mutants": len(mutants), "killed": 0, "timeout": 0, "survived": 0, "equivalent": 0,
                             "not_checked": 0}
    for m in mutants:
        if m["status"] == "not checked":
            counts["not_checked"] += 1
            continue
        if m["status"] in ("killed", "timeout"):
            counts["killed" if m["status"] == "killed" else "timeout"] += 1
            continue
        fn = function_of(m["name"])
        e = eq.get((module, fn, diff_key(m["diff"])))
        if e is not None:
            counts["equivalent"] += 1
        else:
            counts["survived"] += 1
        survivors.append({"name": m["name"], "function": fn, "status": m["status"], "diff": m["diff"],
                          "equivalent": e["reason"] if e else None})
    detected = counts["killed"] + counts["timeout"]
    counts["score"] = round(detected / max(1, counts["mutants"] - counts["not_checked"] - counts["equivalent"]), 4)
    counts["raw_score"] = round(detected / max(1, counts["mutants"]), 4)
    prov = provenance(f"python bench/mutation.py {module} --label {label} --jobs {jobs}"
                      + (f" --ref {ref}" if ref else "") + (" --collect" if collect_only else ""))
    # the commit the copy was made from (with the working tree's changes laid over it unless --ref was given)
    prov["commit"] = subprocess.run(["git", "-C", str(wd), "rev-parse", "HEAD"], capture_output=True,
                                    text=True).stdout.strip()
    if ref:
        prov["dirty"] = False
    prov.update({"mutmut": _mutmut_version(), "module": path, "tests": [t for t in tests if (wd / t).exists()],
                 "wall_s": None if wall is None else round(wall, 1),
                 "not_mutated": NOT_MUTATED.get(module, []), "mutmut_options": MUTMUT_OPTIONS.get(module, {})})
    res = {"module": module, "label": label, **counts, "provenance": prov, "survivors": survivors}
    dest = OUT / label / f"{module}.json"
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text(json.dumps(res, indent=1, ensure_ascii=False) + "\n")
    return res


def _mutmut_version() -> str:
    from importlib.metadata import version  # noqa: PLC0415

    return version("mutmut")


def summarize() -> None:
    """summary.csv / summary.md from every stored run; equivalents re-read, so that the table is current."""
    eq = load_equivalent()
    rows = []
    for label in ("before", "after"):
        for module in MODULES:
            f = OUT / label / f"{module}.json"
            if not f.is_file():
                continue
            r = json.loads(f.read_text())
            equiv = sum(1 for s in r["survivors"] if (module, s["function"], diff_key(s["diff"])) in eq)
            detected, unrun = r["killed"] + r["timeout"], r.get("not_checked", 0)
            rows.append({"module": module, "label": label, "file": r["provenance"]["module"], "mutants": r["mutants"],
                         "not_checked": unrun, "killed": r["killed"], "timeout": r["timeout"],
                         "survived": len(r["survivors"]) - equiv, "equivalent": equiv,
                         "score_pct": round(100 * detected / max(1, r["mutants"] - unrun - equiv), 1),
                         "date": r["provenance"]["date"], "commit": r["provenance"]["commit"][:10],
                         "mutmut": r["provenance"]["mutmut"], "tests": " ".join(r["provenance"]["tests"]),
                         "wall_s": r["provenance"]["wall_s"]})
    if not rows:
        return
    with open(OUT / "summary.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    by = {(r["module"], r["label"]): r for r in rows}
    lines = ["# Mutation testing of the checkers", "",
             "Written by `python bench/mutation.py` (see docs/testing.md). Score: killed / (mutants - equivalent), "
             "timeouts counted as killed. `before`: the test suite before the tests added against the survivors; "
             "`after`: with them. Equivalent mutants: `equivalent.toml`, each with its reason. A run that was stopped "
             "counts only the mutants it checked (`not checked` says how many it left).", "",
             "| module | mutants | killed before | survived before | score before | killed after | survived after "
             "| equivalent | score after |", "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for module in MODULES:
        b, a = by.get((module, "before")), by.get((module, "after"))
        if not (a or b):
            continue
        ref = a or b

        def cell(r, k):
            return "" if r is None else (f"{r[k]}%" if k == "score_pct" else str(r[k]))

        partial = [f"{lab} {r['mutants'] - r['not_checked']} run" for lab, r in (("before", b), ("after", a))
                   if r is not None and r["not_checked"]]
        name = ref["file"] + (f" (stopped part-way: {', '.join(partial)}; not comparable)" if partial else "")
        lines.append(f"| {name} | {ref['mutants']} | {cell(b, 'killed')} | {cell(b, 'survived')} | "
                     f"{cell(b, 'score_pct')} | {cell(a, 'killed')} | {cell(a, 'survived')} | {ref['equivalent']} | "
                     f"{cell(a, 'score_pct')} |")
    lines += ["", "## Runs", "", "| module | label | mutants | not checked | date | commit | mutmut | tests | wall s |",
              "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    lines += [f"| {r['module']} | {r['label']} | {r['mutants']} | {r['not_checked']} | {r['date']} | {r['commit']} | "
              f"{r['mutmut']} | {r['tests']} | {r['wall_s']} |" for r in rows]
    left = []
    for module in MODULES:
        f = OUT / "after" / f"{module}.json"
        if f.is_file():
            r = json.loads(f.read_text())
            left += [(module, s) for s in r["survivors"] if (module, s["function"], diff_key(s["diff"])) not in eq]
    if left:
        lines += ["", "## Survivors not yet killed nor listed as equivalent (after)", ""]
        for module, s in left:
            lines.append(f"* {module} `{s['name'].rsplit('.', 1)[-1]}` ({s['status']}): "
                         + " / ".join(f"`{d}`" for d in s["diff"]))
    (OUT / "summary.md").write_text("\n".join(lines) + "\n")


def main(argv=None) -> int:
    ap = OneLineParser(prog="python bench/mutation.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("modules", nargs="*", help=f"modules to run: {', '.join(MODULES)} (default: all)")
    ap.add_argument("--label", default="after", help="results folder under bench/results/mutation (default: after)")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2, help="mutants run at once")
    ap.add_argument("--workdir", type=Path, default=Path(os.environ.get("TMPDIR", "/tmp")) / "ctasim-mutation",
                    help="where the copies are made (never the working tree)")
    ap.add_argument("--summary-only", action="store_true", help="only rebuild summary.md / summary.csv")
    ap.add_argument("--collect", action="store_true",
                    help="read back the runs already in --workdir (one that was stopped: its unrun mutants not counted)")
    ap.add_argument("--ref", help="run on this commit as committed (default: HEAD plus the working tree's changes)")
    a = parse_outputs(ap, argv, folders=("--workdir",))
    if unknown := set(a.modules) - set(MODULES):
        ap.error(f"unknown module(s) {sorted(unknown)}; known: {', '.join(MODULES)}")
    if not a.summary_only:
        if a.workdir.resolve().is_relative_to(ROOT):
            ap.error("--workdir must be outside the repository")
        for module in a.modules or list(MODULES):
            r = run_module(a.workdir, module, a.jobs, a.label, a.ref, a.collect)
            print(f"{module}: {r['mutants']} mutants ({r['not_checked']} not checked), {r['killed'] + r['timeout']} "
                  f"killed, {r['survived']} survived, {r['equivalent']} equivalent: {100 * r['score']:.1f}% "
                  f"({r['provenance']['wall_s']} s)", flush=True)
    summarize()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
