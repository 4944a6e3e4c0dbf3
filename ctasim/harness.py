"""The measurement harness: how ``ctahw`` launches and times a run, as launch delays of a plan's operations.

``ctahw`` times every strategy the same way (``ctahw.baselines.Timed``): the host enqueues the whole run behind a
sleep on GPU 0, so no host launch latency is timed; a start event, the run's operations, an end event on GPU 0.
:class:`Harness` holds what that adds to a plan and :func:`timed_makespan_ns` predicts the start-to-end time the
harness reports.  Its values belong to the measurement method on one machine, not to the hardware profile, so they
live in ``specs/harness/`` (with the run they were fitted on) and a registration records them.

Left out: host-side effects (the enqueue is hidden behind the sleep by design), run-to-run spread, clock regime
(a harness fitted in the burst regime is a burst-regime harness).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from ctasim.engine import simulate
from ctasim.plan import Collective, Kernel, MemoryPass, Plan, Transfer
from ctasim.spec import Hardware, Strategy, Workload, build_section, read_toml, require, resolve_ref, table_of
from ctasim.strategies import build_plans

__all__ = ["Harness", "load_harness", "timed_plans", "timed_makespan_ns"]


@dataclass(frozen=True)
class Harness:
    """How ``ctahw``'s ``Timed`` harness launches and times a run, as delays of a plan's operations.

    The host enqueues the whole run behind a sleep on GPU 0, so no host launch latency is timed: the first
    kernel on GPU 0 starts ``run_ns / 2`` after the start event, a first operation on another GPU waits on
    that event across GPUs (``event_wait_ns``) first; kernels of one stream follow each other ``gap_ns``
    apart (the profile's ``kernel_gap_ns`` plus the timing events recorded between them); a peer copy
    starts ``copy_ns`` after the kernel it copies (stream hand-off and copy launch); the end event on GPU 0
    comes ``run_ns / 2`` after the last operation, plus ``event_wait_ns`` when that operation ran on
    another GPU.  A kernel that waits on a peer copy's completion event (micro-batching's next stage: its
    stream waits on the copy stream of the GPU before it) starts ``hop_ns`` later than ``event_wait_ns``
    after the copy allows, and ``wait_ns`` later than its own stream allows (the wait command is processed
    even when the copy finished long ago).  ``run_ns = 0``, ``gap_ns = kernel_gap_ns``, ``copy_ns = 0``
    (and ``wait_ns = hop_ns = 0``) is the plain plan.
    """

    run_ns: float
    gap_ns: float
    copy_ns: float
    wait_ns: float = 0.0
    hop_ns: float = 0.0
    name: str = ""
    source: str = ""

    def values(self) -> dict[str, float]:
        """The five delays (what a registration records)."""
        return {f: getattr(self, f) for f in ("run_ns", "gap_ns", "copy_ns", "wait_ns", "hop_ns")}


def load_harness(ref: str | Path) -> Harness:
    """A harness spec by name (``specs/harness/<name>.toml``) or path; errors are :class:`SpecError` lines."""
    path = resolve_ref(str(ref), "harness", None)
    data: Mapping[str, Any] = table_of(read_toml(path), "harness", str(path))
    h = build_section(Harness, data, str(path), "harness.")
    for f, v in h.values().items():
        require(isinstance(v, (int, float)) and v >= 0, str(path), f"harness.{f}", f"must be a number >= 0, got {v!r}")
    return h


def timed_plans(strategy: Strategy, wl: Workload, hw: Hardware, gpus: int, case: str,
                harness: Harness | None) -> list[Plan]:
    """The strategy's plans with the harness's launch delays (see :class:`Harness`); ``None``: the plans as built."""
    if harness is None:
        return build_plans(strategy, wl, hw, gpus, case)
    hw_h = dataclasses.replace(hw, launch_ns=harness.run_ns / 2, kernel_gap_ns=harness.gap_ns)
    plans = build_plans(strategy, wl, hw_h, gpus, case)
    for plan in plans:
        copies = {op.id for op in plan.ops if isinstance(op, Transfer)}
        for op in plan.ops:
            if not op.deps and getattr(op, "gpu", 0) != 0:
                op.start_ns += hw.event_wait_ns
            if isinstance(op, Transfer):
                op.deps = tuple((d, delay + harness.copy_ns) for d, delay in op.deps)
            elif isinstance(op, Kernel) and any(d in copies for d, _ in op.deps):
                op.deps = tuple((d, delay + (harness.hop_ns if d in copies else harness.wait_ns)) for d, delay in op.deps)
    return plans


def _stream_end_gpus(op) -> tuple[int, ...]:
    if isinstance(op, Collective):
        return op.gpus
    if isinstance(op, (Kernel, MemoryPass)):
        return (op.gpu,)
    return ()


def timed_makespan_ns(plan: Plan, hw: Hardware, harness: Harness | None, seed: int = 0,
                      regime: str = "burst") -> tuple[float, Any]:
    """(start event -> end event on GPU 0, the trace) of a plan from :func:`timed_plans`; without a harness, the
    trace's makespan. ``regime``: the clock regime (:func:`ctasim.engine.simulate`)."""
    trace = simulate(plan, hw, seed=seed, regime=regime)
    if harness is None:
        return trace.makespan_ns, trace
    ends = trace.ops.set_index("op")["t_end"]
    last = 0.0
    for op in plan.ops:
        for g in _stream_end_gpus(op):
            last = max(last, float(ends[op.id]) + (hw.event_wait_ns if g != 0 else 0.0))
    return last + harness.run_ns / 2, trace
