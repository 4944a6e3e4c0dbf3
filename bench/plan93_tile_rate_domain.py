"""Registered plan 93: the 1x1 first wave at the tensor-copy probe's L2-to-SM rate where plan 92 found it binds.

    python bench/plan93_tile_rate_domain.py --register [--out bench/predictions/reg93-tile-rate-domain]
    python bench/plan93_tile_rate_domain.py --judge RUN_DIR [--registered bench/predictions/reg93-tile-rate-domain]
                                            [--out bench/results/validation-registered93]
    # the measurement (one H100, one call): per H of :data:`HS`,
    # python -m ctahw.percta RUN_DIR/OUT_H<h> --h <h> --ms 24576 --variants <VARIANTS> --reps 5

Registered plan 92 (one H100) found the 1x1 row-order producer's first wave with no excess over the 2x1 pairs' up to
15 tiles a row and 9.7 and 7.2% over them at 23 and 31, where the floor at the tensor-copy probe's L2-to-SM rate
(``ctahw.l2rate.measure_tiles``) priced it within +3.0 and -0.9%; post-hoc the floor was within 1.6% at 22-30 tiles a
row on earlier calls, 2.2-3.2% short at 32-33, and shorter where the first wave also reads W cold from HBM. Plan 92
also judged a wave-0 *mainloop* against whole *tile* times (the profile's 2.24 us ``tile_fixed_ns`` apart); here
every predictor is a mainloop: the tile time less ``tile_fixed_ns``, or the floor where it binds.

Plan 93 asks the floor in the domain plan 92 put it in, on another unit and another M: row order (1x1) and the pairs
(2x1 counting, ``_w21``) alone at M = 24576 at 25, 27, 35 and 37 tiles a row (:data:`HS`; none run before).
Predictors of each producer's wave-0 median mainloop (:data:`PREDICTORS`): ``flat`` and ``model`` (their tile time
less ``tile_fixed_ns``) and ``by_n`` (``model``'s mainloop floored at the wave's L2-to-SM reads at the probe's rate at
its tiles a row: the mean of the two committed default-case runs, :data:`PROBES`, linear in n between their points).

Claims (:data:`CLAIMS`); no adoption rule (the step below 18 tiles a row is no state of the model; a met (a)-(c) is
what a profile rate with a domain would be registered on).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

import plan85_grouped_kept as p85  # noqa: E402
import registered_plan  # noqa: E402
from plan90_cluster_wave0 import first_waves  # noqa: E402
from plan91_l2_rate_wave0 import bound_us  # noqa: E402
from plan92_tile_rate_wave0 import pair_cases  # noqa: E402

M = 24576
ROW, W21 = "cutlass_ctapipe", "cutlass_ctapipe_w21"
VARIANTS = (ROW, W21)
RUNS = 5
HS = (6400, 6912, 8960, 9472)
"""25, 27, 35 and 37 tiles a row (W of 82-179 MB); no producer-alone call ran these H at any M."""
GPUS = {"H100": "h100-x8-mechanism"}
PROBES = tuple(ROOT / "bench/results/hw-h100" / d / "l2rate/l2-rate.json"
               for d in ("2026-12-07-l2-tile-1gpu", "2026-12-07-l2-tile-more-1gpu"))
"""The two committed runs of the probe's default tile cases (GPU-cf79bca3, GPU-29db0663)."""
PREDICTORS = ("flat", "model", "by_n")
CLUSTER = {ROW: "1x1", W21: "2x1"}
WORST, PAIRS, EXCESS = 0.04, 0.03, 1.05
REGISTERED = ROOT / "bench/predictions/reg93-tile-rate-domain"
JudgeError = registered_plan.JudgeError
WHY = (f"plan 93's call runs python -m ctahw.percta RUN_DIR/OUT_H<h> --h <h> --ms {M} --variants "
       + ",".join(VARIANTS) + " per H, and writes RUN_DIR/env.txt")
CLAIMS = {
    "a": "by_n's mean |error| of the 1x1 wave-0 mainloop over the four H under half of model's",
    "b": f"by_n's |error| of the 1x1 wave-0 mainloop at most {WORST:.0%} at every H",
    "c": f"model's |error| of the pairs' wave-0 mainloop at most {PAIRS:.0%} at every H (the floor never binds there)",
    "d": f"row order's wave 0 over the pairs' at least {EXCESS:g} at every H",
}


