"""Registered plan 90: is the 1x1-cluster producer's slower first wave the 2x1 cluster's W multicast?

    python bench/plan90_cluster_wave0.py --register [--out bench/predictions/reg90-cluster-wave0]
    python bench/plan90_cluster_wave0.py --judge RUN_DIR [--registered bench/predictions/reg90-cluster-wave0]
                                         [--out bench/results/validation-registered90]
    # the measurement (one H100 or one H200, one call): per H of :data:`HS`,
    # python -m ctahw.percta RUN_DIR/OUT_H<h> --h <h> --ms 16384 --variants <VARIANTS> --reps 5

Read post-hoc on every committed producer-alone call (``python bench/posthoc_cluster_mainloop.py``,
``bench/results/posthoc-cluster-mainloop/``): the first wave of the 1x1-cluster row-order producer
(``cutlass_ctapipe``) runs 4.6-16.4% longer than the 2x1 pairs' on the H100s (median 8.6% against ``_w21``, 7.3%
against ``_c21`` on one unit) and 3.1-6.3% on the H200s (``_c21``), while the 1x2-cluster row-order producer
(``_c12``, A multicast) ran only 1.0-1.3% shorter than 1x1 (one H200, the first probe). The model prices the first
wave of every cluster alike (``ctasim.l2`` leaves out the L2-to-SM reads and the multicast). A 2x1 cluster's two CTAs
take each W tile (256 x 64 per k-step) by one multicast; a 1x2 cluster's take each A tile (128 x 64): if the saving
were the L2 bytes alone, 1x2 would save half what 2x1 does, not a fifth.

Plan 90 asks it at H where the first wave of row order and of the pairs holds the same tiles (:data:`HS`: 22 and 66
tiles along N, so 132 tiles are whole row-blocks, and whole pairs of them) on whichever H100 or H200 comes, with four
producers alone (``ctahw.percta``, M = 16384): row order at clusters 1x1 and 1x2 (the same order: A multicast alone),
the pairs at 2x1 pushing to a queue (``_c21``) and counting (``_w21``: the signal path alone). Predictors of each
producer's wave-0 median mainloop over row order's (:data:`PREDICTORS`): ``model`` (the GPU's mechanism profile as it
now is, lockstep: every ratio 1.00) and ``reading`` (the post-hoc figures above: :data:`READING`).

Claims (:data:`CLAIMS`); no adoption rule: what it finds says which term the model would need, to be registered
then.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import pandas as pd  # noqa: E402

import plan85_grouped_kept as p85  # noqa: E402
import registered_plan  # noqa: E402
from percta_predict import SLOTS, wave0_us  # noqa: E402
from plan83_alone_edge import call_gpu, call_rows  # noqa: E402

M = 16384
ROW, C12, C21, W21 = "cutlass_ctapipe", "cutlass_ctapipe_c12", "cutlass_ctapipe_c21", "cutlass_ctapipe_w21"
VARIANTS = (ROW, C12, C21, W21)
RUNS = 5
HS = (5632, 16896)
"""22 and 66 tiles along N: a wave of 132 tiles is 6 or 2 whole row-blocks in row order and 3 or 1 whole pairs of
them in the pairs' order (the same tiles), and a 1x2 cluster's column pairs never straddle a row-block (even counts).
No producer-alone call ran either H at M = 16384; registered plan 89 ran 5632 at M = 24576 (row order over ``_w21``'s
wave 0 1.114 there, in the post-hoc table)."""
GPUS = {"H100": "h100-x8-mechanism", "H200": "h200-x2-mechanism"}
PREDICTORS = ("model", "reading")
READING = {"H100": {C12: 1.0111, C21: 1.0727, W21: 1.0856}, "H200": {C12: 1.0111, C21: 1.0518, W21: 1.0518}}
"""Row order's wave 0 over each producer's, as read post-hoc (``bench/results/posthoc-cluster-mainloop/summary.csv``'s
medians): the H100s' ``_c21`` (one unit) and ``_w21`` (four units); the H200s' ``_c21``, taken for ``_w21`` too (no H200
ran it); ``_c12`` the one H200 probe's, on both GPUs (no H100 ran it)."""
W_SAVES, A_SAVES, SIGNAL = 1.04, 1.03, 0.02
REGISTERED = ROOT / "bench/predictions/reg90-cluster-wave0"
JudgeError = registered_plan.JudgeError
WHY = (f"plan 90's call runs python -m ctahw.percta RUN_DIR/OUT_H<h> --h <h> --ms {M} --variants "
       + ",".join(VARIANTS) + " per H, and writes RUN_DIR/env.txt")
