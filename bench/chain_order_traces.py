"""What the chain kernel's traced runs of registered plan 9 show about its tile orders (post-hoc diagnosis).

    python bench/chain_order_traces.py

Reads the one traced run per chain-kernel case of bench/results/hw/2026-12-02-registered9-1gpu (per-tile
%globaltimer stamps, tickets design, 132 CTAs) and writes bench/results/validation-registered9/order-traces.csv, one
row per case and order:

* ``mainloop_first_us``: median mainloop (``t_mainloop_end - t_acquire``) of the first 132 tiles taken (the first
  wave, every CTA starting together, cold L2); ``mainloop_late_us``: the same over the second half of the tiles;
* ``spread_early`` / ``spread_late``: the span of the start times of 132 consecutive tickets, in median mainloops,
  median over the windows of the second and of the last quarter of the run (0: the tickets of a window start
  together, as lockstep waves do; 1: they are spread over a whole tile time);
* ``w_read_share``: per wave, the W-panel bytes the CTAs read (132 tiles x one panel each) over the W bytes a wave
  touches -- how many times each W panel is read by tiles of one window (row order: 4, pairs: 2, groups of 8: 8).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

sys.path.insert(0, str(ROOT / "bench"))

from ctasim.cliargs import OneLineParser  # noqa: E402
from ctasim.trace import load_traces  # noqa: E402
from ctasim.calibration import window_spans  # noqa: E402
from ticket_spread import SLOTS  # noqa: E402

RUN = ROOT / "bench/results/hw/2026-12-02-registered9-1gpu"
OUT = ROOT / "bench/results/validation-registered9/order-traces.csv"


def row(exp: str, key: str, tr) -> dict:
    case, strategy, _ = key.split(":")
    t = tr.tiles.sort_values("t_acquire").reset_index(drop=True)
    ml = (t["t_mainloop_end"] - t["t_acquire"]).to_numpy(float)
    s = window_spans(t, SLOTS)
    q = max(1, len(s) // 4)
    per_layer_cols = int(t["tile_n"].max()) + 1
    # W panels a window touches: distinct (layer, column) pairs among its tiles
    w_distinct = [len(set(zip(t["layer"][i:i + SLOTS], t["tile_n"][i:i + SLOTS])))
                  for i in range(0, len(t) - SLOTS + 1, SLOTS)]
    return {"experiment": exp, "case": case, "strategy": strategy, "tiles": len(t),
            "mainloop_first_us": np.median(ml[:SLOTS]) / 1e3, "mainloop_late_us": np.median(ml[len(ml) // 2:]) / 1e3,
            "mainloop_p90_late_us": np.quantile(ml[len(ml) // 2:], 0.9) / 1e3,
            "spread_early": float(np.median(s[q:2 * q])), "spread_late": float(np.median(s[-q:])),
            "w_panel_reads_per_window": SLOTS / float(np.median(w_distinct)), "tiles_n": per_layer_cols}


def main(argv: list[str] | None = None) -> int:
    OneLineParser(prog="python bench/chain_order_traces.py", description=__doc__.splitlines()[0]).parse_args(argv or [])  # --help only
    rows = []
    for exp in ("reg9-chain-order", "reg9-chain-order-h12288"):
        for key, tr in load_traces(RUN / exp / "ctapipe_traces.trace.npz").items():
            rows.append(row(exp, key, tr))
    d = pd.DataFrame(rows)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    d.to_csv(OUT, index=False, float_format="%.3f")
    pd.set_option("display.width", 200)
    print(d.drop(columns=["tiles_n"]).to_string(index=False, float_format=lambda v: f"{v:.2f}"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
