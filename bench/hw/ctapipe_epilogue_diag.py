"""One-GPU diagnosis of the fused-epilogue CTA-pipelined kernels: which combinations run concurrently.

    python bench/hw/ctapipe_epilogue_diag.py OUT.jsonl

Both kernels of a variant's 2-GPU plan on GPU 0 (``ctahw.onegpu.OneGpuRunner``, what ``ctapipe_onegpu.py`` runs),
side by side or one after the other (``serial``), with the producer's and the consumer's fused epilogue ops on and
off, on square chains and the MLP block's pair; per combination one checked run, three more back to back, the
output checked again against the bf16 reference. Prints one JSON line per combination and writes them all to
OUT.jsonl. Not timed. An OUT.jsonl that cannot be written, or no GPU (or no CuPy), is one line and exit 2 before
anything runs.
"""

from __future__ import annotations

import json
import math
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # this checkout's ctasim and ctahw, not an installed copy


def main(argv=None) -> int:
    from ctasim.cliargs import OneLineParser, parse_outputs

    ap = OneLineParser(prog="python bench/hw/ctapipe_epilogue_diag.py", description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    args = parse_outputs(ap, argv, files=("out",))
    from ctahw.device import no_gpus

    if no_gpus("ctapipe_epilogue_diag", 1):  # no CuPy, no GPU, not sm_90: one line
        return 2

    import cupy as cp

    from ctahw.device import output_error, poison, random_bf16
    from ctahw.executor import reference_bf16
    from ctahw.onegpu import OneGpuRunner
    from ctasim.spec import Layer, Strategy, Workload, load_hardware
    from ctasim.strategies import build_plans
    from ctasim.variants import VARIANTS, clusters_of

    out = []

    def run(shape, p_op, c_op, serial, variant="cutlass_ctapipe"):
        M, K0, N0, N1 = shape
        l0 = Layer(m=M, k=K0, n=N0, epilogue=(p_op,) if p_op else ())
        l1 = Layer(m=M, k=N0, n=N1, epilogue=(c_op,) if c_op else ())
        wl = Workload("d", "bf16", (l0, l1))
        plan = build_plans(Strategy(kind="ctapipe", variant=variant), wl, load_hardware("h200-x2-calibrated"), 2,
                           "d")[0]
        v = VARIANTS[variant]
        rng = cp.random.default_rng(1)
        x = random_bf16((M, K0), cp, rng); ws = [random_bf16((l.n, l.k), cp, rng, 1 / math.sqrt(l.k)) for l in (l0, l1)]
        ref = reference_bf16(cp, x, ws, (l0, l1))
        eps = {i: l.epilogue for i, l in enumerate((l0, l1)) if l.epilogue}
        row = dict(shape=shape, p=p_op, c=c_op, serial=serial, variant=variant)
        t0 = time.time()
        r = None
        try:
            r = OneGpuRunner(plan, M, [K0, N0, N1], x, ws, clusters=clusters_of(plan, v), timeout_ns=1_000_000_000,
                             serial=serial, **({"epilogues": eps} if eps else {}), **({"residual": x} if c_op == "residual" else {}))
            poison(r.out)
            for b in r.inputs.values():
                if b is not x: poison(b)
            r.sync(); r.launch(); r.sync(); r.check_errors()
            row["rel"] = output_error(cp, r.out, ref)
            for _ in range(3):
                r.launch(); r.sync()
            r.check_errors(); row["rel_last"] = output_error(cp, r.out, ref); row["ok"] = row["rel_last"] < 1e-2
        except Exception as e:
            row["ok"] = False; row["err"] = f"{type(e).__name__}: {str(e)[:160]}"
            if r is not None: r.sync()
        row["s"] = round(time.time() - t0, 2)
        print(json.dumps(row), flush=True); out.append(row)
        del r; cp.get_default_memory_pool().free_all_blocks()

    MLP = (1024, 2048, 7168, 2048); SQ = (1024, 1024, 1024, 1024); SQ2 = (1024, 2048, 2048, 2048)
    for shape in (SQ, SQ2, MLP):
        for p_op, c_op in ((None, None), ("gelu", None), (None, "residual"), ("gelu", "residual")):
            run(shape, p_op, c_op, False)
    for p_op, c_op in ((None, None), ("gelu", "residual"), ("silu", "residual"), ("relu", "residual")):
        run(MLP, p_op, c_op, True)
    run(MLP, "gelu", "residual", True, "cutlass_ctapipe_g21")
    run(MLP, "gelu", "residual", False, "cutlass_ctapipe_g21")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(json.dumps(r) for r in out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
