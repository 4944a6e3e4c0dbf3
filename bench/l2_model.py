"""The L2-reuse model of the CUTLASS GEMM (ctasim.l2) against the measured tile orders of one H200.

    python bench/l2_model.py

Data: bench/results/hw/2026-12-01-gemm-shapes/gemm_shapes.csv (27 shapes x 12 tile orders, CUTLASS 128x256x64,
cluster 2x1, persistent grid of 132 CTAs; bench/hw/gemm_shape_probe.py).

Calibration split, fixed in this file before the rest of the data was fitted or compared with the model (since moved,
unchanged, to ctasim.calibration: CALIBRATION_N, CALIBRATION_K, is_calibration):

* CALIBRATION: the K = 8192, N = 8192 shapes (M = 2048, 4096, 8192, 12288, 16384, 32768) at all 12 tile orders
  (72 runs). The model's constants are fitted on these only; so are the two naive predictors.
* HELD OUT: every other shape at all 12 tile orders (252 runs): N = 4096, 14336, 28672 at K = 8192 (new N), and
  M = 16384, N = 8192 at K = 4096, 14336, 28672 (new K).

Post-hoc: the team had already looked at the whole gemm-shapes table (its README summarises it); only this split
is held out from the choices made here.

Model (ctasim.l2): each wave's HBM bytes from L2 reuse in CUTLASS's launch order (cutlass_sm90_order), wave time
max(compute + exposed * t_hbm, t_hbm). Inputs taken as measured, not fitted: L2 = 62914560 bytes (60 MiB, the
device's l2CacheSize), HBM = 4257.4 GB/s (local D2D copy, bytes read + written) and tile_fixed_ns = 1222.5 ns (the
128x256 config), all from bench/results/hw/2026-12-01-calibrate-1gpu (calibration.json, h200-x1-calibrated.toml);
grid = 132 CTAs (CUTLASS's get_grid_shape, reproduced). Fitted on the calibration split (grid search, least mean
|error|; ctasim.calibration.grid_fit, the fit ``ctahw calibrate`` writes into a profile): the mainloop rate per CTA
slot with every operand in L2, and ``exposed``. L2 efficiency stays 1: on the
calibration split the error is flat over 0.8-1.1 (not identifiable), so it is not fitted.
Beside it, the roofline form (exposed = 0, as first proposed) with its own fitted rate, HBM bandwidth and L2
efficiency; and three predictors without an L2 model: one flat rate (the calibration shapes' median best-order
rate), the mean rate of each order over the calibration shapes, and the profile's waves (ceil(tiles / 132) tile
times of h200-x1-calibrated, what ctasim's engine uses today).

Writes bench/results/l2-model/summary.csv (one row per predictor and split), predictions.csv (every run) and
README.md.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT))  # this checkout's ctasim

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from ctasim.cliargs import OneLineParser  # noqa: E402
from ctasim import calibration as C  # noqa: E402
from ctasim.l2 import cutlass_sm90_raster  # noqa: E402

DATA = ROOT / "bench/results/hw/2026-12-01-gemm-shapes/gemm_shapes.csv"
OUT = ROOT / "bench/results/l2-model"
TILE_M, TILE_N = C.TILE_M, C.TILE_N
CAL_N, CAL_K = C.CALIBRATION_N, C.CALIBRATION_K
L2_BYTES = 62914560          # measured: calibration.json l2_bytes (cudaDeviceProp.l2CacheSize)
HBM_GBPS = 4257.3663         # measured: local D2D copy, bytes read + written (h200-x1-calibrated.toml)
TILE_FIXED_NS = 1222.5       # measured: h200-x1-calibrated.toml, 128x256 config (ctahw calibrate, K = 2048-8192)
PROFILE_TFLOPS = 6.2826      # measured: same config, along_m/swizzle8 at M = 16384, N = 8192 (the profile's rate)
SLOTS = 132


def load(path: Path = DATA) -> pd.DataFrame:
    """The CUTLASS runs of a tile-order probe's table (ctasim.calibration.tile_order_table)."""
    return C.tile_order_table(pd.read_csv(path), str(path))


def predict_l2(d: pd.DataFrame, tr: dict, rate: float, hbm: float, exposed: float, eff: float) -> np.ndarray:
    """Every run of ``d`` by the L2 model; ``tr``: per L2 efficiency, the runs' traffic (ctasim.calibration)."""
    return C.predict_ns(d.k.values, tr[eff], rate, hbm, exposed, TILE_FIXED_NS)


