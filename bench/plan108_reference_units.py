"""Registered plan 108: GEMMs alone on an H100 unit not yet timed, scaled by the calibration GEMM timed beside them

    python bench/plan108_reference_units.py --register [--out bench/predictions/reg108-reference-units]
    python bench/plan108_reference_units.py --judge RUN [--out bench/results/validation-registered108]

Registered plans 106 and 107 timed six GEMMs at M = 32768 and the calibration GEMM (16384 x 8192 x 8192) by the shape
probe on two H100 units, whose speeds differ by ~4% on every shape. Read after those calls
(``bench/posthoc_h100_reference_units.py``): dividing each call's predictions by its own ratio on the calibration
GEMM (``ctasim predict --reference-ms``'s recipe) took ``h100-x1-datasheet`` from 2.96 to 1.34% MAPE over 26 shapes,
and left the same sign on both units: three of the down GEMMs (:data:`FAST`) priced 1.1-3.5% fast against the
reference. Plan 108 asks it of a unit no committed call names (:data:`SEEN`), on plan 106's call
(``bench/hw/run_plan106.sh``: the same shapes, :data:`plan106_harness_or_unit.SHAPES`), judged on its probe alone.

``--register`` writes ``predicted.csv``: plan 106's registered prices of the seven shapes (every order, the profile
and the naive line, unchanged: plan 106's ``predicted.csv``), so that a judge that finds them changed refuses;
``--judge RUN`` reads ``RUN/env.txt`` (an H100 not in :data:`SEEN`) and ``RUN/gemm_shapes.csv`` and writes
``best.csv`` (per shape: the best measured order, each predictor's error there, as registered and scaled by its own
ratio on the calibration GEMM) and ``claims.csv`` (:data:`CLAIMS`). Refusals (one line, exit 2, nothing written): a
missing file or shape, a call on another GPU or on a unit already seen, a changed registration. Nothing is adopted:
the claims say whether one reference GEMM timed beside a prediction is the fix for the H100s' unit spread, and whether
the down GEMMs' sign is the profile's.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import pandas as pd  # noqa: E402

import plan101_block_ops as p101  # noqa: E402
import plan106_harness_or_unit as p106  # noqa: E402
from posthoc_h100_reference_units import scale_by_reference  # noqa: E402

REGISTRATION = ROOT / "bench/predictions/reg108-reference-units"
RESULTS = ROOT / "bench/results/validation-registered108"
SHAPES = p106.SHAPES
REFERENCE = p106.REFERENCE
OTHERS = tuple(s for s in SHAPES if s != REFERENCE)
FAST = ((32768, 4096, 14336), (32768, 5120, 14336), (32768, 7168, 20480))
"""The down GEMMs the reference-scaled profile priced fast on both units (-1.1 to -3.5%)."""
SEEN = ("GPU-7a1b197d", "GPU-e8a691c8", "GPU-d182769f", "GPU-21f0e6a0")
"""The H100 units that timed these shapes (plans 103 and 105-107's calls; the rules were read from the last two): a
call on one of them is a repeat, not plan 108's measurement."""
MAPE, FAST_RANGE = 1.5, (-4.0, -0.5)
CLAIMS = {
    "a": f"scaled: the profile, scaled by its ratio on the calibration GEMM, within {MAPE:g}% MAPE over the six "
         "M = 32768 GEMMs",
    "b": "scaling helps where the unit is off: the scaled profile nearer than the registered one if the reference "
         "ratio is more than 2% from 1, no more than 0.5 points further otherwise",
    "c": f"the sign is the profile's: each of the three down GEMMs of FAST priced {FAST_RANGE[0]:g} to "
         f"{FAST_RANGE[1]:g}% against the measurement once scaled",
    "d": "read, not judged: the naive line scaled by its own ratio against the scaled profile",
}


def register(out: Path) -> pd.DataFrame:
    out.mkdir(parents=True, exist_ok=True)
    pred = pd.read_csv(p106.REGISTRATION / "predicted.csv")
    pred.to_csv(out / "predicted.csv", index=False)
    return pred


def read_call(run: Path) -> pd.DataFrame:
    env = p101.h100_env(run, "plan 108")
    seen = [u for u in SEEN if u in env]
    if seen:
        raise ValueError(f"{run / 'env.txt'} names {seen[0]}, a unit that timed these shapes: a repeat, not plan 108")
    return p106.probe_runs(run)


def judge(runs: pd.DataFrame, registration: Path = REGISTRATION) -> dict[str, pd.DataFrame]:
    o, b, _ = p106.probe_orders(runs, SHAPES, registration)
    ref = b.loc[REFERENCE]
    scale_by_reference(b, ref)
    six = b.loc[list(OTHERS)]
    mape = lambda p: six[f"{p}_pct"].abs().mean()  # noqa: E731
    off = abs(ref.model_pct) > 2.0
    helps = mape("model_scaled") < mape("model") if off else mape("model_scaled") <= mape("model") + 0.5
    fast = [float(b.loc[s, "model_scaled_pct"]) for s in FAST]
    rows = [
        ("a", f"{mape('model_scaled'):.2f}% (registered {mape('model'):.2f}%; reference {ref.model_pct:+.2f}%)",
         mape("model_scaled") <= MAPE),
        ("b", f"{mape('model_scaled'):.2f} against {mape('model'):.2f}% (the reference {'more' if off else 'no more'} "
              "than 2% off)", helps),
        ("c", ", ".join(f"{x:+.2f}" for x in fast), all(FAST_RANGE[0] <= x <= FAST_RANGE[1] for x in fast)),
        ("d", f"naive scaled {mape('naive_scaled'):.2f}% (registered {mape('naive'):.2f}%) against the profile's "
              f"{mape('model_scaled'):.2f}%", mape("model_scaled") < mape("naive_scaled")),
    ]
    claims = pd.DataFrame([dict(claim=c, rule=CLAIMS[c], value=v, met=bool(m)) for c, v, m in rows])
    return {"orders": o, "best": b.reset_index(), "claims": claims}


def main(argv=None) -> int:
    return p101.breakdown_main(argv, "plan108_reference_units", __doc__.splitlines()[0], REGISTRATION, RESULTS,
                               register, judge, read_call, "best")


if __name__ == "__main__":
    raise SystemExit(main())
