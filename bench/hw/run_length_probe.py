"""Device probe (one GPU): per-layer times inside one long chain run, under the conditions that differ between
``clock_trajectory.py`` (flat for ~56 ms) and ``ctahw run EXPERIMENT`` (registered plan 2: long runs slower than
the rested sum of their parts).

    python bench/hw/run_length_probe.py OUT.csv [--m 16384] [--layers 16] [--reps 3]

One chain of ``--layers`` M x 8192 x 8192 CUTLASS GEMMs (the executor's sequential case: each layer its own weights,
each layer's output the next one's input), a CUDA event between layers, timed under each condition:

* ``rest2s``: 2 s host sleep, default tile order, no gate (the trajectory probe's conditions, but a chain);
* ``rest2s-sameW``: the same with every layer using layer 0's weights and input (the trajectory's data reuse);
* ``rest250-gate``: ``ctahw.baselines.Timed`` with the 3 ms sleep gate after a 250 ms rest (the executor);
* ``rest2s-gate``: the same after a 2 s rest;
* ``back2back``: no rest at all, a second run straight after a first (a GPU already warm).

Rows: condition, rep, layer, t_start_ms (since the first layer began), dur_ms. An OUT.csv that cannot be written, or
no GPU (or no CuPy), is one line and exit 2 before anything runs.
"""

from __future__ import annotations

import math
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # this checkout's ctasim and ctahw, not an installed copy


def main(argv=None) -> int:
    from ctasim.cliargs import OneLineParser, parse_outputs

    ap = OneLineParser(prog="python bench/hw/run_length_probe.py", description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--m", type=int, default=16384)
    ap.add_argument("--layers", type=int, default=16)
    ap.add_argument("--reps", type=int, default=3)
    args = parse_outputs(ap, argv, files=("out",))
    from ctahw.device import no_gpus

    if no_gpus("run_length_probe", 1):  # no CuPy, no GPU, not sm_90: one line
        return 2

    import cupy as cp
    import pandas as pd

    from ctahw import probes
    from ctahw.baselines import Chain
    from ctahw.gemm import CutlassGemm

    m, h, L = args.m, 8192, args.layers
    g = CutlassGemm(0)
    data = Chain(cp, 20261201)
    s = cp.cuda.Stream(non_blocking=True)
    x = data.rand(0, (m, h), salt=11)
    ws = [data.rand(0, (h, h), 1 / math.sqrt(h), salt=12 + i) for i in range(L)]
    ys = [cp.empty((m, h), dtype=cp.uint16) for _ in range(L)]
    g(x, ws[0], ys[0], m, h, h, s)
    s.synchronize()

    def chain(same_w: bool, gate: bool) -> list[float]:
        evs = [cp.cuda.Event() for _ in range(L + 1)]
        if gate:
            probes.call("sleep", int(3e6), stream=s, device=0)
        evs[0].record(s)
        inp = x
        for i in range(L):
            if same_w:
                g(x, ws[0], ys[i], m, h, h, s)
            else:
                g(inp, ws[i], ys[i], m, h, h, s)
                inp = ys[i]
            evs[i + 1].record(s)
        evs[-1].synchronize()
        return [cp.cuda.get_elapsed_time(evs[i], evs[i + 1]) for i in range(L)]

    conditions = {"rest2s": (2.0, False, False), "rest2s-sameW": (2.0, True, False),
                  "rest250-gate": (0.25, False, True), "rest2s-gate": (2.0, False, True),
                  "back2back": (0.0, False, False)}
    rows = []
    for rep in range(args.reps):
        for name, (rest, same_w, gate) in conditions.items():
            cp.cuda.Device(0).synchronize()
            if name == "back2back":
                chain(False, False)  # the warm-up run; the timed one follows at once
            else:
                time.sleep(rest)
            durs = chain(same_w, gate)
            t = 0.0
            for i, d in enumerate(durs):
                rows.append(dict(condition=name, rep=rep, layer=i, t_start_ms=t, dur_ms=d))
                t += d
            print(f"rep {rep} {name:>13}: total {t:8.3f} ms; layers " + " ".join(f"{d:.3f}" for d in durs), flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows).to_csv(args.out, index=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
