"""How much lent H200s differ: the calibration GEMM (M x 8192 x 8192) of every registered single-GPU run, one row per
machine (no GPU).

    python bench/machine_spread.py [--out bench/results/machine-spread]

Registered plans 7-10, 20 and 21 each time their reference GEMM (``regN-reference``: M = 4096 and 16384) on the
machine that runs the rest of the plan, so that a report can tell the machine's speed from the shapes'. This
gathers every committed ``bench/results/hw/*/reg*-reference/results.csv`` with the GPU of its folder's ``env.txt``
and writes ``reference.csv`` (folder, gpu, m, measured ms, the ratio to the median machine) and ``summary.csv`` (per
M: machines, median, min, max, spread max/min - 1, standard deviation / median), and ``pairs.csv``: where a plan ran
on two machines (a folder and its ``-run2``) with the reference GEMM beside it, per plan the second machine's time over
the first's on the reference GEMM at M = 16384 and on the plan's other cases (mean, min, max; a pair without a reference
run, such as plan 42's, is left out, and so is a ``-run2`` on the first run's machine); prints all three. One machine
counts once (its first reference call by folder name); a later call on a machine already counted goes into
``repeats.csv`` instead (its time over the first call's, per M). What it says is
the floor under any prediction for a machine nobody has timed: the profile's own calibration is one of these
machines.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ctasim.cliargs import OneLineParser, parse_outputs  # noqa: E402

HW = ROOT / "bench/results/hw"


def folder_gpu(folder: Path) -> str:
    """The GPU (``GPU-xxxxxxxx``) of a run folder's ``env.txt``; "" where it has none."""
    env = folder / "env.txt"
    gpu = re.search(r"GPU-[0-9a-f]{8}", env.read_text()) if env.is_file() else None
    return gpu.group(0) if gpu else ""


def reference_calls() -> tuple[list[Path], list[Path]]:
    """Every committed reference run (``*/reg*-reference/results.csv``), split into the first of each machine (by
    folder name: a plan's folder before its ``-run2``) and the repeats on a machine already counted (one machine, one
    row: a repeat says how much one machine moves between calls, not how machines differ). A folder without a GPU in
    its ``env.txt`` is kept, for the callers to refuse."""
    first: list[Path] = []
    repeats: list[Path] = []
    seen: set[str] = set()
    for res in sorted(HW.glob("*/reg*-reference/results.csv")):
        gpu = folder_gpu(res.parent.parent)
        (repeats if gpu and gpu in seen else first).append(res)
        seen.add(gpu)
    return first, repeats


def _rows(results: list[Path]) -> pd.DataFrame:
    rows = []
    for res in results:
        folder = res.parent.parent
        d = pd.read_csv(res)
        for r in d[d.status == "ok"].itertuples():
            rows.append({"folder": folder.name, "registration": res.parent.name, "gpu": folder_gpu(folder),
                         "m": int(r.m), "measured_ms": float(r.makespan_ms)})
    return pd.DataFrame(rows, columns=["folder", "registration", "gpu", "m", "measured_ms"])


def repeats() -> pd.DataFrame:
    """Per repeat call (:func:`reference_calls`) and M: its time over the same machine's first call's."""
    first, again = reference_calls()
    base = _rows(first).set_index(["gpu", "m"])
    out = _rows(again)
    out["first_folder"] = [base.loc[(g, m), "folder"] for g, m in zip(out.gpu, out.m)]
    out["to_first"] = [t / base.loc[(g, m), "measured_ms"] for g, m, t in zip(out.gpu, out.m, out.measured_ms)]
    return out


def gather() -> pd.DataFrame:
    out = _rows(reference_calls()[0])
    out["to_median"] = out.measured_ms / out.groupby("m").measured_ms.transform("median")
    return out


def pairs() -> pd.DataFrame:
    rows = []
    for second in sorted(HW.glob("*-run2")):
        first = second.with_name(second.name[:-len("-run2")])
        if not first.is_dir() or folder_gpu(first) == folder_gpu(second):  # one machine twice: repeats.csv
            continue
        ratios, ref = [], float("nan")
        for res in sorted(second.glob("*/results.csv")):
            other = first / res.parent.name / "results.csv"
            if not other.is_file():
                continue
            a, b = (pd.read_csv(f).query("status == 'ok'").set_index(["case", "strategy"]).makespan_ms
                    for f in (other, res))
            r = (b / a).dropna()
            if res.parent.name.endswith("-reference"):
                ref = float(r[[c for c in r.index if c[0] == "m=16384"]].iloc[0])
            else:
                ratios += list(r.values)
        if ratios and ref == ref:  # a pair without a reference GEMM (ref NaN) says nothing of the reference's relation
            rows.append({"first": first.name, "second": second.name, "cases": len(ratios),
                         "reference_16384": ref, "cases_mean": sum(ratios) / len(ratios), "cases_min": min(ratios),
                         "cases_max": max(ratios)})
    return pd.DataFrame(rows)


def main(argv=None) -> int:
    ap = OneLineParser(prog="python bench/machine_spread.py", description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "bench/results/machine-spread")
    args = parse_outputs(ap, argv, folders=("--out",))
    d = gather()
    if d.empty or (d.gpu == "").any() or d.duplicated(["gpu", "m"]).any():
        print("machine_spread: every reference run needs its own machine's env.txt", file=sys.stderr)
        return 2
    s = d.groupby("m").measured_ms.agg(machines="size", median="median", min="min", max="max", std="std").reset_index()
    s["spread_pct"] = 100 * (s["max"] / s["min"] - 1)
    s["sd_pct"] = 100 * s["std"] / s["median"]
    args.out.mkdir(parents=True, exist_ok=True)
    d.round(4).to_csv(args.out / "reference.csv", index=False)
    s.drop(columns="std").round(4).to_csv(args.out / "summary.csv", index=False)
    pr = pairs()
    pr.round(4).to_csv(args.out / "pairs.csv", index=False)
    rp = repeats()
    rp.round(4).to_csv(args.out / "repeats.csv", index=False)
    pd.set_option("display.width", 200)
    print(d.round(4).to_string(index=False))
    print(s.drop(columns="std").round(3).to_string(index=False))
    print(pr.round(4).to_string(index=False))
    print(rp.round(4).to_string(index=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