def fit(d: pd.DataFrame, tr: dict, grid: dict) -> C.GridFit:
    """Least mean |relative error| on the calibration rows of ``d`` over a grid of constants
    (ctasim.calibration.grid_fit; ``tr``: per L2 efficiency, the traffic of every run of ``d``)."""
    cal = d.cal.values
    sub = {e: [t for t, c in zip(tr[e], cal) if c] for e in grid["eff"]}
    return C.grid_fit(d.k.values[cal], d.ns.values[cal], sub, TILE_FIXED_NS, hbm_gbps=grid["hbm"], rate=grid["rate"],
                      exposed=grid["exposed"], l2_efficiency=grid["eff"])


def metrics(d: pd.DataFrame, pred: np.ndarray, mask: np.ndarray) -> dict:
    """Accuracy over the runs in ``mask``: errors, and per shape the ranking and spread of the 12 orders."""
    e = pred[mask] / d.ns.values[mask] - 1
    sub = d[mask].assign(pred=pred[mask])
    rho, pick, spread_err = [], [], []
    for _, g in sub.groupby(["m", "n", "k"]):
        rho.append(pd.Series(g.pred.values).rank().corr(pd.Series(g.ns.values).rank()))
        pick.append(g.ns.values[np.argmin(g.pred.values)] / g.ns.min() - 1)
        spread_err.append((g.pred.max() / g.pred.min()) - (g.ns.max() / g.ns.min()))
    return dict(runs=int(mask.sum()), shapes=len(rho), mape_pct=100 * np.abs(e).mean(),
                median_ape_pct=100 * np.median(np.abs(e)), worst_pct=100 * e[np.argmax(np.abs(e))],
                bias_pct=100 * e.mean(), order_rank_spearman=np.nanmean(rho) if not np.all(np.isnan(rho)) else np.nan,
                picked_order_loss_pct=100 * np.mean(pick), spread_err_pts=100 * np.mean(spread_err))


