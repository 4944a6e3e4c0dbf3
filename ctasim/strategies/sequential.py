"""Sequential: every layer on GPU 0, one kernel after another on one stream (the 1-GPU baseline)."""

from __future__ import annotations

from ctasim.plan import Plan
from ctasim.spec import Hardware, Strategy, Workload
from ctasim.strategies.common import add_epilogue_pass, add_gemm, add_rowwise


def gpus_needed(strategy: Strategy, wl: Workload, gpus: int) -> int:
    return 1


def check(strategy: Strategy, wl: Workload, hw: Hardware, gpus: int) -> str | None:
    return None


def build(strategy: Strategy, wl: Workload, hw: Hardware, gpus: int, case: str) -> list[Plan]:
    plan = Plan(strategy.label, case, 1)
    prev = None
    for i, layer in enumerate(wl.layers):
        deps = () if prev is None else ((prev.id, hw.kernel_gap_ns),)
        prev = add_gemm(plan, hw, wl, i, layer, 0, deps=deps, start_ns=hw.launch_ns, raster=strategy.raster, tuned=True)
        if layer.epilogue_pass:
            prev = add_epilogue_pass(plan, hw, wl, i, layer, 0, prev.id)
        if layer.rowwise:
            prev = add_rowwise(plan, hw, wl, i, layer, 0, prev.id)
    return [plan]
