"""The CUTLASS GEMM's tile orders on the device: timed per order (the tile-order probe) and traced per tile (the order
traces), the measurements the memory hierarchy's constants are derived from (:mod:`ctasim.calibration`).

* :func:`time_orders`: per shape, the project's CUTLASS kernel (128x256x64, persistent, cluster 2x1) at each of its
  12 tile orders (``ctahw.gemm.SCHEDULES``: raster along M or N or CUTLASS's heuristic, swizzle 1-8), and cuBLAS if
  asked, interleaved (the variants' order reversed every other round), each timed run behind a ``rest_ms`` host sleep
  and the 3 ms gate of ``ctahw.baselines.Timed`` (burst regime); one untimed round first, then the median of
  ``reps``. ``ctahw calibrate`` runs it on the calibration split (:func:`ctasim.calibration.calibration_shapes`),
  ``bench/hw/gemm_shape_probe.py`` on 27 shapes.
* :func:`trace_orders`: per shape and order, the chain kernel's ``static2x1`` design with one layer, which is the
  plain persistent GEMM (CUTLASS's cooperative 128x256x64 mainloop and epilogue, 2x1 clusters with W multicast, CTA
  i running order entries i, i + grid, ... as CUTLASS's persistent scheduler does) with a stamp per tile, in
  CUTLASS's own order (:func:`ctasim.l2.cutlass_sm90_order`). Both it and the plain CUTLASS GEMM at the same
  (raster, swizzle) are checked against fp32 once and timed interleaved (medians of ``reps``, each run behind
  ``rest_ms`` and the 3 ms gate); then one traced run of the chain kernel, behind the same rest and gate (before
  2026-12-02's long traces it followed the last timed run at once, which a 22-47 ms shape finds power-capped:
  ``bench/results/hw/2026-12-02-long-order-traces``), gives the per-tile times the drift is measured on
  (:func:`ctasim.calibration.trace_drift`).

* :func:`trace_tickets`: per shape, the chain kernel's tickets design (its default order, groups of 8 row-blocks) on a
  square chain, checked against fp32 once, then one traced run behind ``rest_ms`` and the 3 ms gate: the per-tile
  times the ticket spread is measured on (:func:`ctasim.calibration.ticket_spread`; the shapes of registered plan 3,
  whose traces gave the committed value). With ``chain_group`` the same in groups of that many row-blocks:
  ``ctahw calibrate`` traces :data:`GAP_SHAPES` in pairs, the traces the sharers' gap spread is measured on
  (:func:`ctasim.calibration.gap_cv`).

Left out: the fused epilogues and other tile shapes (the constants belong to the plain 128x256 config); clocks
and power (the rests keep the GPU in its burst regime; ``ctahw.calibrate`` measures the power cap separately); more
than one GPU (GPU 0 only).
"""

from __future__ import annotations

import dataclasses
import math
import sys
from pathlib import Path
from typing import Callable, Mapping, Sequence

__all__ = ["TRACE_SHAPES", "TRACE_ORDERS", "TRACE_COLUMNS", "TICKET_SHAPES", "GAP_SHAPES", "GAP_GROUP", "trace_name",
           "trace_plan", "ticket_plan", "ticket_trace_name", "trace_columns", "time_orders", "trace_orders",
           "trace_tickets", "write_traces"]

TRACE_SHAPES = ((8192, 8192), (32768, 8192), (16384, 16384))
"""(M, H) of the order traces, each layer M x H x H: 16 and 63 rounds of the 132-CTA grid
(``bench/results/hw/2026-12-02-order-traces``)."""
TRACE_ORDERS = (("along_m", 8), ("along_n", 8), ("along_m", 1))
"""(raster, swizzle) of the order traces: the two high-reuse orders and the near-streaming one."""
TRACE_COLUMNS = ("layer", "cta", "sm", "tile_m", "tile_n", "t_acquire", "t_mainloop_end", "t_compute_end",
                 "t_store_end", "t_signal")
"""The columns of a trace file (``tiles-<name>.csv.gz``; ns on the GPU's clock since the first ticket); the order
and ticket traces are the chain kernel's (its static and tickets designs), so both carry every column; a trace without
one of them is written without it (the traces written before 2026-12-05 have no ``layer``: the gap spread needs it,
a sharer being a tile of the same layer and ``tile_n``)."""


def trace_columns(tiles):
    """The :data:`TRACE_COLUMNS` of a per-tile trace (``ctahw.chain``'s tiles table) that it has, in that order."""
    return tiles[[c for c in TRACE_COLUMNS if c in tiles.columns]]


def _stderr(s: str) -> None:
    print(s, file=sys.stderr, flush=True)


