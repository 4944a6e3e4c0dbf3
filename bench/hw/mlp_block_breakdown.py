"""Device probe (one H200): where the MLP block's time goes, op by op, and whether a long run slows down.

    python bench/hw/mlp_block_breakdown.py OUT.csv [--ms 4096,16384] [--reps 9] [--rest-ms 0] [--model NAME]
                                           [--no-repeats] [--tune-rounds N]

``--model NAME`` (a model of ``specs/models/``, e.g. ``llama3.1-70b``) times that model's block instead, as ``ctahw
run`` runs it: a SwiGLU block with ``epilogue_fused = false`` (GEMM1 (N = 2 x intermediate) plain, the swiglu kernel
(``ctahw.rowwise.epilogue``), GEMM2 with the residual, RMSNorm: items ``gemm1_plain``, ``swiglu``,
``gemm2_residual``, ``gemm2_plain``, ``rmsnorm``, the cuBLAS GEMMs, ``square_gemm`` at H x H, ``block``), or a block
with its activation fused into GEMM1 (GeLU or ReLU: items ``gemm1_gelu`` / ``gemm1_relu`` and ``gemm1_<act>_x<r>``).
GEMM2 reads GEMM1's output as the block leaves it (the activation applied).

The registered sequential MLP block (``reg-mlp``: 8192 -> 28672 with GeLU -> 8192 with the residual, LayerNorm)
measured 22.44 ms at M = 16384 against 19.15 ms predicted (-14.7%), while the square chains were within 3%. This
probe times, in the same harness as ``ctahw run EXPERIMENT`` (``ctahw.baselines.Timed``, burst regime: each timed
run behind a sleep gate on a synchronised GPU), for each M:

* every op of the block alone: GEMM1 (N = 28672) plain and with the fused GeLU, GEMM2 (K = 28672) plain and with
  the fused residual, the LayerNorm; cuBLAS on the same two GEMM shapes; the square 8192 GEMM of the same M (the
  shape the profile's kernel config was measured on);
* the whole block as the executor runs it;
* GEMM1 + GeLU repeated 1, 2, 4 and 8 times back to back in one timed run (per-GEMM time against run length: a
  clock that drops under sustained power shows as a rising per-GEMM time); ``--no-repeats`` leaves the repeated runs
  out (a large GEMM1 repeated 8 times is busy past the clock's onset and heats the GPU for the items after it).

Each row: m, item, repeats, median_ms, per_op_ms, tflops, gbps (the memory passes: bytes read + written), order (the
CUTLASS tile order the item ran: :func:`item_order`), samples. CUTLASS tile orders are tuned per shape first
(``tune_schedule``, as the executor does, ``--tune-rounds`` timed runs of each order, by default ``ctahw run``'s;
before 2026-12-08 two, which landed on orders up to 2.6% slower than the best where orders lie close, differently from
call to call: registered plan 106; at four still up to 1.8%: registered plan 107). Times are medians of ``--reps`` runs, items interleaved round by round.
With ``--rest-ms 0`` a run follows the previous one after the harness's 3 ms gate only, so after a long item the GPU
is not rested (2026-12-01: the SW power cap was active through the M = 16384 items); ``--rest-ms 300`` rests it.
An unknown ``--model``, an OUT.csv that cannot be written and no GPU (or no CuPy) are one line and exit 2 before
anything runs.
"""

from __future__ import annotations

import math
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # this checkout's ctasim and ctahw, not an installed copy


def item_order(item: str, gemm1: str, gemm2: str, square: str) -> str:
    """The CUTLASS tile order (``ctahw.gemm.schedule_name``) an item runs, from the tuned orders of GEMM1's shape,
    GEMM2's and the square GEMM's: ``gemm1_*`` GEMM1's, ``gemm2_*`` GEMM2's, ``square_gemm`` the square one's,
    ``block`` GEMM1's and GEMM2's joined by ``+``; empty for the cuBLAS GEMMs and the memory passes."""
    if item.endswith("_cublas"):
        return ""
    if item.startswith("gemm1_"):
        return gemm1
    if item.startswith("gemm2_"):
        return gemm2
    return {"square_gemm": square, "block": f"{gemm1}+{gemm2}"}.get(item, "")


