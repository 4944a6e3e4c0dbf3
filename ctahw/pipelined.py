"""The CTA-pipelining experiment on GPUs: correctness, traces, timing beside the baselines.

``ctapipe_rows(sweep, m)`` is what ``ctahw run ctapipe`` runs for one M (``sweep``: a
:class:`ctahw.baselines.Session`): the
plan ctasim builds for a 2-layer chain (``Strategy(kind="ctapipe", persistent=False)``: variant (a), one CTA
per tile, consumers pop from the work-queue), run by :class:`ctahw.runner.CtaPipeRunner` with and without
tracing, checked against the fp32 chain on fresh inputs with poisoned buffers, one traced run checked by
``ctasim.invariants.check_trace``, then both timed interleaved with the same :class:`~ctahw.baselines.Timed`
harness as the baselines. Every traced run is parsed into a ctasim trace at capture time and kept on
``sweep.traces`` by :func:`ctasim.trace.trace_key` (``meta``: m, h, gpus, variant, run, kept, clock
offsets, violations); ``ctahw run`` saves them as one ctasim trace bundle (:func:`ctasim.trace.save_traces`).
:func:`load_raw_traces` reads the raw stamp files of the runs before 2026-12-01 (``ctapipe_traces.npz``).

``back_to_back`` (many runs, epochs, no resets) and ``stall`` (a producer row-block that never signals: the
consumer's bounded wait must report a timeout) are the protocol's GPU checks.
"""

from __future__ import annotations

import dataclasses
import math
import time
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

from ctahw import runner as rn
from ctasim.plan import Plan, with_order
from ctasim.trace import trace_key
from ctasim.variants import VARIANTS, Variant, clusters_of
from ctasim.variants import apply as apply_variant

__all__ = ["chain_plan", "measure_offsets", "ctapipe_rows", "back_to_back", "stall", "remote_store_cost", "save_raw_traces",
           "load_raw_traces", "raw_to_bundle", "plan_of_trace",
           "TRACE_TOL_NS", "VARIANTS", "Variant", "variant_plan", "publish_inversion_ns", "other_violations"]

TRACE_TOL_NS = 1000.0
"""Tolerance of the invariant checker on hardware traces: stamps are taken by one thread a few instructions
away from the event they mark (an atomic's completion, a store's visibility), and GPUs' clocks are aligned
by a ping-pong estimate (spread ~50-100 ns); 1 us is well under a tile (~40-180 us)."""
TRACE_RUNS = 3
"""Traced runs per traced variant and M in :func:`ctapipe_rows` (:func:`pick_traced_run` keeps one; every one is
checked for invariant violations).  One traced run was the rule until 2026-11-29-ctapipe-range, where 4 of 9 single
traces had a first-wave store stall (the consumer's first tile ~165 us late) that the timed medians do not have,
and three traced runs of one kernel in one process spread by up to 6% (docs/validation.md)."""
STALL_FACTOR = 1.5
"""A traced run whose first row-block completes later than this many times the earliest of its variant's traced
runs has a first-wave store stall (120 us without, 285-306 us with one, on 2xH200): :func:`pick_traced_run`
passes over it."""


def square_chain(m: int, h: int = 8192, layers: int = 2):
    """The ``layers``-layer m x h x h chain (the workload ``chain2-16384`` at this M and H)."""
    from ctasim.spec import load_workload

    wl = load_workload("chain2-16384")
    layer = dataclasses.replace(wl.layers[0], m=m, k=h, n=h)
    return dataclasses.replace(wl, layers=(layer,) * layers)


def workload_plan(wl, hardware: str = "h200-x2", *, counter_rows: int = 0, tile_source: str = "queue"):
    """ctasim's CTA-pipelining plan of workload ``wl``, layer i on GPU i (one CTA per tile; queue consumers, or
    ``tile_source="static"``: consumers that walk a fixed order and wait on each tile's counter), one scoreboard
    counter per ``counter_rows`` rows (0: per consumer row-block)."""
    from ctasim.spec import Strategy, load_hardware
    from ctasim.strategies import build_plans

    st = Strategy(kind="ctapipe", persistent=False, tile_source=tile_source, counter_rows=counter_rows)
    return build_plans(st, wl, load_hardware(hardware), len(wl.layers), f"m={wl.layers[0].m}")[0]


