"""The flag-shorthand sweep (``ctahw run gemm,sequential,... --ms ...``): its experiments by name, and the loop
that runs them.

:data:`EXPERIMENTS` is the one list of what the shorthand can run: each name maps to a function
``(session, m) -> rows`` and the GPUs it needs, the session being a :class:`ctahw.baselines.Session` (GPUs, streams,
data, timing harness, tuned tile orders, NCCL lifetime). The baselines are functions of ``ctahw.baselines``;
CTA-pipelining is :func:`ctahw.pipelined.ctapipe_rows`. This module sits above both, so neither imports the
other's experiments.

Left out: experiment specs (``ctahw run EXPERIMENT``: :mod:`ctahw.experiment`).
"""

from __future__ import annotations

import sys
import time
import traceback
from dataclasses import dataclass
from typing import Callable

from ctahw import baselines
from ctahw.baselines import Session, SweepConfig
from ctahw.pipelined import ctapipe_rows

__all__ = ["Experiment", "EXPERIMENTS", "run_sweep"]


@dataclass(frozen=True)
class Experiment:
    run: Callable[[Session, int], list[dict]]
    min_gpus: int
    help: str


EXPERIMENTS = {
    "gemm": Experiment(baselines.gemm, 1, "one m x h x h GEMM per backend (cuBLAS, CUTLASS, tuned tile orders)"),
    "remote_d": Experiment(baselines.remote_d, 2, "the CUTLASS GEMM storing its output into the peer GPU's memory"),
    "sequential": Experiment(baselines.sequential, 1, "the whole chain on one GPU"),
    "microbatch": Experiment(baselines.microbatch, 2, "layer i on GPU i, M cut into chunks (the chunk sweep)"),
    "tp": Experiment(baselines.tp, 2, "column- then row-parallel pair with an NCCL all-reduce"),
    "ctapipe": Experiment(ctapipe_rows, 2, "the CTA-pipelined chain, layer i on GPU i (ctahw.pipelined)"),
}
"""Every experiment of the flag shorthand, in the order a sweep runs them at one M."""


def run_sweep(cfg: SweepConfig, log: Callable[[str], None] = lambda s: print(s, file=sys.stderr),
              tuning: list | None = None, traces: dict | None = None) -> list[dict]:
    """Run every case of ``cfg``; an experiment that fails at one M leaves an error row and the rest runs.
    The CUTLASS tile-order tuning of every shape is appended to ``tuning`` if given; the CTA-pipelining traces
    go into ``traces``. The sweep's NCCL communicators are destroyed at the end, however it ends."""
    unknown = [e for e in cfg.experiments if e not in EXPERIMENTS]
    if unknown:
        raise ValueError(f"unknown experiment(s) {', '.join(unknown)} (known: {', '.join(EXPERIMENTS)})")
    with Session(cfg, log) as sw:
        if tuning is not None:
            sw.tuning = tuning
        if traces is not None:
            sw.traces = traces
        rows: list[dict] = []
        t0 = time.monotonic()
        todo = [(e, m) for m in cfg.ms for e in cfg.experiments if cfg.gpus >= EXPERIMENTS[e].min_gpus]
        for i, (exp, m) in enumerate(todo, 1):
            log(f"[{i}/{len(todo)} {time.monotonic() - t0:6.1f}s] {exp} M={m}")
            try:
                got = EXPERIMENTS[exp].run(sw, m)
                for r in got:
                    log(f"    {r['backend']:>18} chunks={r.get('chunks', 0):>2} {r['median_ms']:8.3f} ms "
                        f"{r['tflops']:6.1f} TFLOP/s rel_err={r['rel_err']:.2e}{'  BEST' if r.get('best') else ''}")
                rows += got
            except Exception as e:  # keep the sweep going: the error is a row of the results
                log(f"    FAILED: {type(e).__name__}: {e}\n{traceback.format_exc()}")
                rows.append(dict(experiment=exp, m=m, k=cfg.h, n=cfg.h, error=f"{type(e).__name__}: {e}", ok=False))
            finally:
                sw.free()
        return rows
