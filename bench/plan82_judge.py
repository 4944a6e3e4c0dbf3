"""Registered plan 82 (the 2-GPU one-CTA-per-tile grids under the one H200's survival ticket law) from its ``ctasim
compare`` reports.

    python bench/plan82_judge.py --reports REPORTS --out bench/results/validation-registered82

REPORTS holds one ``ctasim compare`` report folder per registration of :data:`REGISTRATIONS`, named as the
registration (``ctasim compare bench/predictions/NAME RUN/EXPERIMENT --out REPORTS/NAME``, EXPERIMENT the
registration's experiment, ``reg82-ctapipe-h8192`` or ``-h10240``). The claims, registered with the predictions
(bench/predictions/reg82-ctapipe-h8192/README.md), over the rows the 2xH200 call measured (never a row chosen after):

* (a) ``h200-x2-mechanism`` (plan 11's profile, the registrations without a suffix): MAPE <= 3% and worst |error| <= 6%
  over every CTA-pipelining row;
* (b) ``-survival`` (the one H200's survival ticket law as adopted): MAPE below the mechanism profile's over the
  one-CTA-per-tile rows (:data:`ONE_CTA`);
* (c) ``-survival-gap`` (the same law with the gap spread alone): MAPE below ``-survival``'s there;
* (d) ``-calibrated`` (the per-variant fits of ``h200-x2-calibrated``): MAPE below each of the three mechanism
  profiles' there;
* (e) per registration (its ``predictor`` column names it), the fastest of the measured strategies at every M (the
  strategy measured fastest is predicted within 0.5% of the predicted fastest);
* (f) per registration, MAPE at most half the naive FLOPs line's over its rows.

Writes ``claims.csv`` (claim, predictor, value, threshold, met) and ``rows.csv`` (every judged row, each
registration's error beside the measurement) into ``--out``. A report that is missing, not registered or of another
experiment is refused in one line (exit 2), before anything is written.
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

EXPERIMENTS = ("reg82-ctapipe-h8192", "reg82-ctapipe-h10240")
PROFILES = {"": "mechanism", "-survival": "survival", "-survival-gap": "survival-gap", "-calibrated": "per-variant"}
"""Registration suffix -> the predictor's name in the claims."""
REGISTRATIONS = tuple(f"{e}{s}" for e in EXPERIMENTS for s in PROFILES)
ONE_CTA = ("ctapipe-1x1", "ctapipe-c12", "ctapipe-c21")
"""The one-CTA-per-tile variants, whose tiles the ticket law prices (their grids hand each freed slot the next tile)."""
MAPE, WORST, TIE = 0.03, 0.06, 0.005


def rows(reports: Path) -> pd.DataFrame:
    """Every judged model row of every registration's report, with its predictor and experiment, and the naive line's
    prediction beside it; ValueError (one line) for a missing or foreign report, a model row without the naive line's,
    or an experiment's reports that judge different rows or times."""
    out, first = [], None
    for exp in EXPERIMENTS:
        for suffix, name in PROFILES.items():
            acc, _ = JR.read_report(reports / f"{exp}{suffix}", exp)
            model = acc[acc["source"] == "model"].set_index(["case", "strategy"]).sort_index()
            naive = acc[acc["source"] == "naive"].set_index(["case", "strategy"])["predicted_ms"]
            if model.empty:
                raise ValueError(f"{reports / (exp + suffix)}: no model rows")
            if suffix == "":
                first = model["measured_ms"]
            elif not model["measured_ms"].equals(first):
                raise ValueError(f"{reports / (exp + suffix)}: judges other rows or times than {exp}'s report")
            if naive.reindex(model.index).isna().any():
                raise ValueError(f"{reports / (exp + suffix)}: a model row without the naive line's beside it")
            out.append(pd.DataFrame({"experiment": exp, "predictor": name, "case": model.index.get_level_values(0),
                                     "strategy": model.index.get_level_values(1),
                                     "measured_ms": model["measured_ms"].to_numpy(),
                                     "predicted_ms": model["predicted_ms"].to_numpy(),
                                     "error": model["error"].to_numpy(),
                                     "naive_ms": naive.reindex(model.index).to_numpy()}))
    df = pd.concat(out, ignore_index=True)
    df["naive_error"] = df["naive_ms"] / df["measured_ms"] - 1
    df["pipelined"] = df["strategy"].str.startswith("ctapipe-")
    df["one_cta"] = df["strategy"].isin(ONE_CTA)
    return df


def _mape(d: pd.DataFrame, col: str = "error") -> float:
    return float(d[col].abs().mean()) if len(d) else float("nan")


def claims(df: pd.DataFrame) -> pd.DataFrame:
    out: list = []
    by = {name: df[df["predictor"] == name] for name in PROFILES.values()}
    mech = by["mechanism"]
    pipe = mech[mech["pipelined"]]
    worst = float(pipe["error"].abs().max()) if len(pipe) else float("nan")
    JR.claim(out, "a", "mechanism", _mape(pipe), MAPE, len(pipe) > 0 and _mape(pipe) <= MAPE and worst <= WORST)
    JR.claim(out, "a worst", "mechanism", worst, WORST, len(pipe) > 0 and worst <= WORST)
    one = {name: _mape(d[d["one_cta"]]) for name, d in by.items()}
    JR.claim(out, "b", "survival", one["survival"], one["mechanism"], one["survival"] < one["mechanism"])
    JR.claim(out, "c", "survival-gap", one["survival-gap"], one["survival"], one["survival-gap"] < one["survival"])
    best_mech = min(one["mechanism"], one["survival"], one["survival-gap"])
    JR.claim(out, "d", "per-variant", one["per-variant"], best_mech, one["per-variant"] < best_mech)
    for (exp, name), d in df.groupby(["experiment", "predictor"], sort=False):
        right = total = 0
        for _, g in d.groupby("case"):
            total += 1
            fastest = g.loc[g["measured_ms"].idxmin(), "strategy"]
            p = g.set_index("strategy")["predicted_ms"]
            right += bool(p[fastest] <= p.min() * (1 + TIE))
        reg = exp + next(s for s, n in PROFILES.items() if n == name)
        JR.claim(out, "e", reg, right, total, total > 0 and right == total)
        JR.claim(out, "f", reg, _mape(d), _mape(d, "naive_error") / 2, _mape(d) <= _mape(d, "naive_error") / 2)
    return pd.DataFrame(out)


def main(argv: list[str] | None = None) -> int:
    p = OneLineParser(prog="python bench/plan82_judge.py", description=__doc__.splitlines()[0])
    p.add_argument("--reports", required=True, type=Path,
                   help="folder of ctasim compare's report folders, one per registration, named as it")
    p.add_argument("--out", required=True, type=Path, help="folder for claims.csv and rows.csv")
    args = parse_outputs(p, argv, folders=("--out",))
    try:
        df = rows(args.reports)
    except ValueError as e:
        print(f"plan82_judge: {e}", file=sys.stderr)
        return 2
    JR.write_judgement(args.out, claims(df), {"rows.csv": df})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
