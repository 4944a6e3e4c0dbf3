"""Registered plan 80: the drift traced per tile order on the call's own GPU, priced into its GEMMs' DRAM bytes

    python bench/plan80_traced_drift.py --register [--out bench/predictions/reg80-traced-drift]
    python bench/plan80_traced_drift.py --judge RUN_DIR [--registered bench/predictions/reg80-traced-drift]
                                        [--out bench/results/validation-registered80]
    # the measurement (one GPU, one call; the registration's README gives the commands):
    #   bench/hw/order_trace_probe.py twice (RUN_DIR/order-traces-1, -2: TRACE_SHAPES x TRACE_ORDERS), then
    #   python -m ctahw.counters RUN_DIR bench/predictions/reg79-gemm-bytes/predicted.csv --probe gemm

Registered plan 79 counted the plain CUTLASS GEMM's DRAM bytes on two H100s: the drift's re-reads are real bytes in
the swizzled orders, none in along M unswizzled at M = 16384, and the second machine read 11-29% less than the first in
the swizzled orders -- the drift is the machine's, and one ``cta_drift`` per profile (the median of nine per-tile
traces, ``ctahw calibrate``) prices a machine's re-reads only as well as its rate matches. ``ctahw calibrate``'s order
traces on an H100 (registered plan 69's call) drifted 0.0046-0.0057 tile times a round in the swizzled orders and
0.0001-0.0019 in along M unswizzled. Plan 80 asks whether the drift traced on the call's own GPU, per tile order and
M (``bench/hw/order_trace_probe.py``: the persistent GEMM's tiles stamped, ``ctasim.calibration.trace_drift``), prices
that GPU's counted bytes: the model (``ctasim.costs.cutlass_traffic``, the profile's L2 constants, its drift replaced)
at each launch's own drift, against the profile's one drift and the call's median drift.

The registration holds, per GPU profile (:data:`plan78_hbm_bytes.PROFILES`), law of the drift in K (:data:`LAWS`:
``tile``, the same share of a tile at every K; ``absolute``, the same time a round, ``drift_k_ref`` = 8192) and launch
of plan 79 (its 16, :data:`plan79_gemm_bytes.CASES`), the model's bytes read at every drift of :data:`DRIFTS` and at the
profile's own ``cta_drift``: the judge reads the bytes at a measured drift by linear interpolation on that grid, so
every figure it judges was fixed before the call. Claims (:data:`CLAIMS`). No adoption rule: nothing here changes a
profile. Left out: the fused-epilogue GEMMs, the kernel's time, the chain kernel's tickets (they are not this grid's
drift).
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

import plan78_hbm_bytes as p78  # noqa: E402
import plan79_gemm_bytes as p79  # noqa: E402
import registered_plan  # noqa: E402

DRIFTS = tuple(round(0.0005 * i, 4) for i in range(41))
"""The grid of drifts (tile times a round) the model's bytes are registered at: 0 (lockstep) to 0.02, past twice the
largest drift any committed trace measured (0.0090)."""
LAWS = {"tile": 0.0, "absolute": 8192.0}
"""The drift's law in K, by its ``KernelConfig.drift_k_ref`` (0: ``cta_drift`` tile times a round at every K; 8192:
``cta_drift * 8192 / K``, the same time a round)."""
TRACE_SHAPES = ((8192, 8192), (16384, 8192))
"""(M, H) of the order traces (one M x H x H layer each): the launches' two M, at N = K = 8192."""
TRACE_ORDERS = (("along_n", 1), ("along_m", 8), ("along_n", 8), ("along_m", 1))
"""(raster, swizzle) of the order traces: plan 79's orders, CUTLASS's default resolved (along N, swizzle 1, at all four
of its shapes)."""
PASSES = ("order-traces-1", "order-traces-2")
"""The call's two passes of the order traces (each one traced run per shape and order); a launch's drift is the mean of
its trace's two."""
REGISTERED = ROOT / "bench/predictions/reg80-traced-drift"
JudgeError = registered_plan.JudgeError
MAPE, K8192_TOL, K8192_SHARE = 8.0, 5.0, 6
UNSWIZZLED_SHARE = 0.3
BETWEEN = 4
FP = 1e-9
"""Relative slack of (e)'s bounds: a count that is one of the laws' bytes to floating-point rounding is between them."""
WHY = ("plan 80's call runs bench/hw/order_trace_probe.py into RUN_DIR/order-traces-1 and -2 and `python -m "
       "ctahw.counters RUN_DIR .../reg79-gemm-bytes/predicted.csv --probe gemm` on one GPU")
