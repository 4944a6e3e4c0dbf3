"""``python -m ctasim.protocol.report``: run the protocol searches and write the mutant table.

Runs the correct protocol's searches (:data:`~ctasim.protocol.explore.CORRECT_SEARCHES`) and one search per
mutant (:data:`~ctasim.protocol.programs.MUTANTS`) under a Hypothesis profile, prints a Markdown table, and with
``--out DIR`` writes ``report.md``, ``report.json`` and ``counterexamples.md`` there; ``--update-doc FILE``
replaces the table between the ``<!-- protocol-report:begin -->`` / ``end`` markers of that file.

Needs Hypothesis (a test dependency).  Leaves out: plotting; the litmus tests (pytest runs them).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from datetime import datetime, timezone
from pathlib import Path

BEGIN, END = "<!-- protocol-report:begin -->", "<!-- protocol-report:end -->"


def search_mutant(name: str, profile: str) -> dict:
    """One mutant search; a plain dict so that it crosses process boundaries."""
    from .explore import MUTANT_SEARCH, Stats, find_violation, profile_settings
    from .programs import MUTANTS, NEW_MUTANTS, WAIT_MUTANTS

    variant = {**MUTANTS, **WAIT_MUTANTS, **NEW_MUTANTS}[name]
    stats = Stats()
    t0 = time.perf_counter()
    cx = find_violation(variant, MUTANT_SEARCH, settings_=profile_settings(profile), stats=stats)
    out = dict(mutant=name, bug=variant.bug, caught=cx is not None, seconds=time.perf_counter() - t0,
               schedules_run=stats.passed + stats.violations)
    if cx is not None:
        out.update(invariant=cx.error.invariant, message=cx.error.detail, choices=cx.n_choices,
                   setup=cx.setup, counterexample=cx.render())
    return out


def _commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def build_report(profile: str, processes: int) -> dict:
    from hypothesis import __version__ as hyp_version

    from .explore import MUTANT_SEARCH, PROFILES, Stats, find_violation, profile_settings, run_correct_searches
    from .programs import MUTANTS, NEW_MUTANTS, WAIT, WAIT_MUTANTS

    t0 = time.perf_counter()
    correct = run_correct_searches(profile, processes)
    wait_stats = Stats()  # the wait-consumer protocol: one search over the mutants' space
    wait_cx = find_violation(WAIT, MUTANT_SEARCH, settings_=profile_settings(profile), stats=wait_stats)
    t1 = time.perf_counter()
    names = list(MUTANTS) + list(WAIT_MUTANTS) + list(NEW_MUTANTS)
    if processes > 1:
        with ProcessPoolExecutor(processes) as pool:
            mutants = list(pool.map(search_mutant, names, [profile] * len(names)))
    else:
        mutants = [search_mutant(n, profile) for n in names]
    t2 = time.perf_counter()
    return dict(
        provenance=dict(date=datetime.now(timezone.utc).isoformat(timespec="seconds"), commit=_commit(),
                        python=platform.python_version(), hypothesis=hyp_version, machine=platform.machine(),
                        cpus=os.cpu_count(), processes=processes, profile=profile, settings=PROFILES[profile],
                        command=f"python -m ctasim.protocol.report --profile {profile}"),
        correct=dict(schedules=sum(r.passed for r in correct), violations=sum(r.violations for r in correct),
                     errors=[r.error for r in correct if r.error], seconds=t1 - t0,
                     searches=[r.__dict__ for r in correct]),
        wait=dict(schedules=wait_stats.passed, violations=0 if wait_cx is None else 1,
                  counterexample=None if wait_cx is None else wait_cx.render()),
        mutants=mutants,
        mutant_seconds=t2 - t1,
    )


def render_table(rep: dict) -> str:
    p, c, ms = rep["provenance"], rep["correct"], rep["mutants"]
    caught = sum(1 for m in ms if m["caught"])
    lines = [
        f"Profile `{p['profile']}` ({p['settings']}), commit {p['commit']}, {p['date']}, Python {p['python']}, "
        f"Hypothesis {p['hypothesis']}, {p['cpus']} CPUs. Reproduce: `{p['command']}`.",
        "",
        f"**Correct protocol: {c['schedules']:,} generated schedules, {c['violations']} violations** "
        f"({len(c['searches'])} searches, {c['seconds']:.0f} s).  "
        + (f"**Wait-consumer protocol (no queue): {rep['wait']['schedules']:,} schedules, "
           f"{rep['wait']['violations']} violations.**  " if "wait" in rep else "")
        + f"**Mutants caught: {caught} / {len(ms)}** ({rep['mutant_seconds']:.0f} s; `wait-*`: the wait consumer's).",
        "",
        "| mutant | seeded bug | caught | invariant | scheduler choices in shortest counterexample | "
        "schedules run (incl. shrinking) | what the checker saw |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for m in ms:
        if m["caught"]:
            msg = m["message"].replace("|", "\\|")
            lines.append(f"| `{m['mutant']}` | {m['bug']} | yes | ({m['invariant']}) | {m['choices']} | "
                         f"{m['schedules_run']} | {msg} |")
        else:
            lines.append(f"| `{m['mutant']}` | {m['bug']} | **no** | - | - | {m['schedules_run']} | - |")
    return "\n".join(lines)


def render_counterexamples(rep: dict) -> str:
    out = ["# Shortest counterexamples found for each mutant", "",
           "Generated by `" + rep["provenance"]["command"] + "`.  A counterexample is the setup, the scheduler's "
           "choices (Hypothesis rule steps) and the last steps of the fair drain that finishes the run.", ""]
    for m in rep["mutants"]:
        out += [f"## {m['mutant']}: {m['bug']}", ""]
        out += ["```", m.get("counterexample", "not caught"), "```", ""]
    return "\n".join(out)


def update_doc(path: Path, table: str) -> None:
    text = path.read_text()
    if BEGIN not in text or END not in text:
        raise SystemExit(f"{path} has no {BEGIN} ... {END} markers")
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    new = f"{head}{BEGIN}\n{table}\n{END}{tail}"
    if new != text:
        path.write_text(new)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m ctasim.protocol.report", description=__doc__.splitlines()[0])
    ap.add_argument("--profile", default="ci", choices=["ci", "nightly", "dev"], help="Hypothesis profile")
    ap.add_argument("--processes", type=int, default=os.cpu_count() or 1, help="worker processes")
    ap.add_argument("--out", type=Path, help="folder for report.md, report.json, counterexamples.md")
    ap.add_argument("--update-doc", type=Path, help="Markdown file whose marked table to replace")
    args = ap.parse_args(argv)
    rep = build_report(args.profile, max(1, args.processes))
    table = render_table(rep)
    print(table)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "report.md").write_text("# Protocol property tests\n\n" + table + "\n")
        (args.out / "report.json").write_text(json.dumps(rep, indent=1, default=str) + "\n")
        (args.out / "counterexamples.md").write_text(render_counterexamples(rep))
    if args.update_doc:
        update_doc(args.update_doc, table)
    ok = rep["correct"]["violations"] == 0 and not rep["correct"]["errors"] and all(m["caught"] for m in rep["mutants"])
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
