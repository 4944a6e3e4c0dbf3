"""Random-walk schedule search: many complete schedules per second, counted as *distinct* schedules.

Where :mod:`ctasim.protocol.explore` drives the model with Hypothesis (shrinking, readable counterexamples, but a
few milliseconds of bookkeeping per schedule), this module is the fast path used by every CI run:

* a **walk** runs one setup from the first launch to the end, choosing every scheduler decision at random from
  the actions enabled at that point -- launch a CTA into a free slot, step a CTA that makes progress (a load reads
  a random allowed value, the newest one half of the time), land a pending write, acknowledge a bulk store.  A
  poll that would read a non-matching value is not a choice (it changes nothing a later step could observe); so a
  state with no choice left is a deadlock, and every walk ends (finished or deadlocked) without a drain policy.
* a walk's **signature** is the sequence of its decisions (action kind, the CTA or write it concerned, the write a
  load read); :func:`search` counts the distinct signatures, so a repeated schedule is not counted twice.
* searches are split into seed ranges over worker processes (:func:`search_parallel`); the seeds are fixed, so a
  CI run is deterministic and a failure is reproduced by :func:`replay` of its seed.

Setups are drawn from a :class:`Space` (the same shapes the Hypothesis searches draw from).  Invariants are the
checker's, event by event (:mod:`ctasim.protocol.invariants`), plus the queue bounds after the walk.

Leaves out: shrinking (a failing seed is replayed, not minimised; ``python -m ctasim.protocol.report`` runs the
Hypothesis searches for shortest counterexamples) and any guarantee of coverage beyond what random choice gives.
"""

from __future__ import annotations

import os
import random
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field

from .chain import CHAIN_SPACES, CHAIN_VARIANTS, ChainRun, ChainSetup, ChainSpace
from .grid import Chain
from .harness import Run, Setup
from .invariants import End, ProtocolViolation
from .ops import Ld, Poll
from .programs import BENIGN, CORRECT, KERNEL, KERNEL_WAIT, MUTANTS, NEW_MUTANTS, WAIT, WAIT_MUTANTS, Variant

__all__ = ["Space", "SPACES", "MUTANT_SPACE", "WalkResult", "SearchStats", "walk", "replay", "search",
           "search_parallel", "run_parallel", "find_violation", "VARIANTS", "CLUSTER_SPACE", "CHAIN_SPACES", "ChainSpace"]

VARIANTS: dict[str, Variant] = {v.name: v for v in (CORRECT, WAIT, KERNEL, KERNEL_WAIT)} | MUTANTS | WAIT_MUTANTS \
    | NEW_MUTANTS | BENIGN | CHAIN_VARIANTS
"""Every variant by name (the walks cross process boundaries by name); the chain kernel's variants
(:mod:`ctasim.protocol.chain`) run on :class:`~ctasim.protocol.chain.ChainSpace` setups."""


@dataclass(frozen=True)
class Space:
    """Setups to draw from: GPUs, row-blocks, column tiles per layer, elements per tile, epochs, proxies."""

    min_gpus: int = 2
    max_gpus: int = 3
    max_m: int = 2
    max_n: int = 2
    max_elems: int = 2
    max_epochs: int = 2
    proxies: tuple = ("generic", "async")
    clusters: float = 0.25
    """Probability of clusters of two CTAs on the consumer GPUs (where every consumer tile count is even)."""

    def draw(self, rng: random.Random) -> Setup:
        gpus = rng.randint(self.min_gpus, self.max_gpus)
        chain = Chain(rng.randint(1, self.max_m), tuple(rng.randint(1, self.max_n) for _ in range(gpus)),
                      rng.randint(1, self.max_elems))
        cluster = 1
        if rng.random() < self.clusters and all(len(chain.tiles(g)) % 2 == 0 for g in range(1, gpus)):
            cluster = 2
        slots = tuple(rng.randint(cluster if g else 1, max(cluster if g else 1, len(chain.tiles(g)) - 1))
                      for g in range(gpus))
        return Setup(chain, rng.randint(1, self.max_epochs), slots, rng.choice(self.proxies),
                     rng.choice(self.proxies), cluster)


SPACES = {
    "generic-2-3gpu": Space(proxies=("generic",)),
    "tma-2-3gpu": Space(proxies=("async",)),
    "mixed-2-3gpu": Space(max_n=3),
    "epochs-3": Space(max_m=1, max_elems=1, max_epochs=3),
    "chains-2-8gpu": Space(max_gpus=8, max_m=1, max_elems=1),
}
"""The correct protocol's search spaces (each gets an equal share of a search's schedules)."""