def chain_plan(m: int, h: int = 8192, layers: int = 2, hardware: str = "h200-x2", *, counter_rows: int = 0,
               tile_source: str = "queue"):
    """:func:`workload_plan` of the ``layers``-layer m x h x h chain (:func:`square_chain`)."""
    return workload_plan(square_chain(m, h, layers), hardware, counter_rows=counter_rows, tile_source=tile_source)


def measure_offsets(devices: Sequence[int], iters: int = 300) -> dict[int, dict]:
    """Each GPU's %globaltimer minus GPU 0's, from a flag ping-pong GPU 0 <-> g (store + fence, spin)."""
    from ctahw import probes
    from ctahw.device import require_cupy

    cp = require_cupy()
    pairs = {}
    for g in devices:
        if g == devices[0]:
            continue
        d0 = devices[0]
        flags, stamps, errs, streams = {}, {}, {}, {}
        for d in (d0, g):
            with cp.cuda.Device(d):
                flags[d] = cp.zeros(1, dtype=cp.uint32)
                stamps[d] = cp.zeros(2 * iters, dtype=cp.uint64)
                errs[d] = cp.zeros(1, dtype=cp.int32)
                streams[d] = cp.cuda.Stream(non_blocking=True)
                cp.cuda.runtime.deviceSynchronize()
        probes.call("pingpong", flags[g].data.ptr, flags[d0].data.ptr, iters, 1, 0, stamps[g].data.ptr, int(2e9),
                    errs[g].data.ptr, stream=streams[g], device=g)
        probes.call("pingpong", flags[d0].data.ptr, flags[g].data.ptr, iters, 0, 0, stamps[d0].data.ptr, int(2e9),
                    errs[d0].data.ptr, stream=streams[d0], device=d0)
        for d in (d0, g):
            streams[d].synchronize()
        if int(errs[d0].get()[0]) or int(errs[g].get()[0]):
            raise RuntimeError(f"clock ping-pong GPU {d0} <-> {g} timed out")
        pairs[g] = (stamps[d0].get().tolist(), stamps[g].get()[:iters].tolist())
    return rn.clock_offsets(pairs)


def _weights(sweep, plan, h: int, salt: int, wl=None):
    """Each layer's weights (N x K bf16, scaled 1 / sqrt(K)) on its kernel's GPU; ``wl`` gives the layers' shapes
    (default: h x h)."""
    shape = (lambda l: (wl.layers[l].n, wl.layers[l].k)) if wl is not None else (lambda l: (h, h))
    return [sweep.data.rand(k.gpu, shape(k.layer), 1 / math.sqrt(shape(k.layer)[1]), salt=salt + k.layer)
            for k in sorted(plan.kernels(), key=lambda k: k.layer)]


def _run_once(r: rn.CtaPipeRunner, stall_row: int = -1) -> None:
    r.launch(stall_row=stall_row)
    r.sync()


def _enqueue(r: rn.CtaPipeRunner, xs: Sequence, first_op: int, residuals: Sequence = (), after=None):
    """Timed.run enqueue functions for runner ``r``: rep i uses input set i % len(xs) (and its residual operand,
    ``residuals[i % len(xs)]``, where the kernels add one); ``after(t)`` enqueues what follows the kernels on
    their streams (a row-wise op over the output)."""
    def at(i):
        def f(t):
            r.inputs[first_op] = xs[i % len(xs)]
            if residuals:
                r.residual = residuals[i % len(xs)]
            a, e = {}, {}
            for g in r.streams:
                a[g], e[g] = t.event(g), t.event(g)
                with t.cp.cuda.Device(g):
                    a[g].record(t.compute[g])
            r.launch(streams=t.compute)
            if after is not None:
                after(t)
            for g in r.streams:
                with t.cp.cuda.Device(g):
                    e[g].record(t.compute[g])
                t.add_part("compute", g, a[g], e[g])
            return [(t.compute[g], g) for g in sorted(r.streams, reverse=True)]
        return f
    return at


PUBLISH_ORDER = "published before slot"
"""Two producer CTAs that complete counters at about the same time reserve slot ranges in one order (the
tail atomic) and finish publishing in either order (each waits for its own release fence): a later range
can become visible up to ~1 us before an earlier one. Consumers wait on their own slot, so this is
harmless; ctasim's queue invariant allows it (it once reported it with this message, which traces checked
by older code may still carry); :func:`publish_inversion_ns` measures it."""


