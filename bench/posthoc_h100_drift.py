"""Post-hoc: on an H100 the CTAs' drift re-reads bind the HBM roofline at wide N and long K (no GPU).

    python bench/posthoc_h100_drift.py [--out bench/results/posthoc-h100-drift]

Read after registered plan 71's two H100 calls (``bench/results/hw-h100/2026-12-06-registered71-1gpu``, ``-run2``),
whose clock trajectories time four plain GEMMs rested at CUTLASS's default order (heuristic raster, swizzle 1): the
rested time (``clock_kernels.judge``'s ``rested_ms``: the median over three rounds of each round's first launches) of
square-16384, square-4096, wide-8192 (8192 x 57344 x 8192) and longk-16384 (16384 x 8192 x 28672). Each is priced at
that order (``ctasim.costs.cutlass_waves``) by ``h100-x1-datasheet``, its ``-latency`` twin (registered plan 65), plan
69's H100's own profile, and each of those with the drift off (``ctasim.costs.order_waves`` at ``drift=0``: no
re-reads of the k-slices a drifting wave lets fall out of the L2), beside the naive FLOPs line.

Writes ``cases.csv`` (per call and kernel: measured, every predictor's time and error in %) and ``summary.csv`` (per
predictor: MAPE and worst over the eight). Every figure is post-hoc: the drift-off twins were formed after these
times were seen. Left out: other orders (only the default was timed), and why the CTAs drift.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import pandas as pd  # noqa: E402

import clock_kernels  # noqa: E402
from ctasim import costs  # noqa: E402
from ctasim.cliargs import OneLineParser, parse_outputs  # noqa: E402
from ctasim.predict import Naive  # noqa: E402
from ctasim.spec import Layer, load_hardware  # noqa: E402

CALLS = ("2026-12-06-registered71-1gpu", "2026-12-06-registered71-1gpu-run2")
"""Registered plan 71's H100 calls (``bench/results/hw-h100``)."""
REGISTRATION = ROOT / "bench/predictions/reg71-h100-clock/datasheet"
PROFILES = {"datasheet": "h100-x1-datasheet", "latency": "h100-x1-datasheet-latency",
            "own69": str(ROOT / "bench/results/hw-h100/2026-12-06-registered69-1gpu/h100-x1-own.toml")}
NAIVE_FROM = ROOT / "bench/results/hw/2026-11-29-run2/baselines.csv"
"""The CUTLASS GEMM rows the naive FLOPs line is fitted on (as every registration's)."""


def priced(m: int, n: int, k: int) -> dict[str, float]:
    """Each profile's time (ms) at CUTLASS's default order, with its drift and with it off (``<name>_nodrift``)."""
    lay, out = Layer(m=m, n=n, k=k), {}
    for name, ref in PROFILES.items():
        hw = load_hardware(ref)
        order, slots, waves = costs.cutlass_waves(lay, hw, 2, "heuristic", 1)
        out[name] = waves.sum() / 1e6
        out[f"{name}_nodrift"] = costs.order_waves(lay, hw, 2, order, slots, drift=0.0).sum() / 1e6
    return out


def cases() -> pd.DataFrame:
    reg = pd.read_csv(REGISTRATION / "predicted.csv")
    naive = Naive.fit(NAIVE_FROM)
    rows = []
    for call in CALLS:
        traj = pd.read_csv(ROOT / "bench/results/hw-h100" / call / "trajectory.csv")
        kern = clock_kernels.judge(traj, reg, pd.read_csv(REGISTRATION / "curve.csv"))["kernels"]
        for r in kern[kern.op.isna() | (kern.op == "")].itertuples():
            row = {"call": call, "kernel": r.kernel, "m": r.m, "n": r.n, "k": r.k, "measured_ms": r.rested_ms,
                   **priced(r.m, r.n, r.k), "naive": naive.gemm_ms(r.m, r.k, r.n)}
            rows.append(row)
    d = pd.DataFrame(rows)
    for name in [c for c in d.columns if c in PROFILES or c.endswith("_nodrift") or c == "naive"]:
        d[f"{name}_pct"] = 100 * (d[name] / d.measured_ms - 1)
    return d


def summary(d: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for col in [c for c in d.columns if c.endswith("_pct")]:
        e = d[col]
        rows.append({"predictor": col.removesuffix("_pct"), "cases": len(e), "mape_pct": e.abs().mean(),
                     "worst_pct": e.iloc[e.abs().argmax()]})
    return pd.DataFrame(rows)


def main(argv=None) -> int:
    ap = OneLineParser(prog="python bench/posthoc_h100_drift.py", description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "bench/results/posthoc-h100-drift")
    args = parse_outputs(ap, argv, folders=("--out",))
    d = cases()
    s = summary(d)
    args.out.mkdir(parents=True, exist_ok=True)
    d.round(4).to_csv(args.out / "cases.csv", index=False)
    s.round(2).to_csv(args.out / "summary.csv", index=False)
    pd.set_option("display.width", 200)
    cols = ["call", "kernel", "measured_ms"] + [c for c in d.columns if c.endswith("_pct")]
    print(d[cols].round(2).to_string(index=False))
    print(s.round(2).to_string(index=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
