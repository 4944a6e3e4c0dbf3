"""Registered plan 81: at long K, the tile law at the machine's own traced drift, in the GEMM's time and its bytes

    python bench/plan81_drift_tile_own.py --register [--out bench/predictions/reg81-drift-tile-own]
    python bench/plan81_drift_tile_own.py --judge RUN_DIR [--registered bench/predictions/reg81-drift-tile-own]
                                          [--out bench/results/validation-registered81]
    # the measurement (one GPU, one call; the registration's README gives the commands): the order traces twice
    # (RUN_DIR/order-traces-1, -2), the GEMMs timed (RUN_DIR/gemm_shapes.csv, bench/hw/gemm_shape_probe.py) and
    # counted (python -m ctahw.counters RUN_DIR predicted.csv --probe gemm)

Registered plan 80 traced the persistent GEMM's drift per tile order on an H100 (GPU-69fa8ee3, two calls) and counted
plan 79's launches: at long K the swizzled orders read the bytes of the *tile* law at the traced drift (the drift the
same share of a tile at every K; exponent -0.07 and 0.01), the unswizzled ones about half way to the *absolute* law
(0.54, 0.66; the drift the same time a round, ``h100-x1-datasheet``'s since registered plan 73, adopted on times).
Read after that judge: Nsight Compute's durations of the same launches, 1% over the timed medians at K = 8192, put the
swizzled orders' long-K times 2% over the tile law at the traced drift and 7% over the absolute law; and plans 72 and
73's H100s, whose drift nobody traced, timed long K nearest the absolute law at the profile's drift (1.3-4.6% MAPE,
the tile law there 8.6-10.9%). If a machine's drift is its own, the tile law at that machine's traced drift may price
both its bytes and its times, and the absolute law may have stood in for machines that drift less.

Plan 81 asks it on GEMMs no GPU has run (:data:`SHAPES`: four long-K shapes, K = 20480-57344, and the reference as a
control), in the four orders plan 80 traced (:data:`plan80_traced_drift.TRACE_ORDERS`), one call: the order traces
twice at the shapes' M (:data:`TRACE_SHAPES`), every order timed (``bench/hw/gemm_shape_probe.py``, burst, medians of
3) and the four orders counted (``ctahw.counters --probe gemm``). The registration holds, per GPU profile, law and
launch, the model's time (``ctasim.costs.cutlass_waves``) and bytes read (``cutlass_traffic``) at every drift of
:data:`plan80_traced_drift.DRIFTS` and at the profile's own, and the naive FLOPs line's time. Predictors: ``profile``
(the committed profile as it is), ``own_tile`` (the tile law at each launch's own traced drift), ``own_by_order``
(the tile law in the swizzled orders, the absolute law in the unswizzled ones, each at its own drift: plan 80's
reading), ``naive``. Claims (:data:`CLAIMS`). No adoption rule: nothing here changes a profile.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import pandas as pd  # noqa: E402

import plan78_hbm_bytes as p78  # noqa: E402
import plan79_gemm_bytes as p79  # noqa: E402
import plan80_traced_drift as p80  # noqa: E402
import registered_plan  # noqa: E402

SHAPES = ((16384, 8192, 8192), (16384, 8192, 20480), (12288, 8192, 36864), (16384, 6144, 49152), (8192, 10240, 57344))
"""(M, N, K): the reference GEMM (the control, not in the claims) and four long-K GEMMs no committed run timed."""
ORDERS = tuple((r, s) for r, s in p80.TRACE_ORDERS)
CASES = tuple((m, n, k, r, s) for m, n, k in SHAPES for r, s in ORDERS)
TRACE_SHAPES = ((8192, 8192), (12288, 8192), (16384, 8192))
"""(M, H) of the order traces: the launches' M, at N = K = 8192."""
LONG_K = 20480
REGISTERED = ROOT / "bench/predictions/reg81-drift-tile-own"
JudgeError = registered_plan.JudgeError
TIME_MAPE, BYTES_MAPE = 3.0, 8.0
WHY = ("plan 81's call runs bench/hw/order_trace_probe.py into RUN_DIR/order-traces-1 and -2, "
       "bench/hw/gemm_shape_probe.py RUN_DIR/gemm_shapes.csv and `python -m ctahw.counters RUN_DIR predicted.csv "
       "--probe gemm` on one GPU")
