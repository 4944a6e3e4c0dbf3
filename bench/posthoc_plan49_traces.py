"""Post-hoc: what registered plan 49's traced runs show about each machine's reuse (no GPU).

    python bench/posthoc_plan49_traces.py [--out bench/results/validation-registered49/traces.csv]

Reads the one traced run per chain-kernel case and order of the three machines' calls
(``bench/results/hw/2026-12-04-registered49-1gpu``, ``-run2``, ``-run3``; per-tile %globaltimer stamps, tickets
design, 132 CTAs) and writes one row per machine, case and order: ``span_rate``, the growth per round of the start-time span of 132
consecutive tickets (``ctasim.calibration.span_rate``, the profile's ``ticket_spread`` is 0.0189); ``first_us``, the
median mainloop (``t_mainloop_end - t_acquire``) of the first 132 tiles taken (the cold first wave);
``late_us``, the same over the second half of the tiles; ``late_over_first``. Prints the table. Post-hoc: written
after the calls were judged.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ctasim.calibration import span_rate, window_spans  # noqa: E402
from ctasim.cliargs import OneLineParser, parse_outputs  # noqa: E402
from ctasim.trace import load_traces  # noqa: E402

RUNS = {"GPU-f1bbaa8b": "2026-12-04-registered49-1gpu", "GPU-183b3560": "2026-12-04-registered49-1gpu-run2",
        "GPU-e5361f9f": "2026-12-04-registered49-1gpu-run3"}
CHAINS = ("reg49-chain-order-h5120", "reg49-chain-order-h7168", "reg49-chain-order-h9216")
SLOTS = 132


def table() -> pd.DataFrame:
    rows = []
    for machine, run in RUNS.items():
        for exp in CHAINS:
            for key, tr in load_traces(ROOT / "bench/results/hw" / run / exp / "ctapipe_traces.trace.npz").items():
                case, strategy, _ = key.split(":")
                t = tr.tiles.sort_values("t_acquire").reset_index(drop=True)
                ml = (t["t_mainloop_end"] - t["t_acquire"]).to_numpy(float) / 1e3
                first, late = float(np.median(ml[:SLOTS])), float(np.median(ml[len(ml) // 2:]))
                rows.append({"machine": machine, "experiment": exp, "case": case, "order": strategy,
                             "span_rate": round(span_rate(window_spans(t, SLOTS)), 4), "first_us": round(first, 2),
                             "late_us": round(late, 2), "late_over_first": round(late / first, 4)})
    return pd.DataFrame(rows)


def main(argv: list[str] | None = None) -> int:
    ap = OneLineParser(prog="python bench/posthoc_plan49_traces.py", description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "bench/results/validation-registered49/traces.csv")
    args = parse_outputs(ap, argv, files=("--out",))
    d = table()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    d.to_csv(args.out, index=False)
    pd.set_option("display.width", 200)
    print(d.pivot_table(index=["experiment", "case", "order"], columns="machine",
                        values=["span_rate", "late_over_first"]).to_string())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
