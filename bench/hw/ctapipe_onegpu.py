"""The 2-GPU CTA-pipelined kernels functionally on one GPU: both layers of a small 2-layer chain on GPU 0.

``ctahw.runner.CtaPipeRunner`` places one kernel per GPU. Here every kernel and pipe of a variant's 2-GPU plan is put
on GPU 0 (:class:`OneGpuRunner`), each kernel on a stream of its own, so that the consumer (launched first) and the
producer run side by side as on two GPUs; the chain is small enough (M x H x H with M = H = 1024 by default: 32 tiles
per layer) that both grids are resident at once. Everything the protocol does happens, on local memory: queue pops
(classical, cluster pairs, the persistent smem and ring designs), waiting consumers, the producers' signals and pushes.
What runs on one GPU that ``ctahw.percta`` (the producer alone) cannot: the consumers' tile-acquire paths.

Per variant (every one of ``ctasim.variants.VARIANTS`` by default, traced ones included): one run on fresh inputs with
poisoned outputs against the fp32 reference; then ``--iters`` back-to-back runs without resets (epochs), each after
the previous one finished; the output checked again, every counter exactly epochs x threshold, every queue's tail and
head exactly epochs x capacity (0 for a waiting consumer's), no protocol error, and for a traced variant every tile of
every kernel stamped. Not timed (both kernels share one GPU's SMs).

Known limit (bench/results/hw/2026-12-02-ctapipe-onegpu): the variants whose two kernels have different cluster shapes
(``c21``: 2x1 / 1x2, ``pr21``: 2x1 / 1x1) ended in the consumer's pop timeout with nothing published: the producer
started only after the consumer gave up. The same happened to the first fused-epilogue kernels
(bench/results/hw/2026-12-02-ctapipe-epilogue-1gpu): each time the producer was a kernel not launched before in the
process, i.e. not yet loaded -- CUDA's lazy loading loads a kernel at its first launch, and the load waited for the
spinning consumer. The runner now loads every kernel before its first launch (``CtaPipeRunner.load_kernels``):
26 of 26 variants correct (bench/results/hw/2026-12-02-ctapipe-epilogue-1gpu/all-loaded).

    python bench/hw/ctapipe_onegpu.py OUT [--m 1024] [--h 1024] [--iters 20] [--variants a,b] [--mlp-ffn 3584]

``--mlp-ffn F`` runs the MLP block's pair instead (h -> F with GeLU fused in the producer, F -> h with the residual
fused in the consumer): every variant (a) kernel's fused path; variant (b) refuses epilogue ops (a failed row).

Writes ``OUT/onegpu.json`` (one row per variant); exits 1 if any variant failed. An unknown variant, an OUT that cannot
be written and no GPU (or no CuPy) are one line and exit 2 before anything runs.
"""

from __future__ import annotations

import json
import math
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # this checkout's ctasim and ctahw, not an installed copy

from ctahw import runner as rn  # noqa: E402
from ctahw.onegpu import OneGpuRunner  # noqa: E402, F401  (the runner lives in ctahw; re-exported for the scripts and tests that load this file)


def mlp_workload(m: int, h: int, ffn: int):
    """The MLP block's two GEMMs at M = m: h -> ffn with GeLU fused in the producer, ffn -> h with the residual (the
    block's input) fused in the consumer (its LayerNorm runs after the pair, not in these kernels)."""
    from ctasim.spec import Layer, Workload

    return Workload("mlp-onegpu", "bf16", (Layer(m=m, k=h, n=ffn, epilogue=("gelu",)),
                                           Layer(m=m, k=ffn, n=h, epilogue=("residual",))))


