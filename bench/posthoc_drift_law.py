"""Post-hoc: the drift's two laws in K on every committed H200 GEMM probe (no GPU).

    python bench/posthoc_drift_law.py [--out bench/results/posthoc-drift-law]

Registered plan 73 (bench/predictions/reg73-drift-absolute) asks, per GPU, whether a persistent GEMM's drift is
``cta_drift`` tile times a round at every K (the "tile" law, every H200 profile's) or the same time a round at every K
as at K = 8192 (the "absolute" law, ``KernelConfig.drift_k_ref``; ``h100-x1-datasheet`` took it by the plan's H100 arm).
Its H200 arm waits for a call. Meanwhile this prices every CUTLASS run of the committed H200 shape probes
(``bench/results/hw/**/gemm_shapes.csv``, orders along M or N, unpadded grids; plan 73's own calls left out,
:data:`LEFT_OUT`) under ``h200-x1-calibrated`` with each law's drift (under the absolute law it is the plan's H200
twin, ``bench/predictions/reg73-drift-absolute/h200``), and writes ``runs.csv`` (per run: measured,
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

from ctasim.cliargs import OneLineParser, parse_outputs  # noqa: E402
from ctasim.spec import load_hardware  # noqa: E402
from long_k_drift import K_REF  # noqa: E402
from posthoc_h100_drift import law_errors  # noqa: E402

HW = ROOT / "bench/results/hw"
PROFILE = "h200-x1-calibrated"
"""The committed one-H200 profile; under the "absolute" law it is registered plan 73's H200 twin
(``bench/predictions/reg73-drift-absolute/h200``: ``drift_k_ref`` = 8192, nothing else changed)."""
LAWS = ("tile", "absolute")
"""The drift laws compared (``posthoc_h100_drift.DRIFT_LAWS``)."""
LEFT_OUT = ("registered73",)
"""Run folders whose name holds one of these are not read: registered plan 73's own calls (its H200 arm, when it runs,
is judged by its registration, not pooled here)."""
LONG_K = 20480
"""The K from which advise speaks of long K (``ctasim.advise.LONG_K``)."""


def runs(root: Path = HW) -> pd.DataFrame:
    """Every unpadded CUTLASS run along M or N of the committed shape probes under ``root``, priced by each law
    (``posthoc_h100_drift.law_errors``), with the probe's folder (``table``)."""
    hw = load_hardware(PROFILE)
    parts = []
    for table in sorted(root.glob("**/gemm_shapes.csv")):
        if any(name in str(table.relative_to(root)) for name in LEFT_OUT):
            continue
        e = law_errors(pd.read_csv(table), hw, LAWS)
        parts.append(e.assign(table=str(table.parent.relative_to(root))))
    d = pd.concat(parts, ignore_index=True)
    return d[["table", *(c for c in d.columns if c != "table")]]


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
        for law in LAWS:
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
