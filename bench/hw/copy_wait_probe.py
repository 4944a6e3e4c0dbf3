"""The micro-batching chain of ``ctahw`` with sleep kernels in place of the GEMMs: what its cross-GPU waits cost.

Tests the harness parameters ``wait_ns`` and ``hop_ns`` that ``ctasim.validation.baselines`` fits on micro-batched makespans
(docs/validation.md): a kernel on GPU 1 whose stream waits on an event of GPU 0's copy stream pays ``wait_ns``
even when the copy is long done, and starts ``event_wait_ns + hop_ns`` after the copy at the earliest.  The probe
enqueues exactly what the baselines do -- ctasim's plans issued by the plan executor (``ctahw.executor``: ``Timed``
harness, ``part`` events around every kernel and copy, the copy stream waiting on the compute stream, GPU 1's
compute stream waiting on the copy's event) -- with a machine whose GEMM is a ``sleep`` probe kernel of
``--kernel-us`` and whose copies move ``--mib`` MiB each, for each chunk count; plus the harness's 1- and 2-kernel
runs on one GPU (``gemm``, ``sequential``) for ``run_ns`` and ``gap_ns``. (Until 2026-12-02 the probe built the
same launch graph by hand; the 2026-11-29 figures in bench/results/hw/2026-11-29-copy-wait came from that copy.)

    python bench/hw/copy_wait_probe.py OUT.json [--chunks 1,2,4,8,16] [--kernel-us 60] [--mib 8] [--runs 15]

Writes OUT.json ({"rows": [{experiment, chunks, median_ms, compute_ms_gpu0, compute_ms_gpu1, copy_ms}], "args",
"provenance"}); ``bench/hw/copy_wait_report.py OUT.json`` derives the two parameters from it. Exit 2 with one line
without two GPUs (or CuPy), on a bad ``--chunks`` or where OUT.json cannot be written, before anything runs.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path
import sys

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # this checkout's ctasim and ctahw, not an installed copy


def main(argv=None) -> int:
    from ctasim.cliargs import OneLineParser, parse_outputs, positive_ints

    ap = OneLineParser(prog="python bench/hw/copy_wait_probe.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("out")
    ap.add_argument("--chunks", type=positive_ints, default="1,2,4,8,16")
    ap.add_argument("--kernel-us", type=float, default=60.0)
    ap.add_argument("--mib", type=int, default=8)
    ap.add_argument("--runs", type=int, default=15)
    args = parse_outputs(ap, argv, files=("out",))
    chunk_counts = args.chunks
    from probe_common import no_gpus

    rc = no_gpus("copy_wait_probe", 2)
    if rc is not None:
        return rc
    from ctahw import probes
    from ctahw.baselines import Timed
    from ctahw.device import enable_peer_access, require_cupy
    from ctahw.executor import CudaMachine, Inputs, PlanExecutor
    from ctahw.provenance import collect
    from ctasim.spec import Layer, Strategy, Workload, load_hardware
    from ctasim.strategies import build_plans

    cp = require_cupy()
    enable_peer_access([0, 1])
    T = Timed([0, 1], gate_ms=2.0)
    k_ns = int(args.kernel_us * 1e3)
    nbytes = args.mib << 20
    with cp.cuda.Device(0):  # one copy's bytes per chunk of the largest chunk count
        src = cp.zeros(nbytes * max(chunk_counts), dtype=cp.uint8)
    with cp.cuda.Device(1):
        dst = cp.zeros(nbytes * max(chunk_counts), dtype=cp.uint8)

    class SleepMachine(CudaMachine):
        """The executor's CUDA machine with a sleep of ``--kernel-us`` for every GEMM and ``--mib`` MiB copies."""

        def bind(self, timed):
            super().bind(timed)
            self.copies = 0

        def gemm(self, g, a, w, d, m, n, k, ops, c, tile_n, op_id):
            st = self.stream((g, "compute"))
            self.t.part("compute", g, st, lambda: probes.call("sleep", k_ns, stream=st, device=g))

        def copy(self, src_gpu, dst_gpu, dst_view, src_view, op_id):
            st, off = self.stream((src_gpu, "copy")), self.copies * nbytes
            self.copies += 1
            self.t.part("copy", src_gpu, st, lambda: cp.cuda.runtime.memcpyPeerAsync(
                dst.data.ptr + off, dst_gpu, src.data.ptr + off, src_gpu, nbytes, st.ptr))

    hw = load_hardware("h200-x2")
    machine = SleepMachine(cp, [0, 1], [None, None])
    rows_m = 128 * max(chunk_counts)  # the plans' shapes only size the (untouched) activations
    layer = Layer(m=rows_m, k=256, n=256)

    def executor(strategy, layers):
        wl = Workload(name="sleep", layers=(layer,) * layers)
        plans = build_plans(strategy, wl, hw, 2, "probe")
        data = Inputs(cp.zeros((rows_m, 256), dtype=cp.uint16), [cp.zeros((256, 256), dtype=cp.uint16)] * layers)
        return [(p.params.get("chunks", 0), PlanExecutor(p, wl, machine, data)) for p in plans]

    def enqueue(ex):
        def f(t):
            machine.bind(t)
            return [(machine.stream(s), s[0]) for s in ex.issue()]
        return f

    cases = [("gemm", 0, enqueue(executor(Strategy(kind="sequential"), 1)[0][1])),
             ("sequential", 0, enqueue(executor(Strategy(kind="sequential"), 2)[0][1]))]
    cases += [("microbatch", c, enqueue(ex)) for c, ex in executor(Strategy(kind="microbatch",
                                                                             chunks=tuple(chunk_counts)), 2)]
    rows = []
    T.run(cases[0][2])  # warm-up
    for name, c, f in cases:
        ms, comp0, comp1, copy = [], [], [], []
        for _ in range(args.runs):
            m, parts = T.run(f)
            ms.append(m)
            comp0.append(sum(p[2] for p in parts if p[0] == "compute" and p[1] == 0))
            comp1.append(sum(p[2] for p in parts if p[0] == "compute" and p[1] == 1))
            copy.append(sum(p[2] for p in parts if p[0] == "copy"))
        rows.append({"experiment": name, "chunks": c, "median_ms": statistics.median(ms),
                     "min_ms": min(ms), "max_ms": max(ms), "compute_ms_gpu0": statistics.median(comp0),
                     "compute_ms_gpu1": statistics.median(comp1), "copy_ms": statistics.median(copy)})
        print(json.dumps(rows[-1]), flush=True)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    with open(args.out, "w") as fh:
        json.dump({"rows": rows, "args": vars(args), "provenance": collect()}, fh, indent=1, default=str)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
