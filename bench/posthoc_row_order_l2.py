"""Post-hoc: row order's penalty against a layer's weights over the L2, on the H200s and the H100s (no GPU)

    python bench/posthoc_row_order_l2.py [--out bench/results/posthoc-row-order-l2]

The chain kernel's row order re-reads a layer's weights once they outgrow the L2; the model prices that through the
L2's size (the ticket law's survival curve is in L2 sizes) and the HBM rate. If the loss were a function of the
weights over the L2 alone, an H100 (50 MiB) would lose at H what an H200 (60 MiB) loses at sqrt(60 / 50) H. Every
committed 2-layer chain run with row order and groups of 8 (``results.csv`` of the calls under ``bench/results/hw``,
H200s, and ``bench/results/hw-h100``, H100s) gives row order's measured makespan over groups of 8, per GPU kind,
hidden size H and M; a layer's weights are H x H bf16.

Writes ``runs.csv`` (per call, experiment and case: the GPU kind, H, M, weights over L2, the penalty in percent) and
``table.csv`` (per GPU kind, H and M: the median, least and largest penalty and the number of calls). Every figure is
post-hoc: a reading of committed runs. Left out: chains of more than 2 layers, orders other than row order, and what
the model prices (each plan's judge has that).
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import pandas as pd  # noqa: E402

from ctasim.cliargs import OneLineParser, parse_outputs  # noqa: E402

CALLS = {"H200": ROOT / "bench/results/hw", "H100": ROOT / "bench/results/hw-h100"}
"""GPU kind -> the folder of its committed one-GPU calls."""
L2_BYTES = {"H200": 60 * 2**20, "H100": 50 * 2**20}
"""Each kind's L2 (cudaDeviceProp.l2CacheSize as read: h200-x1-calibrated's l2_bytes; plan 64's device.txt)."""
ROW, GROUPS = "intragpu-row", "intragpu"
THROUGH = {"H200": "2026-12-06-registered67-68-1gpu", "H100": "2026-12-06-registered69-1gpu"}
"""GPU kind -> the last call folder (in name order: the date first) the committed tables read; later calls (registered
plan 75's H100 call, 2026-12-06) are not in them."""


def runs(calls: dict = CALLS, through: dict | None = THROUGH) -> pd.DataFrame:
    """Row order's makespan over groups of 8 (percent) per call, experiment and case of every 2-layer chain run, of
    the calls up to ``through[kind]`` in name order (None: every call)."""
    from ctasim.cases import load_experiment  # noqa: PLC0415
    from ctasim.spec import SpecError  # noqa: PLC0415

    rows, shapes = [], {}
    for kind, root in calls.items():
        for res in sorted(root.glob("*/*/results.csv")):
            if through is not None and res.parent.parent.name > through[kind]:
                continue
            exp = res.parent.name
            d = pd.read_csv(res)
            if "strategy" not in d or not {ROW, GROUPS} <= set(d["strategy"]):
                continue
            if exp not in shapes:
                try:
                    w = load_experiment(exp).workload
                except (SpecError, OSError, ValueError):
                    shapes[exp] = None
                    continue
                shapes[exp] = (w.layers[0].k, len(w.layers)) if all(
                    l.k == l.n == w.layers[0].k for l in w.layers) else None
            if shapes[exp] is None or shapes[exp][1] != 2:
                continue
            h = shapes[exp][0]
            t = d[d["status"] == "ok"].pivot_table(index="case", columns="strategy", values="makespan_ms",
                                                   aggfunc="first")
            for case, r in t.dropna(subset=[ROW, GROUPS]).iterrows():
                rows.append(dict(kind=kind, call=res.parent.parent.name, experiment=exp, case=case, h=h,
                                 m=int(str(case).split("=")[1]), weights_over_l2=h * h * 2 / L2_BYTES[kind],
                                 penalty_pct=(r[ROW] / r[GROUPS] - 1) * 100))
    return pd.DataFrame(rows)


def table(r: pd.DataFrame) -> pd.DataFrame:
    return (r.groupby(["kind", "h", "m"]).agg(weights_over_l2=("weights_over_l2", "first"),
                                              median_pct=("penalty_pct", "median"), least_pct=("penalty_pct", "min"),
                                              largest_pct=("penalty_pct", "max"), calls=("call", "nunique"))
            .reset_index().sort_values(["m", "weights_over_l2", "kind"], ignore_index=True))


def main(argv: list[str] | None = None) -> int:
    ap = OneLineParser(prog="python bench/posthoc_row_order_l2.py", description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "bench/results/posthoc-row-order-l2")
    args = parse_outputs(ap, argv, folders=("--out",))
    r = runs()
    t = table(r)
    args.out.mkdir(parents=True, exist_ok=True)
    r.to_csv(args.out / "runs.csv", index=False, float_format="%.4f")
    t.to_csv(args.out / "table.csv", index=False, float_format="%.4f")
    with pd.option_context("display.width", 200, "display.max_rows", 200):
        print(t[t["m"].isin([8192, 16384])].round(2).to_string(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
