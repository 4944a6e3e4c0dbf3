"""Protocol stress on one GPU: every seeded-bug build of the chain and queue kernels (ctahw.stress), with random delays.

    python bench/hw/protocol_stress.py --out DIR [--builds NAME,...] [--runs N] [--delays NS,...]
    python bench/hw/protocol_stress.py --build-only      # compile the builds here (nvcc, no GPU), into the kernel cache

Writes DIR/stress.csv (one row per build, chain and delay bound: runs, runs with stale data, stale layer x row-block
cells, runs that read NaN poison, runs that recorded a protocol error, and `hung` for a cell whose build stopped
answering) and DIR/provenance.json, then prints the table. Each build runs in a child process with a wall-clock
limit (--build-limit): a seeded bug may hang the GPU where no bounded wait reaches (a CTA barrier); the child is
killed, its finished rows kept, and the rest of its cells recorded as hung.
Each build's verdict beside the protocol model's: docs/protocol.md, "The mutants on the GPU". Device command:
bench/hw/run_protocol_stress.sh. Bad values, an ``--out`` that cannot be written or already holds a stress.csv, and no
GPU (or no CuPy) for a run are one line and exit 2 before anything runs.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from ctahw import stress  # noqa: E402


def _refuse(message: str):
    """Bad input: one line on stderr naming the problem, exit status 2, nothing written."""
    print(message, file=sys.stderr)
    raise SystemExit(2)


def _ints(text: str, what: str) -> tuple[int, ...]:
    try:
        out = tuple(int(v) for v in text.split(","))
    except ValueError:
        _refuse(f"protocol_stress: --{what} takes comma-separated integers, got {text!r}")
    if not out or min(out) < 0:
        _refuse(f"protocol_stress: --{what} takes integers >= 0, got {text!r}")
    return out


def run_child(name: str, cases, a) -> list[dict]:
    """Build ``name``'s rows in a child process limited to ``a.build_limit`` s: its finished rows, then a ``hung`` row
    for every (case, delay) it did not finish when it was killed or failed."""
    import subprocess  # noqa: PLC0415
    import time  # noqa: PLC0415

    jsonl = a.out / f"{name}.jsonl"
    jsonl.unlink(missing_ok=True)
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", name, "--out", str(a.out)]
    if a.runs:
        cmd += ["--runs", str(a.runs)]
    if a.delays:
        cmd += ["--delays", a.delays]
    t0 = time.perf_counter()
    why = ""
    try:
        proc = subprocess.run(cmd, timeout=a.build_limit, capture_output=True, text=True)
        sys.stdout.write(proc.stdout)
        if proc.returncode != 0:
            why = f"exit {proc.returncode}: " + (proc.stderr.strip().splitlines() or [""])[-1][:200]
    except subprocess.TimeoutExpired:
        why = f"killed after {a.build_limit:g} s (no answer: a hang no bounded wait reaches)"
    rows = [json.loads(line) for line in jsonl.read_text().splitlines()] if jsonl.exists() else []
    jsonl.unlink(missing_ok=True)
    done = {(r["case"], r["delay_ns"]) for r in rows}
    for c in cases:
        for d in c.delays_ns:
            if (c.name, d) not in done:
                rows.append(stress.result_row(name, c, d, runs=0, first_error=why, hung=1,
                                              seconds=round(time.perf_counter() - t0, 1)))
                print(f"stress {name} {c.name} delay {d} ns: not finished ({why})", flush=True)
                why = why and "after the cell before it stopped"
    return rows


def main(argv=None) -> int:
    from ctasim.cliargs import OneLineParser, parse_outputs

    ap = OneLineParser(prog="python bench/hw/protocol_stress.py", description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, help="folder for stress.csv and provenance.json (must not hold a stress.csv)")
    ap.add_argument("--builds", default=",".join(stress.MUTATIONS), help="stress builds to run (default: all)")
    ap.add_argument("--runs", type=int, default=0, help="runs per build, chain and delay (default: each case's)")
    ap.add_argument("--delays", default="", help="delay bounds in ns (default: each case's, 0, 2000 and 20000)")
    ap.add_argument("--build-only", action="store_true", help="compile the builds into the kernel cache and stop")
    ap.add_argument("--build-limit", type=float, default=90.0, help="seconds one build may run (default 90)")
    ap.add_argument("--child", default="", help=argparse.SUPPRESS)  # run one build, rows appended to --out/NAME.jsonl
    a = parse_outputs(ap, argv, folders=("--out",))
    names = [n for n in a.builds.split(",") if n]
    unknown = [n for n in names if n not in stress.MUTATIONS]
    if unknown or not names:
        _refuse(f"protocol_stress: unknown build(s) {unknown or a.builds!r} (known: {', '.join(stress.MUTATIONS)})")
    if a.runs < 0:
        _refuse(f"protocol_stress: --runs must be >= 0, got {a.runs}")
    cases = {"chain": list(stress.CASES), "queue": list(stress.QUEUE_CASES)}
    for lib, cs in cases.items():
        if a.runs:
            cs[:] = [dataclasses.replace(c, runs=a.runs) for c in cs]
        if a.delays:
            cs[:] = [dataclasses.replace(c, delays_ns=_ints(a.delays, "delays")) for c in cs]
    if a.build_limit <= 0:
        _refuse(f"protocol_stress: --build-limit must be > 0, got {a.build_limit}")
    if a.child:
        with tempfile.TemporaryDirectory(prefix="ctahw-stress-") as tmp, open(a.out / f"{a.child}.jsonl", "a") as f:
            run = stress.stress if stress.MUTATIONS[a.child].library == "chain" else stress.stress_queue
            run([a.child], cases[stress.MUTATIONS[a.child].library], root=Path(tmp),
                on_row=lambda row: (f.write(json.dumps(row) + "\n"), f.flush()))
        return 0
    if a.build_only:
        with tempfile.TemporaryDirectory(prefix="ctahw-stress-") as tmp:
            for n in names:
                print(f"{n}: {stress.mutant_library(n, Path(tmp)).build()}", flush=True)
        return 0
    if a.out is None:
        _refuse("protocol_stress: --out is required (or --build-only)")
    if (a.out / "stress.csv").exists():
        _refuse(f"protocol_stress: {a.out / 'stress.csv'} exists; choose a new --out")
    from ctahw.device import DeviceError, require_gpus  # noqa: PLC0415

    try:  # the builds run in children: without a GPU each would fail, and the table would say nothing
        require_gpus(1)
    except DeviceError as e:
        _refuse(f"protocol_stress: {e}")
    import pandas as pd  # noqa: PLC0415

    from ctahw.provenance import collect  # noqa: PLC0415

    a.out.mkdir(parents=True, exist_ok=True)
    rows = []
    for n in names:
        rows += run_child(n, cases[stress.MUTATIONS[n].library], a)
    df = pd.DataFrame(rows)
    tmp_csv = a.out / ".stress.csv.tmp"
    df.to_csv(tmp_csv, index=False)
    tmp_csv.replace(a.out / "stress.csv")
    prov = dict(collect(), command=" ".join(["python bench/hw/protocol_stress.py", *(argv or sys.argv[1:])]),
                cases={lib: [dataclasses.asdict(c) for c in cs] for lib, cs in cases.items()})
    (a.out / "provenance.json").write_text(json.dumps(prov, indent=1) + "\n")
    print(df.to_string(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