PREDICTORS = ("profile", "own_tile", "own_by_order")
CLAIMS = {
    "a": f"times: own_tile (the tile law at each launch's traced drift) within {TIME_MAPE:g}% MAPE over the 16 long-K "
         "launches",
    "b": f"times: own_by_order (tile law swizzled, absolute law unswizzled, at the traced drift) within {TIME_MAPE:g}% "
         "MAPE there",
    "c": "times: own_by_order's MAPE below the profile's there",
    "d": f"bytes read: own_by_order within {BYTES_MAPE:g}% MAPE over the 16 long-K launches",
    "e": "bytes read: own_by_order's MAPE below own_tile's and the profile's there",
    "f": "times: own_by_order's MAPE at most half the naive FLOPs line's there",
}
KEYS = p79.KEYS


def register() -> pd.DataFrame:
    """Per GPU profile, law and launch: the model's time (ms) and bytes read (GB) at every drift of ``p80.DRIFTS`` and
    at the profile's own (``profile_drift`` = 1), the launch's traced order, and the naive line's time."""
    import block_gemm_orders as bgo  # noqa: PLC0415
    from ctasim import costs  # noqa: PLC0415
    from ctasim.predict import Naive  # noqa: PLC0415
    from ctasim.spec import load_hardware  # noqa: PLC0415

    naive = Naive.fit(bgo.NAIVE_FROM)
    rows = []
    for gpu, name in p78.PROFILES.items():
        hw = load_hardware(name)
        cfg = hw.config(128, 256)
        own_law = next(law for law, ref in p80.LAWS.items() if ref == cfg.drift_k_ref)
        for law, k_ref in p80.LAWS.items():
            for m, n, k, raster, swizzle in CASES:
                lay = p79.layer(m, n, k)
                for drift in sorted({*p80.DRIFTS, cfg.cta_drift}):
                    h = p80.with_drift(hw, drift, k_ref)
                    _, _, waves = costs.cutlass_waves(lay, h, p78.ELEM, raster, swizzle)
                    t = costs.cutlass_traffic(lay, h, p78.ELEM, raster, swizzle)
                    rows.append(dict(gpu=gpu, profile=name, law=law, profile_law=int(law == own_law), m=m, n=n, k=k,
                                     raster=raster, swizzle=swizzle, trace=p80.trace_order(m, n, raster, swizzle),
                                     drift=drift, profile_drift=int(drift == cfg.cta_drift),
                                     model_ms=float(waves.sum()) / 1e6, read_gb=p78.read_gb(t),
                                     naive_ms=naive.gemm_ms(m, k, n)))
    return pd.DataFrame(rows)


def measured(run_dir: Path) -> pd.DataFrame:
    """Per launch: the counted bytes (GB) and the call's GPU, the timed median (ms, the probe's CUTLASS row of the
    order), and the drift traced for its M and order (``own_drift``, the mean of the two passes)."""
    t = p80.traced(run_dir, TRACE_SHAPES, p80.TRACE_ORDERS, WHY)
    meas = p78.counted(run_dir, KEYS, why=WHY)[["gpu", *KEYS, "read_gb"]]
    f = run_dir / "gemm_shapes.csv"
    if not f.is_file():
        raise JudgeError(f"no {f} ({WHY})")
    timed = pd.read_csv(f)
    if not {"m", "n", "k", "backend", "order", "median_ms"} <= set(timed.columns):
        raise JudgeError(f"{f}: not a gemm_shape_probe table")
    timed = timed[timed["backend"] == "cutlass"]
    twice = timed.duplicated(["m", "n", "k", "order"])
    if twice.any():
        r = timed[twice].iloc[0]
        raise JudgeError(f"{f}: {r.m}x{r.n}x{r.k} {r.order} timed twice")
    meas["order"] = [f"{r.raster}/swizzle{r.swizzle}" for r in meas.itertuples()]
    meas = meas.merge(timed[["m", "n", "k", "order", "median_ms"]], on=["m", "n", "k", "order"], how="left")
    meas = p80.with_own_drift(meas, t)
    for col, what in (("median_ms", "timed"), ("own_drift", "traced")):
        if meas[col].isna().any():
            r = meas[meas[col].isna()].iloc[0]
            raise JudgeError(f"no {what} run of {r.m}x{r.n}x{r.k} {r.raster}/{r.swizzle}")
    return meas


