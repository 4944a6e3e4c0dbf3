"""Pieces shared by the strategies: a GEMM kernel op from a layer, the memory passes after it (an unfused
epilogue, a row-wise op), stream-order launch delays."""

from __future__ import annotations

import dataclasses

from ctasim import costs
from ctasim.plan import Kernel, MemoryPass, Plan, Region, raster_order
from ctasim.spec import Hardware, Layer, Workload

__all__ = ["add_gemm", "add_epilogue_pass", "add_rowwise", "split_layer", "divides", "epilogue_pass_reason"]


def divides(n: int, parts: int, tile: int) -> bool:
    return parts >= 1 and n % parts == 0 and (n // parts) % tile == 0


def split_layer(layer: Layer, m: int | None = None, k: int | None = None, n: int | None = None) -> Layer:
    """The same layer with a different M, K or N (a chunk of rows, a tensor-parallel slice)."""
    return dataclasses.replace(layer, m=m or layer.m, k=k or layer.k, n=n or layer.n)


def add_gemm(plan: Plan, hw: Hardware, wl: Workload, layer_idx: int, layer: Layer, gpu: int, *,
             deps=(), start_ns: float = 0.0, row_offset: int = 0, source: str = "static",
             persistent: bool = True, raster: str = "", name: str = "", kernel: str = "",
             tuned: bool = False, n0: int = 0, k0: int = 0) -> Kernel:
    """A GEMM kernel for ``layer`` (already sliced/chunked) on ``gpu``; ``kernel`` picks a kernel variant's
    config of the profile ('' = the default kernel of the tile shape).

    ``tuned``: a plain GEMM whose tile order the executor tunes (sequential, micro-batching, TP). Where the profile
    has the memory hierarchy (:func:`ctasim.costs.tuned_gemm`) it runs the order the model finds fastest, each tile
    taking its wave's time, and ``raster`` is not used; otherwise ``raster`` orders it and every tile takes the
    config's tile time.

    ``row_offset`` (in tiles of ``layer``), ``n0`` and ``k0`` place ``layer`` in the workload's layer: the kernel's
    :class:`ctasim.plan.Region`."""
    cfg = hw.config(layer.tile_m, layer.tile_n, kernel=kernel)
    order = raster_order(layer.tiles_m, layer.tiles_n, raster or layer.raster)
    memory = costs.tuned_gemm(layer, hw, wl.elem_bytes, kernel) if tuned else None
    if memory is None:
        tile, extra = costs.gemm_tile_ns(layer, hw, wl.elem_bytes, kernel), {}
    else:
        order, tile = memory.order, float(memory.tile_ns.mean())
        extra = dict(tile_times=memory.tile_ns, schedule=memory.schedule)
    return plan.add(
        Kernel,
        name=name or f"gemm L{layer_idx} gpu{gpu}",
        deps=tuple(deps),
        start_ns=start_ns,
        gpu=gpu,
        layer=layer_idx,
        tiles_m=layer.tiles_m,
        tiles_n=layer.tiles_n,
        row_offset=row_offset,
        tile_ns=tile,
        fixed_ns=cfg.kernel_fixed_ns,
        slots=hw.sm_count * cfg.cta_slots_per_sm,
        slots_per_sm=cfg.cta_slots_per_sm,
        persistent=persistent,
        cta_launch_ns=cfg.cta_launch_ns,
        wave_slowdown=cfg.wave_slowdown,
        wave_slowdown_waves=cfg.wave_slowdown_waves,
        signal_hold_ns=cfg.signal_hold_ns,
        signal_ns=cfg.signal_ns,
        tile_cv=cfg.tile_cv,
        kernel=kernel,
        order=order,
        source=source,
        region=Region.of(layer, row0=row_offset * layer.tile_m, n0=n0, k0=k0),
        **extra,
    )


def add_epilogue_pass(plan: Plan, hw: Hardware, wl: Workload, layer_idx: int, layer: Layer, gpu: int,
                      after: int, row0: int = 0) -> MemoryPass:
    """A layer's epilogue ops as a separate elementwise kernel (``Layer.epilogue_fused = false``), stream-ordered
    after ``after`` (its GEMM); ``layer`` is the part it covers, from row ``row0`` of the workload's layer."""
    return plan.add(
        MemoryPass,
        name=f"{'+'.join(layer.epilogue)} L{layer_idx} gpu{gpu}",
        deps=((after, hw.kernel_gap_ns),),
        gpu=gpu,
        ns=costs.epilogue_pass_ns(layer, wl.elem_bytes, hw),
        layer=layer_idx,
        what="epilogue",
        region=Region.of(layer, row0=row0),
    )


def epilogue_pass_reason(kind: str, wl: Workload) -> str | None:
    """Why a strategy that has no place for a pass between a GEMM and its consumer cannot run ``wl``, or None."""
    for i, layer in enumerate(wl.layers):
        if layer.epilogue_pass:
            return (f"layer {i}: {kind} runs fused epilogues only (epilogue_fused = false puts "
                    f"{'+'.join(layer.epilogue)} in a kernel of its own; modelled for sequential and microbatch)")
    return None


def add_rowwise(plan: Plan, hw: Hardware, wl: Workload, layer_idx: int, layer: Layer, gpu: int, after: int,
                row0: int = 0) -> MemoryPass:
    """A separate row-wise kernel (LayerNorm/RMSNorm) over a layer's output (``layer``: the rows it covers, from
    row ``row0`` of the workload's layer), stream-ordered after ``after``."""
    return plan.add(
        MemoryPass,
        name=f"{layer.rowwise} L{layer_idx} gpu{gpu}",
        deps=((after, hw.kernel_gap_ns),),
        gpu=gpu,
        ns=costs.rowwise_ns(layer.m, layer.out_n, wl.elem_bytes, hw),
        layer=layer_idx,
        what="rowwise",
        region=Region.of(layer, row0=row0),
    )
