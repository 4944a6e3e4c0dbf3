"""How the CTAs of a persistent GEMM drift apart, and what it costs the mainloop (post-hoc, no GPU).

    python bench/order_drift.py [DIR]        # default: bench/results/hw/2026-12-02-order-traces

Reads the per-tile traces of ``bench/hw/order_trace_probe.py`` (the plain persistent GEMM in CUTLASS's tile orders)
and prints per shape and order: rounds, the mainloop of rounds 1-3 (the lockstep start), the mean and late-half
mainloop relative to it, and the growth per round of the spread of tile start times within a round (standard
deviation, in units of that mainloop). Writes ``drift.csv`` into DIR.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parent.parent


def drift(path: Path) -> dict:
    t = pd.read_csv(path).sort_values("t_acquire")
    t["mainloop"] = t.t_mainloop_end - t.t_acquire
    t["round"] = t.groupby("cta").t_acquire.rank(method="first").astype(int) - 1
    base = t[t["round"].between(1, 3)].mainloop.median()
    last = int(t["round"].max())
    sd = (t.groupby("round").t_acquire.std() / base).to_numpy()
    slope = float(np.polyfit(np.arange(1, last), sd[1:last], 1)[0])
    name = path.name.removeprefix("tiles-").removesuffix(".csv.gz")
    return {"case": name, "rounds": last + 1, "mainloop_start_us": base / 1e3,
            "mainloop_mean_rel": t.mainloop.mean() / base,
            "mainloop_late_rel": t[t["round"] >= last // 2].mainloop.median() / base,
            "start_sd_per_round": slope, "start_sd_last_round": float(sd[last - 1])}


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    folder = Path(argv[0]) if argv else ROOT / "bench/results/hw/2026-12-02-order-traces"
    df = pd.DataFrame([drift(p) for p in sorted(folder.glob("tiles-*.csv.gz"))])
    df.round(4).to_csv(folder / "drift.csv", index=False)
    print(df.round(4).to_string(index=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