def trace_name(m: int, h: int, raster: str, swizzle: int) -> str:
    """A trace's name in files and tables: ``<M>x<H>-<raster>-swizzle<s>``."""
    return f"{m}x{h}-{raster}-swizzle{swizzle}"


def trace_plan(m: int, h: int, raster: str, swizzle: int):
    """The chain kernel's static plan of one M x H x H layer in CUTLASS's (raster, swizzle) order with 2x1 clusters
    (no GPU needed). ValueError where CUTLASS pads the grid (the chain kernel runs no padding slots)."""
    import numpy as np  # noqa: PLC0415

    from ctasim.l2 import cutlass_sm90_order  # noqa: PLC0415
    from ctasim.spec import Strategy, load_hardware, load_workload  # noqa: PLC0415
    from ctasim.strategies.ctapipe import build_chain  # noqa: PLC0415

    wl = load_workload("chain2-16384")
    wl = dataclasses.replace(wl, layers=(dataclasses.replace(wl.layers[0], m=m, k=h, n=h),))
    plan = build_chain(Strategy(kind="ctapipe", gpus=1, tile_source="static"), wl,
                       load_hardware("h200-x2-calibrated"), f"m={m}")
    k = plan.kernels()[0]
    order = cutlass_sm90_order(k.tiles_m, k.tiles_n, raster, swizzle, (2, 1))
    if (order < 0).any():
        raise ValueError(f"{m} x {h} {raster}/swizzle{swizzle}: CUTLASS pads this grid; pick another shape")
    k.order = np.asarray(order, dtype=np.int64)
    return plan


TICKET_SHAPES = ((8192, 2, 8192), (12288, 2, 8192), (16384, 2, 8192), (16384, 4, 8192))
"""(M, layers, H) of the ticket traces: chains of registered plan 3 (``bench/results/hw/2026-12-01-chain-1gpu``) with
at least 6 windows of 132 tickets (17 to 63)."""


GAP_SHAPES = ((8192, 2, 8192), (16384, 2, 8192))
"""(M, layers, H) of the gap traces: the ticket traces' 2-layer chains, in pairs of row-blocks (:data:`GAP_GROUP`)."""
GAP_GROUP = 2
"""The row-block groups of the gap traces: pairs, the order ``ticket_gap_cv`` is priced on (groups of 4 and 8 keep their
sharers near, where it does not reach; ``ctasim.calibration.gap_cv``)."""


def ticket_plan(m: int, layers: int, h: int, chain_group: int = 0):
    """The chain kernel's tickets plan of an ``layers``-layer M x H x H chain in groups of ``chain_group`` row-blocks
    (0: its default order, groups of 8; no GPU needed)."""
    from ctasim.spec import Strategy, load_hardware, load_workload  # noqa: PLC0415
    from ctasim.strategies.ctapipe import build_chain  # noqa: PLC0415

    wl = load_workload("chain2-16384")
    wl = dataclasses.replace(wl, layers=(dataclasses.replace(wl.layers[0], m=m, k=h, n=h),) * layers)
    return build_chain(Strategy(kind="ctapipe", gpus=1, chain_group=chain_group), wl,
                       load_hardware("h200-x2-calibrated"), f"m={m}")


def ticket_trace_name(m: int, layers: int, h: int, chain_group: int = 0) -> str:
    """A ticket trace's name in files and tables: ``<M>x<H>x<layers>-tickets``, ``-g<group>`` after it where the order
    is not the default."""
    return f"{m}x{h}x{layers}-tickets" + (f"-g{chain_group}" if chain_group else "")


