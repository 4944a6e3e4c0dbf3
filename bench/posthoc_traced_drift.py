"""Post-hoc, after registered plan 80: how the drift's re-reads grow with K, per tile order, and can the times carry it

    python bench/posthoc_traced_drift.py [--out bench/results/posthoc-traced-drift]

Plan 80 traced the persistent GEMM's drift per order and M on one H100 (two calls) and counted plan 79's 16 launches.
Read after the judge (nothing here was registered):

* ``launches.csv``: per call and launch, the traced drift (``own_drift``), the drift at which the model's bytes under
  the *tile* law (the drift the same share of a tile at every K) equal the counted (``tile_drift``, from plan 80's
  registered grid), and at long K the exponent ``alpha`` with ``tile_drift = own_drift * (8192 / K) ** alpha``: 0 is
  the tile law, 1 the absolute law (the same time a round, ``h100-x1-datasheet``'s since registered plan 73);
  the errors of the own drift under both laws, and of the profile.
* ``summary.csv``: per call and group of launches (K = 8192; long K in the swizzled orders; long K unswizzled), the
  MAPE of the bytes of each predictor: own drift under the absolute law (plan 80's), under the tile law, the profile,
  the call's median drift, lockstep, compulsory.
* ``times.csv``: the H100 calls that timed GEMMs at long K (registered plans 72 and 73, ``gemm_shapes.csv``), every
  unpadded CUTLASS order, priced by ``h100-x1-datasheet`` under the absolute law (as adopted), under the tile law, and
  under the tile law with the drift's re-reads out of the exposed share (``hidden``: they are read while other CTAs
  compute) or out of the waves altogether, bounding only the kernel's whole HBM time (``spread``): whether the bytes'
  law can be the time's.
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

import plan80_traced_drift as p80  # noqa: E402
from ctasim.cliargs import OneLineParser, parse_outputs  # noqa: E402

CALLS = {"GPU-69fa8ee3": "bench/results/hw-h100/2026-12-06-registered80-1gpu",
         "GPU-69fa8ee3 (repeat)": "bench/results/hw-h100/2026-12-06-registered80-1gpu-run2"}
TIME_CALLS = {"plan 72 (GPU-e57a052a)": "bench/results/hw-h100/2026-12-06-registered72-1gpu",
              "plan 73 (GPU-45dfedd7)": "bench/results/hw-h100/2026-12-06-registered73-1gpu",
              "plan 73 (GPU-1d13a075)": "bench/results/hw-h100/2026-12-06-registered73-1gpu-run2"}
PROFILE = "h100-x1-datasheet"
LONG_K = 20000
"""Times: K at or above this is long K (the shapes of plans 72 and 73 are K <= 8192 or K >= 28672)."""
PREDICTORS = ("own", "own_tile", "profile", "median", "lockstep", "compulsory")


def exponent(own: float, tile: float, k: int) -> float:
    """``alpha`` with ``tile = own * (8192 / k) ** alpha`` (0: the tile law; 1: the absolute law); NaN at K = 8192 or
    where either drift is not positive."""
    if k <= 8192 or not (np.isfinite(tile) and tile > 0 and own > 0):
        return float("nan")
    return float(np.log(own / tile) / np.log(k / 8192))


def launches(pred: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for call, run in CALLS.items():
        c = p80.cases(pred, p80.measured(ROOT / run))
        for r in c.itertuples():
            g = pred[(pred.gpu == r.gpu) & (pred.law == "tile") & (pred.m == r.m) & (pred.n == r.n) & (pred.k == r.k)
                     & (pred.raster == r.raster) & (pred.swizzle == r.swizzle)]
            tile = p80.implied_drift(g, r.read_gb)
            alpha = exponent(r.own_drift, tile, r.k)
            rows.append(dict(call=call, m=r.m, n=r.n, k=r.k, raster=r.raster, swizzle=r.swizzle, trace=r.trace,
                             read_gb=r.read_gb, own_drift=r.own_drift, tile_drift=tile, alpha=alpha,
                             **{f"{s}_err_pct": getattr(r, f"{s}_err_pct") for s in PREDICTORS}))
    return pd.DataFrame(rows)


def group(r) -> str:
    if r.k == 8192:
        return "K = 8192"
    return "long K, unswizzled" if r.trace.endswith("/1") else "long K, swizzled"


def summary(lt: pd.DataFrame) -> pd.DataFrame:
    lt = lt.assign(group=[group(r) for r in lt.itertuples()])
    rows = []
    for (call, g), d in lt.groupby(["call", "group"], sort=False):
        rows.append(dict(call=call, group=g, launches=len(d), alpha_median=float(d["alpha"].median()),
                         **{f"{s}_mape": float(d[f"{s}_err_pct"].abs().mean()) for s in PREDICTORS}))
    return pd.DataFrame(rows)


def _waves(layer, hw, raster: str, swizzle: int, mode: str):
    """The GEMM's wave times as ``ctasim.costs.cutlass_waves`` (``mode`` "as is"), or with the drift's re-reads out of
    the exposed share (``"hidden"``) or out of every wave, the kernel then no faster than its HBM bytes
    (``"spread"``). Returns (the order, the wave times)."""
    from ctasim import costs, l2  # noqa: PLC0415

    order, slots = costs.cutlass_order(layer, hw, raster, swizzle)
    t = costs.order_traffic(layer, hw, 2, order, slots)
    cfg = hw.config(layer.tile_m, layer.tile_n)
    sm = hw.sm_count * cfg.cta_slots_per_sm
    compute = (costs.tile_ns(layer, layer.k, hw, 2, "", rate_tflops=cfg.l2_sm_tflops)
               / costs.clock_boost(hw, min(layer.tiles, sm), sm))
    bw, share, exp_bw = hw.hbm_gbps, hw.l2_hbm_exposed, hw.l2_hbm_exposed_gbps or hw.hbm_gbps
    if mode == "as is":
        return order, l2.wave_ns(t, compute, bw, share, hw.l2_hbm_exposed_gbps)
    drift = t.drift_hbm if t.drift_hbm is not None else np.zeros_like(t.store)
    base = t.hbm - drift
    if mode == "hidden":
        return order, np.maximum(compute + share * base / exp_bw, t.hbm / bw)
    w = np.maximum(compute + share * base / exp_bw, base / bw)
    return order, w * max(1.0, t.hbm.sum() / bw / w.sum())


TIME_VARIANTS = {"absolute": (8192.0, "as is"), "tile": (0.0, "as is"), "tile, hidden": (0.0, "hidden"),
                 "tile, spread": (0.0, "spread")}


def times(calls: dict = TIME_CALLS) -> pd.DataFrame:
    from ctasim.spec import Layer, load_hardware  # noqa: PLC0415

    base = load_hardware(PROFILE)
    hws = {name: dataclasses.replace(base, kernel_configs=tuple(dataclasses.replace(c, drift_k_ref=ref)
                                                                for c in base.kernel_configs))
           for name, (ref, _) in TIME_VARIANTS.items()}
    rows = []
    for call, run in calls.items():
        d = pd.read_csv(ROOT / run / "gemm_shapes.csv")
        d = d[d["backend"] == "cutlass"]
        errs = {name: [] for name in TIME_VARIANTS}
        for r in d.itertuples():
            raster, swz = r.order.split("/")
            lay = Layer(m=r.m, n=r.n, k=r.k)
            for name, (_, mode) in TIME_VARIANTS.items():
                order, w = _waves(lay, hws[name], raster, int(swz.removeprefix("swizzle")), mode)
                if (order < 0).any():
                    break  # a padded grid: the model's times of padded grids are not judged (plans 72, 73)
                errs[name].append((r.k, (w.sum() / 1e6 / r.median_ms - 1) * 100))
        for name, e in errs.items():
            e = pd.DataFrame(e, columns=["k", "err"])
            rows.append(dict(call=call, variant=name, runs=len(e), mape=e["err"].abs().mean(),
                             long_k_mape=e.loc[e["k"] >= LONG_K, "err"].abs().mean(),
                             short_k_mape=e.loc[e["k"] < LONG_K, "err"].abs().mean(),
                             long_k_mean=e.loc[e["k"] >= LONG_K, "err"].mean()))
    return pd.DataFrame(rows)


def main(argv=None) -> int:
    ap = OneLineParser(prog="python bench/posthoc_traced_drift.py", description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "bench/results/posthoc-traced-drift")
    args = parse_outputs(ap, argv, folders=("--out",))
    pred = pd.read_csv(p80.REGISTERED / "predicted.csv")
    try:
        lt = launches(pred)
    except p80.JudgeError as e:
        print(f"posthoc_traced_drift: {e}", file=sys.stderr)
        return 2
    tables = {"launches": lt, "summary": summary(lt), "times": times()}
    args.out.mkdir(parents=True, exist_ok=True)
    for name, t in tables.items():
        t.to_csv(args.out / f"{name}.csv", index=False, float_format="%.4f")
    with pd.option_context("display.width", 250):
        print(tables["summary"].round(2).to_string(index=False))
        print()
        print(tables["times"].round(2).to_string(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
