"""Registered plan 42's claims (shared-device rings, the L2, HBM and clock shared among the computing kernels) from
its six reports.

    python bench/plan42_judge.py bench/results/validation-registered42 --out bench/results/validation-registered42

The folder holds ``ctasim compare``'s reports of the three registrations :data:`EXPERIMENTS` (the model under test,
``h200-x1-sharedN-active``) and of their ``-even`` twins (the same experiments predicted with plan 40's even split,
``h200-x1-sharedN``), each report named after its registration. The claims (bench/predictions/reg42-ring-shared-l4/
README.md):

* (a)-(f): plan 40's (``bench/plan40_judge.py``'s :func:`claims`) per predictor of the three ``-active`` reports, and
  (a)-(d) for the even split (reported beside, not a claim of the plan);
* (g) the model's MAPE below the even split's, over every row;
* (h) over groups 2, 4 and 8, the model's MAPE <= 3% and worst |error| <= 6%;
* (i) over the same rows, the model's MAPE at most half the even split's;
* (j) at N = 3, M = 8192 (:data:`GAP_CASE`), the model's mean signed error over groups 2, 4, 8 below 0.

Writes ``claims.csv`` (claim, predictor, value, threshold, met) and ``groups.csv`` (per case and group, every
predictor's and the even split's makespans) into ``--out``. A missing, foreign or unregistered report is refused in
one line (exit 2), before anything is written.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import judge_reports as JR  # noqa: E402
import plan40_judge as P40  # noqa: E402
from ctasim.cliargs import OneLineParser, parse_outputs  # noqa: E402
from ctasim.spec import SpecError  # noqa: E402

EXPERIMENTS = ("reg42-ring-shared-l2", "reg42-ring-shared-l3", "reg42-ring-shared-l4")
EVEN = "-even"
"""The suffix of the even split's registrations (and their reports)."""
GROUPS = ("ring-g2", "ring-g4", "ring-g8")
GAP_CASE = ("reg42-ring-shared-l3", "m=8192,layers=3")


def read_reports(folder: Path) -> tuple[list[tuple[pd.DataFrame, pd.DataFrame]], pd.DataFrame]:
    """(the ``-active`` reports as plan 40's judge reads them, the even split's model rows); ValueError (one line)
    for a missing, foreign or unregistered report."""
    active = [JR.read_report(folder / e, e) for e in EXPERIMENTS]
    even = []
    for e in EXPERIMENTS:
        acc, _ = JR.read_report(folder / (e + EVEN), e)
        even.append(acc[acc["source"] == "model"])
    return active, pd.concat(even, ignore_index=True)


def registered_rows() -> set[tuple[str, str, str]]:
    """Every (experiment, case, strategy) the three registrations predicted (the rows (g)-(i) are judged over)."""
    out = set()
    for e in EXPERIMENTS:
        p = pd.read_csv(ROOT / "bench" / "predictions" / e / "predictions.csv")
        p = p[(p["status"] == "ok") & (p["source"] == "model")]
        out |= {(e, c, s) for c, s in zip(p["case"], p["strategy"])}
    return out


def _mape(d: pd.DataFrame) -> float:
    return float(100 * d["error"].abs().mean())


def claims(active: list[tuple[pd.DataFrame, pd.DataFrame]], even: pd.DataFrame) -> pd.DataFrame:
    out = P40.claims(active).to_dict("records")
    # plan 40's claims (a)-(d) for the even split too (its registrations carry no schedules: no (f))
    even_rows = P40.claims([(even.assign(source="even split"), pd.DataFrame())])
    out += even_rows[even_rows["predictor"] == "even split"].to_dict("records")
    acc = pd.concat([a for a, _ in active], ignore_index=True)
    model = acc[acc["source"] == "model"]
    key = ["experiment", "case", "strategy"]
    if set(map(tuple, model[key].values)) != set(map(tuple, even[key].values)):
        raise ValueError("the even split's reports do not judge the same rows as the model's")

    def add(*row):
        JR.claim(out, *row)

    # every registered row measured, or (g)-(i) are not met (a failed row is not dropped from the average)
    registered = registered_rows()
    whole = len(model) == len(registered)
    add("g: model MAPE - even split MAPE, points, every row", "model", _mape(model) - _mape(even), 0.0,
        whole and _mape(model) < _mape(even))
    mg, eg = model[model["strategy"].isin(GROUPS)], even[even["strategy"].isin(GROUPS)]
    worst = float(100 * mg.loc[mg["error"].abs().idxmax(), "error"])
    add("h: MAPE %, groups 2-8", "model", _mape(mg), 3.0, whole and _mape(mg) <= 3.0)
    add("h: worst error %, groups 2-8", "model", worst, 6.0, whole and abs(worst) <= 6.0)
    add("i: model MAPE / even split MAPE, groups 2-8", "model", _mape(mg) / _mape(eg), 0.5,
        whole and _mape(mg) <= 0.5 * _mape(eg))
    gap = mg[(mg["experiment"] == GAP_CASE[0]) & (mg["case"] == GAP_CASE[1])]
    signed = float(100 * gap["error"].mean()) if len(gap) == len(GROUPS) else float("nan")
    add(f"j: mean signed error %, groups 2-8, {GAP_CASE[1]}", "model", signed, 0.0, signed < 0)  # a row missing: not met
    return pd.DataFrame(out)


def groups_table(active: list[tuple[pd.DataFrame, pd.DataFrame]], even: pd.DataFrame) -> pd.DataFrame:
    acc = pd.concat([a for a, _ in active] + [even.assign(source="even split")], ignore_index=True)
    return P40.groups_table(acc)


def main(argv: list[str] | None = None) -> int:
    p = OneLineParser(prog="python bench/plan42_judge.py", description=__doc__.splitlines()[0])
    p.add_argument("reports", help="the folder of the six ctasim compare reports, each named after its registration "
                                   f"({', '.join(EXPERIMENTS)} and each with {EVEN!r})")
    p.add_argument("--out", required=True, help="folder for claims.csv and groups.csv")
    args = parse_outputs(p, argv, folders=("--out",))
    out = Path(args.out)
    try:
        active, even = read_reports(Path(args.reports))
        result = claims(active, even)
    except (SpecError, ValueError) as e:
        p.error(str(e))
    JR.write_judgement(out, result, {"groups.csv": groups_table(active, even)})
    return 0


if __name__ == "__main__":
    sys.exit(main())
