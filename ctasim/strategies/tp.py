"""Tensor parallelism (Megatron-style) over ``tp_degree`` GPUs (0: every GPU of the case).

Layers pair up: the first of a pair is column-parallel (each GPU computes N/p output columns from the
full input), the second row-parallel (each GPU reads its N/p slice and produces a partial sum of the full
output), then a ring all-reduce of the full output.  An unpaired last layer is column-parallel followed
by an all-gather.  A row-wise op runs on the reduced output on every GPU.
"""

from __future__ import annotations

from ctasim import costs
from ctasim.plan import Collective, Plan
from ctasim.spec import Hardware, Strategy, Workload
from ctasim.strategies.common import add_gemm, add_rowwise, divides, epilogue_pass_reason, split_layer


def degree(strategy: Strategy, gpus: int) -> int:
    return strategy.tp_degree or gpus


def gpus_needed(strategy: Strategy, wl: Workload, gpus: int) -> int:
    return degree(strategy, gpus)


def check(strategy: Strategy, wl: Workload, hw: Hardware, gpus: int) -> str | None:
    why = epilogue_pass_reason("tp", wl)
    if why:
        return why
    p = degree(strategy, gpus)
    for i, layer in enumerate(wl.layers):
        if i % 2 == 0 and not divides(layer.n, p, layer.tile_n):
            return f"layer {i}: N={layer.n} does not split into {p} column slices of whole {layer.tile_n}-wide tiles"
        if i % 2 == 1 and layer.k % p:
            return f"layer {i}: K={layer.k} does not split into {p} row slices"
        if i % 2 == 1 and p > 1 and set(layer.epilogue) - {"residual"}:
            return (f"layer {i}: {'+'.join(layer.epilogue)} on a row-parallel layer would act on each GPU's partial "
                    f"sum; it needs the all-reduced output (only a residual add commutes with the sum)")
        if i % 2 == 0 and i < len(wl.layers) - 1 and layer.rowwise:
            return (f"layer {i}: a row-wise op ({layer.rowwise}) between the column- and row-parallel layers of a "
                    f"tensor-parallel pair needs whole rows, which no GPU has there")
    return None


def build(strategy: Strategy, wl: Workload, hw: Hardware, gpus: int, case: str) -> list[Plan]:
    p = degree(strategy, gpus)
    plan = Plan(strategy.label, case, p, params={"tp_degree": p})
    last: dict[int, object] = {}
    n_layers = len(wl.layers)
    for i, layer in enumerate(wl.layers):
        column = i % 2 == 0
        part = split_layer(layer, n=layer.n // p) if column else split_layer(layer, k=layer.k // p)
        ks = []
        for g in range(p):
            deps = ((last[g].id, hw.kernel_gap_ns),) if g in last else ()
            ks.append(add_gemm(plan, hw, wl, i, part, g, deps=deps, start_ns=hw.launch_ns, raster=strategy.raster,
                               name=f"gemm L{i} gpu{g} ({'column' if column else 'row'}-parallel)", tuned=True,
                               n0=g * part.n if column else 0, k0=0 if column else g * part.k))
        end_of_pair = (not column) or i == n_layers - 1
        if end_of_pair and p > 1:
            kind = "allreduce" if not column else "allgather"
            nbytes = float(layer.m * layer.out_n * wl.elem_bytes)
            ns = costs.allreduce_ns(nbytes, p, hw) if kind == "allreduce" else 0.5 * costs.allreduce_ns(nbytes, p, hw)
            coll = plan.add(Collective, name=f"{kind} L{i}", deps=tuple((k.id, hw.kernel_gap_ns) for k in ks),
                            kind=kind, gpus=tuple(range(p)), nbytes=nbytes, ns=ns, layer=i)
            for g in range(p):
                last[g] = coll
        else:
            for g, k in enumerate(ks):
                last[g] = k
        if layer.rowwise and end_of_pair:
            for g in range(p):
                last[g] = add_rowwise(plan, hw, wl, i, layer, g, last[g].id)
    return [plan]
