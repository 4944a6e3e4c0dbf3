"""Post-hoc: does the share of a wave's HBM time its math does not hide grow with the load? (No GPU.)

    python bench/posthoc_exposure_by_load.py [--out bench/results/posthoc-exposure-by-load]

The profile times a wave as ``max(compute + exposed x t_hbm, t_hbm)`` with one share ``l2_hbm_exposed`` (0.19),
fitted with the rate on the plain CUTLASS GEMM's calibration split (``ctasim.l2.wave_ns``). On the chain kernel's
tile orders the adopted profile misses the penalties over groups of 8 in opposite directions: pairs, which load the
HBM the most of the grouped orders, lose more than modelled (8.91 points measured in the tiles' mainloop against
7.80), groups of 4, which load it less, lose less (1.90 against 2.96; ``bench/results/posthoc-order-mainloop``). A
share that grows with the load (the HBM's queueing latency outrunning the mainloop's stages) would do both, so the
first question is whether the plain GEMM, where the share was fitted, shows it.

Every CUTLASS run of both machines' tile-order probes (2026-12-01: 324 runs, its 72 calibration runs among them;
2026-12-02: 324 runs, the machine of registered plan 7), under the adopted profile ``h200-x1-calibrated``'s 128x256
config (``l2_sm_tflops``, ``l2_hbm_exposed``, ``cta_drift`` charged by its ``drift_form``, the measured HBM rate,
L2 size and tile fixed time; ``ctasim.calibration.run_traffic`` and ``predict_ns``, as ``bench/l2_drift_model.py``
judges them): each run's error (predicted over measured, less 1) against its **load** rho, the median over its waves
of ``t_hbm / compute`` (the HBM time of the wave's traffic over its slots' math). A share that ought to grow with the
load leaves the error falling as rho rises (the model fast where the load is high).

Writes ``runs.csv`` (one row per run: probe, M, N, K, order, rho, the error in percent), ``by-load.csv`` (per probe
and bin of rho: runs, mean error, mean |error|) and ``by-order.csv`` (per probe and CUTLASS order: runs, median rho,
mean error), and prints the last two. The probes and the chain kernel's order effect were seen before this was
written: the figures are post-hoc. ~3 s on 2 cores.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from ctasim import calibration as C  # noqa: E402
from ctasim.cliargs import OneLineParser, parse_outputs  # noqa: E402
from ctasim.spec import load_hardware  # noqa: E402

PROBES = {
    "2026-12-01": ROOT / "bench/results/hw/2026-12-01-gemm-shapes/gemm_shapes.csv",
    "2026-12-02": ROOT / "bench/results/hw/2026-12-02-registered7-1gpu/diag/gemm_shapes.csv",
}
"""The tile-order probes' tables (``ctahw.tile_orders.time_orders``), by the date of the run."""
PROFILE = "h200-x1-calibrated"
SLOTS = 132
"""The persistent grid's CTAs on an H200 (one per SM), as the calibration fit takes them."""
LOAD_BINS = (0.0, 0.3, 0.4, 0.5, 0.6, 0.8, 1.0, np.inf)
"""Edges of the bins of rho in ``by-load.csv``: the chain kernel's groups of 8, 4 and pairs stand at about 0.3, 0.47
and 0.7 at plan 53's largest case (``bench/results/posthoc-order-mainloop/traffic.csv`` over its tile time)."""


def constants() -> dict:
    """The adopted profile's constants of the 128x256 config that the wave-time model takes."""
    hw = load_hardware(PROFILE)
    c = hw.config(128, 256)
    return dict(rate=c.l2_sm_tflops, exposed=hw.l2_hbm_exposed, drift=c.cta_drift, drift_form=c.drift_form,
                hbm_gbps=hw.hbm_gbps, l2_bytes=hw.l2_bytes, tile_fixed_ns=c.tile_fixed_ns)


def run_rows(probe: str, runs: pd.DataFrame, k: dict) -> pd.DataFrame:
    """One row per run of ``runs`` (a probe's CUTLASS table, ``ctasim.calibration.tile_order_table``): its load rho
    and the model's error in percent."""
    traffic = C.run_traffic(runs, k["l2_bytes"], drift=k["drift"], sm_count=SLOTS, drift_form=k["drift_form"])
    pred = C.predict_ns(runs.k.values, traffic, k["rate"], k["hbm_gbps"], k["exposed"], k["tile_fixed_ns"])
    rho = [float(np.median((t.hbm / k["hbm_gbps"]) / C.compute_ns(kk, k["rate"], k["tile_fixed_ns"])))
           for kk, t in zip(runs.k.values, traffic)]
    return pd.DataFrame(dict(probe=probe, m=runs.m.values, n=runs.n.values, k=runs.k.values, order=runs.order.values,
                             rho=np.round(rho, 4), err_pct=np.round(100 * (pred / runs.ns.values - 1), 4)))


def by_load(rows: pd.DataFrame) -> pd.DataFrame:
    d = rows.assign(load=pd.cut(rows.rho, LOAD_BINS, right=False).astype(str), abs_err=rows.err_pct.abs())
    out = d.groupby(["probe", "load"], sort=False).agg(runs=("err_pct", "size"), rho=("rho", "median"),
                                                       err_pct=("err_pct", "mean"), abs_err_pct=("abs_err", "mean"))
    return out.reset_index().sort_values(["probe", "rho"]).round(2)


def by_order(rows: pd.DataFrame) -> pd.DataFrame:
    out = rows.groupby(["probe", "order"]).agg(runs=("err_pct", "size"), rho=("rho", "median"),
                                               err_pct=("err_pct", "mean"))
    return out.reset_index().round(2)


def main(argv: list[str] | None = None) -> int:
    ap = OneLineParser(prog="python bench/posthoc_exposure_by_load.py", description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "bench/results/posthoc-exposure-by-load")
    args = parse_outputs(ap, argv, folders=["--out"])
    k = constants()
    rows = pd.concat([run_rows(p, C.tile_order_table(pd.read_csv(f), str(f)), k) for p, f in PROBES.items()],
                     ignore_index=True)
    args.out.mkdir(parents=True, exist_ok=True)
    rows.to_csv(args.out / "runs.csv", index=False)
    load, order = by_load(rows), by_order(rows)
    load.to_csv(args.out / "by-load.csv", index=False)
    order.to_csv(args.out / "by-order.csv", index=False)
    pd.set_option("display.width", 160)
    print(f"{PROFILE}, 128x256: {k}\n")
    print(load.to_string(index=False), "\n")
    print(order.to_string(index=False))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