def publish_inversion_ns(trace) -> float:
    """Largest time by which a queue slot was published after a later slot (0 if in order), over all pipes."""
    ev = trace.events
    worst = 0.0
    for _, g in ev[ev["kind"] == "push"].groupby("pipe"):
        t = g.sort_values("slot")["t_ns"].to_numpy()
        if len(t) > 1:
            worst = max(worst, float(np.max(t[:-1] - t[1:])))
    return max(worst, 0.0)


def other_violations(violations) -> list[str]:
    """Violations other than out-of-order publication between concurrent pushes."""
    return [str(v) for v in violations if PUBLISH_ORDER not in str(v)]


def variant_plan(plan, v: Variant, hardware: str = "h200-x2", wl=None):
    """The plan a variant runs: ``plan`` (ctasim's :func:`workload_plan` of ``wl``, default :func:`chain_plan`'s
    square chain), rebuilt on ``hardware`` when the variant counts other rows per counter or waits instead of
    popping, with the variant's tile orders (:func:`ctasim.variants.apply`)."""
    if v.counter_rows or v.consumer == "wait":
        if wl is None:
            ks = sorted(plan.kernels(), key=lambda k: k.layer)
            wl = square_chain(ks[0].tiles_m * rn.KERNEL_TILE[0], ks[0].tiles_n * rn.KERNEL_TILE[1], len(ks))
        plan = workload_plan(wl, hardware, counter_rows=v.counter_rows,
                             tile_source="static" if v.consumer == "wait" else "queue")
    return apply_variant(plan, v)


def pick_traced_run(makespans_ns: Sequence[float], first_rowblocks_ns: Sequence[float]) -> int:
    """Which traced run to keep: among the runs without a first-wave store stall (:data:`STALL_FACTOR` against the
    earliest first row-block), the one with the median makespan; when every run stalled, the median of all."""
    if len(makespans_ns) != len(first_rowblocks_ns) or not len(makespans_ns):
        raise ValueError("one makespan and one first row-block time per traced run, at least one run")
    best = min(first_rowblocks_ns)
    ok = [i for i, f in enumerate(first_rowblocks_ns) if f <= STALL_FACTOR * best]
    return ok[median_index([makespans_ns[i] for i in ok])]


def first_rowblock_ns(trace, first_op: int) -> float:
    """The first counter's completion after the producer kernel's first CTA start (a trace of :func:`ctapipe_rows`)."""
    ev = trace.events
    first_zero = float(ev.loc[ev["kind"] == "zero", "t_ns"].min())
    return first_zero - float(trace.tiles.loc[trace.tiles["kernel"] == first_op, "t_start"].min())


