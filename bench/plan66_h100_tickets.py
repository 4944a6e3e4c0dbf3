"""Registered plan 66: the H100's sharers spread wider, out of sample (no GPU)

    python bench/plan66_h100_tickets.py --register [--out bench/predictions/reg66-h100-tickets]
    python bench/plan66_h100_tickets.py --judge RUN_DIR [--registered bench/predictions/reg66-h100-tickets]
                                        [--out bench/results/validation-registered66]

Registered plans 64 and 65 (six H100s) found the H100s losing the pairs' and row order's reuse where
``h100-x1-datasheet`` keeps it (row order 10-21% of makespan fast, pairs 2-8%). Neither the L2's survival (probed on
two H100s: the H200's in L2 sizes) nor one smaller L2 prices it (``bench/posthoc_h100_capacity.py``). The traces do:
an H100's later sharers of a W panel come 1.3-1.8 reaches after the one before at the median where an H200's come
0.85-0.97, its tickets spread 3-5 times as fast in pairs and row order (the same in groups of 8), and ``ctahw
calibrate``'s gap traces read a ``ticket_gap_cv`` of 1.22 on two H100s (the H200s' 0.63-0.67). The twin
``h100-x1-datasheet-tickets`` (``ctasim.profiles``) takes that gap spread and twice the H200's ``ticket_spread``
(chosen post-hoc from 2, 3 and 4 on the six calls: ``bench/posthoc_h100_tickets.py``, MAPE 2.54-4.52% against the
datasheet profile's 3.45-5.54%).

Plan 66 asks whether that holds on shapes no H100 ran (:data:`EXPERIMENTS`): two chains the H200s ran, H = 6144 (a
layer's weights 1.44 times the H100's L2; M = 8192, 16384) and H = 7168 (1.96 times; M = 4096, 8192, 16384), every
order and sequential, 25 cases. Sources (:data:`SOURCES`): ``model`` (``h100-x1-datasheet``), ``tickets`` (the
twin), ``naive`` (the FLOPs line fitted on H200 GEMMs) and ``h200-measured`` (the median over every committed H200
call of the case, ``plan64_h100_datasheet.h200_measured``).

``--register`` writes ``predicted.csv``; ``--judge RUN_DIR`` reads ``RUN_DIR/env.txt`` (an H100) and
``RUN_DIR/EXP/results.csv`` of both experiments and writes ``cases.csv`` and ``claims.csv`` (:data:`CLAIMS`), as plan
65's judge does. No adoption rule: the twin's reach is a factor read off six calls, not a mechanism; where (a) and
(b) hold, a spread that grows with the misses is the law worth building. Left out: the sustained regime, per-CTA
starts (``ctasim compare`` against ``bench/predictions/reg66-h100-*``), H100s of other forms.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import pandas as pd  # noqa: E402

import plan64_h100_datasheet as p64  # noqa: E402
import registered_plan  # noqa: E402

EXPERIMENTS = {"reg10-chain-order-h6144": ("reg66-h100-h6144", "reg66-h100-h6144-tickets"),
               "reg49-chain-order-h7168": ("reg66-h100-h7168", "reg66-h100-h7168-tickets")}
"""Experiment -> its ``ctasim predict`` registrations under ``h100-x1-datasheet`` and under the twin
``h100-x1-datasheet-tickets`` (bench/predictions/)."""
SOURCES = ("model", "tickets", "naive", "h200-measured")
PREDICTIONS = p64.PREDICTIONS
REGISTERED = ROOT / "bench/predictions/reg66-h100-tickets"
JudgeError = registered_plan.JudgeError
MAPE, WORST = 3.0, 6.0
TIE = p64.TIE
LOSING = ("intragpu-g2", "intragpu-row")
"""The orders whose reuse the H100s lost where the datasheet profile keeps it (claim b)."""
WHY = "plan 66's call times both experiments on one H100"
CLAIMS = {
    "a": "twin (h100-x1-datasheet-tickets): makespan MAPE below the model's (h100-x1-datasheet) over every case and "
         "strategy of the two experiments (25)",
    "b": "twin: makespan MAPE below the model's over the pairs and row order (10 cases)",
    "c": f"twin: makespan MAPE <= {MAPE:g}% and worst |error| <= {WORST:g}%",
    "d": f"model: makespan MAPE <= {MAPE:g}% and worst |error| <= {WORST:g}%",
    "e": "twin: makespan MAPE at most half the naive FLOPs line's",
    "f": f"twin: the fastest strategy right at every chain (H, M) (5; where its two fastest are within {TIE:g}% of "
         "each other, either)",
}


def register(predictions: Path = PREDICTIONS, runs: Path = p64.H200_RUNS) -> pd.DataFrame:
    """Every source's makespan (ms) per experiment, case and strategy (:data:`SOURCES`)."""
    return p64.register_twin(EXPERIMENTS, "tickets", predictions, runs)


def measured(run_dir: Path) -> pd.DataFrame:
    """Both experiments' timed medians (experiment, case, strategy, measured_ms), from an H100's call."""
    return p64.h100_timed(run_dir, EXPERIMENTS, WHY, "plan 66")


def cases(pred: pd.DataFrame, meas: pd.DataFrame) -> pd.DataFrame:
    """Per experiment, case, strategy and source: measured and predicted makespans and the error (%).
    :class:`JudgeError` where a registered case has no timed run."""
    return p64.timed_cases(pred, meas)


def claims(c: pd.DataFrame, provenance: str) -> pd.DataFrame:
    by, mape, complete, _ = p64.by_source(c, SOURCES)
    t = by["tickets"]
    worst_model, worst_twin = p64.signed_worst(by["model"]), p64.signed_worst(t)
    losing = {s: d[d["strategy"].isin(LOSING)]["error_pct"].abs() for s, d in by.items()}
    fastest = p64.fastest_right(t)
    n = len(by["model"])
    rows = [
        ("a", f"{mape['tickets']:.2f} against the model's {mape['model']:.2f}% over {n} cases",
         complete and mape["tickets"] < mape["model"]),
        ("b", f"{losing['tickets'].mean():.2f} against the model's {losing['model'].mean():.2f}% over "
              f"{len(losing['model'])} cases", complete and len(losing["model"]) > 0
         and losing["tickets"].mean() < losing["model"].mean()),
        ("c", f"MAPE {mape['tickets']:.2f}%, worst {worst_twin:.2f}%",
         complete and mape["tickets"] <= MAPE and abs(worst_twin) <= WORST),
        ("d", f"MAPE {mape['model']:.2f}%, worst {worst_model:.2f}%",
         complete and mape["model"] <= MAPE and abs(worst_model) <= WORST),
        ("e", f"{mape['tickets']:.2f} against the naive line's {mape['naive']:.2f}%",
         complete and mape["tickets"] <= mape["naive"] / 2),
        ("f", f"{sum(fastest)} of {len(fastest)}", len(fastest) > 0 and all(fastest)),
    ]
    return registered_plan.claims_table(rows, CLAIMS).assign(provenance=provenance)


PLAN = registered_plan.Plan(
    name="plan66_h100_tickets", description=__doc__.splitlines()[0], registered=REGISTERED,
    results=ROOT / "bench/results/validation-registered66", register=register, measured=measured, cases=cases,
    claims=claims, first_file=lambda run_dir: run_dir / "reg10-chain-order-h6144" / "results.csv")


def main(argv: list[str] | None = None) -> int:
    return registered_plan.main(PLAN, argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
