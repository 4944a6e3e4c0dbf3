"""Running independent simulations side by side: local processes, or a Dask distributed cluster.

A sweep or an experiment is a list of independent runs (one plan simulated per case x strategy x sweep point).
:func:`map_ordered` maps a picklable function over them and returns the results **in input order**, whatever
order they finish in, so a parallel run gives exactly the serial run's table (each run seeds its own RNG from the
run's seed; nothing is shared between runs).

* ``jobs = 1``: in this process, one after another.
* ``jobs > 1``: a :class:`concurrent.futures.ProcessPoolExecutor` of that many local processes.
* ``scheduler = "tcp://host:port"`` (or a ``distributed.Client``): the runs go to a Dask distributed cluster
  (``pip install 'ctapipe-toolkit[dask]'``); the workers need this package installed.

:func:`auto_jobs` picks the local default: serial below :data:`PARALLEL_MIN_CTAS` (process start-up costs more than
it saves), else one process per core, at most one per run.

Left out: splitting one simulation over several processes (a run is the unit), and shared memory between runs.
"""

from __future__ import annotations

import os
from typing import Any, Callable, Sequence

__all__ = ["map_ordered", "auto_jobs", "connect", "PARALLEL_MIN_CTAS", "CONNECT_TIMEOUT"]

CONNECT_TIMEOUT = "10s"
"""How long ``--scheduler`` waits for the cluster before giving up with one line."""
PARALLEL_MIN_CTAS = 300_000
"""Below this many simulated CTAs (about 2 s of serial simulation) ``--jobs`` defaults to 1."""


def auto_jobs(runs: int, ctas: int, cores: int | None = None) -> int:
    """The default number of local processes for ``runs`` runs simulating ``ctas`` CTAs in all."""
    cores = cores or os.cpu_count() or 1
    if ctas < PARALLEL_MIN_CTAS or runs < 2:
        return 1
    return max(1, min(cores, runs))


def map_ordered(fn: Callable[[Any], Any], items: Sequence, jobs: int = 1, scheduler: Any = None,
                progress: Callable[[int], None] | None = None) -> list:
    """``[fn(x) for x in items]``, computed serially, in ``jobs`` local processes, or on a Dask cluster
    (``scheduler``: an address or a ``distributed.Client``); ``progress(n)`` is called as runs complete."""
    items = list(items)
    tick = progress or (lambda n: None)
    if scheduler is not None:
        return _dask_map(fn, items, scheduler, tick)
    if jobs <= 1 or len(items) <= 1:
        out = []
        for x in items:
            out.append(fn(x))
            tick(1)
        return out
    from concurrent.futures import ProcessPoolExecutor, as_completed

    with ProcessPoolExecutor(max_workers=min(jobs, len(items))) as pool:
        futures = [pool.submit(fn, x) for x in items]
        try:
            for f in as_completed(futures):
                f.result()  # the first error ends the map: the queued runs are cancelled
                tick(1)
        except BaseException:
            pool.shutdown(wait=True, cancel_futures=True)
            raise
        return [f.result() for f in futures]


def connect(address: str):
    """A ``distributed.Client`` of the cluster at ``address``; SpecError (one line) if Dask is missing or the
    cluster cannot be reached within :data:`CONNECT_TIMEOUT`. The caller closes it."""
    from ctasim.spec import SpecError

    try:
        from distributed import Client
    except ImportError:
        raise SpecError("--scheduler", str(address), "needs Dask distributed: pip install 'dask[distributed]'") from None
    try:
        return Client(address, timeout=CONNECT_TIMEOUT)
    except (OSError, TimeoutError, ValueError, TypeError) as e:
        raise SpecError("--scheduler", str(address), f"cannot connect ({type(e).__name__}: "
                                                     f"{str(e).splitlines()[0] if str(e) else ''})") from None


def _dask_map(fn: Callable[[Any], Any], items: list, scheduler: Any, tick: Callable[[int], None]) -> list:
    from distributed import Client, as_completed

    own = not isinstance(scheduler, Client)
    client = connect(scheduler) if own else scheduler
    try:
        futures = client.map(fn, items, pure=False)
        for _ in as_completed(futures):
            tick(1)
        return client.gather(futures)
    finally:
        if own:
            client.close()