CLAIMS = {
    "a": f"own drift (each launch at its order's and M's traced drift, the profile's law in K): MAPE of the DRAM bytes "
         f"read <= {MAPE:g}% over the 16 launches",
    "b": "own drift: that MAPE below the profile's drift's and below the call's median drift's (all 16 traces)",
    "c": f"own drift: within {K8192_TOL:g}% at K = 8192 in at least {K8192_SHARE} of the 8 launches",
    "d": f"along M unswizzled drifts at most {UNSWIZZLED_SHARE:g} times the swizzled orders' median, traced at "
         "M = 16384",
    "e": f"at long K (K >= {p79.LONG_K}) and own drift, the counted bytes between the absolute law's and the tile "
         f"law's in at least {BETWEEN} of the 6 launches not along M unswizzled",
    "f": "own drift: MAPE at most half the compulsory predictor's (A and W read once) over the 16 launches",
}
KEYS = p79.KEYS


def trace_order(m: int, n: int, raster: str, swizzle: int) -> str:
    """The traced order that stands for a launch's: CUTLASS's raster and swizzle as the scheduler resolves them
    (``heuristic`` to along M or N, a swizzle the grid clamps), as ``raster/swizzle``."""
    from ctasim.l2 import cutlass_sm90_raster, cutlass_sm90_swizzle  # noqa: PLC0415

    tm, tn = m // 128, n // 256
    return f"{cutlass_sm90_raster(tm, tn, raster, swizzle)}/{cutlass_sm90_swizzle(tm, tn, swizzle)}"


def with_drift(hw, drift: float, k_ref: float):
    """``hw`` with every kernel config's drift and law in K replaced."""
    return dataclasses.replace(hw, kernel_configs=tuple(dataclasses.replace(c, cta_drift=drift, drift_k_ref=k_ref)
                                                        for c in hw.kernel_configs))


def register() -> pd.DataFrame:
    """Per GPU profile, law and launch: the model's bytes read at every drift of :data:`DRIFTS` and at the profile's
    own (``profile_drift`` = 1 on that row), with the launch's traced order and the profile's law."""
    from ctasim import costs  # noqa: PLC0415
    from ctasim.spec import load_hardware  # noqa: PLC0415

    rows = []
    for gpu, name in p78.PROFILES.items():
        hw = load_hardware(name)
        cfg = hw.config(128, 256)
        own_law = next(law for law, ref in LAWS.items() if ref == cfg.drift_k_ref)
        for law, k_ref in LAWS.items():
            for m, n, k, raster, swizzle in p79.CASES:
                lay = p79.layer(m, n, k)
                for drift in sorted({*DRIFTS, cfg.cta_drift}):
                    t = costs.cutlass_traffic(lay, with_drift(hw, drift, k_ref), p78.ELEM, raster, swizzle)
                    rows.append(dict(gpu=gpu, profile=name, law=law, profile_law=int(law == own_law), m=m, n=n, k=k,
                                     raster=raster, swizzle=swizzle, trace=trace_order(m, n, raster, swizzle),
                                     drift=drift, profile_drift=int(drift == cfg.cta_drift), read_gb=p78.read_gb(t)))
    return pd.DataFrame(rows)


def traced(run_dir: Path, shapes=TRACE_SHAPES, orders=TRACE_ORDERS, why: str = WHY) -> pd.DataFrame:
    """Per traced (M, order) of ``shapes`` x ``orders`` and pass: its drift (``ctasim.calibration.trace_drift``'s
    ``start_sd_per_round``). :class:`JudgeError` where a pass or a trace is missing or cannot be read (``why`` says
    what should have written them)."""
    from ctahw.tile_orders import trace_name  # noqa: PLC0415
    from ctasim.calibration import trace_drift  # noqa: PLC0415

    rows = []
    for p in PASSES:
        for m, h in shapes:
            for raster, swizzle in orders:
                f = run_dir / p / f"tiles-{trace_name(m, h, raster, swizzle)}.csv.gz"
                if not f.is_file():
                    raise JudgeError(f"no {f} ({why})")
                try:
                    d = trace_drift(pd.read_csv(f), str(f))
                except (ValueError, OSError, pd.errors.ParserError) as e:
                    raise JudgeError(f"{f}: {e}") from None
                rows.append(dict(trace_pass=p, m=m, trace=f"{raster}/{swizzle}", drift=d["start_sd_per_round"],
                                 rounds=d["rounds"]))
    return pd.DataFrame(rows)


