"""Hypothesis strategies and state machines that search the protocol's schedules for invariant violations.

The rules of :func:`make_machine`'s state machine *are* the scheduler's choices: which runnable CTA executes its
next operation (and, for a load, how stale a value it reads), which memory event happens (a pending write lands
in its home memory, or a bulk store is acknowledged to its issuer), and which GPU puts its next CTA into a freed
resident slot.  After the rules, ``teardown`` finishes the run with a fixed fair policy
(:meth:`~ctasim.protocol.system.System.drain`), which also decides progress (invariant 5).  Invariants are checked
on every event as it happens and as state invariants after every step; every rule ``note()``s what it did, so a
shrunk failure reads as a schedule.

This module imports Hypothesis (a test dependency); nothing else in :mod:`ctasim.protocol` does.

Leaves out: fairness inside the rule-driven prefix (the drain supplies it), and schedules longer than
``stateful_step_count`` rule steps before the drain.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from hypothesis import HealthCheck, Verbosity, note, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule, run_state_machine_as_test

from .grid import Chain
from .harness import Run, Setup
from .invariants import End, ProtocolViolation
from .programs import CORRECT, Variant
from .system import DrainPolicy

__all__ = [
    "chains",
    "setups",
    "make_machine",
    "Stats",
    "Counterexample",
    "find_violation",
    "profile_settings",
    "PROFILES",
    "MUTANT_SEARCH",
    "CORRECT_SEARCHES",
    "SearchResult",
    "run_correct_search",
    "run_correct_searches",
]


# ------------------------------------------------------------------------------------------------ strategies
@st.composite
def chains(draw, min_gpus: int = 2, max_gpus: int = 8, max_m: int = 2, max_n: int = 3, max_elems: int = 2):
    """Chains of ``min_gpus..max_gpus`` layers with small tile grids (shrinking towards 2 GPUs, 1x1 tiles)."""
    gpus = draw(st.integers(min_gpus, max_gpus))
    m = draw(st.integers(1, max_m))
    n = tuple(draw(st.lists(st.integers(1, max_n), min_size=gpus, max_size=gpus)))
    elems = draw(st.integers(1, max_elems))
    return Chain(m, n, elems)


@st.composite
def setups(draw, chain_strategy=None, max_epochs: int = 3, proxies=("generic", "async")):
    """Setups over a chain: epochs, resident slots per GPU (fewer than the grid where the grid allows) and the
    store / load proxies."""
    chain = draw(chain_strategy if chain_strategy is not None else chains())
    epochs = draw(st.integers(1, max_epochs))
    slots = tuple(draw(st.integers(1, max(1, len(chain.tiles(g)) - 1))) for g in range(chain.gpus))
    store = draw(st.sampled_from(proxies))
    load = draw(st.sampled_from(proxies))
    return Setup(chain, epochs, slots, store, load)


# ------------------------------------------------------------------------------------------------ machine
@dataclass
class Stats:
    """What the machines of one test did: schedules run to the end without violation, violations seen."""

    passed: int = 0
    violations: int = 0
    steps: int = 0


@dataclass
class Counterexample:
    """A failing schedule: the setup, the scheduler's choices (rule steps), the drain's last steps, the error."""

    variant: str
    setup: str
    policy: DrainPolicy
    steps: list[str]
    drain_tail: list[str]
    error: ProtocolViolation

    @property
    def n_choices(self) -> int:
        return len(self.steps)

    def render(self) -> str:
        lines = [f"setup: {self.setup}; drain: land {self.policy.land} first"
                 + (", stale plain loads" if self.policy.stale_loads else "")]
        lines += [f"  {i + 1:2d}. {s}" for i, s in enumerate(self.steps)]
        if self.drain_tail:
            lines.append("  then the fair drain; its last steps:")
            lines += [f"      {s}" for s in self.drain_tail]
        lines.append(f"  => {self.error}")
        return "\n".join(lines)


def drain_policies():
    """The drain's policy is the scheduler's last choice: benign first, so shrinking prefers it."""
    return st.builds(DrainPolicy, land=st.sampled_from(["oldest", "newest"]), stale_loads=st.booleans())


def make_machine(variant: Variant = CORRECT, setup_strategy=None, *, policy: DrainPolicy | None = None,
                 stats: Stats | None = None, sink: list | None = None, max_index: int = 15,
                 max_pick: int = 3) -> type:
    """A :class:`RuleBasedStateMachine` class running ``variant`` on setups from ``setup_strategy``.

    ``stats`` counts passed schedules; each violation is appended to ``sink`` as a :class:`Counterexample`
    (the last one after a Hypothesis run is the shrunk one).  ``policy=None`` lets Hypothesis choose the drain
    policy too."""
    setup_strategy = setup_strategy if setup_strategy is not None else setups()
    policy_strategy = drain_policies() if policy is None else st.just(policy)
    stats = stats if stats is not None else Stats()
    index = st.integers(0, max_index)

    class ProtocolMachine(RuleBasedStateMachine):
        def __init__(self) -> None:
            super().__init__()
            self.run: Run | None = None
            self.steps: list[str] = []
            self.broken = False
            self.policy = DrainPolicy()

        def _record(self, err: ProtocolViolation, drain_tail=()) -> None:
            self.broken = True
            stats.violations += 1
            if sink is not None:
                sink.append(Counterexample(variant.name, self.run.setup.describe(), self.policy, list(self.steps),
                                           list(drain_tail), err))

        def _do(self, desc_fn):
            try:
                desc = desc_fn()
            except ProtocolViolation as err:
                self.steps.append(f"{self.run.system.attempt}  <- this step broke the invariant")
                self._record(err)
                raise
            self.steps.append(desc)
            note(desc)

        def _fallback(self, why: str) -> None:
            """A rule with nothing of its kind to do takes one step of the drain's fair policy instead."""
            sys_ = self.run.system
            self._do(lambda: f"({why}) fair step: " + (sys_.fair_step(self.policy) or "nothing can change"))

        @initialize(setup=setup_strategy, drain=policy_strategy)
        def start(self, setup: Setup, drain: DrainPolicy) -> None:
            note(f"setup: {setup.describe()}; variant {variant.name}; drain {drain}")
            self.run = Run(setup, variant)
            self.policy = drain

        @rule(i=index, pick=st.integers(0, max_pick))
        def step_cta(self, i: int, pick: int) -> None:
            """The scheduler lets one runnable CTA execute its next operation (loads read ``pick`` back)."""
            cands = self.run.system.runnable()
            if not cands:
                return self._fallback("no CTA can run")
            c = cands[i % len(cands)]
            self._do(lambda: self.run.system.step(c, pick) + (f" [pick {pick}]" if pick else ""))

        @rule(i=index)
        def deliver(self, i: int) -> None:
            """The scheduler makes one pending write land (become visible) or acknowledges a bulk store."""
            events = self.run.system.memory_events()
            if not events:
                return self._fallback("nothing in flight")
            ev = events[i % len(events)]
            self._do(lambda: self.run.system.deliver(ev))

        @rule(i=index)
        def launch(self, i: int) -> None:
            """A freed resident slot takes the next CTA of some GPU's grid."""
            gpus = self.run.system.launchable()
            if not gpus:
                return self._fallback("no slot free / no kernel startable")
            g = gpus[i % len(gpus)]
            self._do(lambda: self.run.system.launch(g))

        @invariant()
        def queue_bounds_hold(self) -> None:
            if self.run is not None and not self.broken:
                self.run.checker.queue_bounds()

        def teardown(self) -> None:
            if self.run is None or self.broken:
                return
            tail: deque = deque(maxlen=24)
            try:
                self.run.finish(self.policy, log=tail.append)
            except ProtocolViolation as err:
                if self.run.trace and not isinstance(self.run.trace[-1], End):
                    tail.append(f"{self.run.system.attempt}  <- this step broke the invariant")
                for line in tail:
                    note(f"drain: {line}")
                self._record(err, tail)
                raise
            stats.passed += 1
            stats.steps += len(self.steps)

    ProtocolMachine.__name__ = ProtocolMachine.__qualname__ = f"Protocol_{variant.name.replace('-', '_')}"
    return ProtocolMachine


