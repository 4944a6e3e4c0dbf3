"""Post-hoc: the drift's two laws in K on every committed H200 GEMM probe (no GPU).

    python bench/posthoc_drift_law.py [--out bench/results/posthoc-drift-law]

Registered plan 73 (bench/predictions/reg73-drift-absolute) asks, per GPU, whether a persistent GEMM's drift is
``cta_drift`` tile times a round at every K (the "tile" law, every H200 profile's) or the same time a round at every K
as at K = 8192 (the "absolute" law, ``KernelConfig.drift_k_ref``; ``h100-x1-datasheet`` took it by the plan's H100 arm).
Its H200 arm waits for a call. Meanwhile this prices every CUTLASS run of the committed H200 shape probes
(``bench/results/hw/**/gemm_shapes.csv``, orders along M or N, unpadded grids; plan 73's own calls left out,
:data:`LEFT_OUT`) under ``h200-x1-calibrated`` and under
the plan's H200 twin (``bench/predictions/reg73-drift-absolute/h200``), and writes ``runs.csv`` (per run: measured,
each law's error in %) and ``summary.csv`` (per K class -- K = 8192, where the laws agree; below; 8192 < K < 20480;
K >= 20480 -- and over all: runs, each law's MAPE and mean error, and the same at each shape's best measured order).
Every figure is post-hoc: these runs were seen, by earlier plans, before plan 73 was registered, and none of them is
plan 73's (its shapes were chosen untimed). Nothing is fitted. Left out: the tile-order probes of the calibrations (the
N = K = 8192 split the L2 constants are fitted on, where the laws agree) and the chain kernels (tickets).
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import pandas as pd  # noqa: E402

from ctasim import costs  # noqa: E402
from ctasim.cliargs import OneLineParser, parse_outputs  # noqa: E402
from ctasim.spec import Layer, load_hardware  # noqa: E402

HW = ROOT / "bench/results/hw"
PROFILES = {"tile": "h200-x1-calibrated",
            "absolute": str(ROOT / "bench/predictions/reg73-drift-absolute/h200/h200-x1-calibrated-absolute.toml")}
"""Law -> the profile that prices by it (the committed one-H200 profile and registered plan 73's H200 twin)."""
LEFT_OUT = ("registered73",)
"""Run folders whose name holds one of these are not read: registered plan 73's own calls (its H200 arm, when it runs,
is judged by its registration, not pooled here)."""
K_REF, LONG_K = 8192, 20480
"""Where the laws agree; the K from which advise speaks of long K (``ctasim.advise.LONG_K``)."""


def runs(root: Path = HW) -> pd.DataFrame:
    """Every unpadded CUTLASS run along M or N of the committed shape probes under ``root``, priced by each law."""
    hws = {law: load_hardware(ref) for law, ref in PROFILES.items()}
    rows = []
    for table in sorted(root.glob("**/gemm_shapes.csv")):
        if any(name in str(table.relative_to(root)) for name in LEFT_OUT):
            continue
        d = pd.read_csv(table)
        for r in d[(d.backend == "cutlass") & ~d.order.str.startswith("heuristic")].itertuples():
            raster, swizzle = r.order.split("/swizzle")
            lay = Layer(m=r.m, n=r.n, k=r.k)
            row = {"table": str(table.parent.relative_to(root)), "m": r.m, "n": r.n, "k": r.k, "order": r.order,
                   "measured_ms": r.median_ms}
            for law, hw in hws.items():
                order, _, waves = costs.cutlass_waves(lay, hw, 2, raster, int(swizzle))
                row["padded"] = bool((order < 0).any())
                row[f"{law}_pct"] = 100 * (waves.sum() / 1e6 / r.median_ms - 1)
            rows.append(row)
    d = pd.DataFrame(rows)
    return d[~d.padded].drop(columns="padded").reset_index(drop=True)


def k_class(k: int) -> str:
    return ("K = 8192" if k == K_REF else f"K < {K_REF}" if k < K_REF else
            f"{K_REF} < K < {LONG_K}" if k < LONG_K else f"K >= {LONG_K}")


def summary(r: pd.DataFrame) -> pd.DataFrame:
    best = r.loc[r.groupby(["table", "m", "n", "k"]).measured_ms.idxmin()]
    rows = []
    for name, sel, bsel in [(c, r[r.k.map(k_class) == c], best[best.k.map(k_class) == c])
                            for c in (f"K < {K_REF}", "K = 8192", f"{K_REF} < K < {LONG_K}", f"K >= {LONG_K}")] \
            + [("all", r, best)]:
        row = {"class": name, "runs": len(sel), "shapes": len(bsel)}
        for law in PROFILES:
            row |= {f"{law}_mape_pct": sel[f"{law}_pct"].abs().mean(), f"{law}_mean_pct": sel[f"{law}_pct"].mean(),
                    f"{law}_best_mape_pct": bsel[f"{law}_pct"].abs().mean()}
        rows.append(row)
    return pd.DataFrame(rows)


def main(argv=None) -> int:
    ap = OneLineParser(prog="python bench/posthoc_drift_law.py", description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "bench/results/posthoc-drift-law")
    args = parse_outputs(ap, argv, folders=("--out",))
    r = runs()
    s = summary(r)
    args.out.mkdir(parents=True, exist_ok=True)
    r.round(4).to_csv(args.out / "runs.csv", index=False)
    s.round(2).to_csv(args.out / "summary.csv", index=False)
    pd.set_option("display.width", 200)
    print(s.round(2).to_string(index=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