def with_own_drift(meas: pd.DataFrame, traces: pd.DataFrame) -> pd.DataFrame:
    """``meas`` (one row per launch: m, n, raster, swizzle) with each launch's traced order (``trace``,
    :func:`trace_order`) and the drift traced for its M and that order (``own_drift``: the mean of :func:`traced`'s
    passes; NaN where ``traces`` has none)."""
    own = traces.groupby(["m", "trace"], as_index=False)["drift"].mean().rename(columns={"drift": "own_drift"})
    meas = meas.assign(trace=[trace_order(r.m, r.n, r.raster, r.swizzle) for r in meas.itertuples()])
    return meas.merge(own, on=["m", "trace"], how="left")


def launch_grid(pred: pd.DataFrame, r) -> pd.DataFrame:
    """The registration's rows of one launch (``r``: gpu, m, n, k, raster, swizzle), every law and drift."""
    return pred[(pred["gpu"] == r.gpu) & (pred["m"] == r.m) & (pred["n"] == r.n) & (pred["k"] == r.k)
                & (pred["raster"] == r.raster) & (pred["swizzle"] == r.swizzle)]


def measured(run_dir: Path) -> pd.DataFrame:
    """Per launch the counted bytes (GB), the call's GPU, and the drift traced for its M and order (``own_drift``,
    the mean of the two passes) and the call's median over every trace (``median_drift``)."""
    t = traced(run_dir)
    meas = with_own_drift(p79.measured(run_dir), t)
    if meas["own_drift"].isna().any():
        r = meas[meas["own_drift"].isna()].iloc[0]
        raise JudgeError(f"no traced drift for M = {r.m} {r.trace}")
    meas["median_drift"] = float(t["drift"].median())
    return meas


def at_drift(grid: pd.DataFrame, drift: float, col: str = "read_gb") -> float:
    """A registered figure (``col``: the bytes read, or plan 81's ``model_ms``) of one (GPU, law, launch) at ``drift``:
    linear between the grid's points, clamped to its ends (0 and the largest drift)."""
    g = grid.sort_values("drift")
    return float(np.interp(max(drift, 0.0), g["drift"].to_numpy(), g[col].to_numpy()))


def implied_drift(grid: pd.DataFrame, read_gb: float) -> float:
    """The drift at which the registered bytes equal ``read_gb`` (the bytes rise with the drift); NaN outside the
    grid's bytes or where they do not rise."""
    g = grid.sort_values("drift")
    b = g["read_gb"].to_numpy()
    if not (np.all(np.diff(b) >= 0) and b[0] <= read_gb <= b[-1]):
        return float("nan")
    return float(np.interp(read_gb, b, g["drift"].to_numpy()))


def cases(pred: pd.DataFrame, meas: pd.DataFrame) -> pd.DataFrame:
    """Per launch of the call's GPU: the counted bytes, the drifts, and the model's bytes at the own, median, profile's
    and no drift (the profile's law), at the own drift under both laws, and the compulsory bytes; errors in %."""
    gpu = meas["gpu"].iloc[0]
    p = pred[pred["gpu"] == gpu]
    if p.empty:
        raise JudgeError(f"the registration has no rows for {gpu}")
    rows = []
    for r in meas.itertuples():
        launch = launch_grid(p, r)
        if launch.empty:
            raise JudgeError(f"the registration has no {r.m}x{r.n}x{r.k} {r.raster}/{r.swizzle}")
        by_law = {law: launch[launch["law"] == law] for law in LAWS}
        own_law = launch.loc[launch["profile_law"] == 1, "law"].iloc[0]
        mine = by_law[own_law]
        row = dict(gpu=gpu, m=r.m, n=r.n, k=r.k, raster=r.raster, swizzle=r.swizzle, trace=r.trace, law=own_law,
                   read_gb=r.read_gb, own_drift=r.own_drift, median_drift=r.median_drift,
                   profile_drift=float(mine.loc[mine["profile_drift"] == 1, "drift"].iloc[0]),
                   implied_drift=implied_drift(mine, r.read_gb),
                   own_read_gb=at_drift(mine, r.own_drift), median_read_gb=at_drift(mine, r.median_drift),
                   profile_read_gb=float(mine.loc[mine["profile_drift"] == 1, "read_gb"].iloc[0]),
                   lockstep_read_gb=at_drift(mine, 0.0),
                   own_tile_read_gb=at_drift(by_law["tile"], r.own_drift),
                   own_absolute_read_gb=at_drift(by_law["absolute"], r.own_drift),
                   compulsory_read_gb=(r.m * r.k + r.n * r.k) * p78.ELEM / 1e9)
        rows.append(row)
    c = pd.DataFrame(rows)
    for src in ("own", "median", "profile", "lockstep", "own_tile", "own_absolute", "compulsory"):
        c[f"{src}_err_pct"] = (c[f"{src}_read_gb"] / c["read_gb"] - 1) * 100
    return c


