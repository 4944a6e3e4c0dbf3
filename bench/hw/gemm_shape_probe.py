"""Device probe (one GPU): the CUTLASS GEMM's rate over shapes and tile orders, every run rested (data for a
memory-hierarchy model of the tile time; the profile holds one rate per kernel config).

    python bench/hw/gemm_shape_probe.py OUT.csv [--reps 3] [--rest-ms 80] [--shapes MxNxK,...]

Shapes (default; ``--shapes`` names others): K = 8192 with N in {4096, 8192, 14336, 28672} and M in {2048, 4096, 8192, 12288, 16384, 32768}; and
M = 16384, N = 8192 with K in {4096, 14336, 28672}. Each shape: the project's CUTLASS kernel (128x256x64,
persistent, cluster 2x1) at each of its 12 tile orders (``ctahw.gemm.SCHEDULES``: raster along M or N, swizzle 1-8)
and cuBLAS, interleaved, each timed run behind a ``--rest-ms`` host sleep and the 3 ms gate of
``ctahw.baselines.Timed`` (burst regime), the median of ``--reps``. The measurement is
``ctahw.tile_orders.time_orders`` (``ctahw calibrate`` runs it on the N = K = 8192 shapes, CUTLASS only).

Rows: m, n, k, backend, order (raster/swizzle, cuBLAS: ''), median_ms, tflops, tiles, waves (tiles / 132),
samples. Bad values, an OUT.csv that cannot be written and no GPU (or no CuPy) are one line and exit 2 before anything
runs.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # this checkout's ctasim and ctahw, not an installed copy

MS = (2048, 4096, 8192, 12288, 16384, 32768)
NS = (4096, 8192, 14336, 28672)
KS = (4096, 14336, 28672)


def shapes() -> list[tuple[int, int, int]]:
    return [(m, n, 8192) for n in NS for m in MS] + [(16384, 8192, k) for k in KS]


def parse_shapes(text: str) -> list[tuple[int, int, int]]:
    """``"32768x40960x7168,..."`` -> [(32768, 40960, 7168), ...] (M x N x K); ValueError naming the bad item."""
    from ctahw.gemm import parse_mnk

    out = []
    for item in text.split(","):
        shape = parse_mnk(item, "--shapes")
        if shape in out:
            raise ValueError(f"--shapes: {item.strip()!r} twice")
        out.append(shape)
    return out


def main(argv=None) -> int:
    from ctasim.cliargs import OneLineParser, parse_outputs

    ap = OneLineParser(prog="python bench/hw/gemm_shape_probe.py", description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--rest-ms", type=float, default=80.0)
    ap.add_argument("--shapes", default=None, help="MxNxK,... (default: the probe's 27 shapes)")
    args = parse_outputs(ap, argv, files=("out",))
    try:
        todo = parse_shapes(args.shapes) if args.shapes is not None else shapes()
        if args.reps < 1:
            raise ValueError(f"--reps must be >= 1, got {args.reps}")
        if not args.rest_ms >= 0:
            raise ValueError(f"--rest-ms must be >= 0, got {args.rest_ms}")
    except ValueError as e:
        print(f"gemm_shape_probe: {e}", file=sys.stderr)
        return 2
    from ctahw.device import no_gpus

    if no_gpus("gemm_shape_probe", 1):  # no CuPy, no GPU, not sm_90: one line
        return 2

    import pandas as pd

    from ctahw.tile_orders import time_orders

    rows = time_orders(todo, reps=args.reps, rest_ms=args.rest_ms, cublas=True, log=lambda s: print(s, flush=True))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows).to_csv(args.out, index=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