def main(argv: list[str] | None = None) -> int:
    OneLineParser(prog="python bench/l2_model.py", description=__doc__.splitlines()[0]).parse_args(argv or [])  # --help only
    d = load()
    cal = d.cal.values
    effs_max = (0.25, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
    tr = {e: C.run_traffic(d, L2_BYTES, l2_efficiency=e, sm_count=SLOTS) for e in effs_max}

    # The model: partial overlap, L2 efficiency 1, HBM at the measured copy rate; fitted: rate, exposed.
    c_over = fit(d, tr, dict(rate=C.RATE_GRID, hbm=[HBM_GBPS], exposed=C.EXPOSED_GRID, eff=[1.0]))
    # The roofline form: exposed = 0; fitted: rate, effective HBM bandwidth, L2 efficiency.
    c_max = fit(d, tr, dict(rate=np.round(np.arange(6.10, 6.701, 0.01), 4), hbm=np.arange(1500.0, 6001.0, 100.0),
                            exposed=[0.0], eff=effs_max))
    preds = {
        "l2-overlap": predict_l2(d, tr, c_over.rate, HBM_GBPS, c_over.exposed, 1.0),
        "l2-roofline": predict_l2(d, tr, c_max.rate, c_max.hbm_gbps, 0.0, c_max.l2_efficiency),
    }
    cd = d[cal]
    best_rate = cd.groupby(["m", "n", "k"]).tflops.max().median()
    order_rate = cd.groupby("order").tflops.mean()
    preds["naive-flat"] = d.flops.values / (best_rate * 1e3)
    preds["naive-per-order"] = d.flops.values / (d.order.map(order_rate).values * 1e3)
    tiles = (-(-d.m // TILE_M)) * (-(-d.n // TILE_N))
    preds["profile-waves"] = (-(-tiles // SLOTS)).values * np.array([C.compute_ns(k, PROFILE_TFLOPS, TILE_FIXED_NS)
                                                                     for k in d.k])

    new_n = (~cal) & (d.k.values == CAL_K)
    new_k = (~cal) & (d.k.values != CAL_K)
    rows = []
    for name, p in preds.items():
        for split, mask in (("calibration", cal), ("held-out", ~cal), ("held-out new N", new_n),
                            ("held-out new K", new_k)):
            rows.append(dict(predictor=name, split=split, **metrics(d, p, mask)))
    summary = pd.DataFrame(rows)
    consts = {
        "l2-overlap": f"fitted: rate {c_over.rate:.2f} TFLOP/s/slot, exposed {c_over.exposed:.3f}; "
                      f"measured: HBM {HBM_GBPS:.0f} GB/s, L2 60 MiB (efficiency 1), tile_fixed {TILE_FIXED_NS} ns",
        "l2-roofline": f"fitted: rate {c_max.rate:.2f} TFLOP/s/slot, HBM {c_max.hbm_gbps:.0f} GB/s, "
                       f"L2 efficiency {c_max.l2_efficiency:.2f}; measured: L2 60 MiB, tile_fixed {TILE_FIXED_NS} ns",
        "naive-flat": f"fitted: {best_rate:.1f} TFLOP/s (median best-order rate of the calibration shapes)",
        "naive-per-order": "fitted: mean TFLOP/s of each order over the calibration shapes",
        "profile-waves": f"measured: h200-x1-calibrated 128x256 ({PROFILE_TFLOPS} TFLOP/s/slot, {TILE_FIXED_NS} ns); "
                         "nothing fitted here",
    }
    summary["constants"] = summary.predictor.map(consts)
    pd.set_option("display.width", 200)
    show = summary.drop(columns="constants").copy()
    for c in show.columns[2:]:
        if show[c].dtype.kind == "f":
            show[c] = show[c].round(2)
    print(show.to_string(index=False))
    print()
    for k, v in consts.items():
        print(f"{k}: {v}")

    same, other = heuristic_check(d)
    print(f"\nheuristic raster vs the raster cutlass_sm90_raster resolves it to: median |diff| {same[0]:.2f}%, "
          f"max {same[1]:.2f}%; vs the other raster: median {other[0]:.2f}%, max {other[1]:.2f}%")

    OUT.mkdir(parents=True, exist_ok=True)
    summary.to_csv(OUT / "summary.csv", index=False, float_format="%.4f")
    per = d[["m", "n", "k", "order", "cal", "median_ms"]].copy()
    for name, p in preds.items():
        per[f"{name}_ms"] = p / 1e6
    per.to_csv(OUT / "predictions.csv", index=False, float_format="%.5f")
    write_readme(summary, show, consts, same, other, c_over, d.assign(err=100 * (preds['l2-overlap'] / d.ns - 1)))
    return 0


def heuristic_check(d: pd.DataFrame) -> tuple[tuple[float, float], tuple[float, float]]:
    """|time(heuristic/swizzle s) / time(r/swizzle s) - 1| in %, r the raster the heuristic resolves to, and r the
    other one: (median, max) over the 27 shapes x 4 swizzles. Checks the order reproduction's heuristic."""
    t = d.set_index(["m", "n", "k", "raster", "swizzle"]).ns
    same, other = [], []
    for (m, n, k, raster, s), v in t.items():
        if raster != "heuristic":
            continue
        r = cutlass_sm90_raster(-(-m // TILE_M), -(-n // TILE_N), "heuristic", s)
        o = "along_n" if r == "along_m" else "along_m"
        same.append(abs(v / t[(m, n, k, r, s)] - 1) * 100)
        other.append(abs(v / t[(m, n, k, o, s)] - 1) * 100)
    return (np.median(same), np.max(same)), (np.median(other), np.max(other))


def write_readme(summary: pd.DataFrame, show: pd.DataFrame, consts: dict, same, other, c_over: C.GridFit,
                 err: pd.DataFrame) -> None:
    from provenance import provenance

    prov = provenance("python bench/l2_model.py")
    v = summary.set_index(["predictor", "split"])

    def f(pred, split, col):
        return v.loc[(pred, split), col]

    big = err[err.cal & (err.m == err.m.max())].err
    by_k = err[~err.cal & (err.n == CAL_N)].groupby("k").err.mean()
    by_n = err[~err.cal & (err.k == CAL_K)].groupby("n").err.mean()
    table = show.to_markdown(index=False) if _has_tabulate() else "```\n" + show.to_string(index=False) + "\n```"
    text = f"""# L2-reuse model of the CUTLASS GEMM against its measured tile orders (one H200)

Command: `{prov['command']}` (commit {prov['commit'][:7]}{', dirty tree' if prov['dirty'] else ''}, {prov['date']},
{prov['machine']}, Python {prov['python']}, numpy {prov['numpy']}). No GPU: it reads
`bench/results/hw/2026-12-01-gemm-shapes/gemm_shapes.csv` (27 shapes x 12 tile orders of the project's CUTLASS
128x256x64 kernel, cluster 2x1, 132 persistent CTAs; `bench/hw/gemm_shape_probe.py`).

Files: `summary.csv` (one row per predictor and split), `predictions.csv` (every run, every predictor).

## Split (fixed in `bench/l2_model.py` and committed before any fit)

* calibration: N = K = 8192, M = 2048 ... 32768, all 12 orders (72 runs);
* held out: N = 4096, 14336, 28672 at K = 8192 (216 runs) and K = 4096, 14336, 28672 at M = 16384, N = 8192
  (36 runs).

**Post-hoc**: the team had looked at the whole table before (its README summarises the spread per shape); the
split is held out only from the choices made for this model (its form was chosen on the calibration rows: the
roofline form below fits them worse).

## Predictors

| predictor | constants |
| --- | --- |
""" + "\n".join(f"| {k} | {v} |" for k, v in consts.items()) + f"""

`l2-overlap` is `ctasim.l2` as built: HBM bytes per wave from L2 reuse in CUTLASS's launch order, wave time
`max(compute + exposed * t_hbm, t_hbm)`. `l2-roofline` is the same traffic with `exposed = 0`, i.e. `max(compute,
t_hbm)` with a fitted effective bandwidth (any L2 efficiency <= 0.4 gives the same calibration error; the first of
the grid is reported). HBM 4257 GB/s is the profile's local device-to-device copy rate (read + write), not the
4.8 TB/s datasheet figure.

## Accuracy

`mape_pct`, `worst_pct`, `bias_pct`: (predicted / measured - 1) over the runs. Per shape, over its 12 orders:
`order_rank_spearman` (rank correlation of predicted and measured times; undefined for predictors that give every
order the same time), `picked_order_loss_pct` (how much slower the order predicted fastest measured than the
fastest), `spread_err_pts` (predicted minus measured slowest/fastest ratio, in points).

{table}

Check of the order reproduction: CUTLASS's `heuristic` raster measured within a median {same[0]:.2f}% (max
{same[1]:.2f}%) of the raster `cutlass_sm90_raster` resolves it to, and a median {other[0]:.2f}% (max {other[1]:.2f}%)
from the other one.

## What the numbers say

* Held out (252 runs), the L2 model's MAPE is {f("l2-overlap", "held-out", "mape_pct"):.2f}% against
  {f("naive-per-order", "held-out", "mape_pct"):.2f}% for the mean rate per order, {f("naive-flat", "held-out",
  "mape_pct"):.2f}% for one flat rate and {f("profile-waves", "held-out", "mape_pct"):.2f}% for the profile's waves
  (the engine today); worst {f("l2-overlap", "held-out", "worst_pct"):+.2f}% against {f("naive-per-order",
  "held-out", "worst_pct"):+.2f}%, {f("naive-flat", "held-out", "worst_pct"):+.2f}%, {f("profile-waves", "held-out",
  "worst_pct"):+.2f}%. Its edge over the per-order mean is small and is not there on the new-K subset
  ({f("l2-overlap", "held-out new K", "mape_pct"):.2f}% vs {f("naive-per-order", "held-out new K", "mape_pct"):.2f}%).
  What it adds is the order within a shape: rank correlation {f("l2-overlap", "held-out new N",
  "order_rank_spearman"):.2f} against {f("naive-per-order", "held-out new N", "order_rank_spearman"):.2f} on the new
  N (where the orders' effects differ from N = 8192), and a shape's slowest/fastest spread off by
  {f("l2-overlap", "held-out", "spread_err_pts"):+.1f} points on average against {f("naive-per-order", "held-out",
  "spread_err_pts"):+.1f} for the per-order mean, without a rate per order.
* It under-predicts the time (the GPU is slower than modelled), more at large M and at large K: on the
  calibration rows {big.min():+.1f} to {big.max():+.1f}% at M = {err.m.max()}; held out, the mean error is
  {", ".join(f"{v:+.1f}% at N = {n}" for n, v in by_n.items())} (K = 8192) and
  {", ".join(f"{v:+.1f}% at K = {k}" for k, v in by_k.items())} (M = 16384, N = 8192). The model's waves run in
  step; measured waves drift apart and lose part of the reuse, more so the more waves there are. At other K, the
  split of the tile time into `tile_fixed_ns` (taken from the profile) and the fitted rate is not tested by a
  calibration split that has K = 8192 only.
* The roofline form `max(compute, t_hbm)` cannot fit the calibration rows: at M = 16384 it must make both
  along_m/swizzle1 (~277 MB of misses a wave) and along_n/swizzle1 (~147 MB) slower, and a ceiling slows only
  the first. Measured at N = K = 8192, along_m/swizzle1 runs 4-10% below the best order from M = 8192 up and
  along_n/swizzle1 3.5-4.8% below it at every M: the cost grows with the miss bytes rather than switching on at
  a ceiling (~0.03 us per MB of a wave), which is what `exposed` carries
  ({c_over.exposed:.3f} of the HBM time at 4257 GB/s, i.e. {HBM_GBPS / c_over.exposed / 1000:.1f} TB/s of
  serial miss traffic). The fitted mainloop rate ({c_over.rate:.2f} TFLOP/s a slot) is the rate with every
  operand in L2, above the profile's {PROFILE_TFLOPS} measured at along_m/swizzle8, which still misses.
"""
    (OUT / "README.md").write_text(text)


def _has_tabulate() -> bool:
    try:
        import tabulate  # noqa: F401
    except ImportError:
        return False
    return True


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
