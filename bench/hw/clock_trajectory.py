"""Device probe (one GPU): how a rested GPU's GEMM rate falls once a run keeps it busy (the power cap's onset).

    python bench/hw/clock_trajectory.py OUT.csv [--rest-s 2.0] [--run-ms 400] [--rounds 3]

For each kernel below, ``--rounds`` times: the GPU rests ``--rest-s`` seconds (host sleep, nothing queued), then
the kernel is launched back to back for about ``--run-ms`` with a CUDA event between launches, so each launch's
duration and its start since the run began are known. A launch's duration divided by the median of the first
launches of the round is the slowdown the run has built up by then (1 on a rested GPU at full clock).

Kernels (the project's CUTLASS GEMM, 128x256 cooperative, persistent, tuned tile order not applied):
* ``square-16384``: 16384 x 8192 x 8192 (2.2 TFLOP, ~2.7 ms rested);
* ``square-4096``: 4096 x 8192 x 8192 (~0.7 ms);
* ``gelu-16384``: 16384 x 28672 x 8192 with the fused GeLU (~10 ms).

Rows: kernel, round, i, t_start_ms (since the round's first launch began), dur_ms. The measurement is
``ctahw.calibrate.clock_trajectory`` (what ``ctahw calibrate`` runs too).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--rest-s", type=float, default=2.0)
    ap.add_argument("--run-ms", type=float, default=400.0)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args(argv)

    import pandas as pd

    from ctahw.calibrate import TRAJECTORY_KERNELS, clock_trajectory
    from ctahw.device import require_gpus
    from ctahw.gemm import CutlassGemm

    require_gpus(1)
    import cupy as cp

    s = cp.cuda.Stream(non_blocking=True)
    rows = clock_trajectory(CutlassGemm(0), s, TRAJECTORY_KERNELS, rest_s=args.rest_s, run_ms=args.run_ms,
                            rounds=args.rounds, log=lambda x: print(x, flush=True))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows).to_csv(args.out, index=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
