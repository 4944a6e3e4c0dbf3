"""Post-hoc: round by round, where the chain kernel's orders part on an H100 and on an H200 (no GPU)

    python bench/posthoc_h100_rounds.py [--out bench/results/posthoc-h100-rounds]

The H100 profile prices row order 7-17% fast at M <= 10240 (``bench/posthoc_reuse_law.py --gpu H100``); where it
keeps the order's reuse (``row-over-groups.csv``) the H100 measures row order 16-29% over groups of 8, the H200s
2-7%. This asks when in the run the orders part: for every chain-kernel experiment traced on
an H100 (``bench/results/hw-h100``) and on an H200 (``bench/results/hw``), each traced (case, order)'s median mainloop
(``t_mainloop_end - t_acquire``) per round (a tile's rank among its CTA's tiles by ``t_acquire``:
``ctasim.calibration.tile_rounds``; both layers' tiles), over groups of 8's same round in the same run, for rounds
0 to :data:`ROUNDS` - 1 and over the rounds after them. Writes ``rounds.csv`` (per GPU, run folder, experiment, case,
order and round: the mainloop, groups of 8's, the ratio) and ``summary.csv`` (per GPU, order and round span: the
median ratio over the traced cases and how many). Every figure is post-hoc (these runs were seen); nothing is
fitted. Left out: the one-layer microbenchmarks and the GeLU chains (``posthoc_order_mainloop.LEFT_OUT``), the rings.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

import posthoc_order_mainloop as pom  # noqa: E402
from ctasim.cliargs import OneLineParser, parse_outputs  # noqa: E402

GPUS = {"H100": ROOT / "bench/results/hw-h100", "H200": ROOT / "bench/results/hw"}
"""GPU -> its folder of committed calls."""
ROUNDS = 4
"""Rounds reported one by one; the later ones pooled (``later``)."""
REFERENCE = "intragpu"
SPANS = ("0", "1", "2", "3", "later")


DATED = ("reg10-chain-order-h6144", "reg49-chain-order-h5120", "reg49-chain-order-h7168", "reg56-chain-gradual-h6912")
"""The experiments traced on both GPUs when this record and ``posthoc_h100_round0``'s were made (2026-12-06, before
plans 67 and 68's H200 call traced plan 68's two on an H200 too): the dated records keep these four."""


def bundles() -> dict[str, list[Path]]:
    """GPU -> the chain-kernel trace bundles of its calls, of the experiments traced on both GPUs among :data:`DATED`."""
    found = {g: pom.bundles(root) for g, root in GPUS.items()}
    both = {p.parent.name for p in found["H100"]} & {p.parent.name for p in found["H200"]} & set(DATED)
    return {g: [p for p in ps if p.parent.name in both] for g, ps in found.items()}


def run_rounds(bundle: Path) -> pd.DataFrame:
    """:func:`case_rounds` of ``bundle``'s first traced run of each (case, order)."""
    return case_rounds(pom.first_runs(bundle))


def case_rounds(runs) -> pd.DataFrame:
    """Per ``((case, order), trace)`` of ``runs`` with groups of 8 traced in the same case: the median mainloop (µs)
    per round span of :data:`SPANS` and groups of 8's, and their ratio."""
    from ctasim.calibration import tile_rounds  # noqa: PLC0415

    per = {}
    for (case, order), tr in runs:
        t = tile_rounds(tr.tiles)
        span = np.where(t["round"] < ROUNDS, t["round"].astype(str), "later")
        ml = (t["t_mainloop_end"] - t["t_acquire"]) / 1e3
        per[(case, order)] = ml.groupby(span).median()
    rows = []
    for (case, order), ml in per.items():
        ref = per.get((case, REFERENCE))
        if ref is None or order == REFERENCE:
            continue
        for s in SPANS:
            if s in ml.index and s in ref.index:
                rows.append(dict(case=case, order=order, span=s, mainloop_us=float(ml[s]),
                                 reference_us=float(ref[s]), ratio=float(ml[s] / ref[s])))
    return pd.DataFrame(rows)


def rounds() -> pd.DataFrame:
    """:func:`run_rounds` of every bundle of both GPUs, with the GPU, run folder and experiment."""
    parts = []
    found = bundles()
    for gpu, root in GPUS.items():
        for b in found[gpu]:
            r = run_rounds(b)
            if len(r):
                parts.append(r.assign(gpu=gpu, call=str(b.parent.parent.relative_to(root)),
                                      experiment=b.parent.name))
    cols = ["gpu", "call", "experiment", "case", "order", "span", "mainloop_us", "reference_us", "ratio"]
    return pd.concat(parts, ignore_index=True)[cols]


def summary(r: pd.DataFrame) -> pd.DataFrame:
    """Per GPU, order and round span: the median ratio over the traced cases (run folder, experiment, case), its range
    and how many."""
    s = r.groupby(["gpu", "order", "span"])["ratio"].agg(cases="size", median="median", low="min", high="max")
    return s.reset_index()


def main(argv: list[str] | None = None) -> int:
    ap = OneLineParser(prog="python bench/posthoc_h100_rounds.py", description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "bench/results/posthoc-h100-rounds")
    args = parse_outputs(ap, argv, folders=("--out",))
    r = rounds()
    s = summary(r)
    args.out.mkdir(parents=True, exist_ok=True)
    r.to_csv(args.out / "rounds.csv", index=False, float_format="%.4f")
    s.to_csv(args.out / "summary.csv", index=False, float_format="%.4f")
    with pd.option_context("display.width", 200):
        print(s.pivot_table(index=["gpu", "order"], columns="span", values="median").round(3))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
