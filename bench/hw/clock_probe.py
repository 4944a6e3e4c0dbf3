"""SM clock and power while the project's CUTLASS GEMM runs on part of the GPU or all of it.

Tests the hypothesis behind ``max_clock_boost`` in ``specs/hardware/h200-x2-calibrated.toml`` (docs/validation.md):
kernels that fill only 32-64 of the 132 SMs run a tile faster than a full grid because a power-capped GPU clocks
higher when fewer SMs are busy. For each M, the 128x256 CUTLASS GEMM (M x 8192 x 8192, bf16, persistent grid of
min(tiles, SMs) CTAs) runs back to back for ``--seconds`` on GPU 0 while ``nvidia-smi`` samples the SM clock and
the board power every ``--sample-ms``; the GEMM's time per launch comes from CUDA events around the loop.

    python bench/hw/clock_probe.py OUT.json [--ms 128,256,512,1024,16384] [--seconds 1.5]

Writes OUT.json ({"points": [{m, tiles, ctas, ms_per_gemm, us_per_round, clock_mhz_median, clock_mhz_p10,
clock_mhz_p90, power_w_median, samples}], "provenance": ...}). Exit 2 with one line without a GPU (or CuPy) or where
OUT.json cannot be written, before anything runs.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # this checkout's ctasim and ctahw, not an installed copy


def _sample(gpu: int, ms: int) -> subprocess.Popen:
    return subprocess.Popen(["nvidia-smi", f"--id={gpu}", "--query-gpu=clocks.sm,power.draw",
                             "--format=csv,noheader,nounits", f"-lms={ms}"], stdout=subprocess.PIPE, text=True)


def _parse(out: str) -> list[tuple[float, float]]:
    rows = []
    for line in out.splitlines():
        parts = [p.strip() for p in line.split(",")]
        try:
            rows.append((float(parts[0]), float(parts[1])))
        except (ValueError, IndexError):
            continue
    return rows


def probe(m: int, seconds: float, sample_ms: int, h: int = 8192, gpu: int = 0) -> dict:
    import numpy as np

    from ctahw.device import random_bf16, require_cupy
    from ctahw.gemm import CutlassGemm

    cp = require_cupy()
    with cp.cuda.Device(gpu):
        rng = cp.random.default_rng(m)
        a = random_bf16((m, h), cp, rng)
        w = random_bf16((h, h), cp, rng, scale=h ** -0.5)
        d = cp.empty((m, h), dtype=cp.uint16)
        g = CutlassGemm(gpu)
        cp.cuda.Device(gpu).synchronize()  # the inputs, made on the default stream, before the non-blocking one
        s = cp.cuda.Stream(non_blocking=True)
        for _ in range(3):
            g(a, w, d, m, h, h, s)
        s.synchronize()
        t0 = time.perf_counter()
        g(a, w, d, m, h, h, s)
        s.synchronize()
        one = max(time.perf_counter() - t0, 1e-5)
        per_batch = max(1, int(0.05 / one))
        smi = _sample(gpu, sample_ms)
        time.sleep(0.3)  # let the sampler start before the load
        start, end = cp.cuda.Event(), cp.cuda.Event()
        launches = 0
        start.record(s)
        t_end = time.perf_counter() + seconds
        while time.perf_counter() < t_end:
            for _ in range(per_batch):
                g(a, w, d, m, h, h, s)
            launches += per_batch
            s.synchronize()
        end.record(s)
        end.synchronize()
        smi.terminate()
        out, _ = smi.communicate(timeout=10)
        ms_total = cp.cuda.get_elapsed_time(start, end)
    rows = _parse(out)
    # drop the samples taken before the load started and after it ended (first 0.3 s; the tail is cut by terminate)
    skip = max(0, int(300 / sample_ms))
    busy = rows[skip:] or rows
    clk = np.array([r[0] for r in busy]) if busy else np.array([float("nan")])
    pw = np.array([r[1] for r in busy]) if busy else np.array([float("nan")])
    tiles = (m // 128) * (h // 256)
    ctas = min(tiles, 132)
    rounds = -(-tiles // 132)
    ms = ms_total / launches
    return dict(m=m, tiles=tiles, ctas=ctas, launches=launches, ms_per_gemm=ms, us_per_round=ms * 1e3 / rounds,
                clock_mhz_median=float(np.median(clk)), clock_mhz_p10=float(np.quantile(clk, 0.1)),
                clock_mhz_p90=float(np.quantile(clk, 0.9)), power_w_median=float(np.median(pw)), samples=len(busy))


def main(argv=None) -> int:
    from ctasim.cliargs import OneLineParser, parse_outputs, positive_ints

    ap = OneLineParser(prog="python bench/hw/clock_probe.py", description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--ms", type=positive_ints, default="128,256,512,1024,16384")
    ap.add_argument("--seconds", type=float, default=1.5)
    ap.add_argument("--sample-ms", type=int, default=20)
    a = parse_outputs(ap, argv, files=("out",))
    from probe_common import sweep_ms

    return sweep_ms("clock_probe", a.out, a.ms, lambda m: probe(m, a.seconds, a.sample_ms))


if __name__ == "__main__":
    raise SystemExit(main())
