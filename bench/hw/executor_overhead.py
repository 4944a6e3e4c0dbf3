"""What the plan executor's bookkeeping costs: the same sequential chain issued by ``ctahw.executor`` and by a plain
loop of the same GEMM calls on one stream, interleaved, on one GPU.

The executor records a "done" event after every operation (for dependencies on other streams) and times every
GEMM between two events (``Timed.part``); the loop records only the part events. Both run the same CUTLASS kernels
(tile order tuned once, shared), the same inputs and outputs, in the ``Timed`` harness (3 ms gate, 250 ms rest:
burst clocks), alternating which goes first.

    python bench/hw/executor_overhead.py OUT.csv [--h 4096] [--ms 3072,6144,12288] [--layers 2] [--reps 9]

Writes OUT.csv: m, h, layers, path (executor / loop), median_ms, samples; prints the ratio per M. An OUT.csv that
cannot be written, or no GPU (or no CuPy), is one line and exit 2 before anything runs.
"""

from __future__ import annotations

import math
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # this checkout's ctasim and ctahw, not an installed copy


def main(argv=None) -> int:
    from ctasim.cliargs import OneLineParser, parse_outputs, positive_ints

    ap = OneLineParser(prog="python bench/hw/executor_overhead.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--h", type=int, default=4096)
    ap.add_argument("--ms", type=positive_ints, default="3072,6144,12288")
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--reps", type=int, default=9)
    a = parse_outputs(ap, argv, files=("out",))
    from probe_common import no_gpus

    rc = no_gpus("executor_overhead", 1)
    if rc is not None:
        return rc
    import pandas as pd

    from ctahw.baselines import Chain, Timed, tune_schedule
    from ctahw.device import require_cupy
    from ctahw.executor import CudaMachine, Inputs, PlanExecutor
    from ctahw.gemm import CutlassGemm
    from ctasim.spec import Layer, Strategy, Workload, load_hardware
    from ctasim.strategies import build_plans

    cp = require_cupy()
    timed = Timed([0], gate_ms=3.0, rest_ms=250.0)
    gemm = CutlassGemm(0)
    s0 = timed.compute[0]
    rows = []
    for m in a.ms:
        h, L = a.h, a.layers
        wl = Workload("square", "bf16", tuple(Layer(m=m, k=h, n=h) for _ in range(L)))
        plan = build_plans(Strategy(kind="sequential"), wl, load_hardware("h200-x2"), 1, f"m={m}")[0]
        data = Chain(cp, 20261202)
        x = data.rand(0, (m, h), salt=11)
        ws = [data.rand(0, (h, h), 1 / math.sqrt(h), salt=12 + i) for i in range(L)]
        with cp.cuda.Device(0):
            d = cp.empty((m, h), dtype=cp.uint16)
        gemm.schedule[(m, h, h)], _ = tune_schedule(gemm, timed, x, ws[0], d, m, h, h, s0, 2)
        machine = CudaMachine(cp, [0], [gemm])
        ex = PlanExecutor(plan, wl, machine, Inputs(x, ws))
        with cp.cuda.Device(0):
            ys = [cp.empty((m, h), dtype=cp.uint16) for _ in range(L)]

        def by_executor(t):
            machine.bind(t)
            return [(machine.stream(s), 0) for s in ex.issue()]

        def by_loop(t):
            inp = x
            for i in range(L):
                t.part("compute", 0, s0, lambda inp=inp, i=i: gemm(inp, ws[i], ys[i], m, h, h, s0))
                inp = ys[i]
            return [(s0, 0)]

        paths = {"executor": by_executor, "loop": by_loop}
        for f in paths.values():
            timed.run(f)
        samples = {p: [] for p in paths}
        for r in range(a.reps):
            for p in (list(paths) if r % 2 == 0 else list(paths)[::-1]):
                samples[p].append(timed.run(paths[p])[0])
        for p, v in samples.items():
            rows.append(dict(m=m, h=h, layers=L, path=p, median_ms=statistics.median(v),
                             samples=";".join(f"{x:.5f}" for x in v)))
        ratio = statistics.median(samples["executor"]) / statistics.median(samples["loop"])
        print(f"M={m} H={h} L={L}: executor {statistics.median(samples['executor']):.4f} ms, loop "
              f"{statistics.median(samples['loop']):.4f} ms, ratio {ratio:.4f}", flush=True)
        d = None
        cp.get_default_memory_pool().free_all_blocks()
    a.out.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows).to_csv(a.out, index=False)
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    raise SystemExit(main())
