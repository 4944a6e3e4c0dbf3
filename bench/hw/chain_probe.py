"""Device probe (one GPU): the chain kernel's protocol overhead and intra-GPU CTA-pipelining against cuBLAS.

    python bench/hw/chain_probe.py OUT_DIR [--reps 9] [--rest-ms 250]

1. ``overhead.csv``: one layer (L = 1, M x 8192 x 8192, M = 4096, 16384): the chain kernel with the protocol
   (stores completed, a GPU-scope release per tile; layer 0 waits on nothing) against the same kernel with the
   protocol off, and the project's plain CUTLASS GEMM (its default tile order and the chain order's equivalent,
   along M / swizzle 8) for context.
(``--designs``: only ``designs.csv``, the chain kernel's three designs at M = 4096, 16384, timed and traced.)
(``--mlp``: only ``mlp.csv``: the chain kernel's fused epilogues (ABI 4) on the MLP block's two GEMMs alone, M x 8192
-> 28672 with GeLU and M x 28672 -> 8192 with the residual, M = 4096, 16384: with the protocol (GPU scope; the
layer signals its counters), with it off, and the project's plain fused-epilogue CUTLASS GEMM (its default tile order
and along M / swizzle 8), interleaved, rested, medians; one traced run each for the per-tile mainloop.)
(``--fold``: only ``fold.csv``: a block boundary, FC2 (M x 28672 -> 8192, + residual) then the next block's FC1
(LayerNorm, 8192 -> 28672, GeLU), as a ring pair of one-layer chain kernels on this GPU (66 CTAs each), M = 4096,
16384: with the LayerNorm fold (ops residual_stats, lnfold_gelu) against the same pair with ops residual, gelu and no
LayerNorm, interleaved, rested, medians; the LayerNorm kernel alone (ctahw.rowwise, M x 8192) for context; the fold
checked against fp32; one traced run of each pair: per layer the median tile's mainloop, epilogue and store-to-signal.)
(``--ring``: only ``ring.csv`` and ``ring-tiles-*.csv``: 4-layer 8192 chains at M = 4096, 16384, the chain kernel
(one kernel, every SM) against the ring's two kernels on this one GPU (layer l in kernel l mod 2, half the SMs each,
system-scope acquire / release, each output stored into the other kernel's buffers), timed interleaved and traced.)

2. ``vs_cublas.csv``: 2-layer 8192 chains, M = 1024 .. 16384: the chain kernel against the two layers one after
   another with cuBLAS (``cublasGemmEx``) and with the plain CUTLASS GEMM (heuristic raster / swizzle 8).

Every timed run is behind a ``--rest-ms`` host sleep and the 3 ms gate of ``ctahw.baselines.Timed`` (burst
regime); variants of one shape run interleaved (A B C A B C ...); medians of ``--reps``. The chain kernel's error
record and ticket count are checked after every shape, and each variant's output once against fp32. An OUT_DIR that
cannot be written, or no GPU (or no CuPy), is one line and exit 2 before anything runs.
"""

from __future__ import annotations

import dataclasses
import math
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # this checkout's ctasim and ctahw, not an installed copy

OVERHEAD_MS = (4096, 16384)
CHAIN_MS = (1024, 2048, 3072, 4096, 6144, 8192, 12288, 16384)
H = 8192


def _plan(m: int, layers: int, h: int):
    from ctasim.spec import Strategy, load_hardware, load_workload
    from ctasim.strategies.ctapipe import build_chain

    wl = load_workload("chain2-16384")
    wl = dataclasses.replace(wl, layers=(dataclasses.replace(wl.layers[0], m=m, k=h, n=h),) * layers)
    return build_chain(Strategy(kind="ctapipe", gpus=1), wl, load_hardware("h200-x2-calibrated"), f"m={m}")