def trace_tickets(shapes: Sequence[tuple[int, int, int]] = TICKET_SHAPES, *, chain_group: int = 0,
                  rest_ms: float = 250.0, seed: int = 20261202,
                  log: Callable[[str], None] = _stderr) -> tuple[list[dict], dict]:
    """The ticket traces on GPU 0 (module docstring), in groups of ``chain_group`` row-blocks (0: the default order).
    Returns (rows: m, layers, h, chain_group, grid, traced_ms, rel_err; {:func:`ticket_trace_name`: the traced run's
    tiles, :data:`TRACE_COLUMNS`}). Raises what the chain kernel raises on a protocol error or a wrong result."""
    plans = {s: ticket_plan(*s, chain_group=chain_group) for s in shapes}  # bad shapes are refused before the GPU runs
    from ctahw.baselines import Chain, Timed  # noqa: PLC0415
    from ctahw.chain import ChainRunner  # noqa: PLC0415
    from ctahw.device import output_error, poison, reference_chain  # noqa: PLC0415

    timed = Timed([0], 3.0, 0.0, rest_ms)
    cp, s0 = timed.cp, timed.compute[0]
    data = Chain(cp, seed)
    rows: list[dict] = []
    traces: dict = {}
    for (m, layers, h), plan in plans.items():
        x = data.rand(0, (m, h), salt=1)
        ws = [data.rand(0, (h, h), 1 / math.sqrt(h), salt=2 + i) for i in range(layers)]
        ref = reference_chain(cp, x, ws, 0)
        t = ChainRunner(plan, x, ws, trace=True)
        poison(t.x[1:])
        ms = timed.run(lambda tm: (tm.part("compute", 0, s0, lambda: t.launch(stream=s0)), [(s0, 0)])[1])[0]
        t.check_errors()
        err = output_error(cp, t.out, ref)
        if not err < 1e-2:
            raise RuntimeError(f"ticket trace {m} x {h} x {layers} layers: relative error {err:.2e} against fp32")
        tiles = t.read_trace().tiles
        name = ticket_trace_name(m, layers, h, chain_group)
        traces[name] = trace_columns(tiles)
        rows.append({"m": m, "layers": layers, "h": h, "chain_group": chain_group, "grid": t.grid, "traced_ms": ms,
                     "rel_err": err})
        log(f"{name}: traced {ms:.4f} ms (err {err:.1e})")
        del t, x, ws, ref
        cp.get_default_memory_pool().free_all_blocks()
    return rows, traces


