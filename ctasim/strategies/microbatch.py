"""Micro-batching: layer i on GPU i; M is cut into chunks that flow GPU to GPU.

Chunk j of layer i runs after chunk j-1 of layer i (stream order, ``kernel_gap_ns``) and after chunk j's
input arrived by a copy-engine transfer from GPU i-1 (cross-GPU event, ``event_wait_ns``).  Each chunk
is its own kernel launch, so small chunks pay wave quantization and launch gaps.  One plan per chunk
count of the strategy; the summary reports the best.
"""

from __future__ import annotations

from ctasim.plan import Plan, Region, Transfer
from ctasim.spec import Hardware, Strategy, Workload
from ctasim.strategies.common import add_epilogue_pass, add_gemm, add_rowwise, divides, split_layer


def gpus_needed(strategy: Strategy, wl: Workload, gpus: int) -> int:
    return len(wl.layers)


def check(strategy: Strategy, wl: Workload, hw: Hardware, gpus: int) -> str | None:
    usable = [c for c in strategy.chunks if all(divides(l.m, c, l.tile_m) for l in wl.layers)]
    if not usable:  # name a layer whose tiles the smallest chunk count does not cut (there is one)
        c = min(strategy.chunks)
        i, layer = next((i, l) for i, l in enumerate(wl.layers) if not divides(l.m, c, l.tile_m))
        return f"no chunk count in {strategy.chunks} cuts M={layer.m} into whole {layer.tile_m}-row tiles (layer {i})"
    return None


def build(strategy: Strategy, wl: Workload, hw: Hardware, gpus: int, case: str) -> list[Plan]:
    plans = []
    for chunks in strategy.chunks:
        if not all(divides(l.m, chunks, l.tile_m) for l in wl.layers):
            continue
        plan = Plan(strategy.label, case, len(wl.layers), params={"chunks": chunks})
        last = {}  # gpu -> last op on its compute stream
        handoff = {}  # (layer, chunk) -> transfer op carrying that chunk's output to the next GPU
        for j in range(chunks):
            for i, layer in enumerate(wl.layers):
                part = split_layer(layer, m=layer.m // chunks)
                deps = []
                if i in last:
                    deps.append((last[i].id, hw.kernel_gap_ns))
                if i > 0:
                    deps.append((handoff[(i - 1, j)].id, hw.event_wait_ns))
                k = add_gemm(plan, hw, wl, i, part, i, deps=deps, start_ns=hw.launch_ns,
                             row_offset=j * part.tiles_m, raster=strategy.raster, name=f"gemm L{i} chunk{j}",
                             tuned=True)
                last[i] = k
                if layer.epilogue_pass:
                    last[i] = add_epilogue_pass(plan, hw, wl, i, part, i, last[i].id, row0=j * part.m)
                if layer.rowwise:
                    last[i] = add_rowwise(plan, hw, wl, i, part, i, last[i].id, row0=j * part.m)
                if i + 1 < len(wl.layers):
                    handoff[(i, j)] = plan.add(Transfer, name=f"copy L{i} chunk{j} gpu{i}->gpu{i + 1}",
                                               deps=((last[i].id, 0.0),), src=i, dst=i + 1,
                                               nbytes=float(part.m * part.out_n * wl.elem_bytes),
                                               layer=i, region=Region.of(part, row0=j * part.m))
        plans.append(plan)
    return plans