MUTANT_SPACE = Space()
"""Where a mutant is looked for: 2-3 GPUs, up to 2x2 tiles per layer, 1-2 epochs, both proxies."""

CLUSTER_SPACE = Space(proxies=("async",), clusters=1.0)
"""TMA loads in clusters of two (where the partner CTA's proxy fence matters)."""


@dataclass
class WalkResult:
    """One walk: its seed, setup, decisions taken, signature, and the violation it hit (None: passed)."""

    seed: int
    setup: Setup
    steps: int
    signature: int
    error: ProtocolViolation | None = None


def walk(variant: Variant, setup: Setup, rng: random.Random, seed: int = 0, max_steps: int = 100_000,
         log=None, lazy_bulk: float = 0.0) -> WalkResult:
    """Run ``variant`` on ``setup`` to the end with random decisions; ``log(line)`` gets each action if given.
    ``lazy_bulk``: at each step, with this probability, bulk (async-proxy) stores are not offered to land or be
    acknowledged while anything else can happen -- schedules where a TMA store stays pending long, which uniform
    choices reach rarely (0: uniform; the walks of every search but the lazy ones)."""
    run = ChainRun(setup, variant) if isinstance(setup, ChainSetup) else Run(setup, variant)
    sys_ = run.system
    sys_.verbose = log is not None
    mem = sys_.mem
    sig: list = []
    rand = rng.random
    randrange = rng.randrange
    try:
        for n in range(max_steps):
            if sys_.finished():
                run.emit(End(True))
                run.checker.queue_bounds()
                return WalkResult(seed, setup, n, hash(tuple(sig)))
            launch = sys_.launchable()
            movers = [t for t in sys_.threads if sys_.would_progress(t)]
            res = sys_.resolvable()
            events = sys_.memory_events()
            if lazy_bulk and rand() < lazy_bulk:
                kept = [ev for ev in events if ev[1].proxy != "async"]
                if len(kept) < len(events) and len(launch) + len(movers) + len(res) + len(kept):
                    events = kept
            total = len(launch) + len(movers) + len(res) + len(events)
            if total == 0:
                run.emit(End(False, f"deadlock: nothing can change; {sys_.stuck()}"))
                return WalkResult(seed, setup, n, hash(tuple(sig)))  # pragma: no cover - End raises first
            k = randrange(total)
            if k < len(launch):
                desc = sys_.launch(launch[k])
                sig.append(("L", launch[k]))
            elif k < len(launch) + len(movers):
                thr = movers[k - len(launch)]
                pick, defer = 0, False
                op = thr.op
                if thr.wait is None and isinstance(op, Ld):
                    if not op.dep and op.acquire is None and rand() < 0.3:
                        defer = True
                    elif rand() < 0.5:
                        pick = randrange(len(mem.readable(thr.mem, op.loc, op.proxy)))
                desc = sys_.step(thr, pick, defer)
                sig.append(("S", thr.cid, pick, defer) if isinstance(op, (Ld, Poll)) else ("S", thr.cid))
            elif k < len(launch) + len(movers) + len(res):
                thr = res[k - len(launch) - len(movers)]
                pick = randrange(4) if rand() < 0.5 else 0
                desc = sys_.resolve(thr, pick)
                sig.append(("R", thr.cid, pick))
            else:
                ev = events[k - len(launch) - len(movers) - len(res)]
                pick = 0
                if ev[0] == "land" and ev[1].rmw is not None and rand() < 0.5:
                    pick = randrange(len(mem.atomic_choices(ev[1])))
                desc = sys_.deliver(ev, pick)
                sig.append((ev[0], ev[1].wid, pick))
            if log is not None:
                log(desc)
        run.emit(End(False, f"livelock: {max_steps} steps"))
    except ProtocolViolation as err:
        if log is not None:
            log(f"{sys_.attempt}  <- this step broke the invariant")
        return WalkResult(seed, setup, len(sig), hash(tuple(sig)), err)
    return WalkResult(seed, setup, max_steps, hash(tuple(sig)))  # pragma: no cover - End raised


def _setup_of(space: Space | ChainSpace, seed: int) -> tuple[Setup | ChainSetup, random.Random]:
    rng = random.Random(seed)
    return space.draw(rng), rng


def replay(variant: str | Variant, space: Space, seed: int, log=print) -> WalkResult:
    """Re-run the walk of ``seed`` (same setup, same decisions), printing every action."""
    v = VARIANTS[variant] if isinstance(variant, str) else variant
    setup, rng = _setup_of(space, seed)
    if log is not None:
        log(f"setup: {setup.describe()}; variant {v.name}; seed {seed}")
    return walk(v, setup, rng, seed, log=log)


