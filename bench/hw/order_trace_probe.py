"""Device probe (one GPU): per-tile traces of a plain persistent GEMM in CUTLASS's tile orders, for the L2 model.

    python bench/hw/order_trace_probe.py OUT_DIR [--reps 5] [--rest-ms 250]

The L2 model (``ctasim.l2``) is optimistic for the high-reuse tile orders of large GEMMs (docs/model.md): the GPU
loses reuse the model counts. Whether the CTAs that share a panel drift apart over the waves needs per-tile times,
and the project's plain GEMM has no stamps. The chain kernel's ``static2x1`` design with one layer is that GEMM
with a stamp per tile, in CUTLASS's own order. The measurement is ``ctahw.tile_orders.trace_orders`` (its docstring
says what runs; ``ctahw calibrate`` runs it too): per shape (``TRACE_SHAPES``) and order (``TRACE_ORDERS``), the
chain kernel and the plain CUTLASS GEMM at the same (raster, swizzle) timed interleaved (medians of ``--reps``, each
run behind ``--rest-ms`` and the 3 ms gate), both checked against fp32 once, then one traced run of the chain kernel.

Writes ``timing.csv`` (m, h, order, variant, grid, median_ms, rel_err, samples) and ``tiles-<m>x<h>-<order>.csv.gz`` (per
tile: cta, sm, tile_m, tile_n, t_acquire, t_mainloop_end, t_compute_end, t_store_end; ns on the GPU's clock).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--rest-ms", type=float, default=250.0)
    args = ap.parse_args(argv)

    from ctahw.tile_orders import trace_orders, write_traces

    args.out.mkdir(parents=True, exist_ok=True)
    timing, traces = trace_orders(reps=args.reps, rest_ms=args.rest_ms)
    write_traces(args.out, timing, traces)
    return 0


if __name__ == "__main__":
    sys.exit(main())
