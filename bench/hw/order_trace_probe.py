"""Device probe (one GPU): per-tile traces of a plain persistent GEMM in CUTLASS's tile orders, for the L2 model.

    python bench/hw/order_trace_probe.py OUT_DIR [--reps 5] [--rest-ms 250] [--shapes 32768x8192,...]
                                                 [--orders along_m/8,along_m/1,...]

The L2 model (``ctasim.l2``) is optimistic for the high-reuse tile orders of large GEMMs (docs/model.md): the GPU
loses reuse the model counts. Whether the CTAs that share a panel drift apart over the waves needs per-tile times,
and the project's plain GEMM has no stamps. The chain kernel's ``static2x1`` design with one layer is that GEMM
with a stamp per tile, in CUTLASS's own order. The measurement is ``ctahw.tile_orders.trace_orders`` (its docstring
says what runs; ``ctahw calibrate`` runs it too): per shape (``--shapes``, M x H for an M x H x H layer; default
``TRACE_SHAPES``) and order (``--orders``, raster/swizzle; default ``TRACE_ORDERS``), the chain kernel and the plain
CUTLASS GEMM at the same (raster, swizzle) timed interleaved (medians of ``--reps``, each run behind ``--rest-ms``
and the 3 ms gate), both checked against fp32 once, then one traced run of the chain kernel.

Writes ``timing.csv`` (m, h, order, variant, grid, median_ms, rel_err, samples) and ``tiles-<m>x<h>-<order>.csv.gz`` (per
tile: cta, sm, tile_m, tile_n, t_acquire, t_mainloop_end, t_compute_end, t_store_end; ns on the GPU's clock). Bad
values, an OUT_DIR that cannot be written and no GPU (or no CuPy) are one line and exit 2 before anything runs.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
sys.path.insert(0, str(ROOT))  # this checkout's ctahw and ctasim


def parse_shapes(text: str) -> list[tuple[int, int]]:
    """``"32768x8192,65536x16384"`` -> [(32768, 8192), (65536, 16384)]; ValueError naming the bad item."""
    out = []
    for item in text.split(","):
        m, sep, h = item.strip().partition("x")
        if not (sep and m.isdigit() and h.isdigit() and int(m) > 0 and int(h) > 0):
            raise ValueError(f"--shapes: {item!r} is not MxH with positive integers (e.g. 32768x8192)")
        if (int(m), int(h)) in out:
            raise ValueError(f"--shapes: {item.strip()!r} twice (its trace would overwrite the first)")
        out.append((int(m), int(h)))
    return out


def parse_orders(text: str) -> list[tuple[str, int]]:
    """``"along_m/8,along_m/1"`` -> [("along_m", 8), ("along_m", 1)]; ValueError naming the bad item."""
    out = []
    for item in text.split(","):
        raster, sep, swizzle = item.strip().partition("/")
        if not (sep and raster in ("along_m", "along_n") and swizzle in ("1", "2", "4", "8")):
            raise ValueError(f"--orders: {item!r} is not RASTER/SWIZZLE with RASTER along_m or along_n and SWIZZLE "
                             "1, 2, 4 or 8")
        if (raster, int(swizzle)) in out:
            raise ValueError(f"--orders: {item.strip()!r} twice (its trace would overwrite the first)")
        out.append((raster, int(swizzle)))
    return out


def main(argv=None) -> int:
    from ctasim.cliargs import OneLineParser, parse_outputs

    ap = OneLineParser(prog="python bench/hw/order_trace_probe.py", description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--rest-ms", type=float, default=250.0)
    ap.add_argument("--shapes", default=None, help="MxH,... (default: ctahw.tile_orders.TRACE_SHAPES)")
    ap.add_argument("--orders", default=None, help="raster/swizzle,... (default: ctahw.tile_orders.TRACE_ORDERS)")
    args = parse_outputs(ap, argv, folders=("out",))

    from ctahw.tile_orders import TRACE_ORDERS, TRACE_SHAPES, trace_orders, trace_plan, write_traces

    try:
        shapes = parse_shapes(args.shapes) if args.shapes is not None else list(TRACE_SHAPES)
        orders = parse_orders(args.orders) if args.orders is not None else list(TRACE_ORDERS)
        if args.reps < 1:
            raise ValueError(f"--reps must be >= 1, got {args.reps}")
        if not args.rest_ms >= 0:
            raise ValueError(f"--rest-ms must be >= 0, got {args.rest_ms}")
        for m, h in shapes:
            for raster, swizzle in orders:
                trace_plan(m, h, raster, swizzle)  # refuses a padded grid before anything is written
    except ValueError as e:
        print(f"order_trace_probe: {e}", file=sys.stderr)
        return 2
    from ctahw.device import no_gpus

    if no_gpus("order_trace_probe", 1):  # no CuPy, no GPU, not sm_90: one line
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    timing, traces = trace_orders(shapes, orders, reps=args.reps, rest_ms=args.rest_ms)
    write_traces(args.out, timing, traces)
    return 0


if __name__ == "__main__":
    sys.exit(main())
