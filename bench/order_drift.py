"""How the CTAs of a persistent GEMM drift apart, and what it costs the mainloop (post-hoc, no GPU).

    python bench/order_drift.py [DIR]        # default: bench/results/hw/2026-12-02-order-traces

Reads the per-tile traces of ``bench/hw/order_trace_probe.py`` (the plain persistent GEMM in CUTLASS's tile orders;
:data:`ORDER_TRACES`, so the ticket traces of a ``ctahw calibrate --probe-out`` folder are left out)
and prints per shape and order: rounds, the mainloop of rounds 1-3 (the lockstep start), the mean and late-half
mainloop relative to it, and the growth per round of the spread of tile start times within a round (standard
deviation, in units of that mainloop). Writes ``drift.csv`` into DIR. The estimate is
``ctasim.calibration.trace_drift`` (what ``ctahw calibrate`` writes into a profile as ``cta_drift``: the median).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # this checkout's ctasim

from ctasim.calibration import trace_drift  # noqa: E402


ORDER_TRACES = "tiles-*-swizzle*.csv.gz"
"""The order traces' files (``ctahw.tile_orders.trace_name``: ``<M>x<H>-<raster>-swizzle<s>``); a calibration's probe
folder also holds the chain kernel's ticket traces (``tiles-*-tickets*.csv.gz``), which are not a persistent GEMM's
rounds."""


def drift(path: Path) -> dict:
    """One trace file's row of ``drift.csv``: its case name and :func:`ctasim.calibration.trace_drift`."""
    name = path.name.removeprefix("tiles-").removesuffix(".csv.gz")
    d = trace_drift(pd.read_csv(path), str(path))
    return {"case": name, "rounds": d["rounds"], "mainloop_start_us": d["mainloop_start_ns"] / 1e3,
            "mainloop_mean_rel": d["mainloop_mean_rel"], "mainloop_late_rel": d["mainloop_late_rel"],
            "start_sd_per_round": d["start_sd_per_round"], "start_sd_last_round": d["start_sd_last_round"]}


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    folder = Path(argv[0]) if argv else ROOT / "bench/results/hw/2026-12-02-order-traces"
    paths = sorted(folder.glob(ORDER_TRACES))
    if not paths:
        print(f"order_drift: no {ORDER_TRACES} in {folder}", file=sys.stderr)
        return 2
    df = pd.DataFrame([drift(p) for p in paths])
    df.round(4).to_csv(folder / "drift.csv", index=False)
    print(df.round(4).to_string(index=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
