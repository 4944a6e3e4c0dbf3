"""Registered plan 94: the 1x1 first wave as long as its loads from a cold L2, the probe run on the same GPU first.

    python bench/plan94_cold_wave0.py --register [--out bench/predictions/reg94-cold-wave0]
    python bench/plan94_cold_wave0.py --judge RUN_DIR [--registered bench/predictions/reg94-cold-wave0]
                                      [--out bench/results/validation-registered94]
    # the measurement (one H100, one call): first the probe (:data:`BEFORE`), then per H of :data:`HS`,
    # python -m ctahw.percta RUN_DIR/OUT_H<h> --h <h> --ms 16384 --variants <VARIANTS> --reps 5

Post-hoc (``bench/results/hw-h100/2026-12-07-l2-tile-cold-1gpu``): the tensor-copy probe's 1x1 row-order loads alone,
one pass over the GEMM's own K from a cold L2 (``ctahw.l2rate.cold_case``), took 0.92-1.02x the GEMM's 1x1 first wave
at 14-37 tiles a row on other units, and 1.30x at 42. Registered plans 92 and 93 priced that wave by a floor at the warm
probe's rate (``by_n``: 3.70% off at 25-37 tiles a row); the cold probe times the loads a first wave makes, HBM
included, with no rate in between.

Plan 94 runs the probe at the plan's tiles a row first in the call (:data:`BEFORE`: ``--cold-ns``), on the GPU the
producers then run on, and row order (1x1) and the pairs (2x1, ``_w21``) alone at M = 16384 and H = 4096, 4864, 5376
and 10496 (16, 19, 21 and 41 tiles a row; no call ran them). Predictors of the wave-0 median mainloop, each a mainloop
(the tile time less the profile's ``tile_fixed_ns``): ``flat``, ``model``, ``by_n`` (plan 93's: the floor at the warm
probe's rate) -- registered numbers -- and ``cold``, a rule fixed here: the 1x1 wave at max(``model``, the call's cold
probe time at its tiles a row), the pairs at ``model`` (the probe has no multicast). Claims (:data:`CLAIMS`); no
adoption rule.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import pandas as pd  # noqa: E402

import registered_plan  # noqa: E402
from plan83_alone_edge import call_rows  # noqa: E402
from plan90_cluster_wave0 import first_waves  # noqa: E402
from plan93_tile_rate_domain import mainloop_rows  # noqa: E402

M = 16384
ROW, W21 = "cutlass_ctapipe", "cutlass_ctapipe_w21"
VARIANTS = (ROW, W21)
RUNS = 5
HS = (4096, 4864, 5376, 10496)
"""16, 19, 21 and 41 tiles a row; no producer-alone call ran these H at any M."""
PROBE_DIR = "l2rate"
BEFORE = (f"python3 bench/hw/l2_rate_probe.py {{run}}/{PROBE_DIR} --cold-ns "
          + ",".join(str(h // 256) for h in HS))
"""What ``bench/hw/run_percta_plan.sh`` runs first in the call ({run}: RUN_DIR): the cold probe at each H's n."""
PREDICTORS = ("flat", "model", "by_n", "cold")
CLUSTER = {ROW: "1x1", W21: "2x1"}
DOMAIN = (14, 37)
"""The tiles a row where the cold probe stood within 0.92-1.02x of the GEMM (post-hoc); 41 is outside it."""
WORST, OUTSIDE = 0.05, 0.10
REGISTERED = ROOT / "bench/predictions/reg94-cold-wave0"
JudgeError = registered_plan.JudgeError
WHY = (f"plan 94's call runs {BEFORE.format(run='RUN_DIR')}, then python -m ctahw.percta RUN_DIR/OUT_H<h> --h <h> "
       f"--ms {M} --variants " + ",".join(VARIANTS) + " per H, and writes RUN_DIR/env.txt")
CLAIMS = {
    "a": "cold's mean |error| of the 1x1 wave-0 mainloop at 16, 19 and 21 tiles a row under half of model's",
    "b": f"cold's |error| of the 1x1 wave-0 mainloop at most {WORST:.0%} at 16, 19 and 21 tiles a row (in the probe's "
         "domain)",
    "c": f"cold over the measured 1x1 wave-0 mainloop by more than {OUTSIDE:.0%} at 41 tiles a row (outside it, as at "
         "42)",
    "d": "cold's mean |error| of the 1x1 wave-0 mainloop at 16, 19 and 21 tiles a row under by_n's",
}


