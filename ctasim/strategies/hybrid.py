"""Hybrid tensor parallel x CTA-pipelining (the paper's Fig. 7) for a 2-layer block.

``tp_degree`` = t GPUs per stage, 2 stages, 2t GPUs.  Stage 0 (GPUs 0..t-1) runs layer 0
column-parallel; GPU i's N/t-column slice is exactly what GPU t+i of stage 1 needs for layer 1
row-parallel, so each pair (i, t+i) is CTA-pipelined.  Stage 1 then all-reduces the partial outputs.
"""

from __future__ import annotations

from ctasim import costs
from ctasim.plan import Collective, Plan
from ctasim.spec import Hardware, Strategy, Workload
from ctasim.strategies.common import add_gemm, add_rowwise, divides, epilogue_pass_reason, split_layer
from ctasim.strategies.ctapipe import consumer_source, link_pipes


def gpus_needed(strategy: Strategy, wl: Workload, gpus: int) -> int:
    return 2 * strategy.tp_degree


def check(strategy: Strategy, wl: Workload, hw: Hardware, gpus: int) -> str | None:
    t = strategy.tp_degree
    why = epilogue_pass_reason("hybrid", wl)
    if why:
        return why
    if len(wl.layers) != 2:
        return f"hybrid places a 2-layer block (column- then row-parallel); the workload has {len(wl.layers)} layers"
    l0, l1 = wl.layers
    if not divides(l0.n, t, l0.tile_n):
        return f"layer 0: N={l0.n} does not split into {t} column slices of whole {l0.tile_n}-wide tiles"
    if l1.k % t:
        return f"layer 1: K={l1.k} does not split into {t} row slices"
    if l0.rowwise:
        return f"layer 0: a row-wise op ({l0.rowwise}) between the column- and row-parallel layers needs whole rows"
    return None


def build(strategy: Strategy, wl: Workload, hw: Hardware, gpus: int, case: str) -> list[Plan]:
    t = strategy.tp_degree
    plan = Plan(strategy.label, case, 2 * t, params={"tp_degree": t, "stages": 2, "tile_source": strategy.tile_source})
    l0, l1 = wl.layers
    p0, p1 = split_layer(l0, n=l0.n // t), split_layer(l1, k=l1.k // t)
    consumers = []
    for i in range(t):
        raster = strategy.raster or l0.raster
        prod = add_gemm(plan, hw, wl, 0, p0, i, start_ns=hw.launch_ns, persistent=strategy.persistent,
                        raster=raster, name=f"hybrid L0 gpu{i}", n0=i * p0.n)
        cons = add_gemm(plan, hw, wl, 1, p1, t + i, start_ns=hw.launch_ns, source=consumer_source(strategy),
                        persistent=strategy.persistent, name=f"hybrid L1 gpu{t + i}", k0=i * p1.k)
        link_pipes(plan, hw, wl, [p0, p1], [prod, cons])
        consumers.append(cons)
    last = consumers
    if t > 1:
        nbytes = float(l1.m * l1.out_n * wl.elem_bytes)
        coll = plan.add(Collective, name="allreduce L1", deps=tuple((k.id, hw.kernel_gap_ns) for k in consumers),
                        kind="allreduce", gpus=tuple(range(t, 2 * t)), nbytes=nbytes, ns=costs.allreduce_ns(nbytes, t, hw), layer=1)
        last = [coll] * t
    if l1.rowwise:
        for i in range(t):
            add_rowwise(plan, hw, wl, 1, l1, t + i, last[i].id)
    return [plan]
