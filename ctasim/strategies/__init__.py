"""Strategies: how a workload is placed on GPUs and ordered in time; each builds :class:`~ctasim.plan.Plan`s.

Registry keyed by the strategy kind of the spec.  ``build_plans`` returns one plan per variant a strategy
tries (micro-batching: one per chunk count; the best is reported).  ``check_placement`` says, before
anything runs, why a strategy cannot place a workload on a number of GPUs (or None if it can).  After a strategy
built its plans, ``build_plans`` scales every GEMM kernel's tiles by what its layer's A operand holds
(``scale_by_input``: a ReLU's output runs at the profile's ``relu_input_tile_factor``), so that no strategy prices
the data on its own.
"""

from __future__ import annotations

import numpy as np

from ctasim import costs
from ctasim.plan import Plan
from ctasim.spec import Hardware, Strategy, Workload
from ctasim.strategies import ctapipe, hybrid, microbatch, sequential, tp

__all__ = ["REGISTRY", "build_plans", "check_placement", "gpus_needed", "scale_by_input"]

REGISTRY = {
    "sequential": sequential,
    "microbatch": microbatch,
    "tp": tp,
    "ctapipe": ctapipe,
    "hybrid": hybrid,
}


def gpus_needed(strategy: Strategy, workload: Workload, gpus: int) -> int:
    """GPUs the strategy uses for this workload, given ``gpus`` available for the case."""
    return REGISTRY[strategy.kind].gpus_needed(strategy, workload, gpus)


def check_placement(strategy: Strategy, workload: Workload, hw: Hardware, gpus: int) -> str | None:
    """Why ``strategy`` cannot run ``workload`` on ``gpus`` GPUs of ``hw``, or None."""
    need = gpus_needed(strategy, workload, gpus)
    if need > gpus:
        return f"{strategy.label} needs {need} GPUs for {len(workload.layers)} layers, but the case has {gpus}"
    if need > hw.gpus:
        return f"{strategy.label} needs {need} GPUs but profile {hw.name!r} has {hw.gpus}"
    return REGISTRY[strategy.kind].check(strategy, workload, hw, gpus)


def build_plans(strategy: Strategy, workload: Workload, hw: Hardware, gpus: int, case: str) -> list[Plan]:
    problem = check_placement(strategy, workload, hw, gpus)
    if problem is not None:
        raise ValueError(problem)
    plans = REGISTRY[strategy.kind].build(strategy, workload, hw, gpus, case)
    for plan in plans:
        scale_by_input(plan, workload, hw)
    return plans


def scale_by_input(plan: Plan, workload: Workload, hw: Hardware) -> None:
    """Every GEMM kernel's tile times scaled by what its layer's A operand holds (:func:`ctasim.costs.input_tile_factor`:
    a ReLU's output runs faster under the power cap), a chain kernel's per entry of its order by the entry's layer.
    Done once here, after a strategy built its plan, so that no strategy prices it on its own."""
    layers = workload.layers
    for k in plan.kernels():
        if k.chain_layers > 1:
            per = np.array([costs.input_tile_factor(layers, k.layer + j * k.chain_stride, hw)
                            for j in range(k.chain_layers)])
            if np.all(per == 1.0):
                continue
            entry = per[np.asarray(k.order, dtype=np.int64) // (k.tiles_m * k.tiles_n)]
            base = k.tile_times if len(k.tile_times) else np.full(len(entry), k.tile_ns)
            k.tile_times = base * entry
            k.tile_ns = float(k.tile_times.mean())
            continue
        f = costs.input_tile_factor(layers, k.layer, hw)
        if f != 1.0:
            k.tile_ns *= f
            if len(k.tile_times):
                k.tile_times = k.tile_times * f
