"""Registered plan 55: the chain kernel's order effect in its tiles, on registered plan 54's traced runs (no GPU).

    python bench/plan55_order_tiles.py --register [--out bench/predictions/reg55-order-tiles]
    python bench/plan55_order_tiles.py --judge RUN_DIR [--registered bench/predictions/reg55-order-tiles]
                                       [--out bench/results/validation-registered55]

Post-hoc, over 13 traced runs of plans 9-53 (``bench/posthoc_order_mainloop.py``), the adopted profile
(``h200-x1-calibrated``: the survival ticket law, the tickets mainloop factor 1.019) priced the tiles of groups of 4 a
point slower against groups of 8 than they ran, where the partition law it replaced was right on average, and the
makespan's order error followed the tiles' case by case. Plan 55 asks that of shapes the post-hoc reading never saw:
registered plan 54's 4-layer chains at H = 6400 and 9728, M = 4096, 8192, 16384, whose measurement (one traced run of
each case and order, ``ctahw run``) does not exist yet. It needs no call of its own.

``--register`` writes ``predicted.csv``: per experiment, case, order (groups of 8, ``intragpu``; of 4,
``intragpu-g4``) and predictor -- ``adopted`` (the profile as it is) and ``partition`` (the same with the partition
law and factor 1: the profile before plan 53, plan 54's twin) -- the model's late mainloop (median of
``t_compute_end - t_acquire`` over the second half of the tiles by ``t_acquire``, µs) and makespan (ms),
by ``bench/posthoc_order_mainloop.modelled``. A registration is never overwritten.

``--judge`` reads RUN_DIR/EXP/ctapipe_traces.trace.npz for both experiments (the traced runs of plan 54's call) and
sets each case's penalty of groups of 4 over groups of 8 as ``posthoc_order_mainloop.penalties`` does (the mainloop's
difference over the measured groups of 8's late mainloop, the makespans' ratio less 1; points), measured and per
predictor from the registered figures; writes ``cases.csv`` and ``claims.csv`` (:data:`CLAIMS`, with whether the
figures are registered: ``ctasim.accuracy.provenance_order`` of predicted.csv against the first bundle). A missing
registration, run or traced case is refused in one line, exit 2, nothing written.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

import posthoc_order_mainloop as pom  # noqa: E402
import registered_plan  # noqa: E402

EXPERIMENTS = ("reg54-chain-deep-h6400", "reg54-chain-deep-h9728")
CASES = ("m=4096", "m=8192", "m=16384")
ORDERS = (pom.REFERENCE, "intragpu-g4")
PREDICTORS = {"adopted": None, "partition": ("partition", 1.0)}
"""Predictor -> the ticket law and tickets mainloop factor put on the experiment's profile (None: the profile's)."""
REGISTERED = ROOT / "bench/predictions/reg55-order-tiles"
JudgeError = registered_plan.JudgeError
"""A registration or a run that cannot be judged (one line; ``bench/registered_plan.py``)."""
OVERPRICE_POINTS = 0.5
SIGNS_AGREE = 5
CLAIMS = {
    "a": f"adopted: the groups of 4's mainloop penalty over groups of 8 overpriced, mean error >= +{OVERPRICE_POINTS:g} "
         "point over the 6 cases",
    "b": "partition: mean |error| of the groups of 4's mainloop penalty below the adopted profile's",
    "c": f"adopted: the makespan penalty's error has the sign of the mainloop penalty's in at least {SIGNS_AGREE} of "
         "the 6 cases",
}


def register() -> pd.DataFrame:
    """The model's late mainloop and makespan of every (experiment, case, order) per predictor."""
    pairs = [(c, o) for c in CASES for o in ORDERS]
    parts = [pom.modelled(exp, pairs, law).assign(experiment=exp, predictor=label)
             for exp in EXPERIMENTS for label, law in PREDICTORS.items()]
    return pd.concat(parts, ignore_index=True)[["experiment", "case", "order", "predictor", "late_us", "makespan_ms"]]


def measured(run_dir: Path) -> pd.DataFrame:
    """The traced runs' late mainloop and makespan of every (experiment, case, order) (``pom.traced_figures``)."""
    pairs = [(c, o) for c in CASES for o in ORDERS]
    parts = []
    for exp in EXPERIMENTS:
        traces = registered_plan.traced_runs(run_dir, exp, pairs, "plan 54's call traces one run of each chain-kernel "
                                             "case")
        parts.append(pom.traced_figures(traces.items()).assign(experiment=exp))
    return pd.concat(parts, ignore_index=True)


def cases(pred: pd.DataFrame, meas: pd.DataFrame) -> pd.DataFrame:
    """Per experiment, case and predictor: the groups of 4's penalties over groups of 8, measured and predicted."""
    rows = [pom.compared(meas[meas["experiment"] == exp],
                         pred[(pred["experiment"] == exp) & (pred["predictor"] == label)])
            .assign(experiment=exp, predictor=label) for exp in EXPERIMENTS for label in PREDICTORS]
    return pd.concat(rows, ignore_index=True)[["experiment", "case", "order", "predictor", "late_us_meas", "late_us_model", "mainloop_pct_meas",
              "mainloop_pct_model", "mainloop_err", "makespan_pct_meas", "makespan_pct_model", "makespan_err"]]


def claims(c: pd.DataFrame, provenance: str) -> pd.DataFrame:
    a = c[c["predictor"] == "adopted"]
    p = c[c["predictor"] == "partition"]
    agree = int((np.sign(a["makespan_err"]) == np.sign(a["mainloop_err"])).sum())
    rows = [
        ("a", f"mean error {a['mainloop_err'].mean():+.2f} points over {len(a)} cases",
         a["mainloop_err"].mean() >= OVERPRICE_POINTS),
        ("b", f"{p['mainloop_err'].abs().mean():.2f} against {a['mainloop_err'].abs().mean():.2f} points",
         p["mainloop_err"].abs().mean() < a["mainloop_err"].abs().mean()),
        ("c", f"{agree} of {len(a)}", agree >= SIGNS_AGREE),
    ]
    return registered_plan.claims_table(rows, CLAIMS, provenance)


PLAN = registered_plan.Plan(
    name="plan55_order_tiles", description=__doc__.splitlines()[0], registered=REGISTERED,
    results=ROOT / "bench/results/validation-registered55", register=register, measured=measured, cases=cases, claims=claims,
    first_file=lambda run_dir: run_dir / EXPERIMENTS[0] / pom.BUNDLE)


def main(argv: list[str] | None = None) -> int:
    return registered_plan.main(PLAN, argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
