"""Post-hoc, after registered plan 80: how the drift's re-reads grow with K, per tile order, and can the times carry it

    python bench/posthoc_traced_drift.py [--out bench/results/posthoc-traced-drift]

Plans 80 and 81 traced the persistent GEMM's drift per order and M on four H100s (five calls) and counted their
launches. Read after the judges (nothing here was registered):

* ``launches.csv``: per call and launch, the traced drift (``own_drift``), the drift at which the model's bytes under
  the *tile* law (the drift the same share of a tile at every K) equal the counted (``tile_drift``, from the plan's
  registered grid), and at long K the exponent ``alpha`` with ``tile_drift = own_drift * (8192 / K) ** alpha`` (0:
  the tile law; 1: the absolute law, the same time a round, ``h100-x1-datasheet``'s since registered plan 73) and
  ``alpha_anchor``, the same from the reference launch's ``tile_drift`` in that call and order (how the bytes grow with
  K whatever the trace says); the bytes' errors of the own drift under both laws, and of the profile.
* ``summary.csv``: per call and group of launches (K = 8192; long K in the swizzled orders; long K unswizzled), the
  median exponents and drifts and the MAPE of each predictor's bytes.
* ``counted-times.csv``: per plan 81 call and group, the model's time at the drift whose bytes are the counted ones
  (either law), against the timed medians: the wave rule's time once the bytes are the GPU's.
* ``anchored.csv``: per plan 81 call, what a calibration that counted only the reference GEMM's bytes would give at
  long K: the drift those bytes imply (per order, or one per machine, the median over the four orders) carried to the
  long-K launches under either law, against the profile and the naive line, in time and bytes (MAPE over the 16
  long-K launches).
* ``times.csv``: the H100 calls that timed GEMMs at long K (registered plans 72 and 73, ``gemm_shapes.csv``), every
  unpadded CUTLASS order, priced by ``h100-x1-datasheet`` under the absolute law (as adopted), under the tile law, and
  under the tile law with the drift's re-reads out of the exposed share (``hidden``: they are read while other CTAs
  compute) or out of the waves altogether, bounding only the kernel's whole HBM time (``spread``): whether the bytes'
  law can be the time's.
"""

from __future__ import annotations

import dataclasses
import functools
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

import plan80_traced_drift as p80  # noqa: E402
from ctasim.cliargs import OneLineParser, parse_outputs  # noqa: E402

CALLS = {"GPU-69fa8ee3": ("plan80", "bench/results/hw-h100/2026-12-06-registered80-1gpu"),
         "GPU-69fa8ee3 (repeat)": ("plan80", "bench/results/hw-h100/2026-12-06-registered80-1gpu-run2"),
         "GPU-022aeda2": ("plan81", "bench/results/hw-h100/2026-12-06-registered81-1gpu"),
         "GPU-006ccc11": ("plan81", "bench/results/hw-h100/2026-12-06-registered81-1gpu-run2"),
         "GPU-9690988f": ("plan81", "bench/results/hw-h100/2026-12-06-registered81-1gpu-run3"),
         "GPU-aa56c4df": ("plan81", "bench/results/hw-h100/2026-12-06-registered81-1gpu-run4"),
         "GPU-27bdbe49": ("plan81", "bench/results/hw-h100/2026-12-06-registered81-1gpu-run5"),
         "GPU-0b0015d6": ("plan81", "bench/results/hw-h100/2026-12-06-registered81-1gpu-run6")}
"""The calls that traced the drift and counted the bytes in one go: (the plan whose registered grid prices them, the
call's folder)."""
TIME_CALLS = {"plan 72 (GPU-e57a052a)": "bench/results/hw-h100/2026-12-06-registered72-1gpu",
              "plan 73 (GPU-45dfedd7)": "bench/results/hw-h100/2026-12-06-registered73-1gpu",
              "plan 73 (GPU-1d13a075)": "bench/results/hw-h100/2026-12-06-registered73-1gpu-run2"}
PROFILE = "h100-x1-datasheet"
LONG_K = 20000
"""Times: K at or above this is long K (the shapes of plans 72 and 73 are K <= 8192 or K >= 28672)."""
PREDICTORS = ("own_absolute", "own_tile", "profile")


def exponent(own: float, tile: float, k: int) -> float:
    """``alpha`` with ``tile = own * (8192 / k) ** alpha`` (0: the tile law; 1: the absolute law); NaN at K = 8192 or
    where either drift is not positive."""
    if k <= 8192 or not (np.isfinite(tile) and tile > 0 and own > 0):
        return float("nan")
    return float(np.log(own / tile) / np.log(k / 8192))


def _plan(name: str):
    """The plan module whose registered grid and ``measured`` read a call of :data:`CALLS`."""
    import plan81_drift_tile_own as p81  # noqa: PLC0415

    return {"plan80": p80, "plan81": p81}[name]