def cases(pred: pd.DataFrame, meas: pd.DataFrame) -> pd.DataFrame:
    """Per registered launch of the call's GPU: measured time and bytes, the own drift, each predictor's time and
    bytes and their errors (%)."""
    gpu = meas["gpu"].iloc[0]
    p = pred[pred["gpu"] == gpu]
    if p.empty:
        raise JudgeError(f"the registration has no rows for {gpu}")
    rows = []
    for key, launch in p.groupby(KEYS, sort=False):
        m, n, k, raster, swizzle = key
        hit = meas[(meas["m"] == m) & (meas["n"] == n) & (meas["k"] == k) & (meas["raster"] == raster)
                   & (meas["swizzle"] == swizzle)]
        if hit.empty:
            raise JudgeError(f"no measured launch of {m}x{n}x{k} {raster}/{swizzle}")
        r = hit.iloc[0]
        by_law = {law: launch[launch["law"] == law] for law in p80.LAWS}
        mine = launch[launch["profile_law"] == 1]
        prof = mine[mine["profile_drift"] == 1].iloc[0]
        order_law = "tile" if swizzle > 1 else "absolute"
        row = dict(gpu=gpu, m=m, n=n, k=k, raster=raster, swizzle=swizzle, trace=r["trace"], own_drift=r["own_drift"],
                   measured_ms=r["median_ms"], read_gb=r["read_gb"], naive_ms=float(prof["naive_ms"]),
                   profile_ms=float(prof["model_ms"]), profile_read_gb=float(prof["read_gb"]))
        for name, law in (("own_tile", "tile"), ("own_by_order", order_law)):
            row[f"{name}_ms"] = p80.at_drift(by_law[law], r["own_drift"], "model_ms")
            row[f"{name}_read_gb"] = p80.at_drift(by_law[law], r["own_drift"])
        rows.append(row)
    c = pd.DataFrame(rows)
    for src in (*PREDICTORS, "naive"):
        c[f"{src}_ms_err_pct"] = (c[f"{src}_ms"] / c["measured_ms"] - 1) * 100
    for src in PREDICTORS:
        c[f"{src}_read_err_pct"] = (c[f"{src}_read_gb"] / c["read_gb"] - 1) * 100
    return c


def mapes(c: pd.DataFrame) -> dict:
    """MAPE (%) of each predictor's times (``X_ms``) and bytes (``X_read``) over the launches of ``c``."""
    out = {f"{s}_ms": float(c[f"{s}_ms_err_pct"].abs().mean()) for s in (*PREDICTORS, "naive")}
    out.update({f"{s}_read": float(c[f"{s}_read_err_pct"].abs().mean()) for s in PREDICTORS})
    return out


def claims(c: pd.DataFrame, provenance: str) -> pd.DataFrame:
    lk = c[c["k"] >= LONG_K]
    e = mapes(lk)
    n = len(lk) == 16
    rows = [
        ("a", f"{e['own_tile_ms']:.2f}% (profile {e['profile_ms']:.2f}%)", n and e["own_tile_ms"] <= TIME_MAPE),
        ("b", f"{e['own_by_order_ms']:.2f}%", n and e["own_by_order_ms"] <= TIME_MAPE),
        ("c", f"{e['own_by_order_ms']:.2f}% against {e['profile_ms']:.2f}%",
         n and e["own_by_order_ms"] < e["profile_ms"]),
        ("d", f"{e['own_by_order_read']:.2f}%", n and e["own_by_order_read"] <= BYTES_MAPE),
        ("e", f"{e['own_by_order_read']:.2f}% against own_tile {e['own_tile_read']:.2f}%, profile "
              f"{e['profile_read']:.2f}%",
         n and e["own_by_order_read"] < min(e["own_tile_read"], e["profile_read"])),
        ("f", f"{e['own_by_order_ms']:.2f}% against {e['naive_ms']:.2f}%",
         n and e["own_by_order_ms"] <= e["naive_ms"] / 2),
    ]
    return registered_plan.claims_table(rows, CLAIMS, provenance)


def summary(c: pd.DataFrame) -> pd.DataFrame:
    """Per group of launches (the control; long K swizzled; long K unswizzled): each predictor's MAPE."""
    groups = {"reference (K = 8192)": c["k"] < LONG_K, "long K, swizzled": (c["k"] >= LONG_K) & (c["swizzle"] > 1),
              "long K, unswizzled": (c["k"] >= LONG_K) & (c["swizzle"] == 1)}
    return pd.DataFrame([dict(group=g, launches=int(sel.sum()), **mapes(c[sel])) for g, sel in groups.items()])


PLAN = registered_plan.Plan(
    name="plan81_drift_tile_own", description=__doc__.splitlines()[0], registered=REGISTERED,
    results=ROOT / "bench/results/validation-registered81", register=register, measured=measured, cases=cases,
    claims=claims, first_file=lambda run_dir: run_dir / "counters.csv", tables=lambda c: {"summary": summary(c)})


def main(argv: list[str] | None = None) -> int:
    return registered_plan.main(PLAN, argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