# ------------------------------------------------------------------------------------------------ settings
PROFILES = {
    "ci": dict(max_examples=1_250, derandomize=True, stateful_step_count=20),
    "nightly": dict(max_examples=12_500, derandomize=False, stateful_step_count=40),
    "dev": dict(max_examples=1_250, derandomize=False, stateful_step_count=20),
}
"""Hypothesis profiles: ``max_examples`` is the budget of *one* search (the correct protocol runs the eight
searches of :data:`CORRECT_SEARCHES`, so CI explores 10,000 schedules of it; a mutant search stops at its first
violation)."""

_COMMON = dict(deadline=None, database=None, print_blob=True,
               suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                      HealthCheck.filter_too_much])


def profile_settings(name: str, **overrides) -> settings:
    """The :class:`hypothesis.settings` of profile ``name`` (``ci``, ``nightly`` or ``dev``)."""
    return settings(**{**_COMMON, **PROFILES[name], **overrides})


def find_violation(variant: Variant, setup_strategy=None, *, settings_: settings | None = None,
                   policy: DrainPolicy | None = None, stats: Stats | None = None) -> Counterexample | None:
    """Search for a schedule violating an invariant; returns the shrunk counterexample or None."""
    sink: list[Counterexample] = []
    machine = make_machine(variant, setup_strategy, policy=policy, stats=stats, sink=sink)
    s = settings_ if settings_ is not None else profile_settings("ci")
    try:
        run_state_machine_as_test(machine, settings=settings(s, verbosity=Verbosity.quiet))
    except ProtocolViolation as err:
        if sink and sink[-1].error is err:
            return sink[-1]
        return Counterexample(variant.name, "?", DrainPolicy(), [], [], err)
    return None