def main(argv=None) -> int:
    from ctasim.cliargs import OneLineParser, parse_outputs

    ap = OneLineParser(prog="python bench/hw/chain_probe.py", description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--reps", type=int, default=9)
    ap.add_argument("--rest-ms", type=float, default=250.0)
    ap.add_argument("--quick", action="store_true", help="two shapes per part")
    ap.add_argument("--ring", action="store_true", help="only ring.csv: the ring's two kernels on this GPU")
    ap.add_argument("--mlp", action="store_true", help="only mlp.csv: the fused-epilogue chain kernels, MLP shapes")
    ap.add_argument("--fold", action="store_true",
                    help="only fold.csv: the LayerNorm fold on a ring pair on this GPU against the same pair without it")
    ap.add_argument("--fold-mean", action="store_true",
                    help="only fold-mean.csv: the fold's error against fp32 for rows of growing mean (its variance is "
                         "E[x^2] - mean^2 in fp32)")
    ap.add_argument("--designs", action="store_true",
                    help="only part 3: designs.csv, the three designs at M = 4096, 16384 (2 layers), timed and traced")
    args = parse_outputs(ap, argv, folders=("out",))
    from ctahw.device import no_gpus

    if no_gpus("chain_probe", 1):  # no CuPy, no GPU, not sm_90: one line
        return 2

    import cupy as cp
    import pandas as pd

    from ctahw.baselines import Chain, Timed
    from ctahw.chain import ChainRunner
    from ctahw.device import output_error, poison, reference_chain
    from ctahw.gemm import RASTER_NAMES, make_backend

    args.out.mkdir(parents=True, exist_ok=True)
    timed = Timed([0], 3.0, 0.0, args.rest_ms)
    s0 = timed.compute[0]
    data = Chain(cp, 20261201)
    cutlass, cublas = make_backend("cutlass", 0), make_backend("cublas", 0)
    cutlass_m8, cutlass_h8 = make_backend("cutlass", 0), make_backend("cutlass", 0)
    along_m8 = (next(k for k, v in RASTER_NAMES.items() if v == "along_m"), 8)  # the chain order's equivalent: groups of 8 row-blocks down M
    heuristic8 = (next(k for k, v in RASTER_NAMES.items() if v == "heuristic"), 8)  # the plain GEMM's best order on 24 of 27 shapes

    def interleave(fns: dict, reps: int) -> dict:
        samples = {k: [] for k in fns}
        for _ in range(reps):
            for k, fn in fns.items():
                samples[k].append(timed.run(lambda t, fn=fn: (t.part("compute", 0, s0, fn), [(s0, 0)])[1])[0])
        return samples

    def median(v):
        v = sorted(v)
        return v[len(v) // 2]

    if args.designs:
        return designs(args, timed, s0, data, interleave, median)
    if args.ring:
        return ring(args, timed, s0, data, median)
    if args.mlp:
        return mlp(args, timed, s0, data, interleave, median)
    if args.fold:
        return fold(args, timed, s0, data, median)
    if args.fold_mean:
        return fold_mean(args, data)
    rows = []
    for m in OVERHEAD_MS[:1] if args.quick else OVERHEAD_MS:
        x = data.rand(0, (m, H), salt=1)
        ws = [data.rand(0, (H, H), 1 / math.sqrt(H), salt=2)]
        r = ChainRunner(_plan(m, 1, H), x, ws)
        d = cp.empty((m, H), dtype=cp.uint16)
        ref = reference_chain(cp, x, ws, 0)
        poison(r.x[1:])
        r.launch(stream=s0)
        s0.synchronize()
        r.check_errors()
        err = {"protocol": output_error(cp, r.out, ref)}
        fns = {"protocol": lambda: r.launch(stream=s0), "no_protocol": lambda: r.launch(stream=s0, protocol=False),
               "cutlass_default": lambda: cutlass(x, ws[0], d, m, H, H, s0),
               "cutlass_along_m8": lambda: cutlass_m8(x, ws[0], d, m, H, H, s0)}
        cutlass_m8.schedule[(m, H, H)] = along_m8
        samples = interleave(fns, args.reps)
        r.check_errors()
        for k, v in samples.items():
            rows.append({"m": m, "n": H, "k": H, "variant": k, "median_ms": median(v), "rel_err": err.get(k, math.nan),
                         "samples": ";".join(f"{s:.5f}" for s in v)})
        print(f"overhead M={m}: " + ", ".join(f"{k} {median(v):.4f}" for k, v in samples.items()), file=sys.stderr)
        del r, d, ref
        cp.get_default_memory_pool().free_all_blocks()
    pd.DataFrame(rows).to_csv(args.out / "overhead.csv", index=False)

    rows = []
    for m in CHAIN_MS[::4] if args.quick else CHAIN_MS:
        x = data.rand(0, (m, H), salt=3)
        ws = [data.rand(0, (H, H), 1 / math.sqrt(H), salt=4 + i) for i in range(2)]
        r = ChainRunner(_plan(m, 2, H), x, ws)
        y = [cp.empty((m, H), dtype=cp.uint16) for _ in range(2)]
        ref = reference_chain(cp, x, ws, 0)
        err = {}
        poison(r.x[1:])
        r.launch(stream=s0)
        s0.synchronize()
        r.check_errors()
        err["chain"] = output_error(cp, r.out, ref)

        def seq(g):
            def fn():
                g(x, ws[0], y[0], m, H, H, s0)
                g(y[0], ws[1], y[1], m, H, H, s0)
            return fn

        cutlass_h8.schedule[(m, H, H)] = heuristic8
        for name, g in (("cublas", cublas), ("cutlass", cutlass_h8)):
            poison(y[1])
            seq(g)()
            s0.synchronize()
            err[f"sequential_{name}"] = output_error(cp, y[1], ref)
        samples = interleave({"chain": lambda: r.launch(stream=s0), "sequential_cublas": seq(cublas),
                              "sequential_cutlass": seq(cutlass_h8)}, args.reps)
        r.check_errors()
        for k, v in samples.items():
            rows.append({"m": m, "h": H, "layers": 2, "variant": k, "median_ms": median(v), "rel_err": err[k],
                         "samples": ";".join(f"{s:.5f}" for s in v)})
        print(f"chain M={m}: " + ", ".join(f"{k} {median(v):.4f}" for k, v in samples.items()), file=sys.stderr)
        del r, y, ref
        cp.get_default_memory_pool().free_all_blocks()
    pd.DataFrame(rows).to_csv(args.out / "vs_cublas.csv", index=False)
    return 0


def designs(args, timed, s0, data, interleave, median) -> int:
    """Part 3: the chain kernel's designs (tickets; static 1x1; static 2x1) on 2-layer 8192 chains, interleaved and
    rested, then one traced run each: per layer the median mainloop (MMA begin, or inputs visible, to mainloop end)."""
    import cupy as cp
    import pandas as pd

    from ctahw.chain import DESIGNS, ChainRunner
    from ctahw.device import output_error, poison, reference_chain

    rows = []
    for m in (4096, 16384):
        x = data.rand(0, (m, H), salt=5)
        ws = [data.rand(0, (H, H), 1 / math.sqrt(H), salt=6 + i) for i in range(2)]
        ref = reference_chain(cp, x, ws, 0)
        runners = {d: ChainRunner(_plan(m, 2, H), x, ws, design=d) for d in DESIGNS}
        err = {}
        for d, r in runners.items():
            poison(r.x[1:])
            r.launch(stream=s0)
            s0.synchronize()
            r.check_errors()
            err[d] = output_error(cp, r.out, ref)
        samples = interleave({d: (lambda r=r: r.launch(stream=s0)) for d, r in runners.items()}, args.reps)
        for d, r in runners.items():
            r.check_errors()
            t = ChainRunner(_plan(m, 2, H), x, ws, design=d, trace=True)
            t.launch(stream=s0)
            s0.synchronize()
            t.check_errors()
            tiles = t.read_trace().tiles
            ml = (tiles["t_mainloop_end"] - tiles["t_acquire"]).groupby(tiles["layer"]).median()
            rows.append({"m": m, "design": d, "grid": r.grid, "median_ms": median(samples[d]), "rel_err": err[d],
                         "mainloop_l0_ns": float(ml.get(0, math.nan)), "mainloop_l1_ns": float(ml.get(1, math.nan)),
                         "samples": ";".join(f"{v:.5f}" for v in samples[d])})
            del t
        print(f"designs M={m}: " + ", ".join(f"{r['design']} {r['median_ms']:.4f} (l0 {r['mainloop_l0_ns']:.0f}, "
                                              f"l1 {r['mainloop_l1_ns']:.0f} ns)" for r in rows if r["m"] == m),
              file=sys.stderr)
        del runners, ref
        cp.get_default_memory_pool().free_all_blocks()
    pd.DataFrame(rows).to_csv(args.out / "designs.csv", index=False)
    return 0


def _one_layer_plan(m: int, k: int, n: int):
    """One M x N x K layer in one chain kernel on GPU 0 (``build_ring`` with one GPU: the kernel's own output slot,
    GPU-scope signals); the fused op is the runner's (``ChainRunner(epilogues=...)``), not the plan's."""
    from ctasim.spec import Strategy, load_hardware, load_workload
    from ctasim.strategies.ctapipe import build_ring

    wl = load_workload("mlp-block")
    layer = dataclasses.replace(wl.layers[0], m=m, k=k, n=n, epilogue=(), rowwise="")
    wl = dataclasses.replace(wl, layers=(layer,))
    return build_ring(Strategy(kind="ctapipe", gpus=1), wl, load_hardware("h200-x2-calibrated"), f"m={m}")


def mlp(args, timed, s0, data, interleave, median) -> int:
    """The MLP block's GEMMs in the chain kernel with their fused ops, protocol on / off, against the plain fused GEMM."""
    import cupy as cp
    import pandas as pd

    from ctahw.chain import ChainRunner
    from ctahw.device import bf16_bits_to_f32, output_error
    from ctahw.gemm import RASTER_NAMES, make_backend
    from ctahw.rowwise import reference_epilogue

    FFN = 28672
    along_m8 = (next(k for k, v in RASTER_NAMES.items() if v == "along_m"), 8)
    rows = []
    for m in (4096, 16384):
        x = data.rand(0, (m, H), salt=41)
        for name, k, n, op in (("fc1_gelu", H, FFN, "gelu"), ("fc2_residual", FFN, H, "residual")):
            a = data.rand(0, (m, k), salt=42) if k != H else x
            w = data.rand(0, (n, k), 1 / math.sqrt(k), salt=43)
            c = x if op == "residual" else None
            plan = _one_layer_plan(m, k, n)
            kw = {"epilogues": {0: op}, "residual": c}
            r = ChainRunner(plan, a, [w], **kw)
            g, g8 = make_backend("cutlass", 0), make_backend("cutlass", 0)
            g8.schedule[(m, n, k)] = along_m8
            d = cp.empty((m, n), dtype=cp.uint16)
            with cp.cuda.Device(0):  # fp32 of the bf16 operands, the op applied as the kernels' epilogue does
                y = bf16_bits_to_f32(a, cp) @ bf16_bits_to_f32(w, cp).T
                ref = reference_epilogue(y, (op,), tile_n=256,
                                         residual_f32=bf16_bits_to_f32(c, cp) if c is not None else None)
                del y
            r.poison_outputs()
            r.launch(stream=s0)
            s0.synchronize()
            r.check_errors()
            err = {"protocol": output_error(cp, r.out, ref)}
            g(a, w, d, m, n, k, s0, epilogue=(op,), c=c)
            s0.synchronize()
            err["cutlass_default"] = output_error(cp, d, ref)
            del ref
            fns = {"protocol": lambda: r.launch(stream=s0), "no_protocol": lambda: r.launch(stream=s0, protocol=False),
                   "cutlass_default": lambda: g(a, w, d, m, n, k, s0, epilogue=(op,), c=c),
                   "cutlass_along_m8": lambda: g8(a, w, d, m, n, k, s0, epilogue=(op,), c=c)}
            samples = interleave(fns, args.reps)
            r.check_errors()
            t = ChainRunner(plan, a, [w], trace=True, **kw)
            t.launch(stream=s0)
            s0.synchronize()
            t.check_errors()
            tiles = t.read_trace().tiles
            ml = float((tiles["t_mainloop_end"] - tiles["t_acquire"]).median())
            for v, smp in samples.items():
                rows.append({"m": m, "gemm": name, "n": n, "k": k, "op": op, "variant": v, "median_ms": median(smp),
                             "rel_err": err.get(v, math.nan), "chain_mainloop_ns": ml if v == "protocol" else math.nan,
                             "samples": ";".join(f"{q:.5f}" for q in smp)})
            print(f"mlp M={m} {name}: " + ", ".join(f"{v} {median(q):.4f}" for v, q in samples.items())
                  + f" (rel err {err['protocol']:.2e}; tile mainloop {ml:.0f} ns)", file=sys.stderr)
            del r, t, d
            cp.get_default_memory_pool().free_all_blocks()
    pd.DataFrame(rows).to_csv(args.out / "mlp.csv", index=False)
    return 0


def _ring_plan(m: int, layers: int, h: int):
    from ctasim.spec import Strategy, load_hardware, load_workload
    from ctasim.strategies.ctapipe import build_ring

    wl = load_workload("chain2-16384")
    wl = dataclasses.replace(wl, layers=(dataclasses.replace(wl.layers[0], m=m, k=h, n=h),) * layers)
    return build_ring(Strategy(kind="ctapipe", gpus=2), wl, load_hardware("h200-x2-calibrated"), f"m={m}")


def ring(args, timed, s0, data, median) -> int:
    """The ring's two kernels on one GPU against the one-kernel chain: 4-layer 8192 chains, interleaved and rested,
    both checked against fp32, then one traced run each (per layer: median mainloop, ticket-to-signal time)."""
    import cupy as cp
    import pandas as pd

    from ctahw.chain import ChainRunner
    from ctahw.device import output_error, reference_chain

    s1 = timed.copy[0]  # a second stream of GPU 0 that the harness's start gates too
    rows, layers = [], 4
    for m in (4096, 16384):
        x = data.rand(0, (m, H), salt=7)
        ws = [data.rand(0, (H, H), 1 / math.sqrt(H), salt=8 + i) for i in range(layers)]
        ref = reference_chain(cp, x, ws, 0)
        runners = {"chain": ChainRunner(_plan(m, layers, H), x, ws),
                   "ring_1gpu": ChainRunner(_ring_plan(m, layers, H), x, ws, devices=(0, 0))}
        enq = {"chain": lambda t: (t.part("compute", 0, s0, lambda: runners["chain"].launch(stream=s0)),
                                   [(s0, 0)])[1],
               "ring_1gpu": lambda t: (t.part("compute", 0, s0, lambda: runners["ring_1gpu"].launch(streams=[s0, s1])),
                                       [(s0, 0), (s1, 0)])[1]}
        err = {}
        for k, r in runners.items():
            r.poison_outputs()
            timed.run(enq[k])
            r.check_errors()
            err[k] = output_error(cp, r.out, ref)
        samples = {k: [] for k in runners}
        for _ in range(args.reps):
            for k in runners:
                samples[k].append(timed.run(enq[k])[0])
        for k, r in runners.items():
            r.check_errors()
            plan = r.plan
            t = ChainRunner(plan, x, ws, trace=True, devices=(0, 0) if k == "ring_1gpu" else None)
            timed.run(lambda tm: (tm.part("compute", 0, s0, lambda: t.launch(streams=[s0, s1][:len(t.gpus)])),
                                  [(s0, 0), (s1, 0)][:len(t.gpus)])[1])
            t.check_errors()
            tiles = t.read_trace().tiles
            tiles.to_csv(args.out / f"ring-tiles-{k}-m{m}.csv", index=False)
            ml = (tiles["t_mainloop_end"] - tiles["t_acquire"]).groupby(tiles["layer"]).median()
            rows.append({"m": m, "h": H, "layers": layers, "variant": k, "grid": ";".join(str(p.grid) for p in r.gpus),
                         "median_ms": median(samples[k]), "rel_err": err[k],
                         "traced_span_ms": float(tiles["t_signal"].max() - tiles["t_start"].min()) / 1e6,
                         **{f"mainloop_l{l}_ns": float(ml.get(l, math.nan)) for l in range(layers)},
                         "samples": ";".join(f"{v:.5f}" for v in samples[k])})
            del t
        print(f"ring M={m}: " + ", ".join(f"{r['variant']} {r['median_ms']:.4f} (rel err {r['rel_err']:.2e})"
                                          for r in rows if r["m"] == m), file=sys.stderr)
        del runners, ref
        cp.get_default_memory_pool().free_all_blocks()
    pd.DataFrame(rows).to_csv(args.out / "ring.csv", index=False)
    return 0


def fold(args, timed, s0, data, median) -> int:
    """The LayerNorm fold's cost inside a pipelined pair: fold ops against plain ops on the same ring pair."""
    import cupy as cp
    import pandas as pd

    from ctahw.chain import (FOLD_PAIRS, ChainRunner, fold_pair_inputs, fold_pair_plan, fold_pair_steps,
                             reference_fold_pair, steps_row)
    from ctahw.device import output_error
    from ctahw.rowwise import layernorm

    FFN = 28672
    s1 = timed.copy[0]
    rows = []
    for m in (4096, 16384):
        x, res, ws, gamma, beta = fold_pair_inputs(cp, data, m, H, FFN, salt=51)
        plan = fold_pair_plan(m, H, FFN)
        runners = {"fold": ChainRunner(plan, x, ws, devices=(0, 0), residual=res, layernorm=(gamma, beta),
                                       epilogues=FOLD_PAIRS["fold"]),
                   "no_layernorm": ChainRunner(plan, x, ws, devices=(0, 0), residual=res,
                                               epilogues=FOLD_PAIRS["no_layernorm"])}
        with cp.cuda.Device(0):  # fp32: y = res + x W2^T stored as bf16, then GeLU(LayerNorm(y) W1^T)
            ref = reference_fold_pair(cp, x, res, ws, gamma, beta)
        enq = {k: (lambda t, r=r: (t.part("compute", 0, s0, lambda: r.launch(streams=[s0, s1])), [(s0, 0), (s1, 0)])[1])
               for k, r in runners.items()}
        lnout = cp.empty((m, H), dtype=cp.uint16)  # LayerNorm of an M x 8192 bf16 operand (FC2's output's shape)
        layernorm(res, lnout, m, H, stream=s0)  # compiled at its first call: not inside a timed run
        s0.synchronize()
        enq["layernorm_kernel"] = lambda t: (t.part("compute", 0, s0, lambda: layernorm(res, lnout, m, H, stream=s0)),
                                             [(s0, 0)])[1]
        runners["fold"].poison_outputs()
        timed.run(enq["fold"])
        runners["fold"].check_errors()
        err = output_error(cp, runners["fold"].out, ref)
        del ref
        samples = {k: [] for k in enq}
        for _ in range(args.reps):
            for k in enq:
                samples[k].append(timed.run(enq[k])[0])
        for r in runners.values():
            r.check_errors()
        steps = fold_pair_steps(timed, x, res, ws, gamma, beta)  # one traced run of each pair
        for k, smp in samples.items():
            rows.append({**steps_row(m, H, FFN, k, steps), "median_ms": median(smp),
                         "rel_err": err if k == "fold" else math.nan, "samples": ";".join(f"{v:.5f}" for v in smp)})
        print(f"fold M={m} traced (mainloop / epilogue / store-to-signal ns by layer): "
              + "; ".join(f"{k} l{l} {a:.0f}/{b:.0f}/{c:.0f}" for (k, l), (a, b, c) in sorted(steps.items())),
              file=sys.stderr)
        print(f"fold M={m}: " + ", ".join(f"{k} {median(v):.4f}" for k, v in samples.items())
              + f" (fold rel err {err:.2e})", file=sys.stderr)
        del runners, x, res, ws
        cp.get_default_memory_pool().free_all_blocks()
    pd.DataFrame(rows).to_csv(args.out / "fold.csv", index=False)
    return 0


FOLD_MEANS = (0.0, 2.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0)
"""Offsets added to the residual in ``--fold-mean`` (FC2's output has a spread of ~1.4 around them)."""


def fold_mean(args, data) -> int:
    """The fold's relative error against the fp32 reference (which centres before squaring) as the rows' mean grows:
    the block boundary's pair at 2048 x 8192 -> 28672 (FC2 from 28672), both kernels on GPU 0, the residual plus an
    offset; the fold computes the variance as E[x^2] - mean^2 from fp32 sums."""
    import cupy as cp
    import pandas as pd

    from ctahw.chain import FOLD_PAIRS, ChainRunner, fold_pair_inputs, fold_pair_plan, reference_fold_pair
    from ctahw.device import REL_TOL_BF16, bf16_bits_to_f32, f32_to_bf16_bits, output_error

    m, FFN = 2048, 28672
    x, base, ws, gamma, beta = fold_pair_inputs(cp, data, m, H, FFN, salt=71)
    rows = []
    for off in FOLD_MEANS:
        res = f32_to_bf16_bits(bf16_bits_to_f32(base, cp) + cp.float32(off), cp)
        r = ChainRunner(fold_pair_plan(m, H, FFN), x, ws, devices=(0, 0), residual=res, layernorm=(gamma, beta),
                        epilogues=FOLD_PAIRS["fold"])
        r.poison_outputs()
        r.launch()
        r.synchronize()
        r.check_errors()
        with cp.cuda.Device(0):
            ref = reference_fold_pair(cp, x, res, ws, gamma, beta)
            y = bf16_bits_to_f32(res, cp) + bf16_bits_to_f32(x, cp) @ bf16_bits_to_f32(ws[0], cp).T
            ratio = float(cp.median(cp.abs(y.mean(axis=1)) / y.std(axis=1)))
        err = float(output_error(cp, r.out, ref, 0))
        rows.append({"offset": off, "mean_over_spread": ratio, "rel_err": err, "ok": err <= REL_TOL_BF16})
        print(f"fold-mean offset {off:g}: |mean| / spread {ratio:.1f}, rel err {err:.2e}", file=sys.stderr)
        del r, ref, y, res
    pd.DataFrame(rows).to_csv(args.out / "fold-mean.csv", index=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