CLAIMS = {
    "a": f"row order's wave 0 over the 2x1 pairs' (_c21) at least {W_SAVES:g} at every H (the model: 1.00)",
    "b": f"row order's wave 0 at cluster 1x1 over 1x2 (_c12, the same order) under {A_SAVES:g} at every H (A "
         "multicast saves little)",
    "c": f"the 2x1 pairs' wave 0 pushing (_c21) over counting (_w21) within {SIGNAL:.0%} at every H (the signal path "
         "is not in the mainloop)",
    "d": "reading's mean |error| of the three ratios at both H (six cases) under model's",
}
CLUSTER = {ROW: "1x1", C12: "1x2", C21: "2x1", W21: "2x1"}
"""Each producer's cluster, as ``percta.csv`` must name it."""


def register() -> pd.DataFrame:
    """Per GPU, H, variant and predictor: the predicted wave-0 median mainloop (us) and its ratio ``row_over`` (row
    order's over it): ``model`` the GPU's profile's wave-0 tile time at spread 0, ``reading`` row order's model time
    over :data:`READING`."""
    from ctasim.spec import load_hardware  # noqa: PLC0415

    rows = []
    for gpu, profile in GPUS.items():
        hw = load_hardware(profile)
        for h in HS:
            model = {v: float(p85.wave_prediction(h, v, "lockstep", hw, 0.0, M)[0]) for v in VARIANTS}
            for v in VARIANTS:
                rows.append(dict(gpu=gpu, profile=profile, h=h, m=M, variant=v, predictor="model", wave0_us=model[v],
                                 row_over=model[ROW] / model[v]))
                r = 1.0 if v == ROW else READING[gpu][v]
                rows.append(dict(gpu=gpu, profile=profile, h=h, m=M, variant=v, predictor="reading",
                                 wave0_us=model[ROW] / r, row_over=r))
    return pd.DataFrame(rows)


def measured(run_dir: Path) -> pd.DataFrame:
    """Per H and variant of the call's GPU: :func:`first_waves` of :data:`HS` and :data:`VARIANTS` at M."""
    return first_waves(run_dir, HS, VARIANTS, M, RUNS, CLUSTER, WHY)


def first_waves(run_dir: Path, hs, variants, m: int, runs: int, clusters: dict, why: str, ks=None) -> pd.DataFrame:
    """Per H of ``hs`` and variant of ``variants`` of the call's GPU: the median-span traced run's wave-0 median
    mainloop (us; CTAs 0-131, ``t_mainloop_end - t_acquire``) and the traced runs' median of waves 0-1
    (``percta-runs.csv``'s ``mainloop_early_ns``, a second reading). With ``ks`` (one K per H: the producer's K other
    than H, plan 95) each H's folder is ``OUT_H<h>_K<k>`` and each row names its ``k``. Refused in one line (``why``
    says what should have written the call): a missing or damaged table, a variant not run once at ``m`` with 132
    CTAs at once or at another cluster than ``clusters`` names, a run count other than ``runs``, runs at another K than
    ``ks`` names, a wave 0 not all resident at once."""
    gpu = call_gpu(run_dir, why)
    rows = []
    for i, h in enumerate(hs):
        out = run_dir / (f"OUT_H{h}" if ks is None else f"OUT_H{h}_K{ks[i]}")
        r_all, summary, runs_f = p85.percta_tables(out, why, m, variants, ("mainloop_early_ns",))
        summary_f = out / "percta.csv"
        for v in variants:
            s = summary[(summary["variant"] == v) & (summary["m"] == m)]
            if str(s["cluster"].iloc[0] if "cluster" in s else "") != clusters[v]:
                raise JudgeError(f"{summary_f}: {v} ran at cluster "
                                 f"{s['cluster'].iloc[0] if 'cluster' in s else 'none named'}, not {clusters[v]}")
            r = r_all[(r_all["variant"] == v) & (r_all["m"] == m)]
            if len(r) != runs:
                raise JudgeError(f"{runs_f}: {len(r)} runs of {v} at M = {m}, not the {runs}")
            if ks is not None and ("k" not in r or pd.to_numeric(r["k"], errors="coerce").ne(ks[i]).any()):
                raise JudgeError(f"{runs_f}: {v}'s runs were not at K = {ks[i]}")
            f = out / f"percta-tiles-{m}-{v}.csv.gz"
            t = p85._numbers(p85._tiles(f, h, why, m), ("t_start", "t_mainloop_end"), f, why)
            first = t[t["cta"] < SLOTS]
            if first["t_start"].max() >= first["t_compute_end"].min():
                raise JudgeError(f"{f}: a CTA of wave 0 started after another had finished: not {SLOTS} CTAs at once")
            rows.append(dict(gpu=gpu, h=h, **({} if ks is None else {"k": int(ks[i])}), variant=v,
                             wave0_us=wave0_us(t),
                             early_us=float(r["mainloop_early_ns"].median() / 1e3)))
    return pd.DataFrame(rows)


