"""How fast the start times of a ticket-scheduled grid spread apart: the chain kernel's traces of registered plan 3.

    python bench/ticket_spread.py

A ticket is taken when a CTA frees, so the tickets of one window of ``grid`` consecutive tickets start within one
tile time of each other; a lockstep grid starts them together. Per traced run (tickets design, groups of 8, 132 CTAs;
bench/results/hw/2026-12-01-chain-1gpu/registered/reg3-*), the span of the start times of each window of 132
consecutive tickets (tiles sorted by start), in median mainloops, is fitted by a line over the windows from the
second on while the span is below 0.9 (it stops at one tile time); the profile's ``KernelConfig.ticket_spread`` is
the median slope over the runs with at least six windows and a fit of at least four points. These traces are not
the ones plan 9 judged (bench/results/hw/2026-12-02-registered9-1gpu), which were taken with the same kernel later.

Writes bench/results/ticket-spread/spread.csv (one row per run) and prints the median.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ctasim.cliargs import OneLineParser  # noqa: E402
from ctasim.trace import load_traces  # noqa: E402
from ctasim.calibration import span_rate, window_spans  # noqa: E402

RUNS = ROOT / "bench/results/hw/2026-12-01-chain-1gpu/registered"
EXPS = ("reg3-intragpu", "reg3-intragpu-deep", "reg3-intragpu-h4096")
OUT = ROOT / "bench/results/ticket-spread/spread.csv"
SLOTS = 132


def measure() -> pd.DataFrame:
    rows = []
    for exp in EXPS:
        for key, tr in load_traces(RUNS / exp / "ctapipe_traces.trace.npz").items():
            s = window_spans(tr.tiles, SLOTS)
            rows.append({"experiment": exp, "run": key, "windows": len(s), "span_last": float(s[-1]),
                         "rate": span_rate(s)})
    return pd.DataFrame(rows)


def ticket_spread(d: pd.DataFrame) -> float:
    return round(float(d["rate"].dropna().median()), 4)


def main(argv: list[str] | None = None) -> int:
    OneLineParser(prog="python bench/ticket_spread.py", description=__doc__.splitlines()[0]).parse_args(argv or [])  # --help only
    d = measure()
    OUT.parent.mkdir(parents=True, exist_ok=True)
    d.to_csv(OUT, index=False, float_format="%.4f")
    print(d.to_string(index=False, float_format=lambda v: f"{v:.4f}"))
    print(f"\nticket_spread = {ticket_spread(d)} (median of {d['rate'].notna().sum()} runs)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