def median_index(values: Sequence[float]) -> int:
    """Index of the median of ``values`` (the lower middle one for an even count)."""
    if not len(values):
        raise ValueError("no values")
    order = sorted(range(len(values)), key=lambda i: values[i])
    return order[(len(values) - 1) // 2]


def workload_reason(wl) -> str | None:
    """Why the 2-GPU CTA-pipelined kernels (variant (a), layer i on GPU i) cannot run workload ``wl``, or None: they
    take any per-layer K and N that tile 128 x 256 (K a multiple of 64), at most one fused epilogue op per layer
    (gelu, silu, relu, residual: the workload's input, which must match the layer's output; not the residual
    stream), and a row-wise op on the
    last layer only (a kernel of its own after it; one between the layers would need the row statistics' hand-off,
    not built)."""
    from ctahw.gemm import fused_epilogue_reason  # noqa: PLC0415 - pure function, no CuPy

    layers = wl.layers
    if len(layers) != 2:
        return f"the 2-GPU CTA-pipelined kernels run 2-layer workloads (layer i on GPU i); this one has {len(layers)}"
    for i, l in enumerate(layers):
        if (l.tile_m, l.tile_n) != rn.KERNEL_TILE:
            return f"layer {i}: tile {l.tile_m}x{l.tile_n}: the CTA-pipelined kernels run {rn.KERNEL_TILE}"
        if l.m % l.tile_m or l.n % l.tile_n or l.k % 64:
            return f"layer {i}: {l.m}x{l.n}x{l.k} does not tile 128 x 256 with K a multiple of 64"
        if len(l.epilogue) > 1 or (l.epilogue and fused_epilogue_reason(tuple(l.epilogue))) or not l.epilogue_fused:
            return f"layer {i}: epilogue {'+'.join(l.epilogue)}: the CTA-pipelined kernels fuse one op (gelu, silu, " \
                   f"relu or residual)"
        if "residual" in l.epilogue and l.residual_source != "input":
            return f"layer {i}: the CTA-pipelined kernels add the workload's input as the residual, not the residual stream"
        if "residual" in l.epilogue and (l.n, l.m) != (layers[0].k, layers[0].m):
            return f"layer {i}: the residual (the {layers[0].m}x{layers[0].k} input) does not match its {l.m}x{l.n} output"
        if l.rowwise and i < len(layers) - 1:
            return (f"layer {i}: a row-wise op between the pipelined layers needs the row statistics' hand-off "
                    "(ctasim.protocol.rowstats), which the kernels do not have")
    return None


def ctapipe_rows(sweep, m: int, wl=None) -> list[dict]:
    """Correctness, checked traces per traced variant (:data:`TRACE_RUNS`, one kept), and interleaved timing of the
    CTA-pipelined chain: the session's m x h x h chain, or the 2-layer workload ``wl`` (its M must be ``m``; fused
    epilogue ops in the kernels, a last row-wise op as a kernel of its own after the consumer, on its stream)."""
    from ctahw import rowwise
    from ctahw.device import output_error, to_device
    from ctahw.device import poison, rotation_sets
    from ctahw.executor import reference_bf16
    from ctasim.invariants import find_violations

    cp, G = sweep.cp, sweep.cfg.gpus
    wl = wl if wl is not None else square_chain(m, sweep.cfg.h, G)
    why = workload_reason(wl) if len(wl.layers) == G else f"{len(wl.layers)} layers on {G} GPUs"
    if why or wl.layers[0].m != m:
        raise ValueError(f"ctapipe M={m}: {why or f'the workload has M={wl.layers[0].m}'}")
    layers = wl.layers
    h, dims = layers[0].k, [layers[0].k] + [l.n for l in layers]
    base = workload_plan(wl)
    first = min(base.kernels(), key=lambda k: k.layer)
    last = max(base.kernels(), key=lambda k: k.layer)
    nsets = rotation_sets((m * h + max(l.n * l.k for l in layers)) * 2, sweep.l2)
    xs = [sweep.data.rand(first.gpu, (m, h), salt=100 * s + 21) for s in range(nsets)]
    ws = _weights(sweep, base, h, 31, wl)
    epilogues = {i: tuple(l.epilogue) for i, l in enumerate(layers) if l.epilogue}
    res_gpu = next((k.gpu for k in base.kernels() if "residual" in layers[k.layer].epilogue), None)
    residuals = [to_device(cp, x, res_gpu) for x in xs] if res_gpu is not None else []
    norm = layers[-1].rowwise
    with cp.cuda.Device(last.gpu):
        z = cp.empty((m, dims[-1]), dtype=cp.uint16) if norm else None
    names = [n for n in getattr(sweep.cfg, "ctapipe_variants", tuple(VARIANTS)) if n in VARIANTS]
    fused_none = [n for n in names if epilogues and VARIANTS[n].persistent]
    if fused_none:
        raise ValueError(f"ctapipe M={m}: {', '.join(fused_none)} (variant (b), persistent) fuse no epilogue op; the "
                         f"workload has {epilogues}")
    plans = {n: variant_plan(base, VARIANTS[n], wl=wl) for n in names}
    runners = {n: rn.CtaPipeRunner(plans[n], m, dims, xs[0], ws, trace=VARIANTS[n].trace,
                                   clusters=clusters_of(plans[n], VARIANTS[n]), persistent=VARIANTS[n].persistent,
                                   **({"epilogues": epilogues} if epilogues else {}),
                                   **({"residual": residuals[0]} if residuals else {}))
               for n in names}

    def after(r):
        """The row-wise op over runner ``r``'s output, on the last kernel's stream (inside that GPU's compute part)."""
        if not norm:
            return None

        def f(t):
            with cp.cuda.Device(last.gpu):
                rowwise.rowwise(norm, r.out, z, m, dims[-1], t.compute[last.gpu])
        return f

    ref = reference_bf16(cp, xs[0], ws, layers)
    rels = {}
    for name, r in runners.items():
        for op, buf in list(r.inputs.items()):
            if op != first.id:
                poison(buf)
        poison(r.out)
        if norm:
            poison(z)
        _run_once(r)
        r.check_errors()
        if norm:
            with cp.cuda.Device(last.gpu):
                rowwise.rowwise(norm, r.out, z, m, dims[-1], r.streams[last.gpu])
                r.streams[last.gpu].synchronize()
        rels[name] = output_error(cp, z if norm else r.out, ref)
    del ref
    offs = measure_offsets(sweep.devices)
    offsets = {g: float(v["offset_ns"]) for g, v in offs.items()}
    info = {}
    for name, r in runners.items():
        if not VARIANTS[name].trace:
            continue
        captured = []  # (trace, violations, raw buffers) of each traced run
        for _ in range(TRACE_RUNS):
            sweep.timed.run(_enqueue(r, xs, first.id, residuals, after(r))(0))
            r.check_errors()
            trace = r.read_trace(offsets, {"m": m, "h": h, "variant": name})
            captured.append((trace, find_violations(trace, plans[name], TRACE_TOL_NS)))
        makespans = [t.makespan_ns for t, _ in captured]
        rowblocks = [first_rowblock_ns(t, first.id) for t, _ in captured]
        kept = pick_traced_run(makespans, rowblocks)
        trace = captured[kept][0]
        # every traced run is checked and saved; the violations of all of them are reported, each with its run
        viol_all = [v for _, vs in captured for v in vs]
        for i, (t, vs) in enumerate(captured):
            t.meta.update(m=m, h=h, gpus=G, variant=name, run=i, kept=i == kept, offsets=offs,
                          violations=[str(v) for v in vs])
            sweep.traces[trace_key(m, name, i)] = t
        info[name.removesuffix("_trace")] = dict(
            trace_violations=len(viol_all), trace_violations_other=len(other_violations(viol_all)),
            trace_kept=kept, trace_makespans_ms=" ".join(f"{x * 1e-6:.4f}" for x in makespans),
            trace_first_rowblocks_ms=" ".join(f"{x * 1e-6:.4f}" for x in rowblocks),
            publish_inversion_us=publish_inversion_ns(trace) * 1e-3,
            first_rowblock_ms=rowblocks[kept] * 1e-6, trace_makespan_ms=trace.makespan_ns * 1e-6)
    res = sweep.interleave({name: _enqueue(r, xs, first.id, residuals, after(r)) for name, r in runners.items()})
    for r in runners.values():
        r.check_errors()
    rows = []
    for name in names:
        v = VARIANTS[name]
        kind = f"persistent-{v.persistent}" if v.persistent else "classical"
        row = sweep.row(dict(experiment="ctapipe", backend=name, m=m, k=h, n=dims[-1], gpus=G, layers=G, chunks=0,
                              sets=nsets, variant=f"{kind}-queue clusters={'/'.join(v.clusters)} order={v.order}"),
                         *res[name], wl.flops, rels[name])
        row.update(info.get(name.removesuffix("_trace"), {}), trace_tol_ns=TRACE_TOL_NS,
                   clock_offset_ns=offsets.get(1, 0.0), clock_offset_spread_ns=offs.get(1, {}).get("offset_spread_ns", 0),
                   epochs=runners[name].epoch - 1)
        plain = name.removesuffix("_trace")
        if v.trace and plain in res:
            row["trace_overhead"] = res[name][0].median_ms / res[plain][0].median_ms - 1
        rows.append(row)
    return rows


def save_raw_traces(traces: Sequence[Mapping], path: Path) -> Path:
    """Raw trace buffers in one compressed .npz (keys ``m<M>_<variant>/<name>``), the rest as JSON text: the file
    format of the runs before 2026-12-01 (``ctapipe_traces.npz``), which :func:`load_raw_traces` reads."""
    import json

    arrays = {}
    for t in traces:
        pre = f"m{t['m']}_{t.get('variant', 'cutlass_ctapipe_trace')}/"
        for k, v in t.items():
            if isinstance(v, np.ndarray):
                arrays[pre + k] = v
        arrays[pre + "info"] = np.array(json.dumps({k: v for k, v in t.items() if not isinstance(v, np.ndarray)},
                                                   default=str))
    np.savez_compressed(path, **arrays)
    return path


def load_raw_traces(path: Path, hardware: str = "h200-x2") -> dict[tuple[int, str], tuple]:
    """{(m, variant): (Trace, plan, info)} from a raw file (:func:`save_raw_traces`; no GPU needed): each trace
    parsed with the plan its run ran, rebuilt from the file's m, h, gpus, variant and producer order."""
    import json

    z = np.load(path)
    keys = sorted({k.split("/")[0] for k in z.files})
    out = {}
    for key in keys:
        info = json.loads(str(z[f"{key}/info"]))
        m = int(info["m"])
        plan = _ran_plan(m, info["h"], info["gpus"], info.get("variant", ""), hardware,
                         lambda first: z[f"{key}/order_{first.id}"] if f"{key}/order_{first.id}" in z.files else None)
        kernels, pipes = rn.plan_arrays(plan)
        stamps = {k.op: z[f"{key}/stamps_{k.op}"] for k in kernels}
        push = {p.id: z[f"{key}/push_{p.id}"] for p in pipes}
        zero = {p.id: z[f"{key}/zero_{p.id}"] for p in pipes}
        offsets = {int(g): float(v["offset_ns"]) for g, v in info["offsets"].items()}
        tr = rn.parse_trace(plan, kernels, pipes, stamps, push, zero, offsets,
                            {"m": m, "h": info["h"], "variant": info.get("variant", "")})
        out[(m, info.get("variant", "cutlass_ctapipe_trace"))] = (tr, plan, info)
    return out


def plan_of_trace(trace, hardware: str = "h200-x2"):
    """The plan a saved trace ran, rebuilt from its ``meta`` (m, h, gpus, variant) and its producer's tile order as
    its CTAs ran it (tiles sorted by CTA index); what ``ctasim.invariants.check_trace`` needs beside the trace."""
    meta = trace.meta

    def order_of(first):
        t = trace.tiles[trace.tiles["kernel"] == first.id].sort_values("cta")
        order = (t["tile_m"] * first.tiles_n + t["tile_n"]).to_numpy(np.int64)
        return order if len(order) == first.tiles_m * first.tiles_n else None

    return _ran_plan(int(meta["m"]), int(meta["h"]), int(meta["gpus"]), str(meta.get("variant", "")), hardware,
                     order_of)


def _ran_plan(m: int, h: int, gpus: int, variant: str, hardware: str, order_of) -> Plan:
    """The plan a recorded run ran: the chain plan, the variant's own plan (counters per 256 rows, wait consumers),
    and the producer's recorded tile order (``order_of(first kernel)``; None: the plan's own) where it differs."""
    plan = chain_plan(m, h, gpus, hardware)
    v = VARIANTS.get(variant)
    if v is not None:
        plan = variant_plan(plan, v, hardware)
    first = min(plan.kernels(), key=lambda k: k.layer)
    order = order_of(first)
    if order is not None and not np.array_equal(order, plan.ops[first.id].order):
        plan = with_order(plan, first.id, order)
    return plan


def raw_to_bundle(path: Path, hardware: str = "h200-x2") -> dict:
    """The traces of a raw file (:func:`load_raw_traces`) keyed and described as ``ctahw run`` now saves them: a raw
    file holds the one kept traced run of each (M, variant), so each becomes run 0, kept; ``meta`` gains gpus,
    clock offsets, violations and the raw file's name (``converted_from``)."""
    out = {}
    for (m, variant), (tr, _plan, info) in sorted(load_raw_traces(path, hardware).items()):
        tr.meta.update(m=m, h=info["h"], gpus=info["gpus"], variant=variant, run=0, kept=True,
                       offsets=info["offsets"], violations=[str(v) for v in info.get("violations", [])],
                       converted_from=Path(path).name)
        out[trace_key(m, variant, 0)] = tr
    return out


def back_to_back(sweep, m: int, iters: int, variant: str = "cutlass_ctapipe") -> dict:
    """``iters`` runs with no counter reset (epochs 1..iters), each producer run ordered after the previous
    consumer run (its output buffer is the consumer's input); the last output checked, counters and tails
    checked to be exactly iters x their per-epoch totals."""
    from ctahw.device import output_error, reference_chain
    from ctahw.device import poison

    cp, h, G = sweep.cp, sweep.cfg.h, sweep.cfg.gpus
    v = VARIANTS[variant]
    plan = variant_plan(chain_plan(m, h, G), v)
    first = min(plan.kernels(), key=lambda k: k.layer)
    x = sweep.data.rand(first.gpu, (m, h), salt=901)
    ws = _weights(sweep, plan, h, 911)
    r = rn.CtaPipeRunner(plan, m, [h] * (G + 1), x, ws, trace=v.trace, clusters=clusters_of(plan, v),
                         persistent=v.persistent)
    poison(r.out)
    for op, buf in r.inputs.items():
        if op != first.id:
            poison(buf)
    r.sync()
    t0 = time.perf_counter()
    layers = sorted(r.kernels, key=lambda k: k.layer)
    try:
        for _ in range(iters):
            prev_done = {}
            r.launch()
            # the next run's producers wait for this run's consumers (their input buffers are overwritten)
            for k in layers[1:]:
                with cp.cuda.Device(k.gpu):  # an event belongs to the device current at its creation
                    ev = cp.cuda.Event(disable_timing=True)
                    ev.record(r.streams[k.gpu])
                prev_done[k.gpu] = ev
            for k in layers[:-1]:
                cons_gpu = plan.ops[r.pipes[k.outbound].consumer].gpu
                with cp.cuda.Device(k.gpu):
                    r.streams[k.gpu].wait_event(prev_done[cons_gpu])
    finally:
        r.sync()  # never free buffers that kernels in flight still write (a peer GPU's writes outrun memsets)
    wall = time.perf_counter() - t0
    r.check_errors()
    ref = reference_chain(cp, x, ws)
    rel = output_error(cp, r.out, ref)
    counts_ok = True
    for p in r.pipes:
        o = r.pobj[p.id].arrays
        counts_ok &= bool((o["counters"].get() == iters * p.threshold).all())
        pushed = 0 if r.consumer_waits(p) else iters * p.capacity  # a wait consumer's queue is never used
        counts_ok &= int(o["tail"].get()[0]) == pushed and int(o["head"].get()[0]) == pushed
    return dict(m=m, iters=iters, variant=variant, rel_err=rel, counters_exact=counts_ok, wall_s=wall,
                ms_per_iter=wall * 1e3 / iters)


def stall(sweep, m: int = 1024, row: int = 3, timeout_ms: float = 100.0, variant: str = "cutlass_ctapipe") -> dict:
    """A producer whose row-block ``row`` never signals: the consumer CTAs waiting for it must give up after
    ``timeout_ms`` and report :class:`~ctahw.runner.ProtocolError` (code 1, pop timeout; code 8, wait timeout,
    for a wait consumer); the GPU stays usable."""
    h, G = sweep.cfg.h, sweep.cfg.gpus
    v = VARIANTS[variant]
    plan = variant_plan(chain_plan(m, h, G), v)
    first = min(plan.kernels(), key=lambda k: k.layer)
    x = sweep.data.rand(first.gpu, (m, h), salt=951)
    ws = _weights(sweep, plan, h, 961)
    r = rn.CtaPipeRunner(plan, m, [h] * (G + 1), x, ws, trace=v.trace, timeout_ns=int(timeout_ms * 1e6),
                         clusters=clusters_of(plan, v), persistent=v.persistent)
    t0 = time.perf_counter()
    try:
        r.launch(stall_row=row)
    finally:
        r.sync()
    wall = time.perf_counter() - t0
    err = None
    try:
        r.check_errors()
    except rn.ProtocolError as e:
        err = e
    r.reset()
    _run_once(r)  # after a reset the same objects work again
    r.check_errors()
    return dict(m=m, row=row, timeout_ms=timeout_ms, wall_s=wall, error_code=err.code if err else 0,
                error_count=err.count if err else 0, message=str(err) if err else "", recovered=True)


def remote_store_cost(sweep, m: int, variant: str = "cutlass_ctapipe", reps: int = 20) -> dict:
    """The pipelined producer kernel with its D tiles stored into the consumer GPU (as it runs) against the same
    kernel storing D into a buffer on its own GPU, everything else alike (counters, pushes and the consumer
    still run over NVLink; the consumer computes on the last remote run's input). Alternated ABBA, each run
    synchronized; the producer's span from events on its stream around its launch. Both outputs are checked
    against layer 1's fp32 reference."""
    from ctahw.device import output_error, reference_chain
    from ctahw.device import poison

    cp, h, G = sweep.cp, sweep.cfg.h, sweep.cfg.gpus
    v = VARIANTS[variant]
    plan = variant_plan(chain_plan(m, h, G), v)
    first = min(plan.kernels(), key=lambda k: k.layer)
    x = sweep.data.rand(first.gpu, (m, h), salt=1201)
    ws = _weights(sweep, plan, h, 1211)
    r = rn.CtaPipeRunner(plan, m, [h] * (G + 1), x, ws, trace=v.trace, clusters=clusters_of(plan, v),
                         persistent=v.persistent)
    remote = r.outputs[first.id]
    with cp.cuda.Device(first.gpu):
        local = cp.empty(remote.shape, dtype=remote.dtype)
    poison(remote)
    poison(local)
    r.sync()
    times = {"remote": [], "local": []}
    try:
        for i in range(2 * reps + 1):  # run 0: remote, untimed (fills the consumer's input); then ABBA
            mode = "remote" if i == 0 or (i - 1) % 4 in (0, 3) else "local"
            r.outputs[first.id] = remote if mode == "remote" else local
            with cp.cuda.Device(first.gpu):
                a, e = cp.cuda.Event(), cp.cuda.Event()
                a.record(r.streams[first.gpu])
            r.launch()
            with cp.cuda.Device(first.gpu):
                e.record(r.streams[first.gpu])
            r.sync()
            r.check_errors()
            if i:
                with cp.cuda.Device(first.gpu):
                    times[mode].append(cp.cuda.get_elapsed_time(a, e))
    finally:
        r.outputs[first.id] = remote
        r.sync()
    ref = reference_chain(cp, x, ws[:1])
    rel = {mode: output_error(cp, buf, ref) for mode, buf in (("remote", remote), ("local", local))}
    med = {mode: float(np.median(t)) for mode, t in times.items()}
    return dict(m=m, variant=variant, reps=reps, producer_remote_ms=med["remote"], producer_local_ms=med["local"],
                remote_over_local=med["remote"] / med["local"] - 1,
                spread_remote_ms=float(np.ptp(times["remote"])), spread_local_ms=float(np.ptp(times["local"])),
                rel_err_remote=rel["remote"], rel_err_local=rel["local"])


def smoke(variants: Sequence[str], m: int = 1024, h: int = 8192) -> dict[str, str]:
    """Run each variant once on fresh inputs and check it: {variant: "ok" | error}. A device script runs this
    in a process of its own under a time limit before the timed run, which then takes only the variants that
    passed."""
    from ctahw.baselines import Session, SweepConfig
    from ctahw.device import output_error, reference_chain
    from ctahw.device import REL_TOL_BF16, poison

    sweep = Session(SweepConfig(h=h, gpus=2, backends=("cublas",), reps=1, warmup=0), log=lambda s: None)
    base = chain_plan(m, h, 2)
    first = min(base.kernels(), key=lambda k: k.layer)
    x = sweep.data.rand(first.gpu, (m, h), salt=971)
    ws = _weights(sweep, base, h, 981)
    ref = reference_chain(sweep.cp, x, ws)
    out = {}
    for name in variants:
        try:
            v = VARIANTS[name]
            plan = variant_plan(base, v)
            r = rn.CtaPipeRunner(plan, m, [h, h, h], x, ws, trace=v.trace, clusters=clusters_of(plan, v),
                                 timeout_ns=int(2e9), persistent=v.persistent)
            poison(r.out)
            _run_once(r)
            r.check_errors()
            rel = output_error(sweep.cp, r.out, ref)
            out[name] = "ok" if rel <= REL_TOL_BF16 else f"rel_err {rel:.3g}"
        except Exception as e:  # noqa: BLE001 - reported, the variant is left out
            out[name] = f"{type(e).__name__}: {e}"
    return out


if __name__ == "__main__":
    import sys

    names = sys.argv[1].split(",") if len(sys.argv) > 1 else list(VARIANTS)
    res = smoke(names)
    for n, r in res.items():
        print(f"{n}: {r}", file=sys.stderr)
    print(",".join(n for n, r in res.items() if r == "ok"))
