"""Device probe (one GPU): what each fused activation adds to a GEMM tile, the measurement behind the profile's
``activation_epilogue_ns_per_element`` (``ctahw calibrate`` measures it for the erf-GeLU only).

    python bench/hw/activation_probe.py OUT.csv [--ops gelu,silu,relu] [--ms 4096,16384] [--reps 10] [--n 28672 --k 8192]

GEMM1 of the MLP block (M x N x K, default M x 28672 x 8192) plain and with each fused activation (``--ops`` may name
``residual`` too: D = A @ W^T + C, the down projection's epilogue; or ``relu_input``: the plain GEMM on A with its
negative elements zeroed, as the down projection of a ReLU block reads it), CUTLASS at its tuned tile order,
every run rested 300 ms (``ctahw.calibrate.activation_probe``); per op the cost per accumulator element
(``ctahw.calibrate.activation_epilogue_cost``). Writes the rows (m, item, per_op_ms) and prints the costs. Bad values,
an unwritable OUT.csv and no GPU (or no CuPy) get one line and exit 2; nothing is written unless every item ran.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # this checkout's ctasim and ctahw, not an installed copy

OPS = ("gelu", "silu", "relu", "residual", "relu_input")


def main(argv=None) -> int:
    from ctasim.cliargs import OneLineParser, parse_outputs

    ap = OneLineParser(prog="python bench/hw/activation_probe.py", description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--ops", default="gelu,silu,relu")
    ap.add_argument("--ms", default="4096,16384")
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--n", type=int, default=28672, help="the GEMM's N (a multiple of 256)")
    ap.add_argument("--k", type=int, default=8192, help="the GEMM's K (a multiple of 64)")
    args = parse_outputs(ap, argv, files=("out",))
    ops = [o for o in args.ops.split(",") if o]
    try:
        ms = [int(x) for x in args.ms.split(",")]
    except ValueError:
        ms = []
    if not ops or set(ops) - set(OPS) or len(set(ops)) != len(ops):
        print(f"activation_probe: --ops must name some of {', '.join(OPS)} once each, got {args.ops!r}", file=sys.stderr)
        return 2
    if not ms or min(ms) < 128 or any(m % 128 for m in ms) or args.reps < 1:
        print(f"activation_probe: --ms must be multiples of 128 and --reps >= 1 (got {args.ms!r}, {args.reps})",
              file=sys.stderr)
        return 2
    if args.n < 256 or args.n % 256 or args.k < 64 or args.k % 64:
        print(f"activation_probe: --n must be a multiple of 256 and --k of 64 (got {args.n}, {args.k})", file=sys.stderr)
        return 2
    if args.out.suffix != ".csv" or not args.out.parent.is_dir() or args.out.is_dir():
        print(f"activation_probe: {args.out}: a .csv path in an existing folder expected", file=sys.stderr)
        return 2
    from ctahw.device import no_gpus

    if no_gpus("activation_probe", 1):  # no CuPy, no GPU, not sm_90: one line
        return 2

    import pandas as pd

    from ctahw.baselines import Timed, tune_schedule
    from ctahw.calibrate import activation_epilogue_cost, activation_probe, relu_input_factor
    from ctahw.device import random_bf16, require_cupy, require_gpus
    from ctahw.gemm import CutlassGemm
    from ctasim.results import staged_file

    cp = require_cupy()
    found = require_gpus(1)
    g = CutlassGemm(0)
    timed = Timed([0], gate_ms=2.0)
    rng = cp.random.default_rng(1)
    for m in ms:  # the executor's tile order for each shape
        with cp.cuda.Device(0):
            a = random_bf16((m, args.k), cp, rng)
            w = random_bf16((args.n, args.k), cp, rng, 1 / 90.5)
            d = cp.empty((m, args.n), dtype=cp.uint16)
        g.schedule[(m, args.n, args.k)], _ = tune_schedule(g, timed, a, w, d, m, args.n, args.k, timed.compute[0], 2)
        del a, w, d
    rows = activation_probe(g, ms, ops, reps=args.reps, n=args.n, k=args.k)
    for op in ops:
        if op == "relu_input":  # not an epilogue: the time against the plain GEMM's
            print("relu_input: " + ", ".join(f"M={r['m']} {r['relu_input_ms']:.3f} vs plain {r['plain_ms']:.3f} ms"
                                             for r in relu_input_factor(rows)[1]))
            continue
        cost, per = activation_epilogue_cost(rows, slots=found[0].sm_count, fused=f"gemm1_{op}", n=args.n)
        print(f"{op}: {cost:.4f} ns per element (" + ", ".join(f"M={r['m']} {r['per_tile_ns']:.0f} ns/tile" for r in per)
              + ")")
    with staged_file(args.out) as tmp:
        pd.DataFrame(rows).to_csv(tmp, index=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
