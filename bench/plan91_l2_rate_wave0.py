"""Registered plan 91: the producers' first wave under an L2-to-SM rate that a microbenchmark measures in the same call.

    python bench/plan91_l2_rate_wave0.py --register [--out bench/predictions/reg91-l2-rate-wave0]
    python bench/plan91_l2_rate_wave0.py --judge RUN_DIR [--registered bench/predictions/reg91-l2-rate-wave0]
                                         [--out bench/results/validation-registered91]
    # the measurement (one H100 or one H200, one call): first the probe (:data:`BEFORE`),
    # python bench/hw/l2_rate_probe.py RUN_DIR/l2rate, then per H of :data:`HS`,
    # python -m ctahw.percta RUN_DIR/OUT_H<h> --h <h> --ms 16384 --variants <VARIANTS> --reps 5

Registered plan 90 found the 1x1-cluster row-order producer's first wave 9.4-9.8% over the 2x1 pairs' and 5.6% over
the 1x2 cluster's at H = 5632 (one H100), in the order of the L2-to-SM bytes each multicast saves; the model prices
every cluster's first wave alike. ``ctasim.costs.l2_sm_reads`` and ``Hardware.l2_sm_read_gbps`` can floor a wave at
its tiles' L2-to-SM reads at one rate (off in every profile); post-hoc, at the rate read off plan 90's one 1x1 wave
(:func:`posthoc_cluster_mainloop.l2_sm_rate`, 8695 GB/s), the 1x1 first waves of the earlier calls came 5.57% off on
the H100s against the model's 10.26%. A rate read off the case it then prices is a fit. ``ctahw.l2rate`` measures it
with no GEMM: TMA bulk copies of an L2-resident buffer into every SM's shared memory, in the 1x1, 1x2 and 2x1 GEMMs'
stages; the profile's rate is its 1x1 stage's L2 rate (``ctahw.l2rate.read_rate``).

Plan 91 runs the probe and then three producers alone (``ctahw.percta``, M = 16384) in one call at H not run before
(:data:`HS`): row order at cluster 1x1 and 1x2 (``_c12``) and the pairs at 2x1 counting (``_w21``). Predictors of each
producer's wave-0 median mainloop (us; :data:`PREDICTORS`): ``flat`` (no memory hierarchy:
``plan85_grouped_kept.flat_times``), ``model`` (the GPU's mechanism profile as it is, at spread 0, as plan 90
registered it), ``plan90`` (``model`` floored at the tile's L2 reads by its cluster at plan 90's read-off rate) and
``probe`` (the same floor at the rate the call's probe measures: registered for every rate of :data:`RATES`; the judge
takes the row of the rate nearest the probe's, a rule fixed here).

Claims (:data:`CLAIMS`); no adoption rule: a met (c)-(e) is what a twin profile with the probe's rate would be
registered on next.
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
from percta_predict import SLOTS  # noqa: E402
from plan83_alone_edge import call_rows  # noqa: E402
from plan90_cluster_wave0 import first_waves  # noqa: E402

M = 16384
ROW, C12, W21 = "cutlass_ctapipe", "cutlass_ctapipe_c12", "cutlass_ctapipe_w21"
VARIANTS = (ROW, C12, W21)
RUNS = 5
HS = (3584, 4608, 10752)
"""14, 18 and 42 tiles along N (wave 0: 9.4, 7.3 and 3.1 row-blocks in row order); no producer-alone call ran these H
at any M. At 10752 wave 0 reads all of W (231 MB) cold: ~1.9 TB/s from HBM at the model's wave time, under the
H100's rate, unlike plan 90's 16896 (571 MB: HBM-bound)."""
GPUS = {"H100": "h100-x8-mechanism", "H200": "h200-x2-mechanism"}
PREDICTORS = ("flat", "model", "plan90", "probe")
RATES = tuple(range(3000, 20001, 100))
"""GB/s: the ``probe`` predictor's rows, one per rate; the judge takes the one nearest the probe's 1x1 L2 rate (the
lower on a tie) and refuses a probe outside them."""
PROBE_DIR = "l2rate"
BEFORE = f"python3 bench/hw/l2_rate_probe.py {{run}}/{PROBE_DIR}"
"""What ``bench/hw/run_percta_plan.sh`` runs first in the call ({run}: RUN_DIR), before any producer."""
CLUSTER = {ROW: "1x1", C12: "1x2", W21: "2x1"}
RATE_NEAR, TIME_WORST = 0.15, 0.05
REGISTERED = ROOT / "bench/predictions/reg91-l2-rate-wave0"
JudgeError = registered_plan.JudgeError
WHY = (f"plan 91's call runs {BEFORE.format(run='RUN_DIR')}, then python -m ctahw.percta RUN_DIR/OUT_H<h> --h <h> "
       f"--ms {M} --variants " + ",".join(VARIANTS) + " per H, and writes RUN_DIR/env.txt")
CLAIMS = {
    "a": "the probe puts the limit at the L2: the all-multicast stage's L2 rate within 10% of the plain cluster "
         "launch's (ctahw.l2rate.where_bound 'l2'; a multicast costs the L2 its bytes once)",
    "b": f"the probe's 1x1 L2 rate within {RATE_NEAR:.0%} of the rate read off plan 90's 1x1 first wave (8695 GB/s)",
    "c": "probe's mean |error| of the wave-0 time over the nine cases under model's",
    "d": f"probe's |error| of the 1x1 wave-0 time at most {TIME_WORST:.0%} at every H (the model is 4.6-6.1% under "
         "the 1x1 floor at plan 90's rate)",
    "e": "probe's ratio of row order's wave 0 over the 1x2 and the 2x1 producers' nearer the measured than model's "
         "1.00, in mean |error| over the six ratios",
}


def bound_us(h: int, variant: str, model_us: float, rate_gbps: float) -> float:
    """``model_us`` floored at a wave's L2-to-SM reads at ``rate_gbps``: 132 tiles of H x H (K = H) by the
    producer's cluster (``ctasim.costs.l2_sm_reads``), as ``posthoc_cluster_mainloop`` floors the mainloop."""
    from ctasim.costs import l2_sm_reads  # noqa: PLC0415
    from ctasim.spec import Layer  # noqa: PLC0415
    from posthoc_cluster_mainloop import cluster_of  # noqa: PLC0415

    return max(model_us, SLOTS * l2_sm_reads(Layer(M, h, h, 128, 256), 2, *cluster_of(variant)) / rate_gbps / 1e3)


