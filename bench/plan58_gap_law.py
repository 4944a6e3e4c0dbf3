"""Registered plan 58: the survival ticket law refined by the sharers' gap spread and the touched bytes (no GPU here)

    python bench/plan58_gap_law.py --register [--out bench/predictions/reg58-gap-law]
    python bench/plan58_gap_law.py --judge RUN_DIR [--registered bench/predictions/reg58-gap-law]
                                   [--out bench/results/validation-registered58]

Registered plans 55-57 found the adopted profile's ticket law missing the chain kernel's tile orders: its loss of a
panel's reuse flips where the hardware's grows gradually (plan 56), and the L2 pushes a line out by the lines hit in
between too (plan 57). ``h200-x1-calibrated-gaps`` is the profile with the law refined by the sharers' measured gap
spread (``ticket_gap_cv`` 0.74) and the touched bytes (``ticket_touched`` 1.3, chosen post-hoc on every traced run;
``bench/posthoc_gap_law.py``). Plan 58 asks it of shapes never run when it was registered: 2-layer chains at H = 7424
and 8448, M = 8192 and 16384, sequential and the chain kernel in groups of 8 and 4, pairs and row order
(``specs/experiments/reg58-gap-law-h7424``, ``-h8448``). Measured on one H200 (GPU-1047cac3,
bench/results/hw/2026-12-05-registered58-1gpu): claims a-c met, so by its rule h200-x1-calibrated took both
refinements on 2026-12-05; the "adopted" predictor here is the profile before that (``pom.as_plan_53``).

``--register`` writes ``predicted.csv``: per experiment, case, chain-kernel order and predictor (:data:`PREDICTORS`:
the adopted profile and the twin) the model's late mainloop (µs; ``bench/posthoc_order_mainloop.late_median`` of
``t_compute_end``) and makespan (ms). A registration is never overwritten.

``--judge`` reads RUN_DIR/EXP/results.csv (the timed medians) and RUN_DIR/EXP/ctapipe_traces.trace.npz (the first
traced run of each case and order: the late mainloop of ``t_mainloop_end``) of both experiments, sets per case, order
and predictor the mainloop penalty over groups of 8 (late mainloop over groups of 8's, less 1, points; each source over
its own groups of 8), the makespan penalty (the same of the makespans) and the makespan error, and writes
``cases.csv`` and ``claims.csv`` (:data:`CLAIMS`; registered or post-hoc by ``ctasim.accuracy.provenance_order`` of
predicted.csv against the first bundle). A missing registration, run or case is refused in one line, exit 2, nothing
written.
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
from ctasim.spec import load_hardware  # noqa: E402

EXPERIMENTS = ("reg58-gap-law-h7424", "reg58-gap-law-h8448")
CASES = ("m=8192", "m=16384")
ORDERS = (pom.REFERENCE, "intragpu-g4", "intragpu-g2", "intragpu-row")
TWIN = "h200-x1-calibrated-gaps"
PREDICTORS = ("adopted", "twin")
"""``adopted``: the experiment's profile (h200-x1-calibrated) as it was when plan 58 was registered, registered plan
53's (``pom.simulated``'s default, ``pom.as_plan_53``); ``twin``: :data:`TWIN`."""
REGISTERED = ROOT / "bench/predictions/reg58-gap-law"
JudgeError = registered_plan.JudgeError
MAPE_SLACK = 0.3
CLAIMS = {
    "a": "twin: mean |error| of the mainloop penalty over groups of 8 (pairs and row order, 8 cases) below the "
         "adopted profile's",
    "b": "twin: mean |error| of the makespan penalty over groups of 8 (groups of 4, pairs and row order, 12 cases) "
         "below the adopted profile's",
    "c": f"twin: chain-kernel makespan MAPE (16 cases) at most {MAPE_SLACK} points above the adopted profile's",
    "d": "twin: chain-kernel makespan MAPE <= 3% and worst <= 6%",
}
ADOPT = ("a", "b", "c")
"""The adoption rule: the profile takes the twin's ticket_gap_cv and ticket_touched where all of these are met."""


def register() -> pd.DataFrame:
    twin = load_hardware(TWIN)
    rows = []
    for exp in EXPERIMENTS:
        pairs = [(c, o) for c in CASES for o in ORDERS]
        for label, per_order in (("adopted", None), ("twin", lambda hw, _s: twin)):
            for (case, order), tr in pom.simulated(exp, pairs, per_order=per_order).items():
                rows.append(dict(experiment=exp, case=case, order=order, predictor=label,
                                 late_us=pom.late_median(tr.tiles, "t_compute_end"), makespan_ms=tr.makespan_ns / 1e6))
    return pd.DataFrame(rows)


def measured(run_dir: Path) -> pd.DataFrame:
    return registered_plan.order_runs(run_dir, EXPERIMENTS, CASES, ORDERS,
                                      "plan 58's call runs and traces both experiments")


cases = registered_plan.order_cases
"""Per experiment, case, order and predictor: measured and modelled penalties and makespans, and their errors."""


def claims(c: pd.DataFrame, provenance: str) -> pd.DataFrame:
    def mean_abs(predictor, col, orders):
        s = c[(c["predictor"] == predictor) & c["order"].isin(orders)][col]
        return float(np.mean(np.abs(s))) if len(s) else float("nan"), len(s)

    ml = {p: mean_abs(p, "mainloop_err", ("intragpu-g2", "intragpu-row")) for p in PREDICTORS}
    ms = {p: mean_abs(p, "makespan_pct_err", ("intragpu-g4", "intragpu-g2", "intragpu-row")) for p in PREDICTORS}
    mape = {p: mean_abs(p, "makespan_err_pct", ORDERS) for p in PREDICTORS}
    worst = c[c["predictor"] == "twin"]["makespan_err_pct"].abs().max()
    rows = [
        ("a", f"{ml['twin'][0]:.2f} against {ml['adopted'][0]:.2f} points over {ml['twin'][1]} cases",
         ml["twin"][1] == 8 and ml["twin"][0] < ml["adopted"][0]),
        ("b", f"{ms['twin'][0]:.2f} against {ms['adopted'][0]:.2f} points over {ms['twin'][1]} cases",
         ms["twin"][1] == 12 and ms["twin"][0] < ms["adopted"][0]),
        ("c", f"{mape['twin'][0]:.2f} against {mape['adopted'][0]:.2f}% over {mape['twin'][1]} cases",
         mape["twin"][1] == 16 and mape["twin"][0] <= mape["adopted"][0] + MAPE_SLACK),
        ("d", f"MAPE {mape['twin'][0]:.2f}%, worst {worst:.2f}%", mape["twin"][0] <= 3.0 and worst <= 6.0),
    ]
    out = registered_plan.claims_table(rows, CLAIMS)
    adopt = bool(out.set_index("claim").loc[list(ADOPT), "met"].all())
    out = pd.concat([out, pd.DataFrame([{"claim": "adopt", "rule": "the profile takes the twin's ticket_gap_cv and "
                                         "ticket_touched where a, b and c are all met", "value": "yes" if adopt else
                                         "no", "met": adopt}])], ignore_index=True)
    return out.assign(provenance=provenance)


PLAN = registered_plan.Plan(
    name="plan58_gap_law", description=__doc__.splitlines()[0], registered=REGISTERED,
    results=ROOT / "bench/results/validation-registered58", register=register, measured=measured, cases=cases,
    claims=claims, first_file=lambda run_dir: run_dir / EXPERIMENTS[0] / pom.BUNDLE)


def main(argv: list[str] | None = None) -> int:
    return registered_plan.main(PLAN, argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