def rate_by_n(n: int) -> float:
    """The probe's rate (GB/s) at ``n`` tiles a row: the two runs' mean at each of their n, linear between."""
    runs = [{int(k): float(v) for k, v in json.loads(f.read_text())["tile_l2_gbps"].items()} for f in PROBES]
    ns = sorted(runs[0])
    return float(np.interp(n, ns, [np.mean([r[x] for r in runs]) for x in ns]))


def fixed_us(hw) -> float:
    """The profile's ``tile_fixed_ns`` of the producers' config (us): what a tile time holds and a mainloop does not."""
    return hw.config(128, 256, kernel="ctapipe").tile_fixed_ns / 1e3


def register() -> pd.DataFrame:
    """Per GPU, H, variant and predictor: the predicted wave-0 median mainloop (us), the floor's rate (0: none)."""
    return mainloop_rows(HS, M)


def mainloop_rows(hs, m: int) -> pd.DataFrame:
    """Per GPU of :data:`GPUS`, H of ``hs``, variant (row order, the pairs) and predictor (``flat``, ``model``,
    ``by_n``): the wave-0 median mainloop (us) at M = ``m`` -- the tile time less ``tile_fixed_ns``, ``by_n`` floored
    at the probe's rate at the wave's tiles a row (:func:`rate_by_n`) -- and the floor's rate (0: none); plans 93 and 94
    register these."""
    from ctasim.spec import load_hardware  # noqa: PLC0415

    rows = []
    for gpu, profile in GPUS.items():
        hw = load_hardware(profile)
        fixed = fixed_us(hw)
        for h in hs:
            rate = rate_by_n(h // 256)
            for v in VARIANTS:
                model = float(p85.wave_prediction(h, v, "lockstep", hw, 0.0, m)[0]) - fixed
                flat = float(p85.wave_prediction(h, v, "flat", hw, 0.0, m)[0]) - fixed
                base = dict(gpu=gpu, profile=profile, h=h, m=m, variant=v)
                rows += [dict(base, predictor="flat", rate_gbps=0.0, wave0_us=flat),
                         dict(base, predictor="model", rate_gbps=0.0, wave0_us=model),
                         dict(base, predictor="by_n", rate_gbps=rate, wave0_us=bound_us(h, v, model, rate))]
    return pd.DataFrame(rows).round({"wave0_us": 4, "rate_gbps": 1})


def measured(run_dir: Path) -> pd.DataFrame:
    """Per H and variant: :func:`plan90_cluster_wave0.first_waves` at M = 24576 (wave-0 median mainloop, us)."""
    return first_waves(run_dir, HS, VARIANTS, M, RUNS, CLUSTER, WHY)


def cases(pred: pd.DataFrame, meas: pd.DataFrame) -> pd.DataFrame:
    """Per H, variant and predictor: the measured and predicted wave-0 mainloop, its error (%), and row order's over
    the pairs', measured and predicted (``plan92_tile_rate_wave0.pair_cases``)."""
    return pair_cases(pred, meas, PREDICTORS)


def claims(c: pd.DataFrame, provenance: str) -> pd.DataFrame:
    one = c[c["variant"] == ROW]
    mae = {n: float(g["err_pct"].abs().mean()) for n, g in one.groupby("predictor")}
    by_n = one[one["predictor"] == "by_n"].set_index("n")["err_pct"]
    pairs = c[(c["variant"] == W21) & (c["predictor"] == "model")].set_index("n")["err_pct"]
    ratio = one[one["predictor"] == "model"].set_index("n")["row_over"]
    fmt = lambda s, f: ", ".join(f"{n}: {x:{f}}" for n, x in s.items())  # noqa: E731
    rows = [
        ("a", f"{mae['by_n']:.2f}% against {mae['model']:.2f}% (flat {mae['flat']:.2f}%)",
         mae["by_n"] < mae["model"] / 2),
        ("b", fmt(by_n, "+.2f"), bool((by_n.abs() <= WORST * 100).all())),
        ("c", fmt(pairs, "+.2f"), bool((pairs.abs() <= PAIRS * 100).all())),
        ("d", fmt(ratio, ".3f"), bool((ratio >= EXCESS).all())),
    ]
    return registered_plan.claims_table(rows, CLAIMS, provenance)


PLAN = registered_plan.Plan(
    name="plan93_tile_rate_domain", description=__doc__.splitlines()[0], registered=REGISTERED,
    results=ROOT / "bench/results/validation-registered93", register=register, measured=measured, cases=cases,
    claims=claims, first_file=lambda run_dir: run_dir / "env.txt")


def main(argv: list[str] | None = None) -> int:
    return registered_plan.main(PLAN, argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
