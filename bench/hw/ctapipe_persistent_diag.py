"""One CTA-pipelined chain run of one variant, watched: if a kernel has not finished after --wait-s seconds,
print how far every kernel got (per-tile stamps of a traced variant, error buffers, counters, queue head and
tail, copied on a separate stream while the kernels still run) and exit 3 (the process's exit tears the CUDA
contexts down, which ends the kernels). Prints one JSON line: {"variant", "m", "status": "ok"|"stuck"|error,
...}. Used by bench/hw/run_ctapipe_persistent.sh before anything else touches a new kernel.

    python bench/hw/ctapipe_persistent_diag.py cutlass_ctapipe_p_trace --m 1024 --wait-s 8

Needs 2 sm_90 GPUs (a device session, ``ctahw.baselines.Session``). An unknown variant, or no GPUs (or no CuPy), is
one line on stderr and exit 2 before anything runs.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # this checkout's ctasim and ctahw, not an installed copy


def main(argv=None) -> int:
    from ctasim.cliargs import OneLineParser
    from ctasim.variants import VARIANTS, clusters_of

    ap = OneLineParser(prog="python bench/hw/ctapipe_persistent_diag.py", description=__doc__.splitlines()[0])
    ap.add_argument("variant")
    ap.add_argument("--m", type=int, default=1024)
    ap.add_argument("--wait-s", type=float, default=8.0)
    a = ap.parse_args(argv)
    if a.variant not in VARIANTS:
        ap.error(f"unknown variant {a.variant!r} (known: {', '.join(VARIANTS)})")
    from ctahw.device import no_gpus

    if no_gpus("ctapipe_persistent_diag", 2):  # no CuPy, no GPU, not sm_90: one line
        return 2

    from ctahw import pipelined as pl
    from ctahw import runner as rn
    from ctahw.baselines import Session, SweepConfig
    from ctahw.device import output_error, reference_chain
    from ctahw.device import poison

    h = 8192
    sweep = Session(SweepConfig(h=h, gpus=2, backends=("cublas",), reps=1, warmup=0), log=lambda s: None)
    cp = sweep.cp
    v = VARIANTS[a.variant]
    base = pl.chain_plan(a.m, h, 2)
    plan = pl.variant_plan(base, v)
    first = min(plan.kernels(), key=lambda k: k.layer)
    x = sweep.data.rand(first.gpu, (a.m, h), salt=977)
    ws = pl._weights(sweep, plan, h, 987)
    r = rn.CtaPipeRunner(plan, a.m, [h, h, h], x, ws, trace=v.trace, clusters=clusters_of(plan, v),
                         timeout_ns=int(2e9), persistent=v.persistent)
    poison(r.out)
    r.sync()
    out = {"variant": a.variant, "m": a.m}
    t0 = time.perf_counter()
    r.launch()
    done = {}
    while time.perf_counter() - t0 < a.wait_s:
        done = {g: bool(s.done) for g, s in r.streams.items()}
        if all(done.values()):
            break
        time.sleep(0.01)
    out["wait_s"] = round(time.perf_counter() - t0, 3)
    if not all(done.values()):
        out["status"] = "stuck"
        out["streams_done"] = {str(g): d for g, d in done.items()}
        for k in r.kernels:
            with cp.cuda.Device(k.gpu):
                s = cp.cuda.Stream(non_blocking=True)
                o = r.obj[k.op].arrays
                info = {"error": o["error"].get(stream=s).tolist()}
                if v.trace:
                    st = o["stamps"].get(stream=s).reshape(k.tiles, rn.TILE_STAMP_WORDS)
                    names = ["start", "acquire", "mainloop_end", "epilogue", "store_end", "signal"]
                    info["tiles_with"] = {n: int((st[:, i] != 0).sum()) for i, n in enumerate(names)}
                    info["tiles"] = k.tiles
                out[k.name] = info
        for p in r.pipes:
            with cp.cuda.Device(p.dst_gpu):
                s = cp.cuda.Stream(non_blocking=True)
                o = r.pobj[p.id].arrays
                out[f"pipe{p.id}"] = {"head": int(o["head"].get(stream=s)[0]), "tail": int(o["tail"].get(stream=s)[0]),
                                      "counters_sum": int(o["counters"].get(stream=s).sum()),
                                      "threshold_sum": int(p.threshold.sum()), "capacity": p.capacity}
        print(json.dumps(out), flush=True)
        os._exit(3)
    try:
        r.sync()
        r.check_errors()
        ref = reference_chain(cp, x, ws)
        out["rel_err"] = float(output_error(cp, r.out, ref))
        out["status"] = "ok" if out["rel_err"] <= 1e-2 else "wrong"
        if v.trace:
            from ctasim.invariants import find_violations

            offs = pl.measure_offsets(sweep.devices, iters=50)
            tr = r.read_trace({g: float(o["offset_ns"]) for g, o in offs.items()}, {"m": a.m})
            out["violations"] = [str(x) for x in find_violations(tr, plan, pl.TRACE_TOL_NS)][:5]
            out["trace_makespan_ms"] = tr.makespan_ns * 1e-6
    except Exception as e:  # noqa: BLE001 - reported
        out["status"] = f"{type(e).__name__}: {e}"[:400]
    print(json.dumps(out), flush=True)
    return 0 if out["status"] == "ok" else 1


if __name__ == "__main__":
    sys.exit(main())
