"""Device probe (one GPU): per-tile traces of a plain persistent GEMM in CUTLASS's tile orders, for the L2 model.

    python bench/hw/order_trace_probe.py OUT_DIR [--reps 5] [--rest-ms 250]

The L2 model (``ctasim.l2``) is optimistic for the high-reuse tile orders of large GEMMs (docs/model.md): the GPU
loses reuse the model counts. Whether the CTAs that share a panel drift apart over the waves needs per-tile times,
and the project's plain GEMM has no stamps. The chain kernel's ``static2x1`` design with one layer is that GEMM
(CUTLASS's cooperative 128x256x64 mainloop and epilogue, 2x1 clusters with W multicast, CTA i running order entries
i, i + grid, ... as CUTLASS's persistent scheduler does), with a stamp per tile; its order here is CUTLASS's own
(``ctasim.l2.cutlass_sm90_order``). Per shape and order: the chain kernel and the plain CUTLASS GEMM at the same
(raster, swizzle) timed interleaved (medians of ``--reps``, each run behind ``--rest-ms`` and the 3 ms gate), both
checked against fp32 once, then one traced run of the chain kernel.

Writes ``timing.csv`` (m, h, order, variant, grid, median_ms, rel_err, samples) and ``tiles-<m>x<h>-<order>.csv.gz`` (per
tile: cta, sm, tile_m, tile_n, t_acquire, t_mainloop_end, t_compute_end, t_store_end; ns on the GPU's clock).
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import sys
from pathlib import Path

SHAPES = ((8192, 8192), (32768, 8192), (16384, 16384))  # (M, H): the layer is M x H x H
ORDERS = (("along_m", 8), ("along_n", 8), ("along_m", 1))


def _plan(m: int, h: int, raster: str, swizzle: int):
    import numpy as np

    from ctasim.l2 import cutlass_sm90_order
    from ctasim.spec import Strategy, load_hardware, load_workload
    from ctasim.strategies.ctapipe import build_chain

    wl = load_workload("chain2-16384")
    wl = dataclasses.replace(wl, layers=(dataclasses.replace(wl.layers[0], m=m, k=h, n=h),))
    plan = build_chain(Strategy(kind="ctapipe", gpus=1, tile_source="static"), wl,
                       load_hardware("h200-x2-calibrated"), f"m={m}")
    k = plan.kernels()[0]
    order = cutlass_sm90_order(k.tiles_m, k.tiles_n, raster, swizzle, (2, 1))
    if (order < 0).any():
        raise SystemExit(f"{m} x {h} {raster}/swizzle{swizzle}: CUTLASS pads this grid; pick another shape")
    k.order = np.asarray(order, dtype=np.int64)
    return plan


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--rest-ms", type=float, default=250.0)
    args = ap.parse_args(argv)

    import cupy as cp
    import pandas as pd

    from ctahw.baselines import Chain, Timed
    from ctahw.chain import ChainRunner
    from ctahw.device import output_error, poison, reference_chain
    from ctahw.gemm import RASTER_NAMES, make_backend

    args.out.mkdir(parents=True, exist_ok=True)
    timed = Timed([0], 3.0, 0.0, args.rest_ms)
    s0 = timed.compute[0]
    data = Chain(cp, 20261202)
    raster_code = {v: k for k, v in RASTER_NAMES.items()}

    def median(v):
        v = sorted(v)
        return v[len(v) // 2]

    rows = []
    for m, h in SHAPES:
        x = data.rand(0, (m, h), salt=1)
        ws = [data.rand(0, (h, h), 1 / math.sqrt(h), salt=2)]
        ref = reference_chain(cp, x, ws, 0)
        d = cp.empty((m, h), dtype=cp.uint16)
        for raster, swizzle in ORDERS:
            name = f"{raster}/swizzle{swizzle}"
            plan = _plan(m, h, raster, swizzle)
            r = ChainRunner(plan, x, ws, design="static2x1")
            g = make_backend("cutlass", 0)
            g.schedule[(m, h, h)] = (raster_code[raster], swizzle)
            poison(r.x[1:])
            r.launch(stream=s0)
            s0.synchronize()
            r.check_errors()
            err = {"chain_static2x1": output_error(cp, r.out, ref)}
            poison(d)
            g(x, ws[0], d, m, h, h, s0)
            s0.synchronize()
            err["cutlass"] = output_error(cp, d, ref)
            fns = {"chain_static2x1": lambda r=r: r.launch(stream=s0),
                   "cutlass": lambda g=g: g(x, ws[0], d, m, h, h, s0)}
            samples = {k: [] for k in fns}
            for _ in range(args.reps):
                for k, fn in fns.items():
                    samples[k].append(timed.run(lambda t, fn=fn: (t.part("compute", 0, s0, fn), [(s0, 0)])[1])[0])
            r.check_errors()
            for k, v in samples.items():
                rows.append({"m": m, "h": h, "order": name, "variant": k, "grid": r.grid if k != "cutlass" else 132,
                             "median_ms": median(v), "rel_err": err[k],
                             "samples": ";".join(f"{s:.5f}" for s in v)})
            t = ChainRunner(_plan(m, h, raster, swizzle), x, ws, design="static2x1", trace=True)
            t.launch(stream=s0)
            s0.synchronize()
            t.check_errors()
            tiles = t.read_trace().tiles
            keep = [c for c in ("cta", "sm", "tile_m", "tile_n", "t_acquire", "t_mainloop_end", "t_compute_end",
                                "t_store_end") if c in tiles.columns]
            tiles[keep].to_csv(args.out / f"tiles-{m}x{h}-{raster}-swizzle{swizzle}.csv.gz", index=False,
                               float_format="%.0f")
            print(f"{m} x {h} x {h} {name}: " + ", ".join(f"{k} {median(v):.4f} ms (err {err[k]:.1e})"
                                                          for k, v in samples.items()), file=sys.stderr)
            del r, t
            cp.get_default_memory_pool().free_all_blocks()
        del x, ws, ref, d
        cp.get_default_memory_pool().free_all_blocks()
    pd.DataFrame(rows).to_csv(args.out / "timing.csv", index=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
