"""Hypothesis searches of the row-statistics hand-off (:mod:`ctasim.protocol.rowstats`).

A search is one Hypothesis test: it draws a setup and a byte string from which every scheduler decision of the
run is read (:func:`~ctasim.protocol.rowstats.run_schedule`: which CTA launches, which thread steps and how stale
a value its load reads, which pending write lands and which value an atomic reads; :class:`BytesChooser`), so a
failing schedule shrinks towards smaller setups and towards the first enabled action at every step.  (One
``data.draw`` per decision made a schedule about ten times slower.)  The checker raises at the first event that
breaks an invariant; the shrunk schedule is replayed with its actions logged.  Shrinking takes seconds to two
minutes per mutant, so CI searches without it (:func:`search_settings`).

This module imports Hypothesis (a test dependency), as :mod:`ctasim.protocol.explore` does; nothing else of the
row statistics does.

Leaves out: the decisions' exact weights (a byte modulo the number of choices) and clusters of two in the 2-GPU
setups (:data:`~ctasim.protocol.explore.MUTANT_SEARCH` draws none; the random walks
of the CI tests do).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from hypothesis import Phase, Verbosity, given, settings
from hypothesis import strategies as st

from .chain import ChainSetup, topological_order
from .explore import MUTANT_SEARCH, chains, profile_settings, setups
from .invariants import ProtocolViolation
from .rowstats import ROWSTATS_VARIANTS, RowStatsVariant, make_run, run_schedule

__all__ = ["chain_setups", "strategy_of", "SCHEDULE_BYTES", "BytesChooser", "Found", "hypothesis_search",
           "search_settings"]


@st.composite
def chain_setups(draw, max_layers: int = 3, max_m: int = 2, max_n: int = 2, max_elems: int = 2,
                 max_epochs: int = 2, max_grid: int = 3):
    """Chain kernel setups (:class:`~ctasim.protocol.chain.ChainSpace`'s ranges), shrinking towards 2 layers of one
    tile, one CTA and the layer-after-layer order."""
    layers = draw(st.integers(2, max_layers))
    m, n = draw(st.integers(1, max_m)), draw(st.integers(1, max_n))
    grid = draw(st.integers(1, min(max_grid, layers * m * n)))
    slots = draw(st.integers(0, grid - 1))  # 0: every CTA resident (the tickets design may run fewer)
    rng = draw(st.randoms(use_true_random=False)) if draw(st.booleans()) else None
    return ChainSetup(layers, m, n, draw(st.integers(1, max_elems)), draw(st.integers(1, max_epochs)), grid, slots,
                      topological_order(layers, m, n, rng))


def strategy_of(variant: RowStatsVariant):
    """The setups a variant is searched on: 2-3 GPUs, up to 2x2 tiles, 1-2 epochs, both proxies, or three launches
    of one row-block (where launch 2 reuses the buffer launch 1 reset); the chain kernel's likewise."""
    if variant.chain:
        return st.one_of(chain_setups(), chain_setups(max_m=1, max_elems=1, max_epochs=3))
    return st.one_of(MUTANT_SEARCH, setups(chains(max_gpus=3, max_m=1, max_n=2, max_elems=1), max_epochs=3))


SCHEDULE_BYTES = 3072
"""Bytes of decisions drawn per schedule (a run of the searched setups takes at most a few hundred decisions;
past the end every decision is 0)."""


class BytesChooser:
    """Scheduler decisions read from one drawn byte string: ``index(n)`` is the next byte (two when ``n > 256``)
    modulo ``n``, ``flip(p)`` is true when the next byte is at least ``256 (1 - p)``; past the end both are 0 /
    false.  Zero bytes are the first enabled action and the default of every flip, so Hypothesis shrinks a
    schedule towards "launch, then step the first thread that can move, then land the oldest write"."""

    def __init__(self, blob: bytes) -> None:
        self.blob, self.pos = blob, 0

    def _next(self) -> int:
        if self.pos >= len(self.blob):
            return 0
        self.pos += 1
        return self.blob[self.pos - 1]

    def index(self, n: int) -> int:
        if n <= 1:
            return 0
        v = self._next()
        if n > 256:
            v = v << 8 | self._next()
        return v % n

    def flip(self, p: float) -> bool:
        return self._next() >= 256 * (1 - p)


@dataclass
class Found:
    """What a search did: schedules that passed, and the (shrunk) violating schedule if one was found."""

    variant: str
    passed: int = 0
    violations: int = 0
    setup: str = ""
    decisions: int = 0
    error: ProtocolViolation | None = None
    tail: tuple = ()

    def render(self) -> str:
        if self.error is None:
            return f"{self.variant}: {self.passed} schedules, no violation"
        lines = [f"{self.variant}: setup {self.setup}; {self.decisions} scheduler decisions; the last ones:"]
        lines += [f"  {s}" for s in self.tail]
        lines.append(f"  => {self.error}")
        return "\n".join(lines)


def search_settings(max_examples: int, profile: str = "ci", shrink: bool = False) -> settings:
    """Profile ``profile`` of :data:`~ctasim.protocol.explore.PROFILES` (``ci``: derandomized) with
    ``max_examples``; without shrinking unless asked (shrinking a schedule costs seconds to minutes)."""
    phases = tuple(Phase) if shrink else (Phase.explicit, Phase.reuse, Phase.generate)
    return settings(profile_settings(profile), max_examples=max_examples, phases=phases, verbosity=Verbosity.quiet)


def hypothesis_search(variant: str | RowStatsVariant, settings_: settings, setups=None, tail: int = 30) -> Found:
    """Search ``variant``'s schedules under ``settings_``; stops at (and shrinks, if the settings do) the first
    violation."""
    v = ROWSTATS_VARIANTS[variant] if isinstance(variant, str) else variant
    found = Found(v.name)
    failing: list = []

    @settings(settings_)
    @given(setup=setups if setups is not None else strategy_of(v),
           blob=st.binary(min_size=SCHEDULE_BYTES, max_size=SCHEDULE_BYTES))
    def schedule(setup, blob):
        _, _, err = run_schedule(make_run(setup, v), BytesChooser(blob))
        if err is None:
            found.passed += 1
            return
        found.violations += 1
        failing.append((setup, blob))
        raise err

    try:
        schedule()
    except ProtocolViolation:
        setup, blob = failing[-1]  # the last failing example Hypothesis ran is the one it reports
        log: deque = deque(maxlen=tail)
        found.decisions, _, found.error = run_schedule(make_run(setup, v), BytesChooser(blob), log=log.append)
        found.setup, found.tail = setup.describe(), tuple(log)
    return found
