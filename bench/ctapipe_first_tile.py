"""Where the consumer's first tile is late in the model: the producer's first row-block, measured vs simulated.

    PYTHONPATH=. python bench/ctapipe_first_tile.py [RUN ...]     # default: bench/results/hw/2026-11-29-ctapipe

For each trace (the committed model of ``ctasim validate``, seed 0), times after the producer's first tile
start, in µs: the first wave's median compute (acquire to compute end), row-block 0's last compute end, store end
and signal, the wave's last store end, and the consumer's first tile ready (pushed) and acquired. Prints a Markdown
table (docs/validation.md, "Where the model is weakest").
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from ctasim.validation import ctapipe as VC  # noqa: E402
from validate_new_variants import committed_model  # noqa: E402

COLS = ["wave-0 compute", "row-block 0 compute end", "row-block 0 store end", "row-block 0 signal", "wave-0 store end",
        "consumer ready", "consumer acquire"]


def segments(tiles, slots: int = 132) -> list[float]:
    p = tiles[tiles["layer"] == tiles["layer"].min()]
    c = tiles[tiles["layer"] == tiles["layer"].max()]
    t0 = p["t_acquire"].min()
    r0 = p[p["tile_m"] == p["tile_m"].min()]
    w0 = p.sort_values("t_acquire").iloc[:slots]
    first = c.sort_values("t_acquire").iloc[0]
    return [float((w0["t_compute_end"] - w0["t_acquire"]).median()), r0["t_compute_end"].max() - t0,
            r0["t_store_end"].max() - t0, r0["t_signal"].max() - t0, w0["t_store_end"].max() - t0,
            first["t_ready"] - t0, first["t_acquire"] - t0]


def main(argv=None) -> int:
    runs = (argv if argv is not None else sys.argv[1:]) or [str(ROOT / "bench/results/hw/2026-11-29-ctapipe")]
    hw, _ = committed_model()
    print("| run | M | variant | " + " | ".join(COLS) + " |")
    print("|" + "---|" * (3 + len(COLS)))
    for run in runs:
        for mt in VC.load_folder(run):
            _plan, sim = VC.simulate_for(mt, hw)
            meas, simd = segments(mt.trace.tiles), segments(sim.tiles)
            cells = [f"{a / 1e3:.1f} / {b / 1e3:.1f}" for a, b in zip(meas, simd)]
            print(f"| {Path(run).name} | {mt.m} | {mt.variant} | " + " | ".join(cells) + " |")
    print("\n(measured / simulated, µs after the producer's first tile start)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
