"""Long K: do the CTAs of a persistent GEMM drift apart by tile times (the model's law) or by less, and is the model
slow there because of what the drift costs? Registered plans 45 and 46's trace tables (no GPU).

    python bench/long_k_drift.py --register [--plan 46] --out bench/predictions/reg45-long-k-drift
    python bench/long_k_drift.py --judge PROBE_DIR [--plan 46] --registered bench/predictions/reg45-long-k-drift \\
        --out bench/results/validation-registered45

``--plan`` (default 45) picks the cases and the claims (:data:`PLANS`). Plan 46 asks whether the drift's cost, the
late-half tile over the early rounds', stays the same share of the tile at every K (what plan 45's traces and the
2026-12-02 traces showed, post-hoc) where every drift form of the model lets it grow with K; its registration adds
each other form's prediction (``<form>_ms``, ``<form>_late_rel``: the profiles of ``bench/block_gemm_orders.py``'s
``PROFILES``) and the swizzle-1 order, whose drift the 2026-12-02 traces found almost free at M >= 16384.

The memory hierarchy's drift (``ctasim.l2``, ``KernelConfig.cta_drift``) spreads the start times of a persistent
grid's CTAs by ``cta_drift`` tile times a round: 0.0078 in ``h200-x1-calibrated``, the median of nine per-tile traces
at K = 8192 and 16384 (``bench/results/hw/2026-12-02-order-traces``, ``ctasim.calibration.trace_drift``). In tile times
the spread's bytes grow with K, so the model's drift re-reads grow with K: at 8192 x 16384 x 53248 (registered plan
29) the model with the drift is 5.1% slow and without it 4.2% fast. Two laws of the drift against K, registered here
beside the profile's:

* **tile** (the model's): ``cta_drift`` tile times a round at every K;
* **sqrt**: per-tile jitter that adds up over K, ``cta_drift * sqrt(K_REF / K)`` tile times (``K_REF`` = 8192);
* **absolute** (the same time a round at every K): ``cta_drift * K_REF / K``.

``--register`` writes ``predicted.csv``: per (M x H x H, order) of :data:`CASES` (the probe ``bench/hw/order_trace_probe.py``:
the chain kernel's static 2x1 design with one layer, a persistent GEMM with a stamp per tile, and the plain CUTLASS
GEMM at the same order), the rounds, the three laws' drift, the model's plain-GEMM time at that order with its drift
and without it (``ctasim.costs.order_waves``), the naive FLOPs line's (``ctasim.predict.Naive``), and the model's
late-over-early wave time (the median wave of the late half over that of waves 1-3: what ``trace_drift``'s
``mainloop_late_rel`` measures on the trace, reported only). ``--judge`` reads the probe's ``timing.csv`` and
``tiles-*.csv.gz`` and writes ``results.csv`` (the measured drift, late-over-early mainloop, plain GEMM time and every
error), ``claims.csv`` (:data:`CLAIMS`) and, post-hoc, ``decomposition.csv`` (:func:`decompose`). The profile is
``h200-x1-calibrated`` priced as each plan was registered (:data:`PLANS`; ``--register`` writes it beside
``predicted.csv``, ``reuse_pricing``): plans 45 and 46 (2026-12-04) with a panel's reuse across waves an LRU of the whole
L2, as before registered plan 67's adoption on an H200 (``ctasim.profiles.before_h200_reuse``).

Left out: why the CTAs drift (the jitter's source); the chain kernel's own time (timed, reported, not predicted).
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from ctasim.cliargs import OneLineParser, parse_outputs  # noqa: E402
from power_model import write_tables  # noqa: E402
import reuse_pricing  # noqa: E402

PROFILE = "h200-x1-calibrated"
K_REF = 8192
NAIVE_FROM = ROOT / "bench/results/hw/2026-11-29-run2/baselines.csv"
"""The CUTLASS GEMM rows the naive FLOPs line is fitted on (as every registration's)."""
CASES = (
    (16384, 16384, "along_m", 8, "control"),
    (8192, 28672, "along_m", 8, "long"),
    (8192, 28672, "along_n", 8, "long"),
    (4096, 45056, "along_m", 8, "long"),
    (4096, 45056, "along_n", 8, "long"),
)
"""(M, H, raster, swizzle, role): M x H x H GEMMs; the control is a committed trace's case (its drift 0.0084 then)."""
CASES46 = tuple((m, h, "along_m", swizzle, role + ("" if swizzle == 8 else "-swizzle1"))
                for m, h, role in ((16384, 16384, "control"), (8192, 36864, "long"), (4096, 53248, "long"))
                for swizzle in (8, 1))
"""Registered plan 46's traces: the control and two K beyond plan 45's (8192 x 36864 x 36864, 4096 x 53248 x 53248),
each in the high-reuse order (along M, swizzle 8) and with swizzle 1 (at M = 16384 a wave shares each W panel between
128 tiles and reads every A panel once; at M = 4096-8192 a W panel between 32-64 tiles): the probe's ``--shapes
16384x16384,8192x36864,4096x53248 --orders along_m/8,along_m/1``."""
FORMS46 = ("carried", "wave")
"""The drift forms plan 46 registers beside the profile's ("interleaved")."""
LATE_TOL = 0.03
"""Plan 46's claim (f): the long-K late-half tile over rounds 1-3 within this of the control's, in the same call."""
DRIFT_TOL = 0.35
GEMM_TOL_PCT = 3.0
CLAIMS = {
    "a": f"every long-K trace's drift within {int(DRIFT_TOL * 100)}% of the tile law",
    "b": "every long-K trace's drift nearer the tile law than the sqrt law",
    "c": f"the model's plain-GEMM time within {GEMM_TOL_PCT}% at every long-K case",
    "d": "the model slow (error > 0) at every long-K case (plan 29's long-K finding)",
    "e": "the measured plain-GEMM time between the model without drift and with it at every long-K case",
}
CLAIMS46 = {
    "f": f"every long-K high-reuse trace's late-half mainloop over rounds 1-3 within {LATE_TOL} of the control's (same call)",
    "g": "every long-K high-reuse trace's late_rel less the control's nearer 0 than the profile's predicted difference",
    "h": f"every long-K high-reuse trace's drift within {int(DRIFT_TOL * 100)}% of the tile law",
    "i": "at each K the swizzle-1 order's late-half loss (late_rel - 1) under half the swizzle-8 order's",
}


def case_name(m: int, h: int, raster: str, swizzle: int) -> str:
    """The probe's trace name (``ctahw.tile_orders.trace_name``'s form)."""
    return f"{m}x{h}-{raster}-swizzle{swizzle}"


def register(cases, forms: tuple[str, ...], pricing: str) -> pd.DataFrame:
    """The registration's rows, one per case of ``cases``; ``forms``: other drift forms whose plain-GEMM time and
    late-half wave over waves 1-3 are added (``<form>_ms``, ``<form>_late_rel``); ``pricing``: the profile's
    (``reuse_pricing``: ``LRU`` as plans 45 and 46 were registered)."""
    from block_gemm_orders import PROFILES
    from ctahw.tile_orders import trace_plan
    from ctasim import costs
    from ctasim.predict import Naive
    from ctasim.spec import Layer, load_hardware

    hw = reuse_pricing.priced(load_hardware(PROFILE), pricing)
    others = {form: load_hardware(PROFILES[form]) for form in forms}
    naive = Naive.fit(NAIVE_FROM)
    rows = []
    for m, h, raster, swizzle, role in cases:
        trace_plan(m, h, raster, swizzle)  # the probe refuses a padded grid: so does the registration
        lay = Layer(m=m, n=h, k=h)
        cfg = hw.config(lay.tile_m, lay.tile_n)
        order, slots, waves = costs.cutlass_waves(lay, hw, 2, raster, swizzle)
        flat = costs.order_waves(lay, hw, 2, order, slots, drift=0.0)
        rows.append({"case": case_name(m, h, raster, swizzle), "role": role, "m": m, "h": h, "order": f"{raster}/swizzle{swizzle}",
                     "rounds": len(waves), "drift_tile": cfg.cta_drift,
                     "drift_sqrt": cfg.cta_drift * math.sqrt(K_REF / h), "drift_abs": cfg.cta_drift * K_REF / h,
                     "model_ms": waves.sum() / 1e6, "model_nodrift_ms": flat.sum() / 1e6,
                     "naive_ms": naive.gemm_ms(m, h, h),
                     "model_late_rel": late_rel(waves)})
        for form, other in others.items():
            w = costs.cutlass_waves(lay, other, 2, raster, swizzle)[2]
            rows[-1] |= {f"{form}_ms": w.sum() / 1e6, f"{form}_late_rel": late_rel(w)}
    return pd.DataFrame(rows)


def late_rel(waves: np.ndarray) -> float:
    """The median wave of the late half over that of waves 1-3 (what ``trace_drift``'s ``mainloop_late_rel`` measures
    on a trace)."""
    last = len(waves) - 1
    return float(np.median(waves[last // 2:]) / np.median(waves[1:4]))


def judge(pred: pd.DataFrame, probe: Path, plan: int = 45) -> dict[str, pd.DataFrame]:
    """``results`` (per case: the measured drift and late-half mainloop, the plain GEMM's time and every predictor's
    error) and ``claims`` (the plan's, :data:`PLANS`) of a registration ``pred`` against a probe folder."""
    from ctasim.calibration import trace_drift

    timing = pd.read_csv(probe / "timing.csv")
    rows = []
    for p in pred.itertuples():
        path = probe / f"tiles-{p.case}.csv.gz"
        t = timing[(timing["m"] == p.m) & (timing["h"] == p.h) & (timing["order"] == p.order)]
        if not path.is_file() or t.empty:
            raise ValueError(f"the probe has no {'trace' if not path.is_file() else 'timing'} of {p.case}")
        d = trace_drift(pd.read_csv(path), str(path))
        ms = t.set_index("variant")["median_ms"]
        rows.append({**p._asdict(), "drift": d["start_sd_per_round"], "late_rel": d["mainloop_late_rel"],
                     "measured_rounds": d["rounds"], "cutlass_ms": float(ms["cutlass"]),
                     "chain_ms": float(ms["chain_static2x1"])})
    r = pd.DataFrame(rows).drop(columns="Index")
    r["model_err_pct"] = 100 * (r["model_ms"] / r["cutlass_ms"] - 1)
    r["nodrift_err_pct"] = 100 * (r["model_nodrift_ms"] / r["cutlass_ms"] - 1)
    r["naive_err_pct"] = 100 * (r["naive_ms"] / r["cutlass_ms"] - 1)
    for form in FORMS46:
        if f"{form}_ms" in r:
            r[f"{form}_err_pct"] = 100 * (r[f"{form}_ms"] / r["cutlass_ms"] - 1)
    r["drift_vs_tile"] = r["drift"] / r["drift_tile"] - 1
    return {"results": r, "claims": PLANS[plan][1](r)}


def claims45(r: pd.DataFrame) -> pd.DataFrame:
    """Registered plan 45's claims (:data:`CLAIMS`) on :func:`judge`'s results."""
    long = r[r["role"] == "long"]
    nearer = (long["drift"] - long["drift_tile"]).abs() < (long["drift"] - long["drift_sqrt"]).abs()
    between = (long["cutlass_ms"] >= long["model_nodrift_ms"]) & (long["cutlass_ms"] <= long["model_ms"])
    return pd.DataFrame([
        {"claim": "a", "rule": CLAIMS["a"], "value": f"drift / tile law - 1: {', '.join(f'{x:+.2f}' for x in long.drift_vs_tile)}",
         "met": bool((long["drift_vs_tile"].abs() <= DRIFT_TOL).all())},
        {"claim": "b", "rule": CLAIMS["b"], "value": f"{int(nearer.sum())} of {len(long)}", "met": bool(nearer.all())},
        {"claim": "c", "rule": CLAIMS["c"], "value": f"MAPE {long.model_err_pct.abs().mean():.2f}%, worst "
         f"{long.model_err_pct[long.model_err_pct.abs().idxmax()]:+.2f}% (naive MAPE {long.naive_err_pct.abs().mean():.2f}%)",
         "met": bool((long["model_err_pct"].abs() <= GEMM_TOL_PCT).all())},
        {"claim": "d", "rule": CLAIMS["d"], "value": f"{int((long.model_err_pct > 0).sum())} of {len(long)}",
         "met": bool((long["model_err_pct"] > 0).all())},
        {"claim": "e", "rule": CLAIMS["e"], "value": f"{int(between.sum())} of {len(long)}", "met": bool(between.all())},
    ])


def claims46(r: pd.DataFrame) -> pd.DataFrame:
    """Registered plan 46's claims (:data:`CLAIMS46`) on :func:`judge`'s results; (g) sets the measured differences
    beside what the profile's form predicted (``model_late_rel``) for the same comparison."""
    ctrl = r[r["role"] == "control"]
    if len(ctrl) != 1:
        raise ValueError(f"plan 46 needs one control case, the results have {len(ctrl)}")
    ctrl = ctrl.iloc[0]
    long = r[r["role"] == "long"]
    gap = long["late_rel"] - ctrl["late_rel"]
    model_gap = long["model_late_rel"] - ctrl["model_late_rel"]
    loss = r.assign(loss=r["late_rel"] - 1).pivot_table(index="h", columns="order", values="loss")
    fast, slow = loss["along_m/swizzle1"], loss["along_m/swizzle8"]
    return pd.DataFrame([
        {"claim": "f", "rule": CLAIMS46["f"], "value": f"long less control: {', '.join(f'{x:+.3f}' for x in gap)}",
         "met": bool((gap.abs() <= LATE_TOL).all())},
        {"claim": "g", "rule": CLAIMS46["g"], "value": f"the profile's: {', '.join(f'{x:+.3f}' for x in model_gap)}",
         "met": bool((gap.abs() < model_gap.abs()).all())},
        {"claim": "h", "rule": CLAIMS46["h"], "value": "drift / tile law - 1: "
         f"{', '.join(f'{x:+.2f}' for x in long.drift_vs_tile)}", "met": bool((long["drift_vs_tile"].abs() <= DRIFT_TOL).all())},
        {"claim": "i", "rule": CLAIMS46["i"], "value": ", ".join(f"K {k}: {a:+.3f} against {b:+.3f}"
                                                               for k, a, b in zip(loss.index, fast, slow)),
         "met": bool((fast < slow / 2).all())},
    ])


PLANS = {45: (CASES, claims45, (), reuse_pricing.LRU), 46: (CASES46, claims46, FORMS46, reuse_pricing.LRU)}
"""Plan -> (its cases, its claims on the judged results, the other drift forms its registration adds, how it priced the
H200: both before registered plan 67's adoption on an H200, 2026-12-06, so ``LRU``; a plan registered since takes
``reuse_pricing.PROFILE``)."""


def decompose(pred: pd.DataFrame, probe: Path, pricing: str) -> pd.DataFrame:
    """Post-hoc (written after plan 45's measurement was seen): per case, the median tile (``t_store_end -
    t_acquire``) of rounds 1-3 and of the late half (rounds >= last // 2) in the trace, beside the model's median wave
    of the same rounds with its drift and without it, and the model's compute alone (the tile at ``l2_sm_tflops``,
    boosted): which part of the model's time the measurement does not bear out."""
    from ctasim import costs
    from ctasim.calibration import tile_rounds
    from ctasim.spec import Layer, load_hardware

    hw = reuse_pricing.priced(load_hardware(PROFILE), pricing)
    rows = []
    for p in pred.itertuples():
        tiles = tile_rounds(pd.read_csv(probe / f"tiles-{p.case}.csv.gz"))
        tiles["tile_us"] = (tiles.t_store_end - tiles.t_acquire) / 1e3
        last = int(tiles["round"].max())
        raster, swizzle = p.order.split("/swizzle")
        lay = Layer(m=p.m, n=p.h, k=p.h)
        order, slots, waves = costs.cutlass_waves(lay, hw, 2, raster, int(swizzle))
        flat = costs.order_waves(lay, hw, 2, order, slots, drift=0.0)
        cfg = hw.config(lay.tile_m, lay.tile_n)
        compute = costs.tile_ns(lay, lay.k, hw, 2, "", rate_tflops=cfg.l2_sm_tflops) / costs.clock_boost(
            hw, min(lay.tiles, slots), slots)
        early, late = slice(1, 4), slice(last // 2, None)
        rows.append({"case": p.case, "role": p.role,
                     "measured_early_us": tiles[tiles["round"].between(1, 3)].tile_us.median(),
                     "measured_late_us": tiles[tiles["round"] >= last // 2].tile_us.median(),
                     "model_early_us": np.median(waves[early]) / 1e3, "model_late_us": np.median(waves[late]) / 1e3,
                     "nodrift_early_us": np.median(flat[early]) / 1e3, "nodrift_late_us": np.median(flat[late]) / 1e3,
                     "compute_us": compute / 1e3})
    d = pd.DataFrame(rows)
    # the share of the model's drift cost (late wave with drift less without) that the trace shows (late less early)
    d["drift_cost_seen"] = ((d.measured_late_us - d.measured_early_us) / (d.model_late_us - d.nodrift_late_us))
    return d


def main(argv=None) -> int:
    ap = OneLineParser(prog="python bench/long_k_drift.py", description=__doc__.splitlines()[0])
    ap.add_argument("--register", action="store_true")
    ap.add_argument("--judge", type=Path, metavar="PROBE_DIR", help="an order_trace_probe.py folder")
    ap.add_argument("--registered", type=Path, metavar="DIR")
    ap.add_argument("--plan", type=int, choices=sorted(PLANS), default=45, help="the registered plan (default 45)")
    ap.add_argument("--out", type=Path, required=True)
    args = parse_outputs(ap, argv, folders=("--out",))
    try:
        if args.register == (args.judge is not None):
            raise ValueError("give --register or --judge PROBE_DIR (with --registered)")
        if args.register:
            cases, _, forms, pricing = PLANS[args.plan]
            tables = {"predicted": register(cases, forms, pricing)}
        else:
            if args.registered is None or not (args.registered / "predicted.csv").is_file():
                raise ValueError("--judge needs --registered DIR holding predicted.csv")
            if not (args.judge / "timing.csv").is_file():
                raise ValueError(f"no {args.judge / 'timing.csv'}")
            pred = pd.read_csv(args.registered / "predicted.csv")
            tables = {**judge(pred, args.judge, args.plan),
                      "decomposition": decompose(pred, args.judge, reuse_pricing.read(args.registered))}
    except ValueError as e:
        print(f"long_k_drift: {e}", file=sys.stderr)
        return 2
    write_tables(args.out, tables)
    if args.register:
        reuse_pricing.write(args.out, pricing)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
