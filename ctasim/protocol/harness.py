"""One run of the protocol on the model: a setup (shapes, epochs, slots, proxies), a variant, the system, the
trace and the checker wired together.

:class:`Run` owns everything of one schedule; nothing is global.  Every event is appended to ``trace`` and fed
to the :class:`~ctasim.protocol.invariants.Checker` at once, so a violation is raised by the very step that
caused it.  Landings of scoreboard counters and publish words become events here (they are what the hardware,
not the program, does).

Leaves out: choosing the schedule -- that is the caller's (Hypothesis rules, :meth:`Run.finish`'s drain, or the
exhaustive explorer of :mod:`ctasim.protocol.litmus`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .grid import Chain
from .invariants import Checker, CounterUpdate, End, Publish
from .memory import Memory
from .programs import CORRECT, Variant, cta_program
from .system import DrainPolicy, DrainResult, Kernel, System

__all__ = ["Setup", "Run"]


@dataclass(frozen=True)
class Setup:
    """What is run: a chain, how many back-to-back epochs, resident slots per GPU, and the proxies used for the
    producers' tile stores and the consumers' input loads (``"generic"`` or ``"async"``, i.e. TMA)."""

    chain: Chain
    epochs: int = 1
    slots: tuple[int, ...] = field(default=())
    store_proxy: str = "generic"
    load_proxy: str = "generic"
    cluster: int = 1
    """CTAs per cluster on the consumer GPUs (1 or 2; with 2 every consumer GPU needs an even tile count and at
    least two slots)."""

    def __post_init__(self) -> None:
        if not self.slots:
            object.__setattr__(self, "slots", tuple(self.cluster if g else 1 for g in range(self.chain.gpus)))
        if len(self.slots) != self.chain.gpus or min(self.slots) < 1 or self.epochs < 1:
            raise ValueError(f"invalid setup {self}")
        if self.cluster not in (1, 2) or (self.cluster == 2 and any(
                len(self.chain.tiles(g)) % 2 or self.slots[g] < 2 for g in range(1, self.chain.gpus))):
            raise ValueError(f"invalid setup {self}: clusters of 2 need even tile counts and 2 slots")

    def describe(self) -> str:
        c = self.chain
        return (f"{c.gpus} GPUs, m_tiles={c.m_tiles}, n_tiles={list(c.n_tiles)}, elems={c.elems}, "
                f"epochs={self.epochs}, slots={list(self.slots)}, stores={self.store_proxy}, "
                f"loads={self.load_proxy}" + (f", clusters of {self.cluster}" if self.cluster > 1 else ""))


_COUNTERS = ("ctr", "head", "tail", "seq")
_SLOT_EMPTY = (0, None)  # the kernel form's slot word before any push: epoch 0


def initial_value(loc: tuple):
    """Counters, queue indices and publish words start at 0 (once, before the first epoch); buffers are empty."""
    if loc[0] == "slot":
        return _SLOT_EMPTY
    return 0 if loc[0] in _COUNTERS else None


class Run:
    """Builds the kernels of every (GPU, epoch) and the system that runs them."""

    def __init__(self, setup: Setup, variant: Variant = CORRECT, *, check: bool = True) -> None:
        self.setup, self.variant = setup, variant
        ch = setup.chain
        self.trace: list = []
        self.checker = (Checker(ch.m_tiles, ch.n_tiles, ch.elems, setup.epochs, queue=variant.consumer == "queue")
                        if check else None)
        self.mem = Memory(initial=initial_value, on_land=self._on_land)
        kernels: dict[tuple[int, int], Kernel] = {}
        for e in range(setup.epochs):
            for g in range(ch.gpus):
                blocks = setup.cluster if g > 0 else 1
                kernels[g, e] = Kernel(g, e, len(ch.tiles(g)) // blocks, self._program, name=f"layer{g}.e{e}",
                                       blocks=blocks)
        for (g, e), k in kernels.items():
            if e > 0 and g + 1 < ch.gpus:
                k.after.append(kernels[g + 1, e - 1])
        self.system = System(list(kernels.values()), dict(enumerate(setup.slots)), self.mem, emit=self.emit)

    def _program(self, c):
        s = self.setup
        return cta_program(c, s.chain, self.variant, s.store_proxy, s.load_proxy)

    def emit(self, event) -> None:
        self.trace.append(event)
        if self.checker is not None:
            self.checker.observe(event)

    def _on_land(self, w) -> None:
        kind = w.loc[0]
        if kind == "ctr":
            self.emit(CounterUpdate(w.loc[1], w.loc[2], w.thread.tag.epoch, w.value, w.rmw is not None))
        elif kind == "seq":
            self.emit(Publish(w.loc[1], w.thread.tag.epoch, w.value - 1))
        elif kind == "slot":
            epoch = w.thread.tag.epoch
            self.emit(Publish(w.loc[1], epoch, epoch * self.setup.chain.queue_capacity(w.loc[1]) + w.loc[2]))

    def finish(self, policy: DrainPolicy = DrainPolicy(), log=None) -> DrainResult:
        """Drain to the end under ``policy`` and emit the :class:`End` event (which checks progress)."""
        result = self.system.drain(policy, log=log)
        self.emit(End(result.finished, result.reason))
        return result