@functools.lru_cache(maxsize=None)
def _measured(plan: str, run: str) -> pd.DataFrame:
    """A call's launches as its plan's ``measured`` reads them, read once for every table here (callers only read)."""
    return _plan(plan).measured(ROOT / run)


def launches() -> pd.DataFrame:
    """Per call of :data:`CALLS` and launch: the counted bytes, the own drift, the tile law's drift for the counted
    bytes (``tile_drift``) and the exponent from the own drift (``alpha``) and from the tile law's drift of the
    reference launch, 16384 x 8192 x 8192, in the same call and order (``anchor_drift``, 0 where that launch read less
    than the model at no drift; ``alpha_anchor``: how the
    bytes grow with K whatever the trace says), and the bytes' errors (%) of the own drift under either law and of the
    profile."""
    rows, anchors = [], {}
    for call, (plan, run) in CALLS.items():
        mod = _plan(plan)
        pred = pd.read_csv(mod.REGISTERED / "predicted.csv")
        for r in _measured(plan, run).itertuples():
            g = p80.launch_grid(pred, r)
            if g.empty:
                continue  # a launch the plan counted and did not register (none so far)
            by_law = {law: g[g.law == law] for law in p80.LAWS}
            mine = g[(g.profile_law == 1) & (g.profile_drift == 1)].iloc[0]
            tile = p80.implied_drift(by_law["tile"], r.read_gb)
            if (r.m, r.n, r.k) == (16384, 8192, 8192):
                anchors[(call, r.trace)] = anchor_drift(by_law["tile"], r.read_gb)
            got = {"own_absolute": p80.at_drift(by_law["absolute"], r.own_drift),
                   "own_tile": p80.at_drift(by_law["tile"], r.own_drift), "profile": float(mine["read_gb"])}
            rows.append(dict(call=call, plan=plan, m=r.m, n=r.n, k=r.k, raster=r.raster, swizzle=r.swizzle,
                             trace=r.trace, read_gb=r.read_gb, own_drift=r.own_drift, tile_drift=tile,
                             alpha=exponent(r.own_drift, tile, r.k),
                             **{f"{s}_err_pct": (v / r.read_gb - 1) * 100 for s, v in got.items()}))
    lt = pd.DataFrame(rows)
    lt["anchor_drift"] = [anchors.get((r.call, r.trace), float("nan")) for r in lt.itertuples()]
    lt["alpha_anchor"] = [exponent(r.anchor_drift, r.tile_drift, r.k) for r in lt.itertuples()]
    return lt


def group(r) -> str:
    if r.k == 8192:
        return "K = 8192"
    return "long K, unswizzled" if r.trace.endswith("/1") else "long K, swizzled"


def summary(lt: pd.DataFrame) -> pd.DataFrame:
    """Per call and group of launches: the median exponents, the median drift the counted bytes imply under the tile
    law and the median traced one, and each predictor's MAPE."""
    lt = lt.assign(group=[group(r) for r in lt.itertuples()])
    rows = []
    for (call, g), d in lt.groupby(["call", "group"], sort=False):
        rows.append(dict(call=call, group=g, launches=len(d), alpha_median=float(d["alpha"].median()),
                         alpha_anchor_median=float(d["alpha_anchor"].median()),
                         tile_drift_median=float(d["tile_drift"].median()),
                         own_drift_median=float(d["own_drift"].median()),
                         **{f"{s}_mape": float(d[f"{s}_err_pct"].abs().mean()) for s in PREDICTORS}))
    return pd.DataFrame(rows)


def counted_times() -> pd.DataFrame:
    """Per plan 81 call of :data:`CALLS` and launch: the model's time at the drift whose bytes are the counted ones
    (under each law: the registered grid's ``model_ms`` at ``tile_drift`` or its absolute-law twin), against the
    timed median: whether the wave rule prices the time once the bytes are the GPU's."""
    import plan81_drift_tile_own as p81  # noqa: PLC0415

    pred = pd.read_csv(p81.REGISTERED / "predicted.csv")
    rows = []
    for call, (plan, run) in CALLS.items():
        if plan != "plan81":
            continue  # plan 80's calls timed no long-K GEMM outside Nsight Compute
        for r in _measured(plan, run).itertuples():
            g = p80.launch_grid(pred, r)
            row = dict(call=call, m=r.m, n=r.n, k=r.k, raster=r.raster, swizzle=r.swizzle, measured_ms=r.median_ms)
            for law in p80.LAWS:
                grid = g[g.law == law]
                d = p80.implied_drift(grid, r.read_gb)
                ms = p80.at_drift(grid, d, "model_ms") if np.isfinite(d) else float("nan")
                row[f"{law}_drift"], row[f"{law}_err_pct"] = d, (ms / r.median_ms - 1) * 100
            rows.append(row)
    return pd.DataFrame(rows)