def traces_table(c: pd.DataFrame) -> pd.DataFrame:
    """Per traced (M, order): the own drift and the drifts the counted bytes imply at the launches it stands for."""
    return (c.groupby(["m", "trace"], as_index=False)
            .agg(own_drift=("own_drift", "first"), implied_min=("implied_drift", "min"),
                 implied_max=("implied_drift", "max"), launches=("k", "size")))


def claims(c: pd.DataFrame, provenance: str) -> pd.DataFrame:
    mape = {s: float(c[f"{s}_err_pct"].abs().mean()) for s in ("own", "median", "profile", "lockstep", "compulsory")}
    k8 = c[c["k"] == 8192]
    near = int((k8["own_err_pct"].abs() <= K8192_TOL).sum())
    m16 = c[c["m"] == 16384].drop_duplicates("trace").set_index("trace")["own_drift"]
    swizzled = float(np.median([m16[t] for t in ("along_m/8", "along_n/8")]))
    unswizzled = float(m16["along_m/1"])
    lk = c[(c["k"] >= p79.LONG_K) & (c["trace"] != "along_m/1")]
    lo = np.minimum(lk["own_absolute_read_gb"], lk["own_tile_read_gb"])
    hi = np.maximum(lk["own_absolute_read_gb"], lk["own_tile_read_gb"])
    between = int(((lk["read_gb"] >= lo * (1 - FP)) & (lk["read_gb"] <= hi * (1 + FP))).sum())
    rows = [
        ("a", f"{mape['own']:.2f}% (worst {c['own_err_pct'].abs().max():.2f}%)", len(c) == 16 and mape["own"] <= MAPE),
        ("b", f"{mape['own']:.2f}% against profile {mape['profile']:.2f}%, median {mape['median']:.2f}% "
              f"(lockstep {mape['lockstep']:.2f}%)", mape["own"] < mape["profile"] and mape["own"] < mape["median"]),
        ("c", f"{near} of {len(k8)}", len(k8) == 8 and near >= K8192_SHARE),
        ("d", f"along M / 1 {unswizzled:.4f} against {swizzled:.4f} ({unswizzled / swizzled:.2f}x)"
              if swizzled > 0 else f"along M / 1 {unswizzled:.4f}, swizzled median {swizzled:.4f}",
         swizzled > 0 and unswizzled <= UNSWIZZLED_SHARE * swizzled),
        ("e", f"{between} of {len(lk)}", len(lk) == 6 and between >= BETWEEN),
        ("f", f"{mape['own']:.2f}% against {mape['compulsory']:.2f}%", mape["own"] <= mape["compulsory"] / 2),
    ]
    return registered_plan.claims_table(rows, CLAIMS, provenance)


PLAN = registered_plan.Plan(
    name="plan80_traced_drift", description=__doc__.splitlines()[0], registered=REGISTERED,
    results=ROOT / "bench/results/validation-registered80", register=register, measured=measured, cases=cases,
    claims=claims, first_file=lambda run_dir: run_dir / "counters.csv", tables=lambda c: {"traces": traces_table(c)})


def main(argv: list[str] | None = None) -> int:
    return registered_plan.main(PLAN, argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