def cases(pred: pd.DataFrame, meas: pd.DataFrame) -> pd.DataFrame:
    """Per H, variant other than row order and predictor: the measured and predicted ratio of row order's wave 0 over
    the variant's, and its error (points: predicted - measured, x 100); the waves 0-1 ratio beside it."""
    gpu, p = call_rows(pred, meas)
    rows = []
    for h, g in meas.groupby("h", sort=True):
        m = g.set_index("variant")
        for v in VARIANTS[1:]:
            for name in PREDICTORS:
                q = p[(p["h"] == h) & (p["variant"] == v) & (p["predictor"] == name)]
                if len(q) != 1:
                    raise JudgeError(f"the registration has no {name} prediction of {gpu} H = {h} {v}")
                measured_ratio = m.loc[ROW, "wave0_us"] / m.loc[v, "wave0_us"]
                rows.append(dict(gpu=gpu, h=h, variant=v, predictor=name, measured=float(measured_ratio),
                                 predicted=float(q["row_over"].iloc[0]),
                                 err_points=float((q["row_over"].iloc[0] - measured_ratio) * 100),
                                 early_measured=float(m.loc[ROW, "early_us"] / m.loc[v, "early_us"])))
    return pd.DataFrame(rows)


def claims(c: pd.DataFrame, provenance: str) -> pd.DataFrame:
    one = c[c["predictor"] == "model"].set_index(["variant", "h"])["measured"]
    c21, c12 = one.loc[C21], one.loc[C12]
    w = one.loc[W21]
    signal = (w / c21).sort_index()  # (row / w21) / (row / c21) = c21 / w21
    fmt = lambda s: ", ".join(f"{h}: {x:.3f}" for h, x in s.items())  # noqa: E731
    mae = {n: float(c.loc[c["predictor"] == n, "err_points"].abs().mean()) for n in PREDICTORS}
    rows = [
        ("a", fmt(c21), bool((c21 >= W_SAVES).all())),
        ("b", fmt(c12), bool((c12 < A_SAVES).all())),
        ("c", fmt(signal), bool(((signal - 1).abs() <= SIGNAL).all())),
        ("d", f"{mae['reading']:.2f} points against {mae['model']:.2f}", bool(mae["reading"] < mae["model"])),
    ]
    return registered_plan.claims_table(rows, CLAIMS, provenance)


PLAN = registered_plan.Plan(
    name="plan90_cluster_wave0", description=__doc__.splitlines()[0], registered=REGISTERED,
    results=ROOT / "bench/results/validation-registered90", register=register, measured=measured, cases=cases,
    claims=claims, first_file=lambda run_dir: run_dir / "env.txt")


def main(argv: list[str] | None = None) -> int:
    return registered_plan.main(PLAN, argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