# ------------------------------------------------------------------------------------------------ searches
MUTANT_SEARCH = setups(chains(max_gpus=3, max_n=2), max_epochs=2)
"""Where the mutant searches look: 2-3 GPUs, up to 2x2 tiles per layer, 1-2 epochs, both proxies."""

CORRECT_SEARCHES = {
    "generic-2gpu": setups(chains(max_gpus=2, max_n=2), max_epochs=2, proxies=("generic",)),
    "generic-3gpu": setups(chains(min_gpus=3, max_gpus=3, max_n=2), max_epochs=2, proxies=("generic",)),
    "tma-2gpu": setups(chains(max_gpus=2, max_n=2), max_epochs=2, proxies=("async",)),
    "tma-3gpu": setups(chains(min_gpus=3, max_gpus=3, max_n=2), max_epochs=2, proxies=("async",)),
    "mixed-2-3gpu": setups(chains(max_gpus=3, max_n=3), max_epochs=2),
    "wide-tiles": setups(chains(max_gpus=2, max_m=2, max_n=3, max_elems=2), max_epochs=1),
    "epochs-3": setups(chains(max_gpus=3, max_m=1, max_n=2, max_elems=1), max_epochs=3),
    "chains-2-8gpu": setups(chains(max_gpus=8, max_m=1, max_n=2, max_elems=1), max_epochs=2),
}
"""The correct protocol's searches; each runs one profile budget of schedules."""


@dataclass
class SearchResult:
    name: str
    passed: int
    violations: int
    choices: int
    seconds: float
    error: str = ""


def run_correct_search(name: str, profile: str = "ci") -> SearchResult:
    """Run search ``name`` of :data:`CORRECT_SEARCHES` on the correct protocol (picklable for process pools)."""
    import time

    stats = Stats()
    machine = make_machine(CORRECT, CORRECT_SEARCHES[name], stats=stats)
    t0 = time.perf_counter()
    error = ""
    try:
        run_state_machine_as_test(machine, settings=settings(profile_settings(profile), verbosity=Verbosity.quiet))
    except Exception as err:  # reported, not swallowed: the caller asserts on ``error``
        error = f"{type(err).__name__}: {err}"
    return SearchResult(name, stats.passed, stats.violations, stats.steps, time.perf_counter() - t0, error)


def run_correct_searches(profile: str = "ci", processes: int | None = None) -> list[SearchResult]:
    """All of :data:`CORRECT_SEARCHES`, spread over ``processes`` worker processes (default: CPU count)."""
    import os
    from concurrent.futures import ProcessPoolExecutor

    names = list(CORRECT_SEARCHES)
    processes = processes or min(len(names), os.cpu_count() or 1)
    if processes <= 1:
        return [run_correct_search(n, profile) for n in names]
    with ProcessPoolExecutor(processes) as pool:
        return list(pool.map(run_correct_search, names, [profile] * len(names)))
