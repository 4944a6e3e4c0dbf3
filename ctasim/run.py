"""Running experiments: every case x strategy simulated, summarized into one table.

Summary columns per (case, strategy): ``latency_us`` (makespan), the variant that achieved it (e.g. the
best micro-batching chunk count), ``speedup_vs_<baseline>`` for every other strategy of the case, the
latency breakdown (``compute_us``: mean per-GPU slot-busy time divided by slots, ``comm_us``: blocking
collectives, ``idle_us``: the rest), the mean busy fraction, the CTAs of the reported plan (``ctas``) and
of every variant simulated for it (``ctas_simulated``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ctasim.cases import Case, expand
from ctasim.engine import simulate
from ctasim.invariants import check_trace
from ctasim.plan import Plan
from ctasim.spec import Experiment, Hardware, Strategy
from ctasim.strategies import build_plans
from ctasim.trace import Trace

__all__ = ["StrategyResult", "run_strategy", "run_experiment", "summarize"]


@dataclass
class StrategyResult:
    """The best plan of a strategy for one case, its trace, and every variant's latency."""

    case: Case
    strategy: Strategy
    plan: Plan
    trace: Trace
    variants: list[tuple[dict, float]]
    ctas_simulated: int = 0

    @property
    def latency_ns(self) -> float:
        return self.trace.makespan_ns


def slots_per_gpu(plan: Plan) -> dict[int, int]:
    out: dict[int, int] = {}
    for k in plan.kernels():
        out[k.gpu] = max(out.get(k.gpu, 0), k.slots)
    return out


def run_strategy(strategy: Strategy, case: Case, hw: Hardware, seed: int = 0, jitter: float = 0.0,
                 check: bool = True, regime: str = "burst") -> StrategyResult:
    """Simulate every plan the strategy builds for the case; keep the fastest."""
    best = None
    variants = []
    ctas = 0
    for plan in build_plans(strategy, case.workload, hw, case.gpus, case.label):
        trace = simulate(plan, hw, seed=seed, jitter=jitter, regime=regime)
        if check:
            check_trace(trace, plan)
        variants.append((dict(plan.params), trace.makespan_ns))
        ctas += len(trace.tiles)
        if best is None or trace.makespan_ns < best[1].makespan_ns:
            best = (plan, trace)
    return StrategyResult(case, strategy, best[0], best[1], variants, ctas)


def summarize(results: list[StrategyResult], experiment: str = "") -> pd.DataFrame:
    rows = []
    for r in results:
        t = r.trace
        span = t.makespan_ns
        slots = slots_per_gpu(r.plan)
        busy = t.busy_fraction(slots)
        comm = t.ops.loc[t.ops["kind"].isin(["allreduce", "allgather"]), ["t_begin", "t_end"]]
        comm_ns = float((comm["t_end"] - comm["t_begin"]).sum())
        compute_ns = float(np.mean([busy[g] * span for g in busy])) if busy else 0.0
        row = {
            "experiment": experiment,
            "case": r.case.label,
            **{a: v for a, v in r.case.axes},
            "strategy": r.strategy.label,
            "kind": r.strategy.kind,
            "gpus": r.plan.gpus,
            "variant": ",".join(f"{k}={v}" for k, v in r.plan.params.items()),
            "latency_us": span / 1e3,
            "compute_us": compute_ns / 1e3,
            "comm_us": comm_ns / 1e3,
            "idle_us": max(0.0, span - compute_ns - comm_ns) / 1e3,
            "busy_mean": float(np.mean(list(busy.values()))) if busy else 0.0,
            "ctas": int(len(t.tiles)),
            "ctas_simulated": r.ctas_simulated,
        }
        rows.append(row)
    df = pd.DataFrame(rows)
    if df.empty:
        return df
    for case, grp in df.groupby("case", sort=False):
        for _, base in grp.iterrows():
            col = f"speedup_vs_{base['strategy']}"
            df.loc[grp.index, col] = base["latency_us"] / grp["latency_us"]
    return df


def run_one(item) -> StrategyResult:
    """One run of :func:`run_experiment`'s list (a top-level function: local processes and Dask pickle it)."""
    strategy, case, hw, seed, jitter, check, regime = item
    return run_strategy(strategy, case, hw, seed=seed, jitter=jitter, check=check, regime=regime)


def work_items(exp: Experiment, seed: int = 0, jitter: float = 0.0, check: bool = True) -> list[tuple]:
    """The independent runs of ``exp`` (case x strategy, in the table's order) as :func:`run_one` takes them."""
    return [(s, c, exp.hardware, seed, jitter, check, exp.regime) for c in expand(exp) for s in exp.strategies]


def run_experiment(exp: Experiment, seed: int = 0, jitter: float = 0.0, progress: bool = False,
                   check: bool = True, jobs: int = 1, scheduler=None) -> tuple[pd.DataFrame, list[StrategyResult]]:
    """Simulate every case x strategy of ``exp``; ``jobs`` local processes or a Dask ``scheduler`` run them side
    by side (:mod:`ctasim.parallel`), with the serial run's results in the serial run's order."""
    from ctasim.parallel import map_ordered

    work = work_items(exp, seed, jitter, check)
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=len(work), desc=exp.name, unit="run", leave=False)
    try:
        results = map_ordered(run_one, work, jobs=jobs, scheduler=scheduler, progress=bar.update if bar else None)
    finally:
        if bar is not None:
            bar.close()
    return summarize(results, exp.name), results