def counted_times_summary(ct: pd.DataFrame) -> pd.DataFrame:
    """Per call and group (the reference; long K swizzled; long K unswizzled): the mean and the MAPE of the model's
    time at the counted bytes, each law."""
    groups = {"reference (K = 8192)": ct["k"] == 8192, "long K, swizzled": (ct["k"] > 8192) & (ct["swizzle"] > 1),
              "long K, unswizzled": (ct["k"] > 8192) & (ct["swizzle"] == 1)}
    rows = []
    for call, d in ct.groupby("call", sort=False):
        for g, sel in groups.items():
            x = d[sel[d.index]]
            row = dict(call=call, group=g, launches=len(x))
            for law in p80.LAWS:
                err = x[f"{law}_err_pct"].dropna()  # NaN: counted bytes outside the grid under that law
                row[f"{law}_mean"], row[f"{law}_mape"] = float(err.mean()), float(err.abs().mean())
            rows.append(row)
    return pd.DataFrame(rows)


ANCHORS = ("order", "machine")
"""Where the anchored drift comes from: the reference launch in the same order, or the median over its four orders."""


def anchor_drift(grid: pd.DataFrame, read_gb: float) -> float:
    """The drift whose registered bytes are ``read_gb`` (``p80.implied_drift``), 0 where the counted bytes are below
    the grid's least (the model reads no less than at no drift); NaN above its largest."""
    if read_gb < grid["read_gb"].min():
        return 0.0
    return p80.implied_drift(grid, read_gb)


def anchored(lt: pd.DataFrame) -> pd.DataFrame:
    """Per plan 81 call of :data:`CALLS`, anchor (:data:`ANCHORS`) and law: the drift the reference GEMM's counted
    bytes imply under the tile law (the laws agree at K = 8192; :func:`launches`' ``anchor_drift``, ``lt``), carried
    to the long-K launches, and the MAPE of the model's times and bytes there; the profile's and the naive line's
    beside it (``anchor`` "profile", "naive")."""
    import plan81_drift_tile_own as p81  # noqa: PLC0415

    pred = pd.read_csv(p81.REGISTERED / "predicted.csv")
    rows = []
    for call, (plan, run) in CALLS.items():
        if plan != "plan81":
            continue  # plan 80's calls timed no long-K GEMM outside Nsight Compute
        meas = _measured(plan, run)
        ref = {(r.raster, r.swizzle): r.anchor_drift
               for r in lt[(lt.call == call) & (lt.m == 16384) & (lt.n == 8192) & (lt.k == 8192)].itertuples()}
        one = float(np.median(list(ref.values())))
        errs = []
        for r in meas[meas.k >= p81.LONG_K].itertuples():
            g = p80.launch_grid(pred, r)
            prof = g[(g.profile_law == 1) & (g.profile_drift == 1)].iloc[0]
            got = {("profile", "", ""): (prof.model_ms, prof.read_gb), ("naive", "", ""): (prof.naive_ms, np.nan)}
            for anchor, d in (("order", ref[(r.raster, r.swizzle)]), ("machine", one)):
                for law in p80.LAWS:
                    grid = g[g.law == law]
                    got[(anchor, law, d)] = (p80.at_drift(grid, d, "model_ms"), p80.at_drift(grid, d))
            for (anchor, law, d), (ms, gb) in got.items():
                errs.append(dict(anchor=anchor, law=law, ms_err=(ms / r.median_ms - 1) * 100,
                                 read_err=(gb / r.read_gb - 1) * 100))
        e = pd.DataFrame(errs)
        for (anchor, law), d in e.groupby(["anchor", "law"], sort=False):
            rows.append(dict(call=call, anchor=anchor, law=law, launches=int(d.ms_err.notna().sum()),
                             drift=one if anchor == "machine" else np.nan,
                             ms_mape=float(d.ms_err.abs().mean()), ms_mean=float(d.ms_err.mean()),
                             read_mape=float(d.read_err.abs().mean()) if anchor != "naive" else np.nan))
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
    from ctasim.profiles import before_h100_capped  # noqa: PLC0415
    from ctasim.spec import Layer, load_hardware  # noqa: PLC0415

    base = before_h100_capped(load_hardware(PROFILE))  # the absolute law as these tables were made (before plan 98)
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
    try:
        lt = launches()
    except p80.JudgeError as e:
        print(f"posthoc_traced_drift: {e}", file=sys.stderr)
        return 2
    ct = counted_times()
    tables = {"launches": lt, "summary": summary(lt), "times": times(), "counted-times": counted_times_summary(ct),
              "anchored": anchored(lt)}
    args.out.mkdir(parents=True, exist_ok=True)
    for name, t in tables.items():
        t.to_csv(args.out / f"{name}.csv", index=False, float_format="%.4f")
    with pd.option_context("display.width", 250):
        print(tables["summary"].round(2).to_string(index=False))
        print()
        print(tables["times"].round(2).to_string(index=False))
        print()
        print(tables["anchored"].round(2).to_string(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
