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
times were seen.

Then, read after registered plan 72 was judged (``bench/results/hw-h100/2026-12-06-registered72-1gpu``: eleven wide-N
and long-K GEMMs at every CUTLASS order on a third H100), ``forms.csv``: each unpadded run priced by
``h100-x1-datasheet`` under the drift laws registered plan 45 named (``bench/long_k_drift.py``: "tile", the model's,
``cta_drift`` tile times a round at every K; "sqrt", ``cta_drift * sqrt(8192 / K)``; "absolute", ``cta_drift * 8192 /
K``, the same time a round at every K) and with none, error in %; ``forms-summary.csv``: per law, the MAPE over the
unpadded runs and at each shape's best measured unpadded order. Post-hoc too. Left out: other orders of plan 71's
GEMMs (only the default was timed), the chain kernels, and why the CTAs drift.
"""

from __future__ import annotations

import math
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
from ctasim.profiles import before_h100_adoptions  # noqa: E402
from ctasim.spec import Layer  # noqa: E402
from long_k_drift import K_REF  # noqa: E402

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
        hw = before_h100_adoptions(ref)  # a table made before registered plans 73's and 76's adoptions, 2026-12-06
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


PLAN72 = ROOT / "bench/results/hw-h100/2026-12-06-registered72-1gpu/gemm_shapes.csv"
DRIFT_LAWS = {"tile": lambda d0, k: d0, "sqrt": lambda d0, k: d0 * math.sqrt(K_REF / k),
              "absolute": lambda d0, k: d0 * K_REF / k, "none": lambda d0, k: 0.0}
"""Drift law -> a plain GEMM's drift (tile times a round) from the profile's ``cta_drift`` and the GEMM's K
(``bench/long_k_drift.py``'s laws, agreeing at its ``K_REF``)."""


def law_errors(runs: pd.DataFrame, hw, laws=tuple(DRIFT_LAWS)) -> pd.DataFrame:
    """Each unpadded CUTLASS run of the probe table ``runs`` (orders along M or N) priced by ``hw`` with the drift of
    each of ``laws`` (names of :data:`DRIFT_LAWS`), error in %."""
    rows = []
    for r in runs[(runs.backend == "cutlass") & ~runs.order.str.startswith("heuristic")].itertuples():
        raster, swizzle = r.order.split("/swizzle")
        lay = Layer(m=r.m, n=r.n, k=r.k)
        order, slots, _ = costs.cutlass_waves(lay, hw, 2, raster, int(swizzle))
        if (order < 0).any():
            continue
        d0 = hw.config(lay.tile_m, lay.tile_n).cta_drift
        row = {"m": r.m, "n": r.n, "k": r.k, "order": r.order, "measured_ms": r.median_ms}
        for law in laws:
            drift = DRIFT_LAWS[law](d0, r.k)
            row[f"{law}_pct"] = 100 * (costs.order_waves(lay, hw, 2, order, slots, drift=drift).sum() / 1e6
                                       / r.median_ms - 1)
        rows.append(row)
    return pd.DataFrame(rows)


def forms(probe: Path = PLAN72) -> pd.DataFrame:
    """Each unpadded CUTLASS run of ``probe`` (orders along M or N) priced by ``h100-x1-datasheet`` as registered
    under each drift law, error in %."""
    return law_errors(pd.read_csv(probe), before_h100_adoptions(PROFILES["datasheet"]))


def forms_summary(f: pd.DataFrame) -> pd.DataFrame:
    best = f.loc[f.groupby(["m", "n", "k"]).measured_ms.idxmin()]
    rows = []
    for law in ("tile", "sqrt", "absolute", "none"):
        e, b = f[f"{law}_pct"], best[f"{law}_pct"]
        rows.append({"law": law, "runs": len(e), "mape_pct": e.abs().mean(), "shapes": len(b),
                     "best_mape_pct": b.abs().mean(), "best_worst_pct": b.iloc[b.abs().argmax()]})
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
    f = forms()
    fs = forms_summary(f)
    f.round(4).to_csv(args.out / "forms.csv", index=False)
    fs.round(2).to_csv(args.out / "forms-summary.csv", index=False)
    pd.set_option("display.width", 200)
    cols = ["call", "kernel", "measured_ms"] + [c for c in d.columns if c.endswith("_pct")]
    print(d[cols].round(2).to_string(index=False))
    print(s.round(2).to_string(index=False))
    print(fs.round(2).to_string(index=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
