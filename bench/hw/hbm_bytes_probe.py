"""Device probe (one GPU, under Nsight Compute): the chain kernel's DRAM bytes and L2 hits per tile order.

    python -m ctahw.counters OUT CASES.csv            # ncu around this script, then the counters joined (one GPU)
    python bench/hw/hbm_bytes_probe.py OUT CASES.csv  # the launches alone (what ctahw.counters profiles)

``CASES.csv`` has columns ``h``, ``m``, ``group`` (other columns ignored, a repeated case run once: a registration's
``predicted.csv`` serves): a 2-layer M x H x H chain (``ctasim.strategies.ctapipe.build_chain``,
tickets) in chain group ``group`` (8, 4, 2: groups of that many row-blocks column by column; 1: row order). Each case
is launched once, into poisoned outputs, and checked: the kernel's error record and ticket count
(``ChainRunner.check_errors``) and the output against an fp32 reference (relative error under
``ctahw.device.REL_TOL_BF16``). ``OUT/launches.csv``: one row per chain-kernel launch in launch order (the case, its
tiles, the output's relative error) -- what ``ctahw.counters.matched`` joins to ncu's rows. A case that fails its
check stops the probe (exit 1) with the case named; an unreadable CASES.csv, an OUT that cannot be written or no GPU
is one line and exit 2 before anything runs.
"""

from __future__ import annotations

import dataclasses
import math
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # this checkout's ctasim and ctahw, not an installed copy

PROFILE = "h200-x1-calibrated"
"""The profile the plan is built with: the order and the grid (132 SMs, one CTA each) are the same on an H100."""
SEED = 20261207


def plan(h: int, m: int, group: int):
    """The 2-layer M x H x H chain kernel's plan in chain group ``group``."""
    from ctasim.spec import Strategy, load_hardware, load_workload
    from ctasim.strategies.ctapipe import build_chain

    wl = load_workload("chain2-16384")
    wl = dataclasses.replace(wl, layers=(dataclasses.replace(wl.layers[0], m=m, k=h, n=h),) * 2)
    return build_chain(Strategy(kind="ctapipe", gpus=1, chain_group=group), wl, load_hardware(PROFILE), f"m={m}")


def read_cases(path: Path):
    """The cases of ``path`` (columns h, m, group; positive integers, H and M multiples of 256 and 128)."""
    import pandas as pd

    d = pd.read_csv(path)
    need = {"h", "m", "group"}
    if not need <= set(d.columns):
        raise ValueError(f"{path}: needs columns {sorted(need)}, has {list(d.columns)}")
    if d.empty:
        raise ValueError(f"{path}: no cases")
    d = d[["h", "m", "group"]]
    if not all(pd.api.types.is_integer_dtype(t) for t in d.dtypes):
        raise ValueError(f"{path}: h, m and group must be integers")
    d = d.drop_duplicates().reset_index(drop=True)  # a registration has a row per GPU
    bad = d[(d.h <= 0) | (d.m <= 0) | (d.h % 256 != 0) | (d.m % 128 != 0) | (d.group < 1)]
    if len(bad):
        raise ValueError(f"{path}: case {bad.iloc[0].to_dict()} cannot run (H a multiple of 256, M of 128, group >= 1)")
    return d


def main(argv=None) -> int:
    from ctahw.counters import probe_start

    started = probe_start("hbm_bytes_probe", argv, __doc__.splitlines()[0], read_cases)
    if not isinstance(started, tuple):
        return started
    args, cases = started

    import cupy as cp
    import pandas as pd

    from ctahw.baselines import Chain
    from ctahw.chain import ChainRunner
    from ctahw.device import REL_TOL_BF16, output_error, poison, reference_chain

    args.out.mkdir(parents=True, exist_ok=True)
    data = Chain(cp, SEED)
    s0 = cp.cuda.Stream(non_blocking=True)
    rows = []
    for c in cases.itertuples(index=False):
        x = data.rand(0, (c.m, c.h), salt=1)
        ws = [data.rand(0, (c.h, c.h), 1 / math.sqrt(c.h), salt=2 + i) for i in range(2)]
        ref = reference_chain(cp, x, ws, 0)
        p = plan(c.h, c.m, c.group)
        r = ChainRunner(p, x, ws)
        poison(r.x[1:])
        r.launch(stream=s0)
        s0.synchronize()
        try:
            r.check_errors()
        except Exception as e:  # noqa: BLE001 - the kernel's error record or ticket count: the case named, one line
            pd.DataFrame(rows).to_csv(args.out / "launches.csv", index=False)
            print(f"hbm_bytes_probe: H={c.h} M={c.m} group={c.group}: {type(e).__name__}: {e}", file=sys.stderr)
            return 1
        err = output_error(cp, r.out, ref)
        k = p.ops[0]
        rows.append({"launch": len(rows), "h": c.h, "m": c.m, "group": c.group, "order": p.params["order"],
                     "tiles": k.tiles, "grid": r.grid, "rel_err": err})
        print(f"hbm_bytes_probe: H={c.h} M={c.m} group={c.group} rel_err {err:.2e}", file=sys.stderr)
        if not err < REL_TOL_BF16:
            pd.DataFrame(rows).to_csv(args.out / "launches.csv", index=False)
            print(f"hbm_bytes_probe: H={c.h} M={c.m} group={c.group}: output error {err:.3g} over {REL_TOL_BF16}",
                  file=sys.stderr)
            return 1
        del r, ref, x, ws
        cp.get_default_memory_pool().free_all_blocks()
    pd.DataFrame(rows).to_csv(args.out / "launches.csv", index=False)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
