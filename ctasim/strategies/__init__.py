"""Strategies: how a workload is placed on GPUs and ordered in time; each builds :class:`~ctasim.plan.Plan`s.

Registry keyed by the strategy kind of the spec.  ``build_plans`` returns one plan per variant a strategy
tries (micro-batching: one per chunk count; the best is reported).  ``check_placement`` says, before
anything runs, why a strategy cannot place a workload on a number of GPUs (or None if it can).
"""

from __future__ import annotations

from ctasim.plan import Plan
from ctasim.spec import Hardware, Strategy, Workload
from ctasim.strategies import ctapipe, hybrid, microbatch, sequential, tp

__all__ = ["REGISTRY", "build_plans", "check_placement", "gpus_needed"]

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
    return REGISTRY[strategy.kind].build(strategy, workload, hw, gpus, case)
