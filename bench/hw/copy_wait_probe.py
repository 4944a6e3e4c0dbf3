"""The micro-batching chain of ``ctahw`` with sleep kernels in place of the GEMMs: what its cross-GPU waits cost.

Tests the harness parameters ``wait_ns`` and ``hop_ns`` that ``ctasim.validation.baselines`` fits on micro-batched makespans
(docs/validation.md): a kernel on GPU 1 whose stream waits on an event of GPU 0's copy stream pays ``wait_ns``
even when the copy is long done, and starts ``event_wait_ns + hop_ns`` after the copy at the earliest.  The probe
enqueues exactly what ``Sweep.microbatch`` does (``Timed`` harness, ``part`` events around every kernel and copy,
the copy stream waiting on the compute stream, GPU 1's compute stream waiting on the copy's event) with a
``sleep`` probe kernel of ``--kernel-us`` on both GPUs and ``--mib`` MiB peer copies, for each chunk count; plus
the harness's 1- and 2-kernel runs on one GPU (``gemm``, ``sequential``) for ``run_ns`` and ``gap_ns``.

    python bench/hw/copy_wait_probe.py OUT.json [--chunks 1,2,4,8,16] [--kernel-us 60] [--mib 8] [--runs 15]

Writes OUT.json ({"rows": [{experiment, chunks, median_ms, compute_ms_gpu0, compute_ms_gpu1, copy_ms}], "args",
"provenance"}); ``bench/hw/copy_wait_report.py OUT.json`` derives the two parameters from it. Exit 2 without two
GPUs.
"""

from __future__ import annotations

import argparse
import json
import statistics


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out")
    ap.add_argument("--chunks", default="1,2,4,8,16")
    ap.add_argument("--kernel-us", type=float, default=60.0)
    ap.add_argument("--mib", type=int, default=8)
    ap.add_argument("--runs", type=int, default=15)
    args = ap.parse_args(argv)
    from probe_common import no_gpus

    rc = no_gpus("copy_wait_probe", 2)
    if rc is not None:
        return rc
    from ctahw import probes
    from ctahw.baselines import Timed
    from ctahw.device import enable_peer_access, require_cupy
    from ctahw.provenance import collect

    cp = require_cupy()
    chunk_counts = [int(c) for c in args.chunks.split(",")]
    enable_peer_access([0, 1])
    T = Timed([0, 1], gate_ms=2.0)
    k_ns = int(args.kernel_us * 1e3)
    nbytes = args.mib << 20
    with cp.cuda.Device(0):  # one copy's bytes per chunk of the largest chunk count
        src = cp.zeros(nbytes * max(chunk_counts), dtype=cp.uint8)
    with cp.cuda.Device(1):
        dst = cp.zeros(nbytes * max(chunk_counts), dtype=cp.uint8)

    def kernel(t, g):
        cs = t.compute[g]
        t.part("compute", g, cs, lambda: probes.call("sleep", k_ns, stream=cs, device=g))

    def microbatch(c):
        def f(t):  # Sweep.microbatch's enqueue, G = 2, a sleep for each GEMM
            copied = {}
            for j in range(c):
                for g in range(2):
                    cs = t.compute[g]
                    if g > 0:
                        with cp.cuda.Device(g):
                            cs.wait_event(copied[(g - 1, j)])
                    kernel(t, g)
                    if g + 1 < 2:
                        done = t.event(g)
                        xs = t.copy[g]
                        with cp.cuda.Device(g):
                            done.record(cs)
                            xs.wait_event(done)
                        d, s = dst.data.ptr + j * nbytes, src.data.ptr + j * nbytes
                        t.part("copy", g, xs, lambda d=d, s=s, xs=xs: cp.cuda.runtime.memcpyPeerAsync(d, 1, s, 0, nbytes, xs.ptr))
                        ev = t.event(g)
                        with cp.cuda.Device(g):
                            ev.record(xs)
                        copied[(g, j)] = ev
            return [(t.compute[1], 1)]
        return f

    def one_gpu(n):
        def f(t):
            for _ in range(n):
                kernel(t, 0)
            return [(t.compute[0], 0)]
        return f

    cases = [("gemm", 0, one_gpu(1)), ("sequential", 0, one_gpu(2))]
    cases += [("microbatch", c, microbatch(c)) for c in chunk_counts]
    rows = []
    T.run(one_gpu(1))  # warm-up
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
    with open(args.out, "w") as fh:
        json.dump({"rows": rows, "args": vars(args), "provenance": collect()}, fh, indent=1, default=str)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