def _median(v: Sequence[float]) -> float:
    v = sorted(v)
    return v[len(v) // 2]


def time_orders(shapes: Sequence[tuple[int, int, int]], *, reps: int = 3, rest_ms: float = 80.0,
                cublas: bool = True, seed: int = 20261201, log: Callable[[str], None] = _stderr) -> list[dict]:
    """The tile-order probe on GPU 0 (module docstring). Rows: m, n, k, backend, order (raster/swizzle; cuBLAS:
    ''), median_ms, tflops, tiles, waves (tiles / SMs), samples (the timed runs, ';'-joined)."""
    if reps < 1:
        raise ValueError(f"reps must be >= 1, got {reps}")
    from ctahw.baselines import Chain, Timed  # noqa: PLC0415
    from ctahw.device import require_gpus, summarize  # noqa: PLC0415
    from ctahw.gemm import SCHEDULES, CutlassGemm, make_backend, schedule_name  # noqa: PLC0415

    found = require_gpus(1)
    sms = found[0].sm_count
    timed = Timed([0], gate_ms=3.0, rest_ms=rest_ms)
    cp, s = timed.cp, timed.compute[0]
    g = CutlassGemm(0)
    cb = make_backend("cublas", 0) if cublas else None
    data = Chain(cp, seed)
    rows: list[dict] = []
    for m, n, k in shapes:
        a = data.rand(0, (m, k), salt=1)
        w = data.rand(0, (n, k), 1 / math.sqrt(k), salt=2)
        with cp.cuda.Device(0):
            d = cp.empty((m, n), dtype=cp.uint16)
        variants = [("cutlass", sc) for sc in SCHEDULES] + ([("cublas", None)] if cublas else [])
        samples = {v: [] for v in variants}
        for rep in range(reps + 1):  # one untimed round first
            for v in (variants if rep % 2 == 0 else variants[::-1]):
                backend, sc = v
                if backend == "cutlass":
                    g.schedule[(m, n, k)] = sc
                    fn = (lambda: g(a, w, d, m, n, k, s))
                else:
                    fn = (lambda: cb(a, w, d, m, n, k, s))
                ms, _ = timed.run(lambda t, fn=fn: (t.part("compute", 0, s, fn), [(s, 0)])[1])
                if rep:
                    samples[v].append(ms)
        tiles = -(-m // 128) * -(-n // 256)
        for (backend, sc), v in samples.items():
            med = summarize(v).median_ms
            rows.append(dict(m=m, n=n, k=k, backend=backend, order=schedule_name(sc) if sc else "", median_ms=med,
                             tflops=2.0 * m * n * k / (med * 1e9), tiles=tiles, waves=tiles / sms,
                             samples=";".join(f"{x:.5f}" for x in v)))
        cut = [r for r in rows[-len(samples):] if r["backend"] == "cutlass"]
        best = min(cut, key=lambda r: r["median_ms"])
        worst = max(cut, key=lambda r: r["median_ms"])
        log(f"{m:>6} x {n:>5} x {k:>5}: CUTLASS best {best['tflops']:6.1f} TFLOP/s ({best['order']}), worst "
            f"{worst['tflops']:6.1f} ({worst['order']})"
            + (f", cuBLAS {rows[-1]['tflops']:6.1f}" if cublas else ""))
        g.schedule.pop((m, n, k), None)
        del a, w, d
        cp.get_default_memory_pool().free_all_blocks()
    return rows


def trace_orders(shapes: Sequence[tuple[int, int]] = TRACE_SHAPES, orders: Sequence[tuple[str, int]] = TRACE_ORDERS,
                 *, reps: int = 5, rest_ms: float = 250.0, seed: int = 20261202,
                 log: Callable[[str], None] = _stderr) -> tuple[list[dict], dict]:
    """The order traces on GPU 0 (module docstring). Returns (timing rows: m, h, order, variant, grid, median_ms,
    rel_err, samples; {:func:`trace_name`: the traced run's tiles, :data:`TRACE_COLUMNS`}). Raises what the chain
    kernel raises on a protocol error."""
    if reps < 1:
        raise ValueError(f"reps must be >= 1, got {reps}")
    for m, h in shapes:
        for raster, swizzle in orders:
            trace_plan(m, h, raster, swizzle)  # a padded grid is refused before the GPU runs anything
    from ctahw.baselines import Chain, Timed  # noqa: PLC0415
    from ctahw.chain import ChainRunner  # noqa: PLC0415
    from ctahw.device import output_error, poison, reference_chain  # noqa: PLC0415
    from ctahw.gemm import RASTER_NAMES, make_backend  # noqa: PLC0415

    timed = Timed([0], 3.0, 0.0, rest_ms)
    cp, s0 = timed.cp, timed.compute[0]
    data = Chain(cp, seed)
    raster_code = {v: k for k, v in RASTER_NAMES.items()}
    rows: list[dict] = []
    traces: dict = {}
    for m, h in shapes:
        x = data.rand(0, (m, h), salt=1)
        ws = [data.rand(0, (h, h), 1 / math.sqrt(h), salt=2)]
        ref = reference_chain(cp, x, ws, 0)
        d = cp.empty((m, h), dtype=cp.uint16)
        for raster, swizzle in orders:
            name = f"{raster}/swizzle{swizzle}"
            r = ChainRunner(trace_plan(m, h, raster, swizzle), x, ws, design="static2x1")
            g = make_backend("cutlass", 0)
            g.schedule[(m, h, h)] = (raster_code[raster], swizzle)
            poison(r.x[1:])
            r.launch(stream=s0)
            s0.synchronize()
            r.check_errors()
            err = {"chain_static2x1": output_error(cp, r.out, ref)}
            poison(d)
            g(x, ws[0], d, m, h, h, s0)
            s0.synchronize()
            err["cutlass"] = output_error(cp, d, ref)
            fns = {"chain_static2x1": lambda r=r: r.launch(stream=s0),
                   "cutlass": lambda g=g: g(x, ws[0], d, m, h, h, s0)}
            samples = {k: [] for k in fns}
            for _ in range(reps):
                for k, fn in fns.items():
                    samples[k].append(timed.run(lambda t, fn=fn: (t.part("compute", 0, s0, fn), [(s0, 0)])[1])[0])
            r.check_errors()
            for k, v in samples.items():
                rows.append({"m": m, "h": h, "order": name, "variant": k, "grid": r.grid if k != "cutlass" else 132,
                             "median_ms": _median(v), "rel_err": err[k],
                             "samples": ";".join(f"{x:.5f}" for x in v)})
            t = ChainRunner(trace_plan(m, h, raster, swizzle), x, ws, design="static2x1", trace=True)
            # rested and gated as the timed runs: a traced run straight after a long timed one starts power-capped
            traced = timed.run(lambda tm, t=t: (tm.part("compute", 0, s0, lambda: t.launch(stream=s0)), [(s0, 0)])[1])[0]
            t.check_errors()
            tiles = t.read_trace().tiles
            traces[trace_name(m, h, raster, swizzle)] = trace_columns(tiles)
            log(f"{m} x {h} x {h} {name}: " + ", ".join(f"{k} {_median(v):.4f} ms (err {err[k]:.1e})"
                                                        for k, v in samples.items()) + f", traced run {traced:.4f} ms")
            del r, t
            cp.get_default_memory_pool().free_all_blocks()
        del x, ws, ref, d
        cp.get_default_memory_pool().free_all_blocks()
    return rows, traces


def write_traces(out: Path, timing: Sequence[Mapping], traces: Mapping) -> None:
    """``timing.csv`` and one ``tiles-<name>.csv.gz`` per trace into folder ``out`` (times as whole ns), the files
    ``bench/order_drift.py`` reads."""
    import pandas as pd  # noqa: PLC0415

    out.mkdir(parents=True, exist_ok=True)
    for name, tiles in traces.items():
        tiles.to_csv(out / f"tiles-{name}.csv.gz", index=False, float_format="%.0f")
    pd.DataFrame(list(timing)).to_csv(out / "timing.csv", index=False)