def check_variant(name: str, m: int, h: int, iters: int, seed: int, ffn: int = 0) -> dict:
    """One variant on GPU 0: the square m x h x h chain, or with ``ffn`` > 0 the MLP block's pair
    (:func:`mlp_workload`: fused GeLU and residual; variant (b) refuses it, a recorded failure)."""
    from ctahw.baselines import Chain
    from ctahw.device import (REL_TOL_BF16, output_error, poison,
                              require_cupy)
    from ctahw.executor import reference_bf16
    from ctahw.pipelined import square_chain, variant_plan, workload_plan
    from ctasim.variants import VARIANTS, clusters_of

    cp = require_cupy()
    v = VARIANTS[name]
    wl = mlp_workload(m, h, ffn) if ffn else square_chain(m, h, 2)
    plan = variant_plan(workload_plan(wl), v, wl=wl)
    dims = [wl.layers[0].k] + [l.n for l in wl.layers]
    data = Chain(cp, seed)
    x = data.rand(0, (m, h), salt=1)
    ws = [data.rand(0, (l.n, l.k), 1 / math.sqrt(l.k), salt=2 + i) for i, l in enumerate(wl.layers)]
    ref = reference_bf16(cp, x, ws, wl.layers)
    fused = {i: tuple(l.epilogue) for i, l in enumerate(wl.layers) if l.epilogue}
    row = dict(variant=name, m=m, h=h, ffn=ffn, clusters=",".join(v.clusters), persistent=v.persistent,
               trace=v.trace, consumer=v.consumer)
    t0 = time.perf_counter()
    r = None
    try:
        r = OneGpuRunner(plan, m, dims, x, ws, trace=v.trace, clusters=clusters_of(plan, v),
                         persistent=v.persistent, timeout_ns=2_000_000_000,
                         **({"epilogues": fused, "residual": x} if fused else {}))
        poison(r.out)
        for op, buf in r.inputs.items():
            if buf is not x:
                poison(buf)
        r.sync()
        r.launch()
        r.sync()
        r.check_errors()
        row["rel_err_first"] = output_error(cp, r.out, ref)
        if v.trace:  # every tile of every kernel stamped (start, acquire, mainloop end, epilogue, store, signal)
            unstamped = 0
            for k in r.kernels:
                s = r.obj[k.op].arrays["stamps"].get().reshape(k.tiles, rn.TILE_STAMP_WORDS)
                unstamped += int((s[:, :6] == 0).any(axis=1).sum())
            row["unstamped_tiles"] = unstamped
        for _ in range(iters):
            r.launch()
            r.sync()  # the next run's producer overwrites the consumer's input: runs in order
        r.check_errors()
        epochs = iters + 1
        row["epochs"] = epochs
        row["rel_err_last"] = output_error(cp, r.out, ref)
        exact = True
        for p in r.pipes:
            o = r.pobj[p.id].arrays
            exact &= bool((o["counters"].get() == epochs * p.threshold).all())
            pushed = 0 if r.consumer_waits(p) else epochs * p.capacity
            exact &= int(o["tail"].get()[0]) == pushed and int(o["head"].get()[0]) == pushed
        row["counts_exact"] = exact
        row["ok"] = bool(row["rel_err_first"] <= REL_TOL_BF16 and row["rel_err_last"] <= REL_TOL_BF16 and exact
                         and not row.get("unstamped_tiles"))
    except Exception as e:  # noqa: BLE001 -- recorded per variant; the others still run
        row["ok"], row["error"] = False, f"{type(e).__name__}: {e}"
        if r is not None:
            r.sync()  # never free buffers a kernel in flight still writes
    row["wall_s"] = time.perf_counter() - t0
    del r
    cp.get_default_memory_pool().free_all_blocks()
    return row


def main(argv=None) -> int:
    from ctasim.cliargs import OneLineParser, parse_outputs
    from ctasim.variants import VARIANTS

    ap = OneLineParser(prog="python bench/hw/ctapipe_onegpu.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--m", type=int, default=1024)
    ap.add_argument("--h", type=int, default=1024)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--seed", type=int, default=20261202)
    ap.add_argument("--mlp-ffn", type=int, default=0,
                    help="> 0: the MLP block's pair h -> FFN (GeLU fused) -> h (+ residual) instead of the square chain")
    a = parse_outputs(ap, argv, folders=("out",))
    unknown = [n for n in a.variants.split(",") if n not in VARIANTS]
    if unknown:
        ap.error(f"--variants: unknown {', '.join(map(repr, unknown))} (known: {', '.join(VARIANTS)})")
    from ctahw.device import no_gpus

    if no_gpus("ctapipe_onegpu", 1):  # no CuPy, no GPU, not sm_90: one line
        return 2
    a.out.mkdir(parents=True, exist_ok=True)
    rows = []
    for name in a.variants.split(","):
        row = check_variant(name, a.m, a.h, a.iters, a.seed, a.mlp_ffn)
        rows.append(row)
        print(f"{name:<30} {'ok' if row['ok'] else 'FAILED'}  err {row.get('rel_err_first', float('nan')):.3e} / "
              f"{row.get('rel_err_last', float('nan')):.3e}  epochs {row.get('epochs', '-')}  counts "
              f"{row.get('counts_exact', '-')}  {row['wall_s']:.2f} s  {row.get('error', '')}", flush=True)
    (a.out / "onegpu.json").write_text(json.dumps(rows, indent=1, default=str) + "\n")
    bad = [r["variant"] for r in rows if not r["ok"]]
    print(f"{len(rows) - len(bad)} of {len(rows)} variants correct" + (f"; failed: {', '.join(bad)}" if bad else ""))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
