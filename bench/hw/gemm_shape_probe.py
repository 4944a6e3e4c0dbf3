"""Device probe (one GPU): the CUTLASS GEMM's rate over shapes and tile orders, every run rested (data for a
memory-hierarchy model of the tile time; the profile holds one rate per kernel config).

    python bench/hw/gemm_shape_probe.py OUT.csv [--reps 3] [--rest-ms 80]

Shapes: K = 8192 with N in {4096, 8192, 14336, 28672} and M in {2048, 4096, 8192, 12288, 16384, 32768}; and
M = 16384, N = 8192 with K in {4096, 14336, 28672}. Each shape: the project's CUTLASS kernel (128x256x64,
persistent, cluster 2x1) at each of its 12 tile orders (``ctahw.gemm.SCHEDULES``: raster along M or N, swizzle 1-8)
and cuBLAS, interleaved, each timed run behind a ``--rest-ms`` host sleep and the 3 ms gate of
``ctahw.baselines.Timed`` (burst regime), the median of ``--reps``.

Rows: m, n, k, backend, order (raster/swizzle, cuBLAS: ''), median_ms, tflops, tiles, waves (tiles / 132),
samples.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

MS = (2048, 4096, 8192, 12288, 16384, 32768)
NS = (4096, 8192, 14336, 28672)
KS = (4096, 14336, 28672)


def shapes() -> list[tuple[int, int, int]]:
    return [(m, n, 8192) for n in NS for m in MS] + [(16384, 8192, k) for k in KS]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--rest-ms", type=float, default=80.0)
    args = ap.parse_args(argv)

    import pandas as pd

    from ctahw.baselines import Chain, Timed
    from ctahw.device import require_gpus, summarize
    from ctahw.gemm import SCHEDULES, CutlassGemm, make_backend, schedule_name

    found = require_gpus(1)
    sms = found[0].sm_count
    timed = Timed([0], gate_ms=3.0, rest_ms=args.rest_ms)
    cp, s = timed.cp, timed.compute[0]
    g, cb = CutlassGemm(0), make_backend("cublas", 0)
    data = Chain(cp, 20261201)
    rows = []
    for m, n, k in shapes():
        a = data.rand(0, (m, k), salt=1)
        w = data.rand(0, (n, k), 1 / math.sqrt(k), salt=2)
        with cp.cuda.Device(0):
            d = cp.empty((m, n), dtype=cp.uint16)
        variants = [("cutlass", sc) for sc in SCHEDULES] + [("cublas", None)]
        samples = {v: [] for v in variants}
        for rep in range(args.reps + 1):  # one untimed round first
            for v in (variants if rep % 2 == 0 else variants[::-1]):
                backend, sc = v
                if backend == "cutlass":
                    g.schedule[(m, n, k)] = sc
                    fn = (lambda: g(a, w, d, m, n, k, s))
                else:
                    fn = (lambda: cb(a, w, d, m, n, k, s))
                ms, _ = timed.run(lambda t, fn=fn: (t.part("compute", 0, s, fn), [(s, 0)])[1])
                if rep:
                    samples[v].append(ms)
        tiles = -(-m // 128) * -(-n // 256)
        for (backend, sc), v in samples.items():
            med = summarize(v).median_ms
            rows.append(dict(m=m, n=n, k=k, backend=backend, order=schedule_name(sc) if sc else "", median_ms=med,
                             tflops=2.0 * m * n * k / (med * 1e9), tiles=tiles, waves=tiles / sms,
                             samples=";".join(f"{x:.5f}" for x in v)))
        cut = [r for r in rows[-len(samples):] if r["backend"] == "cutlass"]
        best = min(cut, key=lambda r: r["median_ms"])
        worst = max(cut, key=lambda r: r["median_ms"])
        print(f"{m:>6} x {n:>5} x {k:>5}: CUTLASS best {best['tflops']:6.1f} TFLOP/s ({best['order']}), worst "
              f"{worst['tflops']:6.1f} ({worst['order']}), cuBLAS {rows[-1]['tflops']:6.1f}", flush=True)
        g.schedule.pop((m, n, k), None)
        del a, w, d
        cp.get_default_memory_pool().free_all_blocks()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows).to_csv(args.out, index=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
