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

Rows: kernel, round, i, t_start_ms (since the round's first launch began), dur_ms.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--rest-s", type=float, default=2.0)
    ap.add_argument("--run-ms", type=float, default=400.0)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args(argv)

    import pandas as pd

    from ctahw.baselines import Chain
    from ctahw.device import require_gpus
    from ctahw.gemm import CutlassGemm

    require_gpus(1)
    import cupy as cp

    g = CutlassGemm(0)
    data = Chain(cp, 20261201)
    s = cp.cuda.Stream(non_blocking=True)
    kernels = {"square-16384": (16384, 8192, 8192, ()), "square-4096": (4096, 8192, 8192, ()),
               "gelu-16384": (16384, 28672, 8192, ("gelu",))}
    rows = []
    for name, (m, n, k, ep) in kernels.items():
        a = data.rand(0, (m, k), salt=1)
        w = data.rand(0, (n, k), 1 / math.sqrt(k), salt=2)
        d = cp.empty((m, n), dtype=cp.uint16)
        g(a, w, d, m, n, k, s, epilogue=ep)  # load the kernel
        s.synchronize()
        # a short timed launch gives the launch count for --run-ms
        e0, e1 = cp.cuda.Event(), cp.cuda.Event()
        e0.record(s)
        g(a, w, d, m, n, k, s, epilogue=ep)
        e1.record(s)
        e1.synchronize()
        count = max(8, int(args.run_ms / cp.cuda.get_elapsed_time(e0, e1)))
        for rnd in range(args.rounds):
            cp.cuda.Device(0).synchronize()
            time.sleep(args.rest_s)
            evs = [cp.cuda.Event() for _ in range(count + 1)]
            evs[0].record(s)
            for i in range(count):
                g(a, w, d, m, n, k, s, epilogue=ep)
                evs[i + 1].record(s)
            evs[-1].synchronize()
            t = 0.0
            for i in range(count):
                dur = cp.cuda.get_elapsed_time(evs[i], evs[i + 1])
                rows.append(dict(kernel=name, m=m, n=n, k=k, epilogue="+".join(ep), round=rnd, i=i, t_start_ms=t,
                                 dur_ms=dur))
                t += dur
            first = sorted(r["dur_ms"] for r in rows[-count:][:4])[1]
            last = sorted(r["dur_ms"] for r in rows[-count:][-max(4, count // 4):])
            print(f"{name} round {rnd}: {count} launches, {t:.1f} ms; first {first:.4f} ms, "
                  f"last quarter median {last[len(last) // 2]:.4f} ms ({last[len(last) // 2] / first:.3f}x)",
                  flush=True)
        del a, w, d
        cp.get_default_memory_pool().free_all_blocks()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows).to_csv(args.out, index=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