@dataclass
class SearchStats:
    """What a search did: walks run, distinct schedules among them, violations, the first failing walk."""

    walks: int = 0
    distinct: int = 0
    violations: int = 0
    decisions: int = 0
    seconds: float = 0.0
    first_failure: tuple | None = None  # (seed, setup description, error message)
    signatures: set = field(default_factory=set, repr=False)

    def merge(self, other: "SearchStats") -> None:
        self.walks += other.walks
        self.violations += other.violations
        self.decisions += other.decisions
        self.seconds = max(self.seconds, other.seconds)
        self.signatures |= other.signatures
        self.distinct = len(self.signatures)
        if self.first_failure is None:
            self.first_failure = other.first_failure

    @property
    def per_second(self) -> float:
        return self.distinct / self.seconds if self.seconds else 0.0

    def record(self, seed: int, setup, steps: int, signature, error) -> bool:
        """Count one walk (its setup and schedule signature make it distinct); True where it broke an invariant."""
        self.walks += 1
        self.decisions += steps
        self.signatures.add((setup, signature))
        if error is None:
            return False
        self.violations += 1
        if self.first_failure is None:
            self.first_failure = (seed, setup.describe(), str(error))
        return True

    def close(self, t0: float) -> "SearchStats":
        """The distinct count and the seconds since ``t0`` (``time.perf_counter``), at the end of a search."""
        self.distinct = len(self.signatures)
        self.seconds = time.perf_counter() - t0
        return self


def search(variant: str, space: Space, seeds: range, stop_at_violation: bool = False,
           lazy_bulk: float = 0.0) -> SearchStats:
    """Walk ``variant`` once per seed; count distinct schedules and violations (``lazy_bulk``: :func:`walk`'s)."""
    v = VARIANTS[variant]
    st = SearchStats()
    t0 = time.perf_counter()
    for seed in seeds:
        setup, rng = _setup_of(space, seed)
        r = walk(v, setup, rng, seed, lazy_bulk=lazy_bulk)
        if st.record(seed, setup, r.steps, r.signature, r.error) and stop_at_violation:
            break
    return st.close(t0)


def _search_job(args) -> SearchStats:
    return search(*args)


def run_parallel(job, variant: str, spaces: dict, n: int, processes: int | None, seed0: int,
                 space_seed) -> SearchStats:
    """``n`` walks of ``variant`` shared equally among ``spaces``, each share split into ``processes`` seed ranges
    from ``seed0 + space_seed(i)`` for the i-th space (fixed seeds: a failure is reproduced by its seed), run by
    ``job((variant, space, seeds))`` (a module-level function: it is sent to the worker processes); merged."""
    processes = processes or os.cpu_count() or 1
    per = -(-n // len(spaces))
    chunk = -(-per // processes)
    jobs = []
    for i, space in enumerate(spaces.values()):
        base = seed0 + space_seed(i)
        for j in range(processes):
            lo = base + j * chunk
            hi = min(base + per, lo + chunk)
            if hi > lo:
                jobs.append((variant, space, range(lo, hi)))
    total = SearchStats()
    t0 = time.perf_counter()
    if processes <= 1:
        parts = [job(j) for j in jobs]
    else:
        with ProcessPoolExecutor(processes) as pool:
            parts = list(pool.map(job, jobs))
    for p in parts:
        total.merge(p)
    total.seconds = time.perf_counter() - t0
    return total


def _space_seed(i: int) -> int:
    return i * 1_000_000_007 % (1 << 31)


def search_parallel(variant: str, spaces: dict[str, Space] | Space, n: int, processes: int | None = None,
                    seed0: int = 0) -> SearchStats:
    """``n`` walks of ``variant`` shared equally among ``spaces``, spread over ``processes`` workers."""
    if isinstance(spaces, (Space, ChainSpace)):
        spaces = {"space": spaces}
    return run_parallel(_search_job, variant, spaces, n, processes, seed0, _space_seed)


def find_violation(variant: str, space: Space = MUTANT_SPACE, budget: int = 4_000, seed0: int = 0,
                   lazy_bulk: float = 0.0) -> SearchStats:
    """Walk ``variant`` until a walk breaks an invariant (or ``budget`` walks pass)."""
    return search(variant, space, range(seed0, seed0 + budget), stop_at_violation=True, lazy_bulk=lazy_bulk)
