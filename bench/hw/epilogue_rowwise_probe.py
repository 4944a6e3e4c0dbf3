"""Device probe (one H200): row-wise kernel bandwidth and fused-epilogue GEMM time vs the plain kernel. The figures quoted in the docstrings of ctahw/gemm.py and ctahw/rowwise.py came from this script on 2026-12-01; its output was not committed: rerun it and commit the output under bench/results/hw before relying on them.

    python bench/hw/epilogue_rowwise_probe.py [all|row|gemm]

Prints, writes nothing. A mode other than the three, or no GPU (or no CuPy), is one line and exit 2.
"""
import math
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # this checkout's ctasim and ctahw, not an installed copy


def time_ms(cp, fn, s, reps=20, warm=3):
    for _ in range(warm): fn()
    ev = [(cp.cuda.Event(), cp.cuda.Event()) for _ in range(reps)]
    for a, b in ev:
        a.record(s); fn(); b.record(s)
    s.synchronize()
    ts = sorted(cp.cuda.get_elapsed_time(a, b) for a, b in ev)
    return ts[len(ts) // 2]


def main(argv=None) -> int:
    from ctasim.cliargs import OneLineParser

    ap = OneLineParser(prog="python bench/hw/epilogue_rowwise_probe.py", description=__doc__.splitlines()[0])
    ap.add_argument("mode", nargs="?", default="all", choices=("all", "row", "gemm"))
    mode = ap.parse_args(argv).mode
    from ctahw.device import no_gpus

    if no_gpus("epilogue_rowwise_probe", 1):  # no CuPy, no GPU, not sm_90: one line
        return 2

    import cupy as cp

    from ctahw import rowwise
    from ctahw.device import random_bf16
    from ctahw.gemm import CutlassGemm, make_backend

    rng = cp.random.default_rng(1)
    s = cp.cuda.Stream(non_blocking=True)
    big = cp.empty(1 << 30, dtype=cp.uint8); big2 = cp.empty_like(big)
    with s:
        t = time_ms(cp, lambda: big2.__setitem__(slice(None), big), s)
    print(f"d2d copy 1 GiB: {2 * big.nbytes / t / 1e6:.0f} GB/s (read+write)")
    del big, big2
    if mode in ("all", "row"):
        for cols in (4096, 8192, 14336, 28672):
            rows = max(8192, (1 << 29) // (cols * 2) // 2)
            sets = [(random_bf16((rows, cols), cp, rng), cp.empty((rows, cols), dtype=cp.uint16)) for _ in range(2)]
            cp.cuda.Device().synchronize()
            for target in (4, 6, 8):
                rowwise.TARGET_VECS_PER_THREAD = target
                line = []
                for op in ("layernorm", "rmsnorm"):
                    i = [0]
                    def run():
                        x, o = sets[i[0] % 2]; i[0] += 1
                        rowwise.rowwise(op, x, o, rows, cols, s)
                    t = time_ms(cp, run, s)
                    line.append(f"{op} {t*1e3:.1f} us {2 * rows * cols * 2 / t / 1e6:.0f} GB/s")
                vec, _, nv = rowwise.launch_config(cols)
                k = rowwise._kernel(cp, 0, vec, nv, 0)  # the layernorm kernel just run (compiled once, cached)
                print(f"cols={cols} rows={rows} target={target} cfg={rowwise.launch_config(cols)} "
                      f"regs={k.num_regs}: " + "; ".join(line))
            del sets
    if mode in ("all", "gemm"):
        g = CutlassGemm(0)
        cb = make_backend("cublas", 0)
        for (m, n, k) in ((8192, 8192, 8192), (8192, 28672, 4096), (8192, 4096, 14336)):
            a, w = random_bf16((m, k), cp, rng), random_bf16((n, k), cp, rng, 1 / math.sqrt(k))
            c = random_bf16((m, n), cp, rng); d = cp.empty((m, n), dtype=cp.uint16)
            cp.cuda.Device().synchronize()
            variants = [(), ("gelu",), ("silu",), ("relu",), ("residual",)]
            res = {v: [] for v in variants}
            for r in range(4):
                for ops in (variants if r % 2 == 0 else variants[::-1]):
                    t = time_ms(cp, lambda: g(a, w, d, m, n, k, s, epilogue=ops, c=c if ops == ("residual",) else None), s,
                                reps=10, warm=2)
                    res[ops].append(2 * m * n * k / t / 1e9)
            t = time_ms(cp, lambda: cb(a, w, d, m, n, k, s), s)
            print(f"GEMM {m}x{n}x{k} TFLOP/s (median of 4 interleaved rounds): "
                  + " ".join(f"{'+'.join(v) or 'plain'}={sorted(x)[1]:.0f}" for v, x in res.items())
                  + f" cublas={2*m*n*k/t/1e9:.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
