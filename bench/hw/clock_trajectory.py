"""Device probe (one GPU): how a rested GPU's GEMM rate falls once a run keeps it busy (the power cap's onset).

    python bench/hw/clock_trajectory.py OUT.csv [--rest-s 2.0] [--run-ms 400] [--rounds 3] [--kernels NAME=MxNxK[+OP],...]

For each kernel below, ``--rounds`` times: the GPU rests ``--rest-s`` seconds (host sleep, nothing queued), then
the kernel is launched back to back for about ``--run-ms`` with a CUDA event between launches, so each launch's
duration and its start since the run began are known. A launch's duration divided by the median of the first
launches of the round is the slowdown the run has built up by then (1 on a rested GPU at full clock).

Kernels (the project's CUTLASS GEMM, 128x256 cooperative, persistent, tuned tile order not applied):
* ``square-16384``: 16384 x 8192 x 8192 (2.2 TFLOP, ~2.7 ms rested);
* ``square-4096``: 4096 x 8192 x 8192 (~0.7 ms);
* ``gelu-16384``: 16384 x 28672 x 8192 with the fused GeLU (~10 ms).

``--kernels`` times others instead: ``name=MxNxK`` with ``+gelu``, ``+silu`` or ``+relu`` for a fused activation, or
one of ``ctahw.calibrate.INPUT_OPS`` for the plain GEMM on changed operands: ``+relu_input`` (a ReLU'd A, about half
of A zero), ``+relu_both`` (A and W ReLU'd), ``+zero_input`` (A all zero).

Rows: kernel, round, i, t_start_ms (since the round's first launch began), dur_ms. The measurement is
``ctahw.calibrate.clock_trajectory`` (what ``ctahw calibrate`` runs too). Bad values, an OUT.csv that cannot be
written and no GPU (or no CuPy) are one line and exit 2 before anything runs.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # this checkout's ctasim and ctahw, not an installed copy

from ctahw.calibrate import FUSED_ACTIVATIONS, INPUT_OPS  # noqa: E402
from ctahw.gemm import parse_mnk  # noqa: E402

KERNEL_OPS = FUSED_ACTIVATIONS + INPUT_OPS
"""What ``--kernels`` may add to a shape: a fused activation, or a change of the operands (not an epilogue)."""


def parse_kernels(text: str) -> dict[str, tuple]:
    """``"square-16384=16384x8192x8192,relu-16384=16384x8192x8192+relu_input"`` -> {name: (m, n, k, ops)};
    ValueError naming the bad item."""
    out: dict[str, tuple] = {}
    for item in text.split(","):
        name, eq, rest = item.strip().partition("=")
        if not eq or not name:
            raise ValueError(f"--kernels: {item!r} is not NAME=MxNxK[+OP]")
        shape, *ops = rest.split("+")
        mnk = parse_mnk(shape, f"--kernels: {item.strip()!r}")
        bad = [o for o in ops if o not in KERNEL_OPS]
        if bad or len(ops) > 1:
            raise ValueError(f"--kernels: {item!r}: at most one of {', '.join(KERNEL_OPS)} after the shape")
        if name in out:
            raise ValueError(f"--kernels: {name!r} twice")
        out[name] = (*mnk, tuple(ops))
    return out


def main(argv=None) -> int:
    from ctasim.cliargs import OneLineParser, parse_outputs

    ap = OneLineParser(prog="python bench/hw/clock_trajectory.py", description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--rest-s", type=float, default=2.0)
    ap.add_argument("--run-ms", type=float, default=400.0)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--kernels", default=None, help="NAME=MxNxK[+OP],... (default: the calibration's three)")
    args = parse_outputs(ap, argv, files=("out",))
    try:
        kernels = parse_kernels(args.kernels) if args.kernels is not None else None
        if args.rounds < 1 or not args.rest_s >= 0 or not args.run_ms > 0:
            raise ValueError("--rounds must be >= 1, --rest-s >= 0 and --run-ms > 0")
    except ValueError as e:
        print(f"clock_trajectory: {e}", file=sys.stderr)
        return 2
    from ctahw.device import no_gpus

    if no_gpus("clock_trajectory", 1):  # no CuPy, no GPU, not sm_90: one line
        return 2

    import cupy as cp
    import pandas as pd

    from ctahw.calibrate import TRAJECTORY_KERNELS, clock_trajectory
    from ctahw.gemm import CutlassGemm

    s = cp.cuda.Stream(non_blocking=True)
    rows = clock_trajectory(CutlassGemm(0), s, kernels or TRAJECTORY_KERNELS, rest_s=args.rest_s, run_ms=args.run_ms,
                            rounds=args.rounds, log=lambda x: print(x, flush=True))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows).to_csv(args.out, index=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
