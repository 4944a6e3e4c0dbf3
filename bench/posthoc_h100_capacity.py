"""Post-hoc: would a smaller L2 price the H100's lost reuse? (no GPU)

    python bench/posthoc_h100_capacity.py [--out bench/results/posthoc-h100-capacity]

Registered plans 64 and 65 found the H100s losing row order's and pairs' reuse where ``h100-x1-datasheet`` keeps it (a
layer's weights 1.0-1.8 times the 50 MiB L2 at M <= 8192, 1.0-1.2 times at every M). The simplest mechanism would be
an L2 that holds less than its size says. This script predicts both plans' experiments with the profile's
``l2_bytes`` scaled by each of :data:`SCALES` (``l2_bytes`` sets the LRU capacity of the across-wave reuse and the
bytes of the survival law's curve alike; everything else the profile's) and sets them against every committed H100
call that ran them (:data:`CALLS`).

Writes ``cases.csv`` (per call, experiment, case, strategy and scale: measured, predicted, error) and ``summary.csv``
(per call, scale and class of strategy: cases, MAPE, worst). Every figure is post-hoc: the scales were tried after
the runs were seen. Left out: the H200s (the same question for them is docs/validation.md's "H ≈ L2" weakness), and any
other form of a smaller L2 (a capacity per partition, set conflicts): one number stands for the capacity.
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import pandas as pd  # noqa: E402

import plan64_h100_datasheet as p64  # noqa: E402
import plan65_h100_edge as p65  # noqa: E402
import posthoc_h100_exposed as ph  # noqa: E402
from ctasim.cliargs import OneLineParser, parse_outputs  # noqa: E402

PROFILE = p64.PROFILE
SCALES = (0.6, 0.7, 0.8, 0.9, 1.0)
"""Multipliers of the profile's ``l2_bytes`` (1.0: the registered profile)."""
EXPERIMENTS = tuple(dict.fromkeys([*p64.EXPERIMENTS, *p65.EXPERIMENTS]))
"""Plans 64's and 65's experiments (the reference GEMM once)."""
CALLS = ph.CALLS
THROUGH = "2026-12-05-registered65-1gpu-run3"
"""The last H100 call folder (in name order) the committed tables read: later calls that ran the reference GEMM
(registered plans 74-76, 2026-12-06) are not in them."""


def through(root: Path = CALLS) -> list[Path]:
    """The call folders under ``root`` up to :data:`THROUGH`, in name order."""
    return sorted(d for d in root.iterdir() if d.is_dir() and d.name <= THROUGH)


def predicted(scales=SCALES, experiments=EXPERIMENTS) -> pd.DataFrame:
    """The model's makespan (ms) per scale, experiment, case and strategy."""
    base = p64.as_registered(PROFILE)
    hws = {scale: dataclasses.replace(base, l2_bytes=base.l2_bytes * scale) for scale in scales}
    return ph.model_rows(hws, experiments).rename(columns={"profile": "scale"})


def cases(pred: pd.DataFrame, root: Path = CALLS) -> pd.DataFrame:
    """Every committed H100 call's timed cases, up to :data:`THROUGH`, of these experiments against the predictions."""
    c = ph.call_cases(pred, through(root), EXPERIMENTS)
    c["profile"] = c["scale"].map(lambda f: f"{PROFILE} x{f:g} L2")
    return c[["call", "experiment", "case", "strategy", "class", "scale", "profile", "measured_ms", "predicted_ms",
              "error_pct"]]


def main(argv: list[str] | None = None) -> int:
    ap = OneLineParser(prog="python bench/posthoc_h100_capacity.py", description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "bench/results/posthoc-h100-capacity")
    args = parse_outputs(ap, argv, folders=("--out",))
    c = cases(predicted())
    s = ph.summary(c)
    args.out.mkdir(parents=True, exist_ok=True)
    c.to_csv(args.out / "cases.csv", index=False, float_format="%.4f")
    s.to_csv(args.out / "summary.csv", index=False, float_format="%.4f")
    with pd.option_context("display.width", 200):
        print(s.pivot_table(index="class", columns="profile", values="mape_pct", aggfunc="median").round(2))
        row = c[c["class"] == "row order"]
        print(row.pivot_table(index=["experiment", "case"], columns="scale", values="error_pct",
                              aggfunc="median").round(1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
