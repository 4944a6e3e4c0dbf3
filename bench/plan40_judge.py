"""Registered plans 40 and 41's claims (a ring's chain group on one H200, its kernels sharing the device) from their
reports.

    python bench/plan40_judge.py REPORT [REPORT ...] --out bench/results/validation-registered40

Each REPORT: a folder ``ctasim compare bench/predictions/NAME ...`` wrote, named after its registration NAME, one of
:data:`EXPERIMENTS` (``accuracy.csv``: every judged row; ``per-cta.csv``: the traced runs); plan 40 is
``reg40-ring-shared-l3`` and ``-l4`` together, plan 41 ``reg41-ring-shared-l2``. The claims, registered with the
predictions (bench/predictions/reg40-ring-shared-l4/README.md, reg41-ring-shared-l2/README.md), per case (plan 40:
M = 4096, 16384 at 3 and 4 kernels; plan 41: M = 1024, 2048, 4096 at 2 kernels):

* (a) the fill: groups of 8 slower than the faster of groups of 2 and 4, predicted and measured;
* (b) the slowest of the four groups the predictor's (the model: row order, which loses the weights' reuse, except
  at M = 4096 on 4 kernels, where groups of 8 are slower still);
* (c) the fill's size: the measured margin 1 - min(g2, g4) / g8 within :data:`MARGIN_POINTS` (4) points of the
  predictor's;
* (d) the targets over every row: MAPE <= 3%, worst |error| <= 6%;
* (e) the model's MAPE below the flat event model's (no memory hierarchy) and the waves predictor's;
* (f) the traced runs: median per-CTA start error <= 2% of the makespan, the median over the runs.

Each claim is evaluated for every predictor of the reports (model, flat, lockstep, clock-step, naive, waves) where it
applies. Writes ``claims.csv`` (claim, predictor, value, threshold, met) and ``groups.csv`` (per case and group: the
measured and predicted makespans) into ``--out``. A missing, foreign or unregistered report is refused in one line
(exit 2), before anything is written.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import judge_reports as JR  # noqa: E402
from ctasim.cliargs import OneLineParser, parse_outputs  # noqa: E402
from ctasim.spec import SpecError  # noqa: E402

EXPERIMENTS = ("reg40-ring-shared-l3", "reg40-ring-shared-l4", "reg41-ring-shared-l2")
MARGIN_POINTS = 4.0
START_FRAC = 0.02


def read_report(folder: Path, experiment: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(accuracy rows, per-CTA rows) of a report (:func:`judge_reports.read_report` refuses a bad one)."""
    return JR.read_report(folder, experiment)


def registered_cases(experiments=EXPERIMENTS) -> list[tuple[str, str]]:
    """Every (experiment, case) the registrations predicted: the cases each claim is judged over (a case whose rows
    failed counts as not met)."""
    out = []
    for e in experiments:
        p = pd.read_csv(ROOT / "bench" / "predictions" / e / "predictions.csv")
        out += [(e, c) for c in dict.fromkeys(p.loc[p["status"] == "ok", "case"])]
    return out


def groups_table(acc: pd.DataFrame) -> pd.DataFrame:
    """Per (experiment, case, predictor): each group's measured and predicted makespans (wide)."""
    d = acc.assign(group=acc["strategy"].str.removeprefix("ring-"))
    t = d.pivot_table(index=["experiment", "case", "source"], columns="group", values=["measured_ms", "predicted_ms"])
    t.columns = [f"{v.removesuffix('_ms')}_{g}_ms" for v, g in t.columns]  # measured_g1_ms, ..., predicted_g8_ms
    return t.reset_index()


def claims(reports: list[tuple[pd.DataFrame, pd.DataFrame]]) -> pd.DataFrame:
    acc = pd.concat([a for a, _ in reports], ignore_index=True)
    per = pd.concat([p for _, p in reports if not p.empty], ignore_index=True) if any(
        not p.empty for _, p in reports) else pd.DataFrame()
    out = []
    cases = registered_cases(sorted(set(acc["experiment"])))

    def add(*row):
        JR.claim(out, *row)

    mape = {}
    for s, d in acc.groupby("source", sort=False):
        err = 100 * d["error"].abs()
        mape[s] = float(err.mean())
        worst = float(100 * d.loc[d["error"].abs().idxmax(), "error"])
        add("d: MAPE %", s, mape[s], 3.0, mape[s] <= 3.0)
        add("d: worst error %", s, worst, 6.0, abs(worst) <= 6.0)
        fill, reuse, gaps = [], [], []
        for exp, case in cases:
            g = d[(d["experiment"] == exp) & (d["case"] == case)]
            m = g.set_index("strategy")["measured_ms"]
            p = g.set_index("strategy")["predicted_ms"]
            if not {"ring-g1", "ring-g2", "ring-g4", "ring-g8"} <= set(m.index):  # a group failed: the case misses
                fill.append(False)
                reuse.append(False)
                gaps.append(float("inf"))
                continue
            best_m, best_p = min(m["ring-g2"], m["ring-g4"]), min(p["ring-g2"], p["ring-g4"])
            fill.append(m["ring-g8"] > best_m and p["ring-g8"] > best_p)
            slowest = p.idxmax()
            reuse.append(m[slowest] > m.drop(slowest).max() and p[slowest] > p.drop(slowest).max())
            gaps.append(100 * abs((1 - best_m / m["ring-g8"]) - (1 - best_p / p["ring-g8"])))
        if fill:
            add("a: cases where groups of 8 are slower than the best of 2 and 4, predicted and measured", s,
                float(sum(fill)), float(len(fill)), all(fill))
            add("b: cases where the slowest group is the predicted one", s, float(sum(reuse)),
                float(len(reuse)), all(reuse))
            add("c: worst |fill margin error|, points", s, max(gaps), MARGIN_POINTS, max(gaps) <= MARGIN_POINTS)
    for other in ("flat", "waves"):
        if "model" in mape and other in mape:
            add(f"e: model MAPE - {other} MAPE, points", "model", mape["model"] - mape[other], 0.0,
                mape["model"] < mape[other])
    kept = per[per["kept"].astype(bool)] if "kept" in per.columns else per
    med = float(kept["start_median_frac"].median()) if len(kept) else float("nan")
    add("f: median over the traced runs of the median per-CTA start error, fraction of the makespan", "model",
        med, START_FRAC, med <= START_FRAC)  # no traced run: not met
    return pd.DataFrame(out)


def main(argv: list[str] | None = None) -> int:
    p = OneLineParser(prog="python bench/plan40_judge.py", description=__doc__.splitlines()[0])
    p.add_argument("reports", nargs="+", help=f"ctasim compare's report folders, each named after its registration "
                                              f"({', '.join(EXPERIMENTS)})")
    p.add_argument("--out", required=True, help="folder for claims.csv and groups.csv")
    args = parse_outputs(p, argv, folders=("--out",))
    out = Path(args.out)
    try:
        names = [Path(f).name for f in args.reports]
        bad = [n for n in names if n not in EXPERIMENTS]
        if bad:
            raise ValueError(f"{bad[0]}: not a shared-device ring registration ({', '.join(EXPERIMENTS)})")
        reports = [read_report(Path(f), n) for f, n in zip(args.reports, names)]
    except (SpecError, ValueError) as e:
        p.error(str(e))
    result = claims(reports)
    JR.write_judgement(out, result, {"groups.csv": groups_table(pd.concat([a for a, _ in reports], ignore_index=True))})
    return 0


if __name__ == "__main__":
    sys.exit(main())