def register() -> pd.DataFrame:
    """Per GPU, H, variant, predictor (and for ``probe`` rate of :data:`RATES`): the predicted wave-0 median
    mainloop (us); ``rate_gbps`` the floor's rate (0 for ``flat`` and ``model``)."""
    from ctasim.spec import load_hardware  # noqa: PLC0415
    from posthoc_cluster_mainloop import l2_sm_rate  # noqa: PLC0415

    plan90_rate = round(l2_sm_rate(), 1)
    rows = []
    for gpu, profile in GPUS.items():
        hw = load_hardware(profile)
        for h in HS:
            for v in VARIANTS:
                model = float(p85.wave_prediction(h, v, "lockstep", hw, 0.0, M)[0])
                base = dict(gpu=gpu, profile=profile, h=h, m=M, variant=v)
                rows.append(dict(base, predictor="flat", rate_gbps=0.0,
                                 wave0_us=float(p85.wave_prediction(h, v, "flat", hw, 0.0, M)[0])))
                rows.append(dict(base, predictor="model", rate_gbps=0.0, wave0_us=model))
                rows.append(dict(base, predictor="plan90", rate_gbps=plan90_rate,
                                 wave0_us=bound_us(h, v, model, plan90_rate)))
                rows += [dict(base, predictor="probe", rate_gbps=float(r), wave0_us=bound_us(h, v, model, r))
                         for r in RATES]
    return pd.DataFrame(rows).round({"wave0_us": 4})


def probe_result(run_dir: Path) -> dict:
    """The call's probe: ``l2-rate.json``'s rate (GB/s) and bound side, refused in one line where it is missing,
    damaged, or its rate is outside :data:`RATES`."""
    f = run_dir / PROBE_DIR / "l2-rate.json"
    if not f.is_file():
        raise JudgeError(f"no {f} ({WHY})")
    try:
        j = json.loads(f.read_text())
        rate, bound = float(j["l2_sm_read_gbps"]), str(j["bound"])
    except (ValueError, KeyError, TypeError) as e:
        raise JudgeError(f"{f}: not the probe's output ({e})") from None
    if not RATES[0] <= rate <= RATES[-1]:
        raise JudgeError(f"{f}: a rate of {rate:.0f} GB/s, outside the registered {RATES[0]}-{RATES[-1]}")
    return {"rate": rate, "bound": bound}