def main(argv=None) -> int:
    from ctahw.experiment import RunConfig
    from ctasim.cliargs import OneLineParser, parse_outputs, positive_ints

    ap = OneLineParser(prog="python bench/hw/mlp_block_breakdown.py", description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--ms", type=positive_ints, default="4096,16384")
    ap.add_argument("--reps", type=int, default=9)
    ap.add_argument("--rest-ms", type=float, default=0.0,
                    help="host sleep before every timed run (0: the executor's harness alone, a 3 ms gate)")
    ap.add_argument("--model", default="", help="a model of specs/models/: its block (swiglu unfused, gelu or relu fused)")
    ap.add_argument("--no-repeats", action="store_true", help="leave out GEMM1 repeated back to back")
    ap.add_argument("--tune-rounds", type=int, default=RunConfig.tune_rounds,
                    help="timed runs of each CUTLASS tile order when tuning (default: ctahw run's)")
    args = parse_outputs(ap, argv, files=("out",))
    if args.tune_rounds < 1:
        ap.error(f"--tune-rounds: {args.tune_rounds} is not a positive integer")
    model = None
    if args.model:
        from ctasim.spec import SpecError, load_model

        try:
            model = load_model(args.model)
        except SpecError as e:
            ap.error(f"--model: {e}")
    from ctahw.device import no_gpus

    if no_gpus("mlp_block_breakdown", 1):  # no CuPy, no GPU, not sm_90: one line
        return 2

    import pandas as pd

    from ctahw import rowwise
    from ctahw.baselines import Chain, Timed, tune_schedule
    from ctahw.device import summarize
    from ctahw.gemm import CutlassGemm, make_backend, schedule_name

    timed = Timed([0], gate_ms=3.0)
    cp, s = timed.cp, timed.compute[0]
    g, cb = CutlassGemm(0), make_backend("cublas", 0)
    data = Chain(cp, 20261201)
    H, F, gated, norm, act_op = 8192, 28672, False, "layernorm", "gelu"
    if model is not None:
        l0, l1 = model.workload.layers
        H, F, gated, norm = l0.k, l0.out_n, l0.gated, l1.rowwise or "rmsnorm"
        act_op = next((op for op in l0.epilogue if op in ("gelu", "relu")), "gelu")
    N1 = 2 * F if gated else F  # GEMM1's columns
    rows = []
    for m in args.ms:
        x = data.rand(0, (m, H), salt=1)
        w1 = data.rand(0, (N1, H), 1 / math.sqrt(H), salt=2)
        w2 = data.rand(0, (H, F), 1 / math.sqrt(F), salt=3)
        wsq = data.rand(0, (H, H), 1 / math.sqrt(H), salt=4)
        with cp.cuda.Device(0):
            g1 = cp.empty((m, N1), dtype=cp.uint16) if gated else None  # GEMM1's output before the swiglu kernel
            y1 = cp.empty((m, F), dtype=cp.uint16)
            # GEMM1 without its activation writes elsewhere: GEMM2 always reads the block's activated y1
            y1s = cp.empty((m, F), dtype=cp.uint16) if not gated else None
            y2 = cp.empty((m, H), dtype=cp.uint16)
            z = cp.empty((m, H), dtype=cp.uint16)
            ysq = cp.empty((m, H), dtype=cp.uint16)
        g.schedule[(m, N1, H)], _ = tune_schedule(g, timed, x, w1, g1 if gated else y1s, m, N1, H, s,
                                                  args.tune_rounds)
        with cp.cuda.Device(0):  # y1 as the block leaves it (activated) before GEMM2's order is tuned on it
            if gated:
                g(x, w1, g1, m, N1, H, s)
                rowwise.epilogue(("swiglu",), g1, y1, m, N1, 256, stream=s)
            else:
                g(x, w1, y1, m, F, H, s, epilogue=(act_op,))
            s.synchronize()
        for (mm, n, k), a, w, d in (((m, H, F), y1, w2, y2), ((m, H, H), x, wsq, ysq)):
            g.schedule[(mm, n, k)], _ = tune_schedule(g, timed, a, w, d, mm, n, k, s, args.tune_rounds)
        flops1, flops2, flopsq = 2.0 * m * N1 * H, 2.0 * m * H * F, 2.0 * m * H * H
        tuned = [schedule_name(g.schedule[shape]) for shape in ((m, N1, H), (m, H, F), (m, H, H))]

        def gemm1(ep=(act_op,)):
            if gated:
                return lambda: g(x, w1, g1, m, N1, H, s)
            return lambda: g(x, w1, y1 if ep else y1s, m, F, H, s, epilogue=ep)

        def swiglu():
            return lambda: rowwise.epilogue(("swiglu",), g1, y1, m, N1, 256, stream=s)

        def gemm2(ep=("residual",)):
            return lambda: g(y1, w2, y2, m, H, F, s, epilogue=ep, c=x if ep else None)

        def norm_op():
            rowwise.rowwise(norm, y2, z, m, H, s)

        # GEMM1's activation: the swiglu kernel after the plain GEMM, or GeLU fused
        act = ("swiglu", 0.0, [swiglu()]) if gated else (f"gemm1_{act_op}", flops1, [gemm1()])
        items = {
            "gemm1_plain": (1, flops1, [gemm1(())]),
            act[0]: (1, act[1], act[2]),
            "gemm1_cublas": (1, flops1, [lambda: cb(x, w1, g1 if gated else y1s, m, N1, H, s)]),
            "gemm2_plain": (1, flops2, [gemm2(())]),
            "gemm2_residual": (1, flops2, [gemm2()]),
            "gemm2_cublas": (1, flops2, [lambda: cb(y1, w2, y2, m, H, F, s)]),
            norm: (1, 0.0, [norm_op]),
            "square_gemm": (1, flopsq, [lambda: g(x, wsq, ysq, m, H, H, s)]),
            "block": (1, flops1 + flops2, [gemm1()] + ([swiglu()] if gated else []) + [gemm2(), norm_op]),
        }
        for r in () if args.no_repeats else (2, 4) if gated else (2, 4, 8):
            items[f"gemm1_x{r}" if gated else f"gemm1_{act_op}_x{r}"] = (r, flops1 * r, [gemm1()] * r)
        samples = {name: [] for name in items}
        order = list(items)
        for rep in range(args.reps + 1):  # one untimed round first
            for name in (order if rep % 2 == 0 else order[::-1]):
                fns = items[name][2]

                def enqueue(t, fns=fns):
                    for fn in fns:
                        t.part("compute", 0, s, fn)
                    return [(s, 0)]

                if args.rest_ms > 0:
                    time.sleep(args.rest_ms * 1e-3)
                ms, _ = timed.run(enqueue)
                if rep:
                    samples[name].append(ms)
        # HBM bytes of the memory passes (read + write): what their GB/s column is taken over
        nbytes = {"swiglu": 2.0 * m * (N1 + F), norm: 2.0 * 2 * m * H}
        for name, (rep_n, flops, _) in items.items():
            med = summarize(samples[name]).median_ms
            gbps = nbytes[name] / (med * 1e6) if name in nbytes else float("nan")
            rows.append(dict(m=m, rest_ms=args.rest_ms, item=name, repeats=rep_n, median_ms=med, per_op_ms=med / rep_n,
                             tflops=flops / (med * 1e9) if flops else float("nan"), gbps=gbps,
                             order=item_order(name, *tuned), samples=";".join(f"{v:.4f}" for v in samples[name])))
            print(f"M={m:>6} {name:>16}: {med:9.4f} ms" + (f" {flops / (med * 1e9):6.1f} TFLOP/s" if flops else "")
                  + (f" {gbps:7.1f} GB/s" if name in nbytes else ""), flush=True)
        del x, w1, w2, wsq, g1, y1, y1s, y2, z, ysq
        cp.get_default_memory_pool().free_all_blocks()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows).to_csv(args.out, index=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
