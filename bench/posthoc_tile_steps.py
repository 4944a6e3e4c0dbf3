"""Post-hoc: what a chain-kernel tile costs after its mainloop, against K and against the plain GEMM (no GPU).

    python bench/posthoc_tile_steps.py [--out bench/results/posthoc-tile-steps] [--runs GLOB]

The model prices a tile of the chain kernel's tickets design as the plain GEMM's tile (``tile_fixed_ns`` plus the
K-proportional mainloop of ``ctasim.l2``) with the mainloop scaled by ``ticket_mainloop_factor`` (1.019 on one
H200), and no hold after it (``local_signal_ns`` 0 in ``h200-x1-calibrated``): the tickets design costs in its
mainloop, not after it. The traces stamp each tile's ``t_acquire``, ``t_mainloop_end``, ``t_compute_end`` (the
epilogue done), ``t_store_end`` and ``t_signal`` (the release issued). Per traced run of groups of 8 (every committed
chain-kernel bundle, ``posthoc_order_mainloop.bundles`` of ``posthoc_sm_groups.EXPERIMENTS``; its first run of each
case), this reads:

* ``mainloop_us``: the median of ``t_mainloop_end - t_acquire``;
* ``step_us``: the median time between a CTA's successive mainloop ends (what a tile costs its CTA);
* ``after_us``: the median over tiles of the step less the tile's own mainloop (the time from the CTA's previous
  mainloop end to this tile's acquire), what a tile costs after its mainloop, and its parts: ``epilogue_us``
  (``t_compute_end - t_mainloop_end``), ``store_us`` (``t_store_end - t_compute_end``), ``release_us``
  (``t_signal - t_store_end``), medians.

And the same of the plain persistent GEMM's per-tile traces (``bench/results/hw/2026-12-02-order-traces``, the
instrumented CUTLASS kernel in three tile orders at three shapes; no ``t_signal``). Writes ``runs.csv`` (one row per
traced run), ``by-k.csv`` (per experiment: K, runs, medians) and ``gemm.csv`` (the plain GEMM's rows).

Left out: the other orders (their mainloop moves with the L2, the step after it should not: not read here), the
first tile of each CTA (no step before it), and the 2-GPU kernels (a remote store's completion is another path).
"""

from __future__ import annotations

import fnmatch
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

import posthoc_order_mainloop as pom  # noqa: E402
import posthoc_sm_groups as psg  # noqa: E402
from ctasim.cliargs import OneLineParser, parse_outputs  # noqa: E402

REFERENCE = pom.REFERENCE
"""The order read: groups of 8 (``intragpu``), the chain kernel's default."""
GEMM_TRACES = ROOT / "bench/results/hw/2026-12-02-order-traces"
"""The plain persistent GEMM's per-tile traces (``tiles-MxN-ORDER.csv.gz``, K = N)."""
OUT = ROOT / "bench/results/posthoc-tile-steps"


def steps(tiles: pd.DataFrame) -> dict:
    """The medians of one per-tile trace (µs): mainloop, the CTA's step between mainloop ends, what is after the
    mainloop, and its parts that the trace stamps (NaN where a column is missing)."""
    t = tiles.sort_values(["cta", "t_mainloop_end"], kind="stable")
    prev_end = t.groupby("cta")["t_mainloop_end"].shift()
    step = (t["t_mainloop_end"] - prev_end).dropna()
    after = (t["t_acquire"] - prev_end).dropna()  # a tile's step less its own mainloop

    def med(a, b):
        return float(np.median((t[b] - t[a]).to_numpy()) / 1e3) if {a, b} <= set(t.columns) else float("nan")

    return dict(tiles=len(t), mainloop_us=med("t_acquire", "t_mainloop_end"),
                step_us=float(np.median(step.to_numpy()) / 1e3), after_us=float(np.median(after.to_numpy()) / 1e3),
                epilogue_us=med("t_mainloop_end", "t_compute_end"), store_us=med("t_compute_end", "t_store_end"),
                release_us=med("t_store_end", "t_signal"))


def chain_runs(paths: list[Path]) -> pd.DataFrame:
    """:func:`steps` of each bundle's first traced run of groups of 8, per case, with its run, machine and K."""
    rows = []
    for p in paths:
        for (case, order), tr in pom.first_runs(p):
            if order != REFERENCE:
                continue
            k = int(tr.tiles["tile_n"].max() + 1) * 256  # the chains are square: K = N = H, tiles 256 wide
            rows.append(dict(run=pom.run_label(p), machine=pom.machine(p), experiment=p.parent.name, case=case,
                             k=k, **steps(tr.tiles)))
    return pd.DataFrame(rows)


def gemm_runs(folder: Path = GEMM_TRACES) -> pd.DataFrame:
    """:func:`steps` of the plain GEMM's traces (K = N of the file name ``tiles-MxN-ORDER.csv.gz``)."""
    rows = []
    for f in sorted(folder.glob("tiles-*.csv.gz")):
        shape, order = f.name[len("tiles-"):-len(".csv.gz")].split("-", 1)
        m, n = (int(x) for x in shape.split("x"))
        rows.append(dict(trace=f.name, m=m, k=n, order=order, **steps(pd.read_csv(f))))
    return pd.DataFrame(rows)


def by_k(runs: pd.DataFrame) -> pd.DataFrame:
    """Per experiment (one K): the runs and the medians over them, by K."""
    cols = ["mainloop_us", "step_us", "after_us", "epilogue_us", "store_us", "release_us"]
    g = runs.groupby(["experiment", "k"], sort=False)
    out = g[cols].median().round(3)
    out.insert(0, "runs", g.size())
    return out.reset_index().sort_values(["k", "experiment"], kind="stable").reset_index(drop=True)


def main(argv: list[str] | None = None) -> int:
    ap = OneLineParser(prog="python bench/posthoc_tile_steps.py", description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--runs", default="*", help="a glob on the run folder's name (default: every traced run)")
    args = parse_outputs(ap, argv, folders=("--out",))
    paths = [p for p in pom.bundles(experiments=psg.EXPERIMENTS) if fnmatch.fnmatch(pom.run_label(p), args.runs)]
    if not paths:
        print(f"posthoc_tile_steps: no traced chain-kernel run matches {args.runs!r}", file=sys.stderr)
        return 2
    runs = chain_runs(paths).round(4)
    k = by_k(runs)
    gemm = gemm_runs().round(4)
    args.out.mkdir(parents=True, exist_ok=True)
    runs.to_csv(args.out / "runs.csv", index=False)
    k.to_csv(args.out / "by-k.csv", index=False)
    gemm.to_csv(args.out / "gemm.csv", index=False)
    with pd.option_context("display.width", 200):
        print(k.to_string(index=False))
        print()
        print(gemm.to_string(index=False))
    a = runs["after_us"]
    print(f"\nchain kernel, groups of 8: after the mainloop {a.median():.2f} us (runs {a.min():.2f}-{a.max():.2f}, "
          f"{len(a)} runs, K = {runs['k'].min()}-{runs['k'].max()})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