def register() -> pd.DataFrame:
    """Per GPU, H, variant and registered predictor (``flat``, ``model``, ``by_n``:
    ``plan93_tile_rate_domain.mainloop_rows``): the predicted wave-0 median mainloop (us); ``cold`` is a rule on the
    call's probe (:func:`cold_us`), not a row."""
    return mainloop_rows(HS, M)


def probe_times(run_dir: Path) -> dict[int, float]:
    """The call's cold probe time (us) by tiles a row (``l2-rate.json``'s ``tile_cold_us``), refused in one line where
    it is missing, damaged or lacks one of the plan's n."""
    f = run_dir / PROBE_DIR / "l2-rate.json"
    if not f.is_file():
        raise JudgeError(f"no {f} ({WHY})")
    try:
        t = {int(n): float(v) for n, v in json.loads(f.read_text())["tile_cold_us"].items()}
    except (ValueError, KeyError, TypeError, AttributeError) as e:
        raise JudgeError(f"{f}: not the probe's output ({e})") from None
    missing = [h // 256 for h in HS if h // 256 not in t]
    if missing:
        raise JudgeError(f"{f}: no cold probe time at {missing[0]} tiles a row")
    return t


def cold_us(variant: str, model_us: float, probe_us: float) -> float:
    """The ``cold`` rule: the 1x1 wave at max(``model``, the cold probe's time), the pairs at ``model``."""
    return max(model_us, probe_us) if variant == ROW else model_us


def measured(run_dir: Path) -> pd.DataFrame:
    """Per H and variant: :func:`plan90_cluster_wave0.first_waves`, with the call's cold probe time at its n."""
    t = probe_times(run_dir)
    meas = first_waves(run_dir, HS, VARIANTS, M, RUNS, CLUSTER, WHY)
    return meas.assign(probe_us=[t[h // 256] for h in meas["h"]])


def cases(pred: pd.DataFrame, meas: pd.DataFrame) -> pd.DataFrame:
    """Per H, variant and predictor: the measured and predicted wave-0 mainloop and its error (%), the probe's time."""
    gpu, p = call_rows(pred, meas)
    rows = []
    for r in meas.itertuples():
        q = p[(p["h"] == r.h) & (p["variant"] == r.variant)].set_index("predictor")["wave0_us"]
        if sorted(q.index) != sorted(PREDICTORS[:3]):
            raise JudgeError(f"the registration has no single prediction of {r.variant} at {gpu} H = {r.h}")
        preds = {**q.to_dict(), "cold": cold_us(r.variant, float(q["model"]), r.probe_us)}
        for name in PREDICTORS:
            rows.append(dict(gpu=gpu, h=r.h, n=r.h // 256, variant=r.variant, predictor=name, probe_us=r.probe_us,
                             measured_us=r.wave0_us, predicted_us=float(preds[name]),
                             err_pct=(float(preds[name]) / r.wave0_us - 1) * 100))
    return pd.DataFrame(rows).round(4)


def claims(c: pd.DataFrame, provenance: str) -> pd.DataFrame:
    one = c[c["variant"] == ROW]
    err = one.pivot_table(index="n", columns="predictor", values="err_pct")
    inside = err[(err.index >= DOMAIN[0]) & (err.index <= DOMAIN[1])]
    outside = err[err.index > DOMAIN[1]]
    mae = inside.abs().mean()
    fmt = lambda s: ", ".join(f"{n}: {x:+.2f}%" for n, x in s.items())  # noqa: E731
    rows = [
        ("a", f"{mae['cold']:.2f}% against {mae['model']:.2f}% (flat {mae['flat']:.2f}%, by_n {mae['by_n']:.2f}%)",
         mae["cold"] < mae["model"] / 2),
        ("b", fmt(inside["cold"]), bool((inside["cold"].abs() <= WORST * 100).all())),
        ("c", fmt(outside["cold"]), bool((outside["cold"] > OUTSIDE * 100).all())),
        ("d", f"{inside['cold'].abs().mean():.2f}% against {inside['by_n'].abs().mean():.2f}%",
         inside["cold"].abs().mean() < inside["by_n"].abs().mean()),
    ]
    return registered_plan.claims_table(rows, CLAIMS, provenance)


PLAN = registered_plan.Plan(
    name="plan94_cold_wave0", description=__doc__.splitlines()[0], registered=REGISTERED,
    results=ROOT / "bench/results/validation-registered94", register=register, measured=measured, cases=cases,
    claims=claims, first_file=lambda run_dir: run_dir / "env.txt")


def main(argv: list[str] | None = None) -> int:
    return registered_plan.main(PLAN, argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