def measured(run_dir: Path) -> pd.DataFrame:
    """Per H and variant: :func:`plan90_cluster_wave0.first_waves`, with the probe's rate and side on every row."""
    probe = probe_result(run_dir)
    t = first_waves(run_dir, HS, VARIANTS, M, RUNS, CLUSTER, WHY)
    return t.assign(probe_gbps=probe["rate"], probe_bound=probe["bound"])


def nearest_rate(rate: float) -> float:
    """The rate of :data:`RATES` nearest ``rate`` (the lower on a tie)."""
    r = np.asarray(RATES, dtype=float)
    return float(r[np.argmin(np.abs(r - rate))])


def cases(pred: pd.DataFrame, meas: pd.DataFrame) -> pd.DataFrame:
    """Per H, variant and predictor: the measured and predicted wave-0 time, its error (%), and row order's over
    the variant's, measured and predicted (``probe`` at :func:`nearest_rate` of the call's rate); the probe's rate
    and side on every row."""
    gpu, p = call_rows(pred, meas)
    rate = nearest_rate(float(meas["probe_gbps"].iloc[0]))
    p = p[(p["predictor"] != "probe") | (p["rate_gbps"] == rate)]
    rows = []
    for h, g in meas.groupby("h", sort=True):
        m = g.set_index("variant")["wave0_us"]
        for name in PREDICTORS:
            q = p[(p["h"] == h) & (p["predictor"] == name)].set_index("variant")["wave0_us"]
            if set(q.index) != set(VARIANTS) or len(q) != len(VARIANTS):
                raise JudgeError(f"the registration has no single {name} prediction of every producer at {gpu} "
                                 f"H = {h}")
            for v in VARIANTS:
                rows.append(dict(gpu=gpu, h=h, variant=v, predictor=name,
                                 rate_gbps=rate if name == "probe" else float(p.loc[p["predictor"] == name,
                                                                                     "rate_gbps"].iloc[0]),
                                 measured_us=float(m[v]), predicted_us=float(q[v]),
                                 err_pct=float((q[v] / m[v] - 1) * 100),
                                 row_over=float(m[ROW] / m[v]), predicted_row_over=float(q[ROW] / q[v]),
                                 probe_gbps=float(g["probe_gbps"].iloc[0]), probe_bound=str(g["probe_bound"].iloc[0])))
    return pd.DataFrame(rows).round(4)


def claims(c: pd.DataFrame, provenance: str) -> pd.DataFrame:
    probe = {"rate": float(c["probe_gbps"].iloc[0]), "bound": str(c["probe_bound"].iloc[0])}
    mae = {n: float(c.loc[c["predictor"] == n, "err_pct"].abs().mean()) for n in PREDICTORS}
    one = c[(c["predictor"] == "probe") & (c["variant"] == ROW)].set_index("h")["err_pct"]
    ratios = c[c["variant"] != ROW]
    ratio_err = {n: float((g["predicted_row_over"] - g["row_over"]).abs().mean() * 100)
                 for n, g in ratios.groupby("predictor")}
    near = probe["rate"] / float(c.loc[c["predictor"] == "plan90", "rate_gbps"].iloc[0]) - 1  # the registered rate
    rows = [
        ("a", f"'{probe['bound']}'", probe["bound"] == "l2"),
        ("b", f"{probe['rate']:.0f} GB/s ({near:+.1%})", abs(near) <= RATE_NEAR),
        ("c", f"{mae['probe']:.2f}% against {mae['model']:.2f}% (flat {mae['flat']:.2f}%, plan90 "
              f"{mae['plan90']:.2f}%)", mae["probe"] < mae["model"]),
        ("d", ", ".join(f"{h}: {x:+.2f}%" for h, x in one.items()), bool((one.abs() <= TIME_WORST * 100).all())),
        ("e", f"{ratio_err['probe']:.2f} points against {ratio_err['model']:.2f}",
         ratio_err["probe"] < ratio_err["model"]),
    ]
    return registered_plan.claims_table(rows, CLAIMS, provenance)


PLAN = registered_plan.Plan(
    name="plan91_l2_rate_wave0", description=__doc__.splitlines()[0], registered=REGISTERED,
    results=ROOT / "bench/results/validation-registered91", register=register, measured=measured, cases=cases,
    claims=claims, first_file=lambda run_dir: run_dir / "env.txt")


def main(argv: list[str] | None = None) -> int:
    return registered_plan.main(PLAN, argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
