"""Per-tile times of a persistent cooperative CUTLASS kernel on one GPU, traced: its within-wave tile-time spread.

The default GEMM (``ctahw/kernels/gemm_sm90_bf16.cu``) has no stamps; the persistent CTA-pipelining kernel's ring
design (``ctapipe_sm90_bf16_persistent.cu``, cluster 2x1, a static row-block-pair order, no inbound or outbound
pipe) runs the same CUTLASS cooperative 128x256 mainloop and epilogue on a persistent grid and stamps every tile.
For each M, one traced run of a one-layer plan (M x 8192 x 8192 bf16) on GPU 0; per tile the mainloop
(t_mainloop_end - t_acquire); tiles sorted by t_acquire and cut into rounds of 132; the within-round coefficient of
variation per round; its median over full rounds >= 1 is what ``KernelConfig.tile_cv`` means
(``ctasim.validation.ctapipe``).

    python bench/hw/persistent_tile_cv.py OUT.json [--ms 2048,8192,16384] [--runs 3]

Exit 2 with one line without a GPU (or CuPy) or where OUT.json cannot be written, before anything runs.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # this checkout's ctasim and ctahw, not an installed copy


def one(m: int, runs: int, h: int = 8192) -> dict:
    import numpy as np

    from ctahw import pipelined as pl
    from ctahw import runner as rn
    from ctahw.device import require_cupy

    cp = require_cupy()
    v = pl.VARIANTS["cutlass_ctapipe_pr21_trace"]
    plan = pl.variant_plan(pl.chain_plan(m, h, layers=1), v)
    k = plan.kernels()[0]
    with cp.cuda.Device(0):
        rng = cp.random.default_rng(m)
        from ctahw.device import random_bf16

        x = random_bf16((m, h), cp, rng)
        w = random_bf16((h, h), cp, rng, scale=h ** -0.5)
    r = rn.CtaPipeRunner(plan, m, [h, h], x, [w], trace=True, clusters={k.id: "2x1"}, persistent="ring")
    out = []
    for i in range(runs + 1):
        r.launch()
        r.sync()
        r.check_errors()
        if i == 0:
            continue  # warm-up
        t = r.read_trace({0: 0.0}).tiles.sort_values("t_acquire").reset_index(drop=True)
        ml = (t["t_mainloop_end"] - t["t_acquire"]).to_numpy()
        tile = (t["t_compute_end"] - t["t_acquire"]).to_numpy()
        wave = np.arange(len(t)) // 132
        full = [w_ for w_ in range(1, wave.max() + 1) if (wave == w_).sum() == 132]
        cv = [float(np.std(ml[wave == w_]) / np.mean(ml[wave == w_])) for w_ in full]
        cvt = [float(np.std(tile[wave == w_]) / np.mean(tile[wave == w_])) for w_ in full]
        out.append(dict(run=i, rounds=int(wave.max() + 1), full_rounds_ge1=len(full),
                        tile_cv_mainloop=float(np.median(cv)) if cv else float("nan"),
                        tile_cv_tile=float(np.median(cvt)) if cvt else float("nan"),
                        mainloop_us_median=float(np.median(ml) / 1e3), makespan_us=float(t["t_compute_end"].max() / 1e3)))
    return dict(m=m, kernel="ctapipe_sm90_bf16_persistent ring 2x1 (static pair-rows order, no pipes)", runs=out)


def main(argv=None) -> int:
    from ctasim.cliargs import OneLineParser, parse_outputs, positive_ints

    ap = OneLineParser(prog="python bench/hw/persistent_tile_cv.py", description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--ms", type=positive_ints, default="2048,8192,16384")
    ap.add_argument("--runs", type=int, default=3)
    a = parse_outputs(ap, argv, files=("out",))
    from probe_common import sweep_ms

    return sweep_ms("persistent_tile_cv", a.out, a.ms, lambda m: one(m, a.runs))


if __name__ == "__main__":
    raise SystemExit(main())
