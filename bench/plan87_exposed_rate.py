"""Registered plan 87: the H200's exposed rate on the 8xH100 profile, judged at the lockstep level, at M = 32768.

    python bench/plan87_exposed_rate.py --register [--out bench/predictions/reg87-exposed-rate]
    python bench/plan87_exposed_rate.py --judge RUN_DIR [--registered bench/predictions/reg87-exposed-rate]
                                        [--out bench/results/validation-registered87]
    # the measurement (one H100, one call): per H of :data:`HS`,
    # python -m ctahw.percta RUN_DIR/OUT_H<h> --h <h> --ms 32768 --variants <plan 85's VARIANTS> --reps 5

Registered plan 86 asked whether ``h100-x8-mechanism`` should charge the exposed share of a wave's HBM time at the
H200's measured rate (``h100-x8-mechanism-exposed``, the field plan 76 adopted on the one-GPU H100 profile). On a
fourth H100 the twin beat the profile and the flat predictor on the grouped producers and lockstep on every non-row
order's first two waves, but its rule also required the twin at the profile's ticket spread within 2.5% at every H, and
at H = 6144 the spread's re-reads put groups of 4 at +2.63%: not adopted. Read post-hoc, at the lockstep level (spread
0) the twin priced the grouped producers of both H100 calls within -1.4 to +1.5%. Plan 87 judges the rate where the
spread does not enter -- the twin's lockstep level against the profile's (:data:`PREDICTORS` of plan 86) -- on a new M
(32768: twice the waves of plans 83-86) and H = :data:`HS`, and reports the spread's effect separately (claim (e)).

Claims (:data:`CLAIMS`) and the adoption rule (:data:`ADOPT`): where (a), (b) and (d) are met, ``h100-x8-mechanism``
takes ``l2_hbm_exposed_gbps`` (``ctasim.profiles``; the ticket spread as it is) and docs/advice.md is written again.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import pandas as pd  # noqa: E402

import plan85_grouped_kept as p85  # noqa: E402
import plan86_x8_exposed as p86  # noqa: E402
import registered_plan  # noqa: E402
from plan83_alone_edge import tiles  # noqa: E402

M = 32768
VARIANTS, RUNS = p85.VARIANTS, p85.RUNS
ROW, PAIRS, GROUPED = p85.ROW, p85.PAIRS, p85.GROUPED
HS = (7168, 10240, 13312)
"""H: all three run at M = 16384 before (7168 and 13312 by plan 86, 10240 by plan 85); at 7168 the profile's spread adds
re-reads to groups of 4 (+1.0% in the model; plan 86's call: +1.50% against +0.54% at the lockstep level)."""
GPU = p86.GPU
PREDICTORS, predictors = p86.PREDICTORS, p86.predictors
EARLY = p86.EARLY
LEVEL = 0.02
REGISTERED = ROOT / "bench/predictions/reg87-exposed-rate"
JudgeError = registered_plan.JudgeError
WHY = (f"plan 87's call runs python -m ctahw.percta RUN_DIR/OUT_H<h> --h <h> --ms {M} --variants "
       + ",".join(VARIANTS) + " per H, and writes RUN_DIR/env.txt")
CLAIMS = {
    "a": "grouped producers (w21g4, w21g8): twin_lockstep's mean |error| of the mean over full waves >= 2 at most half "
         "lockstep's over the six cases",
    "b": f"grouped producers: twin_lockstep within {LEVEL:.0%} of the measured mean over full waves >= 2 at every H",
    "c": "grouped producers: twin_lockstep's mean |error| under the flat (naive) predictor's over the six cases",
    "d": "waves 0-1 of the pairs and the grouped producers: twin_lockstep's mean |error| of their mean at most half "
         "lockstep's over the nine cases",
    "e": f"groups of 4 at H = {HS[0]}: the twin at its lockstep level nearer the measured than at the profile's spread "
         "(the spread's re-reads there not in the runs)",
}
ADOPT = ("where (a), (b) and (d) are met, h100-x8-mechanism takes l2_hbm_exposed_gbps (the H200's measured hbm_gbps, "
         "as h100-x1-datasheet since plan 76; its ticket spread as it is) and docs/advice.md is written again")


def register() -> pd.DataFrame:
    """Per H, variant, predictor and wave: the predicted median tile time (us) of that wave, at M = :data:`M`."""
    return p86.register_at(HS, M)


def measured(run_dir: Path) -> pd.DataFrame:
    """:func:`plan85_grouped_kept.measured_at` at :data:`HS` and M = :data:`M`."""
    return p85.measured_at(run_dir, HS, WHY, "plan 87", M)


def cases(pred: pd.DataFrame, meas: pd.DataFrame) -> pd.DataFrame:
    """:func:`plan86_x8_exposed.cases` at M = :data:`M`'s tile counts."""
    return p86.cases(pred, meas, lambda h: tiles(h, M))


def claims(c: pd.DataFrame, provenance: str) -> pd.DataFrame:
    mae = p86.mae
    grouped = c[c["variant"].isin(GROUPED)]
    twin = grouped[grouped["predictor"] == "twin_lockstep"]
    worst = twin.loc[twin["mean_err_pct"].abs().idxmax()]
    early = c[c["variant"].isin((PAIRS, *GROUPED))]
    t, lo, fl = mae(grouped, "twin_lockstep"), mae(grouped, "lockstep"), mae(grouped, "flat")
    te, le = mae(early, "twin_lockstep", "early_err_pct"), mae(early, "lockstep", "early_err_pct")
    g4 = c[(c["variant"] == GROUPED[0]) & (c["h"] == HS[0])].set_index("predictor")["mean_err_pct"]
    rows = [
        ("a", f"{t:.2f}% against {lo:.2f}%", bool(t <= lo / 2)),
        ("b", f"worst {worst['mean_err_pct']:+.2f}% ({worst['variant'].removeprefix('cutlass_ctapipe_')} at "
              f"H = {worst['h']})", bool((twin["mean_err_pct"].abs() <= LEVEL * 100).all())),
        ("c", f"{t:.2f}% against {fl:.2f}%", bool(t < fl)),
        ("d", f"{te:.2f}% against {le:.2f}%", bool(te <= le / 2)),
        ("e", f"{g4['twin_lockstep']:+.2f}% against {g4['twin']:+.2f}%",
         bool(abs(g4["twin_lockstep"]) < abs(g4["twin"]))),
    ]
    return registered_plan.with_adoption(registered_plan.claims_table(rows, CLAIMS), ("a", "b", "d"), ADOPT,
                                         provenance)


PLAN = registered_plan.Plan(
    name="plan87_exposed_rate", description=__doc__.splitlines()[0], registered=REGISTERED,
    results=ROOT / "bench/results/validation-registered87", register=register, measured=measured, cases=cases,
    claims=claims, first_file=lambda run_dir: run_dir / "env.txt")


def main(argv: list[str] | None = None) -> int:
    return registered_plan.main(PLAN, argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
