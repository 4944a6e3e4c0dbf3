"""Device probe (one GPU, under Nsight Compute): the plain CUTLASS GEMM's DRAM bytes per tile order.

    python -m ctahw.counters OUT CASES.csv --probe gemm   # ncu around this script, then the counters joined (one GPU)
    python bench/hw/gemm_bytes_probe.py OUT CASES.csv     # the launches alone (what ctahw.counters profiles)

``CASES.csv`` has columns ``m``, ``n``, ``k``, ``raster``, ``swizzle`` (other columns ignored, a repeated case run
once: a registration's ``predicted.csv`` serves): the project's CUTLASS GEMM (``ctahw.gemm.CutlassGemm``, 128x256
tiles, 2x1 clusters, persistent) in the (raster, swizzle) tile order named (``ctahw.gemm.RASTER_NAMES``: heuristic,
along_m, along_n; swizzle 1, 2, 4 or 8). Each case is launched once into a poisoned output and checked against an
fp32 reference (cuBLAS, whose kernels ncu's filter leaves out; relative error under ``ctahw.device.REL_TOL_BF16``).
``OUT/launches.csv``: one row per GEMM launch in launch order (the case, the output's relative error) -- what
``ctahw.counters.matched`` joins to ncu's rows. A case that fails its check stops the probe (exit 1) with the case
named; an unreadable CASES.csv, an OUT that cannot be written or no GPU is one line and exit 2 before anything runs.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # this checkout's ctasim and ctahw, not an installed copy

SEED = 20261208
SWIZZLES = (1, 2, 4, 8)


def read_cases(path: Path):
    """The cases of ``path`` (columns m, n, k: positive integers, multiples of 128, 256 and 64; raster a name of
    ``ctahw.gemm.RASTER_NAMES``; swizzle 1, 2, 4 or 8)."""
    import pandas as pd

    rasters = ("heuristic", "along_m", "along_n")  # ctahw.gemm.RASTER_NAMES' names (checked by the tests)
    d = pd.read_csv(path)
    need = ["m", "n", "k", "raster", "swizzle"]
    if not set(need) <= set(d.columns):
        raise ValueError(f"{path}: needs columns {need}, has {list(d.columns)}")
    if d.empty:
        raise ValueError(f"{path}: no cases")
    d = d[need]
    if not all(pd.api.types.is_integer_dtype(d[c]) for c in ("m", "n", "k", "swizzle")):
        raise ValueError(f"{path}: m, n, k and swizzle must be integers")
    d = d.drop_duplicates().reset_index(drop=True)  # a registration has a row per GPU
    for r in d.itertuples(index=False):
        if r.m <= 0 or r.n <= 0 or r.k <= 0 or r.m % 128 or r.n % 256 or r.k % 64:
            raise ValueError(f"{path}: case {r.m} x {r.n} x {r.k} cannot run (M a multiple of 128, N of 256, K of 64)")
        if r.raster not in rasters or r.swizzle not in SWIZZLES:
            raise ValueError(f"{path}: order {r.raster}/{r.swizzle} is not one of {rasters} x {SWIZZLES}")
    return d


def main(argv=None) -> int:
    from ctahw.counters import probe_start

    started = probe_start("gemm_bytes_probe", argv, __doc__.splitlines()[0], read_cases)
    if not isinstance(started, tuple):
        return started
    args, cases = started

    import cupy as cp
    import pandas as pd

    from ctahw.baselines import Chain
    from ctahw.device import REL_TOL_BF16, output_error, poison, reference_chain
    from ctahw.gemm import RASTER_NAMES, make_backend

    args.out.mkdir(parents=True, exist_ok=True)
    data = Chain(cp, SEED)
    s0 = cp.cuda.Stream(non_blocking=True)
    gemm = make_backend("cutlass", 0)
    raster_id = {v: k for k, v in RASTER_NAMES.items()}
    rows = []
    for c in cases.itertuples(index=False):
        x = data.rand(0, (c.m, c.k), salt=1)
        w = data.rand(0, (c.n, c.k), 1 / math.sqrt(c.k), salt=2)
        ref = reference_chain(cp, x, [w], 0)
        d = cp.empty((c.m, c.n), dtype=cp.uint16)
        poison(d)
        gemm.schedule[(c.m, c.n, c.k)] = (raster_id[c.raster], int(c.swizzle))
        gemm(x, w, d, c.m, c.n, c.k, s0)
        s0.synchronize()
        err = output_error(cp, d, ref)
        rows.append({"launch": len(rows), "m": c.m, "n": c.n, "k": c.k, "raster": c.raster, "swizzle": c.swizzle,
                     "rel_err": err})
        print(f"gemm_bytes_probe: {c.m}x{c.n}x{c.k} {c.raster}/{c.swizzle} rel_err {err:.2e}", file=sys.stderr)
        if not err < REL_TOL_BF16:
            pd.DataFrame(rows).to_csv(args.out / "launches.csv", index=False)
            print(f"gemm_bytes_probe: {c.m}x{c.n}x{c.k} {c.raster}/{c.swizzle}: output error {err:.3g} over "
                  f"{REL_TOL_BF16}", file=sys.stderr)
            return 1
        del x, w, ref, d
        cp.get_default_memory_pool().free_all_blocks()
    pd.DataFrame(rows).to_csv(args.out / "launches.csv", index=False)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
