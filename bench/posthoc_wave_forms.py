"""Post-hoc: the GEMM model's wave-time forms refit on the 72 calibration runs, judged on the other rows (no GPU).

    python bench/posthoc_wave_forms.py [--out bench/results/posthoc-wave-forms]

Rows: every CUTLASS row of the ten committed single-GPU tile-order probe tables (:data:`TABLES`: seven
``gemm_shapes.csv``, three ``calibrate-*/probes/tile_orders.csv``; 1248 rows, 9 GPUs and one unrecorded). The main set
is the rows whose CUTLASS grid is padded by less than 1% (1197; the 0.43%-padded 59136-wide grid stays in); the fit set
is the 72 runs ``bench/l2_drift_model.py`` fits ``h200-x1-calibrated`` on (2026-12-01 gemm-shapes, N = K = 8192,
6 M x 12 orders); held = main minus those 72 (1125 rows). Error = model / measured - 1 (%): + is a model too slow.

Every form prices a wave as ``max(compute(rate) + p * x, y)`` (compute = ``ctasim.calibration.compute_ns``, the
128x256 tile at ``rate`` TFLOP/s a slot), with per-wave HBM traffic from ``ctasim.calibration.run_traffic`` (the path
``bench/l2_drift_model.py`` fits on: ``bench/l2_model.py``'s L2 size, HBM rate and tile fixed time, the measured drift
``l2_drift_model.measured_drift()``), y = the wave's HBM time with every byte:

* 0  current: drift form "interleaved", x = y (p = ``l2_hbm_exposed``);
* 1  fixed per-wave cost: "interleaved", x = 1 ns (p = a cost in ns a wave);
* 2  drift re-reads hidden: "interleaved", x = the HBM time without the drift's re-reads;
* 3  drift off: drift 0, x = y;
* 4a "carried" (plan 20's form), x = y;  4b "wave" (plan 8's form), x = y;
* 5  the pipeline's fill: "interleaved", x = y * min(1, 8192 / K) (at the 72's K the same as form 0; on long K a
  smaller exposure).

Each form's two constants (rate, p) are refit on the 72 by least mean |relative error| over a grid (rate 6.00-7.50 by
0.01; p 0-0.5 by 0.005, or 0-15000 ns by 25 for form 1): ``ctasim.calibration.grid_fit`` where x = y, the same search
written out here for forms 1 and 2. ``forms.csv``, per form: the constants, the grid edge a best value sits on (none
does), fit MAPE (72), held MAPE, held mean (signed) error, residual SD with one intercept per call folder, the mean
error of the held long-K rows (K >= 20480, 129 rows) and wide-N rows (N >= 27648 and K <= 12288, 267 rows; not
``block_gemm_orders``' plan-29 class, which takes K <= 16384), and the partial r (each folder's mean removed) of the
held error with the current model's HBM-bound wave share (the share of a run's waves with t_hbm > compute +
exposed * t_hbm, from form 0 at the profile's constants, fixed for every form) and with log2 K.

``features.csv``, per call folder of the main set: the current model's mean and SD of error (form 0 at
``h200-x1-calibrated``'s constants, checked against ``bench/block_gemm_orders.orders()`` row by row) and its Pearson
r with the HBM-bound wave share, the model's HBM bytes per FLOP (x 1e3), log2 K and log2 N (empty where the folder
does not vary it). ``pooled.csv``: the same four features over the main set with one intercept per folder: slope,
partial r, Spearman rho of the demeaned values, residual SD and the SD with the intercepts alone.

POST-HOC: every row was seen (and its error analysed) before these forms were written; the figures say how the forms
fit, not how they predict. Its headline figures (2026-12-03): form 0 refits to 6.72 / 0.19 (what the profile holds),
held MAPE 1.09 (2 2.15, 3 2.35, 4b 2.08, 1 3.83); pooled HBM-bound share slope +22.2, partial r +0.46, residual SD
1.245 -> 1.106. Two residual SDs look alike and are not: 1.245 (``pooled.csv``: the main set, 1197 rows, the 72
in) and 1.27 (``forms.csv``, form 0: held rows only).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

import l2_drift_model as LD  # noqa: E402
import l2_model as L  # noqa: E402
from ctasim import calibration as C  # noqa: E402
from ctasim import l2  # noqa: E402
from ctasim.cliargs import OneLineParser, parse_outputs  # noqa: E402
from ctasim.profiles import before_h200_reuse  # noqa: E402
from ctasim.spec import load_hardware  # noqa: E402

HW = ROOT / "bench/results/hw"
PROFILE = "h200-x1-calibrated"
CAL_FOLDER = "2026-12-01-gemm-shapes"
TABLES = {
    "2026-12-01-gemm-shapes": ("2026-12-01-gemm-shapes/gemm_shapes.csv", ""),
    "2026-12-02-registered7-1gpu/diag": ("2026-12-02-registered7-1gpu/diag/gemm_shapes.csv", None),
    "2026-12-02-block-gemm-orders": ("2026-12-02-block-gemm-orders/gemm_shapes.csv", None),
    "2026-12-02-pass-rates": ("2026-12-02-pass-rates/gemm_shapes.csv", None),
    "2026-12-02-calibrate-memory": ("2026-12-02-calibrate-memory/probes/tile_orders.csv", None),
    "2026-12-02-calibrate-fold": ("2026-12-02-calibrate-fold/probes/tile_orders.csv", "GPU-bf85a172"),
    "2026-12-02-calibrate-signal": ("2026-12-02-calibrate-signal/probes/tile_orders.csv", "GPU-4b0c606e"),
    "2026-12-03-registered22-23-1gpu-run3": ("2026-12-03-registered22-23-1gpu-run3/gemm_shapes.csv", None),
    "2026-12-03-padded-orders-relu-input": ("2026-12-03-padded-orders-relu-input/gemm_shapes.csv", None),
    "2026-12-03-registered25-1gpu": ("2026-12-03-registered25-1gpu/gemm_shapes.csv", None),
}
"""Call folder -> (its probe table under bench/results/hw, its GPU: None = read from the folder's env.txt or
README.md; "" = not recorded)."""
FORMS = {"0": ("interleaved", "all"), "1": ("interleaved", "one"), "2": ("interleaved", "no-drift"),
         "3": ("none", "all"), "4a": ("carried", "all"), "4b": ("wave", "all"), "5": ("interleaved", "per-k")}
"""Form -> (the drift form its traffic is charged by, "none" = drift 0; x: "all" = the wave's HBM time, "one" = 1 ns,
"no-drift" = the HBM time without the drift's re-reads, "per-k" = the HBM time times min(1, K_FILL / K): an exposure
that is the pipeline's fill, the bytes of a fixed depth of k-slices, not a share of the whole loop)."""
K_FILL = 8192
"""Form 5's K at which its exposure equals form 0's (the calibration runs' K, so both fit the 72 alike)."""
RATES = np.round(np.arange(6.00, 7.501, 0.01), 4)
EXPOSED = C.EXPOSED_GRID
COST_NS = np.arange(0.0, 15001.0, 25.0)
LONG_K, WIDE_N, WIDE_N_MAX_K = 20480, 27648, 12288
MAX_PADDING_PCT = 1.0
FEATURES = {"hbm_bound_wave_share": "HBM-bound wave share", "bytes_per_flop_x1e3": "model HBM bytes/FLOP x 1e3",
            "log2_k": "log2 K", "log2_n": "log2 N"}


def gpu_of(folder: str) -> str:
    """The GPU id (``GPU-xxxxxxxx``) a call folder's env.txt or README.md names, else ""."""
    for name in ("env.txt", "README.md"):
        p = HW / folder / name
        if p.is_file():
            m = re.search(r"GPU-[0-9a-f]{8}", p.read_text())
            if m:
                return m.group(0)
    return ""


def load_rows() -> pd.DataFrame:
    """Every CUTLASS row of :data:`TABLES` (``ctasim.calibration.tile_order_table``: raster, swizzle, ns added) with
    ``folder``, ``gpu``, ``padding_pct`` (padding slots of CUTLASS's grid, as ``block_gemm_orders.orders``),
    ``cal`` (one of the 72), ``main`` (padding < 1%) and ``held`` (main, not cal)."""
    parts = []
    for folder, (table, gpu) in TABLES.items():
        d = C.tile_order_table(pd.read_csv(HW / table), table)
        d["folder"] = folder
        d["gpu"] = gpu_of(folder.split("/")[0]) if gpu is None else gpu
        parts.append(d)
    d = pd.concat(parts, ignore_index=True)
    pad = []
    for r in d.itertuples():
        order = l2.cutlass_sm90_order(-(-r.m // C.TILE_M), -(-r.n // C.TILE_N), r.raster, r.swizzle)
        pad.append(100 * float((order < 0).mean()))
    d["padding_pct"] = pad
    d["cal"] = (d.folder == CAL_FOLDER) & d.cal
    d["main"] = d.padding_pct < MAX_PADDING_PCT
    d["held"] = d.main & ~d.cal
    return d


def traffic(runs: pd.DataFrame, drift_form: str) -> list:
    """Each run's per-wave traffic (``ctasim.calibration.run_traffic``) with the measured drift charged by
    ``drift_form`` ("none": drift 0), at ``bench/l2_model.py``'s L2 size and grid."""
    if drift_form == "none":
        return C.run_traffic(runs, L.L2_BYTES, drift=0.0, sm_count=L.SLOTS)
    return C.run_traffic(runs, L.L2_BYTES, drift=LD.measured_drift(), sm_count=L.SLOTS, drift_form=drift_form)


def xy(t, form: str, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Per wave of one run's traffic ``t`` (of the form's drift form, at depth ``k``): (x, y) of ``max(compute + p * x,
    y)``."""
    full = t.hbm / L.HBM_GBPS
    kind = FORMS[form][1]
    if kind == "per-k":
        return full * min(1.0, K_FILL / k), full
    if kind == "one":
        return np.ones_like(full), full
    if kind == "no-drift":
        return (t.a_hbm + t.w_hbm + t.store) / L.HBM_GBPS, full
    return full, full


def fit(ks: np.ndarray, ns: np.ndarray, trs: list, form: str) -> tuple[float, float, float, str]:
    """The form's (rate, p, mean |error| %, grid edges) on the runs (``trs``: their traffic): least mean |relative
    error| over :data:`RATES` x (:data:`EXPOSED` or :data:`COST_NS`), the first least in grid order."""
    if FORMS[form][1] == "all":
        g = C.grid_fit(ks, ns, {1.0: trs}, L.TILE_FIXED_NS, hbm_gbps=[L.HBM_GBPS], rate=RATES, exposed=EXPOSED)
        return g.rate, g.exposed, 100 * g.mean_abs_error, ",".join("p" if e == "exposed" else e for e in g.edges)
    p = COST_NS if FORMS[form][1] == "one" else EXPOSED
    err = np.zeros((len(RATES), len(p)))
    for k, n, t in zip(ks, ns, trs):
        x, y = xy(t, form, k)
        comp = np.array([C.compute_ns(k, r, L.TILE_FIXED_NS) for r in RATES])
        pred = np.maximum(comp[:, None, None] + p[None, :, None] * x[None, None, :], y[None, None, :]).sum(-1)
        err += np.abs(pred / n - 1)
    err /= len(ns)
    i, j = np.unravel_index(int(np.argmin(err)), err.shape)
    edges = [name for name, grid, at in (("rate", RATES, i), ("p", p, j)) if at in (0, len(grid) - 1)]
    return float(RATES[i]), float(p[j]), 100 * float(err[i, j]), ",".join(edges)


def predict(ks: np.ndarray, trs: list, form: str, rate: float, p: float) -> np.ndarray:
    """Each run's time (ns) by the form at (rate, p)."""
    if FORMS[form][1] == "all":
        return C.predict_ns(ks, trs, rate, L.HBM_GBPS, p, L.TILE_FIXED_NS)
    out = np.empty(len(ks))
    for i, (k, t) in enumerate(zip(ks, trs)):
        x, y = xy(t, form, k)
        out[i] = np.maximum(C.compute_ns(k, rate, L.TILE_FIXED_NS) + p * x, y).sum()
    return out


def profile_constants() -> tuple[float, float]:
    """``h200-x1-calibrated``'s (l2_sm_tflops, l2_hbm_exposed) of the 128x256 config; ValueError if its other
    memory constants are not the ones this script prices with."""
    hw = load_hardware(PROFILE)
    cfg = hw.config(C.TILE_M, C.TILE_N)
    if (hw.hbm_gbps, hw.l2_bytes, cfg.tile_fixed_ns, cfg.cta_drift, cfg.drift_form) != \
            (L.HBM_GBPS, L.L2_BYTES, L.TILE_FIXED_NS, LD.measured_drift(), "interleaved"):
        raise ValueError(f"posthoc_wave_forms: {PROFILE}'s memory constants are not bench/l2_model.py's")
    return cfg.l2_sm_tflops, hw.l2_hbm_exposed


def with_features(rows: pd.DataFrame, trs: list, rate: float, exposed: float) -> pd.DataFrame:
    """``rows`` with the current model's error ``err_pct`` (form 0 at ``rate``, ``exposed``; ``trs``: the rows'
    "interleaved" traffic) and the features: HBM-bound wave share, HBM bytes per FLOP x 1e3, log2 K, log2 N."""
    share, bpf = [], []
    for r, t in zip(rows.itertuples(), trs):
        t_hbm = t.hbm / L.HBM_GBPS
        share.append(float((t_hbm > C.compute_ns(r.k, rate, L.TILE_FIXED_NS) + exposed * t_hbm).mean()))
        bpf.append(1e3 * t.hbm.sum() / r.flops)
    pred = predict(rows.k.values, trs, "0", rate, exposed)
    return rows.assign(err_pct=100 * (pred / rows.ns.values - 1), hbm_bound_wave_share=share,
                       bytes_per_flop_x1e3=bpf, log2_k=np.log2(rows.k), log2_n=np.log2(rows.n))


def _demeaned(d: pd.DataFrame, col: str) -> np.ndarray:
    return (d[col] - d.groupby("folder")[col].transform("mean")).to_numpy()


def form_row(rows: pd.DataFrame, trs: list, form: str, share: np.ndarray) -> dict:
    """One row of ``forms.csv``: the form refit on the cal rows of ``rows`` and judged on its held rows (``trs``:
    every row's traffic under the form's drift form; ``share``: every row's fixed HBM-bound wave share)."""
    cal = rows.cal.to_numpy()
    rate, p, fit_mape, edge = fit(rows.k.values[cal], rows.ns.values[cal], [t for t, c in zip(trs, cal) if c], form)
    held = rows.held.to_numpy()
    h = rows[held].assign(err=100 * (predict(rows.k.values[held], [t for t, c in zip(trs, held) if c], form, rate, p)
                                     / rows.ns.values[held] - 1), share=share[held], log2_k=np.log2(rows.k[held]))
    y = _demeaned(h, "err")
    longk = h.k >= LONG_K
    widen = (h.n >= WIDE_N) & (h.k <= WIDE_N_MAX_K)
    return {"form": form, "rate": rate, "p": p, "edge": edge, "fit_runs": int(cal.sum()), "fit_mape": fit_mape,
            "held_runs": len(h), "held_mape": h.err.abs().mean(), "held_mean": h.err.mean(),
            "fe_resid_sd": np.sqrt((y ** 2).sum() / (len(h) - h.folder.nunique())),
            "longk_runs": int(longk.sum()), "longk_mean": h.err[longk].mean(),
            "widen_runs": int(widen.sum()), "widen_mean": h.err[widen].mean(),
            "r_hbm_share": np.corrcoef(_demeaned(h, "share"), y)[0, 1],
            "r_log2k": np.corrcoef(_demeaned(h, "log2_k"), y)[0, 1]}


def forms_table(rows: pd.DataFrame, trs: dict, forms=tuple(FORMS)) -> pd.DataFrame:
    """``forms.csv`` (the rows of ``forms``); ``trs``: drift form -> every row's traffic ("interleaved" always, for
    the fixed HBM-bound share)."""
    rate, exposed = profile_constants()
    share = with_features(rows, trs["interleaved"], rate, exposed).hbm_bound_wave_share.to_numpy()
    return pd.DataFrame([form_row(rows, trs[FORMS[f][0]], f, share) for f in forms])


def _r(x: pd.Series, y: pd.Series) -> float:
    return float(np.corrcoef(x, y)[0, 1]) if x.std() > 0 else float("nan")


def per_folder(main: pd.DataFrame) -> pd.DataFrame:
    """``features.csv``: per call folder (``main``: :func:`with_features`' rows), the error's mean and SD and its
    Pearson r with each of :data:`FEATURES` (NaN where the folder does not vary it)."""
    rows = []
    for folder, g in main.groupby("folder", sort=False):
        rows.append({"folder": folder, "gpu": g.gpu.iloc[0], "rows": len(g), "err_mean_pct": g.err_pct.mean(),
                     "err_sd_pct": g.err_pct.std(), **{f"r_{f}": _r(g[f], g.err_pct) for f in FEATURES}})
    return pd.DataFrame(rows)


def pooled(main: pd.DataFrame) -> pd.DataFrame:
    """``pooled.csv``: error = an intercept per folder + slope x feature, each of :data:`FEATURES` alone."""
    y = _demeaned(main, "err_pct")
    nfe = main.folder.nunique()
    base = np.sqrt((y ** 2).sum() / (len(y) - nfe))
    rows = []
    for f, label in FEATURES.items():
        x = _demeaned(main, f)
        b = (x * y).sum() / (x * x).sum()
        res = y - b * x
        rows.append({"feature": f, "label": label, "rows": len(y), "slope": b, "partial_r": np.corrcoef(x, y)[0, 1],
                     "rho": pd.Series(x).rank().corr(pd.Series(y).rank()),
                     "resid_sd": np.sqrt((res ** 2).sum() / (len(y) - nfe - 1)), "fe_only_sd": base})
    return pd.DataFrame(rows)


def check_profile(rows: pd.DataFrame, err_pct: np.ndarray) -> None:
    """ValueError unless the 72 refit to the profile's constants (``ctasim.calibration.fit_l2_constants``, what
    ``bench/l2_drift_model.py`` calls) and form 0 at them is ``block_gemm_orders.orders()``'s error row by row."""
    import block_gemm_orders as bgo

    rate, exposed = profile_constants()
    c = C.fit_l2_constants(pd.read_csv(L.DATA), l2_bytes=L.L2_BYTES, hbm_gbps=L.HBM_GBPS, tile_fixed_ns=L.TILE_FIXED_NS,
                           drift=LD.measured_drift(), sm_count=L.SLOTS, drift_form="interleaved")
    if (c.rate, c.exposed) != (rate, exposed):
        raise ValueError(f"posthoc_wave_forms: the 72 refit to {c.rate}/{c.exposed}, {PROFILE} holds {rate}/{exposed}")
    # form 0 is the profile as it was before plan 67's adoption on an H200 (2026-12-06): reuse across waves an LRU
    o = bgo.orders(rows, {"interleaved": before_h200_reuse(load_hardware(PROFILE))})
    if not (np.abs(o.interleaved_pct.to_numpy() - err_pct).max() < 1e-9
            and np.array_equal(o.padding_pct.to_numpy(), rows.padding_pct.to_numpy())):
        raise ValueError("posthoc_wave_forms: form 0 at the profile's constants is not block_gemm_orders.orders()")


def write(df: pd.DataFrame, path: Path) -> None:
    df.to_csv(path, index=False, float_format="%.4f")


def main(argv=None) -> int:
    ap = OneLineParser(prog="python bench/posthoc_wave_forms.py", description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "bench/results/posthoc-wave-forms")
    args = parse_outputs(ap, argv, folders=("--out",))
    rows = load_rows()
    rows = rows[rows.main].reset_index(drop=True)  # no output reads a padded row
    trs = {form: traffic(rows, form) for form in ("interleaved", "carried", "wave", "none")}
    forms = forms_table(rows, trs)
    main_rows = with_features(rows, trs["interleaved"], *profile_constants())
    check_profile(rows, main_rows.err_pct.to_numpy())
    folders, pool = per_folder(main_rows), pooled(main_rows)
    args.out.mkdir(parents=True, exist_ok=True)
    for name, df in (("forms.csv", forms), ("features.csv", folders), ("pooled.csv", pool)):
        write(df, args.out / name)
    pd.set_option("display.width", 250)
    print(f"rows: main {len(rows)} (padding < {MAX_PADDING_PCT:g}%), fit {int(rows.cal.sum())}, held "
          f"{int(rows.held.sum())}")
    for df in (forms, folders, pool):
        print(df.round(3).to_string(index=False), end="\n\n")
    print(f"wrote {args.out}/forms.csv, features.csv, pooled.csv")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
