"""The row-statistics hand-off of a fused LayerNorm / RMSNorm (issue 15, item 3) under the weak-memory model.

LayerNorm with no separate pass: every producer tile of row-block ``r`` adds the per-row partial sums of its output
tile (Σx, Σx²) into a row-statistics buffer in the consumer's memory; a consumer tile of row-block ``r`` waits for
the row-block's counter (or pops a tile the completing producer pushed), then reads the row statistics and applies
``LN(x)·W = diag(1/σ)·(x⊙γ)·W − (μ/σ)·(γᵀW) + βᵀW`` in its epilogue.  The statistics must travel with the same
release discipline as the tile data.

What is modelled
----------------
The hand-off *is* the protocol's programs, unchanged (:func:`ctasim.protocol.programs.cta_program` for the 2-GPU
queue and wait consumers and their kernel forms, :class:`ctasim.protocol.chain.ChainRun` for the one-GPU chain
kernel and its ring placement, the kernel that runs the fold), with the row-statistics operations added at fixed
points of each thread's operation stream:

* **producer** -- the thread that stores the output tile adds, right before it meets the signalling thread at the
  signal barrier (``bar.sync 2`` / ``bar.sync 13``, after ``wait_group 0`` + ``fence.proxy.async``)::

      red.add.relaxed.<scope> [rsum@g+1[r, e mod 2]], part_x
      red.add.relaxed.<scope> [rsq@g+1[r, e mod 2]],  part_x2

  then the signalling thread releases as before (``fence.acq_rel.sys`` + counter atomic, ``atom.acq_rel.sys`` or
  ``red.release.sys`` / ``.gpu`` in the chain kernel).  ``<scope>`` is the counter's: ``sys`` across GPUs, ``gpu``
  in the chain kernel.
* **consumer** -- the thread that loads the tile's inputs, after its acquire (the counter poll, or the pop's
  publish word, carried to it by the CTA / cluster hand-over), before its first input load::

      s  = ld [rsum@g[r, e mod 2]] ; s2 = ld [rsq@g[r, e mod 2]]      weak loads: the acquire orders them
      if the tile is (r, 0):  st.relaxed.<ctr scope> [rsum@g[r, (e+1) mod 2]], 0 ; the same for rsq

  Two buffers, used by alternate launches: launch ``e`` zeroes the one launch ``e + 1`` adds into.  Every reader
  of that buffer (launch ``e - 1``) has finished, and launch ``e + 1``'s producers start after launch ``e``'s
  consumers are complete (the epoch dependency the counters already rely on), so the reset needs no other
  synchronisation.  The host zeroes both buffers once, before the first launch.

A partial sum is a distinct bit per producer column tile (``1 << c``): a sum names the tiles it contains, so the
checker can say which contribution a read lacks.  Integer addition is exact, commutative and associative.

Invariants (numbered after :mod:`ctasim.protocol.invariants`' six), checked by :class:`RowStatsChecker` event by
event from the shape numbers alone:

7. a consumer reads the row statistics of its row-block only after that row-block's counter completed in its
   epoch, and reads the full sums: every producer tile's contribution of this epoch, nothing else; and it reads
   them before the tile completes;
8. every landed update of a statistics word keeps every contribution already there and adds exactly one new
   producer tile's (no lost update when two producers add at once, nothing added on top of an earlier epoch's
   sums); a reset writes 0 and erases only complete sums.

Two limits of :class:`~ctasim.protocol.memory.Memory`, and what is done about them (each is weaker than PTX, so
each would give false violations of the correct hand-off):

* a thread's view keeps *one* floor per location: joining two unordered pending writes of one location keeps the
  later-issued one (memory.py's docstring says so).  With two producers' adds to one word in flight, a consumer
  could read the later-issued add while the earlier-issued one, which also happened before the read, has not
  landed.  :class:`StatsMemory` lands the writes of a statistics word in issue order (their coherence order is
  the order the scheduler issued them in): fewer coherence orders than PTX allows, never more;
* an atomic may read past any write it is not morally strong with, back to the initial value, even one that
  happened before it (:meth:`~ctasim.protocol.memory.Memory.atomic_choices` takes its floor from the thread's
  view, where the atomic's own issue has already replaced it).  A weak reset would then be skipped by the next
  launch's adds, so the reset is ``st.relaxed`` at the counter's scope (a weak ``st`` would do under PTX: the
  kernel boundary orders it), and the adds at ``.gpu`` scope across GPUs cannot be shown correct here (with the
  reset on the consumer's GPU they are not morally strong), although PTX makes them atomic with each other
  (every producer of a row-block runs on one GPU): the kernels add at ``.sys``.

Leaves out: floating-point non-associativity (the order of the adds changes the rounding of Σx, Σx²: the model's
sums are exact), the fold itself (γ folded into W once, μ/σ from the sums, the two rank-one corrections), per-row
words (one Σx and one Σx² word stand for a row-block's rows: each row's words are written and read by the same
threads at the same points), TMA reductions (``cp.reduce.async.bulk``: async-proxy adds would need the proxy
fence the tile stores get), and the work-queue consumer reading the statistics before its acquire (its tile is
unknown until the pop; the ``relaxed-poll`` mutant is that bug's analogue).
"""

from __future__ import annotations

import random
import time
from collections import Counter, deque
from dataclasses import dataclass, replace

from .chain import (CHAIN_CORRECT, CHAIN_PASSING, CHAIN_SPACES, CHAIN_STATIC, ChainRun, ChainSetup, ChainSpace,
                    ChainVariant)
from .chain import initial_value as _chain_initial
from .harness import Run, Setup
from .harness import initial_value as _queue_initial
from .invariants import Checker, Dispatch, End, ProtocolViolation
from .memory import Memory
from .ops import Atom, Bar, BulkSt, ClusterSync, Ld, Poll, St
from .programs import CORRECT, KERNEL, KERNEL_WAIT, MUTANTS, WAIT, WAIT_MUTANTS, Variant
from .system import System
from .walk import MUTANT_SPACE, SearchStats, Space, run_parallel

__all__ = ["WORDS", "StatsRead", "StatsUpdate", "RowStatsChecker", "check_rowstats_trace", "StatsMemory",
           "RowStatsVariant", "ROWSTATS", "ROWSTATS_WAIT", "ROWSTATS_CHAIN", "ROWSTATS_CHAIN_STATIC", "ROWSTATS_CHAIN_RING",
           "ROWSTATS_PASSING", "ROWSTATS_MUTANTS", "ROWSTATS_VARIANTS", "RowStatsRun", "RowStatsChainRun", "make_run", "RandomChooser", "run_schedule",
           "search", "search_parallel", "find_violation", "replay", "SPACES", "space_of", "spaces_of"]

WORDS = ("rsum", "rsq")
"""The statistics words of a row-block: Σx and Σx².  Location ``(word, consumer gpu / layer, row, buffer)``."""


# ------------------------------------------------------------------------------------------------ events
@dataclass(frozen=True, slots=True)
class StatsRead:
    """A consumer CTA read statistics word ``word`` of row-block ``row`` and got ``value``."""
    gpu: int
    epoch: int
    cta: int
    row: int
    word: str
    value: object


@dataclass(frozen=True, slots=True)
class StatsUpdate:
    """A write to a statistics word landed: ``value`` is the word's new value (``rmw``: an atomic add; else a plain
    store); ``epoch`` is the writer's."""
    gpu: int
    row: int
    buffer: int
    word: str
    epoch: int
    value: object
    rmw: bool


def _tiles(bits: int, row: int, n: int) -> list[tuple[int, int]]:
    return [(row, c) for c in range(n) if bits >> c & 1]


class RowStatsChecker(Checker):
    """The protocol's checker (invariants 1-6) plus invariants (7) and (8) of the row statistics."""

    def __init__(self, m_tiles: int, n_tiles, elems: int, epochs: int, queue: bool = True) -> None:
        super().__init__(m_tiles, n_tiles, elems, epochs, queue)
        self._words = {}  # (gpu, row, buffer, word) -> (epoch of the contents or None, contents)
        self._stat_reads = Counter()  # (gpu, epoch, cta, row, word) -> reads not yet used by a Complete

    def _full(self, gpu: int) -> int:
        return (1 << self.n[gpu - 1]) - 1

    def _on_StatsUpdate(self, ev: StatsUpdate) -> None:
        key = (ev.gpu, ev.row, ev.buffer, ev.word)
        epoch, bits = self._words.get(key, (None, 0))
        n, full = self.n[ev.gpu - 1], self._full(ev.gpu)
        where = f"{ev.word}@gpu{ev.gpu}[row {ev.row}, buffer {ev.buffer}]"
        if not ev.rmw and ev.value == 0:
            if bits not in (0, full):
                self._fail(8, f"{where} reset while epoch {epoch}'s sums held only tiles "
                              f"{_tiles(bits, ev.row, n)} of {n}")
            self._words[key] = (None, 0)
            return
        if bits and epoch != ev.epoch:
            self._fail(8, f"epoch {ev.epoch} added to {where} on top of epoch {epoch}'s sums {bits:#b} "
                          f"(the buffer was not reset)")
        value = ev.value if isinstance(ev.value, int) else -1
        added = value - bits
        if added <= 0 or added & (added - 1) or added > full or bits & added:
            lost = _tiles(bits & ~value, ev.row, n) if value >= 0 else []
            self._fail(8, f"{where} went from {bits:#b} to {ev.value!r} in epoch {ev.epoch}: not one new producer "
                          f"tile's contribution added to the latest value (a lost update"
                          + (f": the contributions of {lost} are gone)" if lost else ")"))
        self._words[key] = (ev.epoch, value)

    def _on_StatsRead(self, ev: StatsRead) -> None:
        have, need = self._count.get((ev.gpu, ev.row, ev.epoch), 0), self.n[ev.gpu - 1]
        who = f"cta {ev.cta} of gpu{ev.gpu} (epoch {ev.epoch})"
        if have != need:
            self._fail(7, f"{who} read {ev.word} of row {ev.row} when its counter had {have} of {need} producer "
                          f"tiles")
        full = self._full(ev.gpu)
        if ev.value != full:
            v = ev.value
            if isinstance(v, int) and v >= 0 and not v & ~full:
                self._fail(7, f"{who} read {ev.word} of row {ev.row} = {v:#b}, lacking the contributions of "
                              f"producer tiles {_tiles(full & ~v, ev.row, need)}")
            self._fail(7, f"{who} read {ev.word} of row {ev.row} = {v!r}, expected {full:#b}")
        self._stat_reads[(ev.gpu, ev.epoch, ev.cta, ev.row, ev.word)] += 1

    def _on_Complete(self, ev) -> None:
        super()._on_Complete(ev)
        for word in WORDS:
            key = (ev.gpu, ev.epoch, ev.cta, ev.tile[0], word)
            if self._stat_reads[key] < 1:
                self._fail(7, f"tile {ev.tile} of gpu{ev.gpu} (epoch {ev.epoch}) completed without reading {word} "
                              f"of row {ev.tile[0]}")
            self._stat_reads[key] -= 1


def check_rowstats_trace(events, m_tiles: int, n_tiles, elems: int, epochs: int, queue: bool = True) -> Checker:
    """Check a whole trace with :class:`RowStatsChecker`; raises :class:`ProtocolViolation` at the first break."""
    ck = RowStatsChecker(m_tiles, n_tiles, elems, epochs, queue)
    for ev in events:
        ck.observe(ev)
    ck.queue_bounds()
    return ck


# ------------------------------------------------------------------------------------------------ memory
class StatsMemory(Memory):
    """:class:`~ctasim.protocol.memory.Memory` whose statistics words start at 0 and land their writes in issue
    order (see the module docstring: one floor per location cannot hold two unordered pending adds)."""

    def __init__(self, initial, on_land=None) -> None:
        super().__init__(initial=lambda loc: 0 if loc[0] in WORDS else initial(loc), on_land=on_land)

    def landable(self):
        out, seen = [], set()
        for w in self.pending:  # issue order
            if w.loc[0] in WORDS:
                if w.loc in seen:
                    continue
                seen.add(w.loc)
            if all(p.ts is not None for p in w.preds):
                out.append(w)
        return out


# ------------------------------------------------------------------------------------------------ variants
@dataclass(frozen=True)
class RowStatsVariant:
    """The hand-off protocol (``base``) with the row-statistics operations; the defaults are correct and each
    mutant changes one knob (of this class or of its base)."""

    name: str
    base: Variant | ChainVariant = CORRECT
    """The counter / queue protocol whose programs run unchanged (a 2-GPU :class:`Variant` or a chain kernel's
    :class:`ChainVariant`)."""
    bug: str = ""
    add: str = "red"
    """``red``: ``red.add.relaxed.<scope>``; ``plain``: ``ld.relaxed`` then ``st.relaxed`` of the sum (not atomic)."""
    add_scope: str | None = None
    """Scope of the adds (None: the counter's, ``sys`` across GPUs, ``gpu`` in the chain kernel)."""
    add_at: str = "storers"
    """``storers``: the storing thread adds before the signal barrier; ``after-signal``: the signalling thread adds
    after its counter update."""
    read_at: str = "after-acquire"
    """``after-acquire``: the loading thread reads before its first input load; ``before-acquire``: the polling
    thread reads before it polls the counter (wait consumers and the chain kernel only)."""
    buffers: int = 2
    """2: launch ``e`` uses buffer ``e mod 2`` and zeroes the other; 1: one buffer, zeroed by the consumer of tile
    ``(r, 0)`` after its read."""

    def __post_init__(self) -> None:
        if self.read_at == "before-acquire" and isinstance(self.base, Variant) and self.base.consumer != "wait":
            raise ValueError(f"{self.name}: a queue consumer knows its tile only after the pop's acquire")
        if self.add not in ("red", "plain") or self.add_at not in ("storers", "after-signal") \
                or self.read_at not in ("after-acquire", "before-acquire") or self.buffers not in (1, 2):
            raise ValueError(f"invalid row-statistics variant {self}")

    @property
    def chain(self) -> bool:
        return isinstance(self.base, ChainVariant)

    @property
    def scope(self) -> str:
        return self.add_scope or self.base.counter_scope


ROWSTATS = RowStatsVariant("rowstats")
ROWSTATS_WAIT = RowStatsVariant("rowstats-wait", WAIT)
ROWSTATS_CHAIN = RowStatsVariant("rowstats-chain-tickets", CHAIN_CORRECT)
ROWSTATS_CHAIN_STATIC = RowStatsVariant("rowstats-chain-static", CHAIN_STATIC)
ROWSTATS_CHAIN_RING = RowStatsVariant(
    "rowstats-chain-ring", CHAIN_PASSING["chain-tickets-ring-sys"],
    bug="the chain kernel's LayerNorm fold (ABI 5): layers round-robin on two GPUs, the adds at system scope")

ROWSTATS_PASSING: dict[str, RowStatsVariant] = {
    v.name: v
    for v in (
        ROWSTATS,
        ROWSTATS_WAIT,
        RowStatsVariant("rowstats-kernel", KERNEL, bug="the queue protocol in ctapipe.cuh's instruction sequence"),
        RowStatsVariant("rowstats-kernel-wait", KERNEL_WAIT, bug="the wait protocol in ctapipe.cuh's sequence"),
        ROWSTATS_CHAIN,
        ROWSTATS_CHAIN_STATIC,
        ROWSTATS_CHAIN_RING,
    )
}
"""Variants that must pass every schedule searched."""

ROWSTATS_MUTANTS: dict[str, RowStatsVariant] = {
    v.name: v
    for v in (
        # the adds after the release / counter update
        replace(ROWSTATS, name="rowstats-add-after-signal", add_at="after-signal",
                bug="queue: the signalling thread adds the partial sums after its counter update"),
        replace(ROWSTATS_WAIT, name="rowstats-wait-add-after-signal", add_at="after-signal",
                bug="wait: the partial sums added after red.release.sys on the counter"),
        replace(ROWSTATS_CHAIN_STATIC, name="rowstats-chain-add-after-signal", add_at="after-signal",
                bug="chain kernel (static): the partial sums added after red.release.gpu on the counter"),
        replace(ROWSTATS_CHAIN_RING, name="rowstats-chain-ring-add-after-signal", add_at="after-signal",
                bug="chain kernel on a ring: the partial sums added after red.release.sys on the next GPU's counter"),
        # the release downgraded
        replace(ROWSTATS, name="rowstats-no-signal-fence", base=MUTANTS["no-signal-fence"],
                bug="queue: no fence.acq_rel.sys between the adds and the counter atomic (relaxed counter update)"),
        replace(ROWSTATS_WAIT, name="rowstats-wait-relaxed-red", base=WAIT_MUTANTS["wait-relaxed-red"],
                bug="wait: the counter update is red.relaxed.sys instead of red.release.sys"),
        # not atomic
        replace(ROWSTATS, name="rowstats-plain-rmw", add="plain",
                bug="queue: ld.relaxed.sys + st.relaxed.sys of the sum instead of red.add"),
        replace(ROWSTATS_CHAIN, name="rowstats-chain-plain-rmw", add="plain",
                bug="chain kernel (tickets): ld.relaxed.gpu + st.relaxed.gpu of the sum instead of red.add"),
        replace(ROWSTATS, name="rowstats-cta-scope-red", add_scope="cta",
                bug="queue: red.add.relaxed.cta: adds of different CTAs are not atomic with each other"),
        # the read before the acquire
        replace(ROWSTATS_WAIT, name="rowstats-wait-read-before-acquire", read_at="before-acquire",
                bug="wait: the consumer reads the statistics before its ld.acquire.sys poll of the counter"),
        replace(ROWSTATS_CHAIN_STATIC, name="rowstats-chain-read-before-acquire", read_at="before-acquire",
                bug="chain kernel (static): lane 0 reads the statistics before its ld.acquire.gpu poll"),
        replace(ROWSTATS_CHAIN_RING, name="rowstats-chain-ring-read-before-acquire", read_at="before-acquire",
                bug="chain kernel on a ring: the statistics read before the ld.acquire.sys poll of the counter"),
        # the reset
        replace(ROWSTATS, name="rowstats-single-buffer", buffers=1,
                bug="one buffer, zeroed by the consumer of tile (r, 0) after its read, while the row's other "
                    "consumer tiles may still read it"),
    )
}
"""The seeded bugs; each must end at a violated invariant."""

ROWSTATS_VARIANTS: dict[str, RowStatsVariant] = ROWSTATS_PASSING | ROWSTATS_MUTANTS


# ------------------------------------------------------------------------------------------------ programs
def _with_stats(c, rv: RowStatsVariant, threads_of, consumed=lambda dst: True):
    """The threads of unit ``c`` from ``threads_of()`` (the base protocol's), with the statistics operations added.

    Where, by what each thread issues: a thread that stored output data adds before its next barrier (or, with
    ``add_at="after-signal"``, the thread of the same block that updates a counter adds after that update); a
    thread's first input load of a tile is preceded by the statistics reads (``read_at="after-acquire"``) and the
    reset of the other buffer; with ``read_at="before-acquire"`` a thread's counter poll is preceded by the reads.
    Tiles come from the ``Dispatch`` events of the unit (the checker's id of block ``b`` is ``4 * cid + b``).
    ``consumed(dst)``: a layer reads the output stored into ``dst`` (the chain kernel's last output has no reader,
    so no statistics)."""
    e, blocks, scope = c.epoch, c.kernel.blocks, rv.scope
    dispatched: dict = {}
    late: dict = {}  # block -> tiles stored, whose adds wait for the counter update (after-signal)
    emit0 = c.emit

    def emit(ev) -> None:
        if isinstance(ev, Dispatch):
            dispatched[ev.cta] = ev.tile
        emit0(ev)

    c.emit = emit  # before the base program reads it

    def adds(dst: int, tile: tuple):
        part = 1 << tile[1]
        for word in WORDS:
            loc = (word, dst, tile[0], e % rv.buffers)
            if rv.add == "red":
                yield Atom(loc, part, returns=False, scope=scope)
            else:
                old = yield Ld(loc, scope=scope)
                yield St(loc, old + part, scope=scope)

    def reads(gpu: int, row: int, cta: int):
        for word in WORDS:
            v = yield Ld((word, gpu, row, e % rv.buffers), scope=None)
            emit(StatsRead(gpu, e, cta, row, word, v))

    def reset(gpu: int, tile: tuple):
        if tile[1] == 0:
            for word in WORDS:
                yield St((word, gpu, tile[0], (e + 1) % rv.buffers), 0, scope=rv.base.counter_scope)

    def thread(b: int, gen):
        stored, read_tile, polls = None, None, 0
        try:
            op = next(gen)
            while True:
                if isinstance(op, (St, BulkSt)) and op.loc[0] == "d" and consumed(op.loc[1]):
                    stored = (op.loc[1], op.loc[2])
                elif isinstance(op, (Bar, ClusterSync)) and stored is not None:
                    if rv.add_at == "storers":
                        yield from adds(*stored)
                    else:
                        late.setdefault(b, deque()).append(stored)
                    stored = None
                elif isinstance(op, Ld) and op.loc[0] == "d":
                    cta = 4 * c.cid + b
                    tile = dispatched.get(cta)
                    if tile is not None and (op.loc[1], tile) != read_tile:  # a persistent CTA's next tile
                        read_tile = (op.loc[1], tile)
                        if rv.read_at == "after-acquire":
                            yield from reads(op.loc[1], tile[0], cta)
                        yield from reset(op.loc[1], tile)
                elif isinstance(op, Poll) and op.loc[0] == "ctr" and rv.read_at == "before-acquire":
                    yield from reads(op.loc[1], op.loc[2], 4 * c.cid + polls % blocks)
                    polls += 1
                result = yield op
                if isinstance(op, Atom) and op.loc[0] == "ctr" and late.get(b):
                    yield from adds(*late[b].popleft())
                op = gen.send(result)
        except StopIteration as stop:
            return stop.value

    return [(b, thread(b, gen)) for b, gen in threads_of()]


def _stats_memory(run, initial) -> None:
    """Give ``run`` a :class:`StatsMemory` and a system on it (nothing has run yet)."""
    old = run.system
    run.mem = StatsMemory(initial, on_land=run._on_land)
    run.system = System(old.kernels, old.slots, run.mem, emit=run.emit)


def _update(w) -> StatsUpdate:
    word, gpu, row, buf = w.loc
    return StatsUpdate(gpu, row, buf, word, w.thread.tag.epoch, w.value, w.rmw is not None)


class RowStatsRun(Run):
    """One run of a 2-GPU (or longer chain) protocol with the row statistics: :class:`~ctasim.protocol.harness.Run`
    with the programs of :func:`_with_stats` and :class:`RowStatsChecker`."""

    def __init__(self, setup: Setup, variant: RowStatsVariant = ROWSTATS, *, check: bool = True) -> None:
        if variant.chain:
            raise ValueError(f"{variant.name} runs on a ChainSetup (RowStatsChainRun)")
        self.rv = variant
        super().__init__(setup, variant.base, check=check)
        ch = setup.chain
        if check:
            self.checker = RowStatsChecker(ch.m_tiles, ch.n_tiles, ch.elems, setup.epochs,
                                           queue=variant.base.consumer == "queue")
        _stats_memory(self, _queue_initial)

    def _program(self, c):
        return _with_stats(c, self.rv, lambda: Run._program(self, c))

    def _on_land(self, w) -> None:
        super()._on_land(w)
        if w.loc[0] in WORDS:
            self.emit(_update(w))


class RowStatsChainRun(ChainRun):
    """One run of the chain kernel's protocol (one GPU, GPU scope) with the row statistics."""

    def __init__(self, setup: ChainSetup, variant: RowStatsVariant = ROWSTATS_CHAIN, *, check: bool = True) -> None:
        if not variant.chain:
            raise ValueError(f"{variant.name} runs on a Setup (RowStatsRun)")
        self.rv = variant
        super().__init__(setup, variant.base, check=check)
        s = setup
        if check:
            self.checker = RowStatsChecker(s.m_tiles, (s.n_tiles,) * s.layers, s.elems, s.epochs, queue=False)
        _stats_memory(self, _chain_initial)

    def _program(self, c):
        return _with_stats(c, self.rv, lambda: ChainRun._program(self, c), lambda dst: dst < self.setup.layers)

    def _on_land(self, w) -> None:
        super()._on_land(w)
        if w.loc[0] in WORDS:
            self.emit(_update(w))


def make_run(setup: Setup | ChainSetup, variant: RowStatsVariant | str, *, check: bool = True):
    v = ROWSTATS_VARIANTS[variant] if isinstance(variant, str) else variant
    return (RowStatsChainRun if v.chain else RowStatsRun)(setup, v, check=check)


# ------------------------------------------------------------------------------------------------ schedules
class RandomChooser:
    """The random walk's decisions (:mod:`ctasim.protocol.walk`'s distribution)."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def index(self, n: int) -> int:
        return self.rng.randrange(n) if n > 1 else 0

    def flip(self, p: float) -> bool:
        return self.rng.random() < p


def run_schedule(run, choose, max_steps: int = 100_000, log=None) -> tuple[int, int, ProtocolViolation | None]:
    """Run ``run`` to the end, each scheduler decision taken by ``choose`` (``index(n)``, ``flip(p)``).

    The decisions are :func:`ctasim.protocol.walk.walk`'s (which builds its own runs, so the loop is repeated
    here for any chooser: random, or Hypothesis' draws).  Returns (decisions, signature, violation or None)."""
    sys_ = run.system
    sys_.verbose = log is not None
    mem = sys_.mem
    sig: list = []
    try:
        for n in range(max_steps):
            if sys_.finished():
                run.emit(End(True))
                run.checker.queue_bounds()
                return n, hash(tuple(sig)), None
            launch = sys_.launchable()
            movers = [t for t in sys_.threads if sys_.would_progress(t)]
            res = sys_.resolvable()
            events = sys_.memory_events()
            total = len(launch) + len(movers) + len(res) + len(events)
            if total == 0:
                run.emit(End(False, f"deadlock: nothing can change; {sys_.stuck()}"))
            k = choose.index(total)
            if k < len(launch):
                desc = sys_.launch(launch[k])
                sig.append(("L", launch[k]))
            elif k < len(launch) + len(movers):
                thr = movers[k - len(launch)]
                pick, defer, op = 0, False, thr.op
                if thr.wait is None and isinstance(op, Ld):
                    if not op.dep and op.acquire is None and choose.flip(0.3):
                        defer = True
                    elif choose.flip(0.5):
                        pick = choose.index(len(mem.readable(thr.mem, op.loc, op.proxy)))
                desc = sys_.step(thr, pick, defer)
                sig.append(("S", thr.cid, pick, defer) if isinstance(op, (Ld, Poll)) else ("S", thr.cid))
            elif k < len(launch) + len(movers) + len(res):
                thr = res[k - len(launch) - len(movers)]
                pick = choose.index(4) if choose.flip(0.5) else 0
                desc = sys_.resolve(thr, pick)
                sig.append(("R", thr.cid, pick))
            else:
                ev = events[k - len(launch) - len(movers) - len(res)]
                pick = 0
                if ev[0] == "land" and ev[1].rmw is not None and choose.flip(0.5):
                    pick = choose.index(len(mem.atomic_choices(ev[1])))
                desc = sys_.deliver(ev, pick)
                sig.append((ev[0], ev[1].wid, pick))
            if log is not None:
                log(desc)
        run.emit(End(False, f"livelock: {max_steps} steps"))
    except ProtocolViolation as err:
        if log is not None:
            log(f"{sys_.attempt}  <- this step broke the invariant")
        return len(sig), hash(tuple(sig)), err
    return max_steps, hash(tuple(sig)), None  # pragma: no cover - End raised


SPACES = {"mutant": MUTANT_SPACE, "epochs-3": Space(max_m=1, max_elems=1, max_epochs=3)}
"""2-GPU setups: 2-3 GPUs, up to 2x2 tiles, 1-2 epochs, both proxies, clusters of two on a quarter of them
(:data:`~ctasim.protocol.walk.MUTANT_SPACE`); and three launches, where launch 2 reuses the buffer launch 1
reset."""


def space_of(variant: RowStatsVariant | str) -> Space | ChainSpace:
    """Where a variant's mutant search looks: the first of :data:`SPACES` or of the chain kernel's spaces."""
    v = ROWSTATS_VARIANTS[variant] if isinstance(variant, str) else variant
    return ChainSpace() if v.chain else MUTANT_SPACE


def spaces_of(variant: RowStatsVariant | str) -> dict:
    """Where a variant that must pass is searched: :data:`SPACES`, or the chain kernel's ``CHAIN_SPACES``."""
    v = ROWSTATS_VARIANTS[variant] if isinstance(variant, str) else variant
    return CHAIN_SPACES if v.chain else SPACES


def search(variant: str, space: Space | ChainSpace, seeds: range, stop_at_violation: bool = False) -> SearchStats:
    """One random walk of ``variant`` per seed (the setup drawn from ``space`` with the seed's generator)."""
    v = ROWSTATS_VARIANTS[variant]
    st = SearchStats()
    t0 = time.perf_counter()
    for seed in seeds:
        rng = random.Random(seed)
        setup = space.draw(rng)
        steps, sig, err = run_schedule(make_run(setup, v), RandomChooser(rng))
        if st.record(seed, setup, steps, sig, err) and stop_at_violation:
            break
    return st.close(t0)


def _search_job(args) -> SearchStats:
    return search(*args)


def _space_seed(i: int) -> int:
    return i * 1_000_003  # each space its own seeds


def search_parallel(variant: str, spaces: dict, n: int, processes: int | None = None, seed0: int = 0) -> SearchStats:
    """``n`` walks of ``variant`` shared equally among ``spaces``, each share split into ``processes`` seed ranges
    (fixed seeds: a failure is reproduced by :func:`replay`); :func:`ctasim.protocol.walk.run_parallel`."""
    return run_parallel(_search_job, variant, spaces, n, processes, seed0, _space_seed)


def find_violation(variant: str, budget: int = 2_000, seed0: int = 0) -> SearchStats:
    """Walk ``variant`` on :func:`space_of` its setups until a walk breaks an invariant (or ``budget`` pass)."""
    return search(variant, space_of(variant), range(seed0, seed0 + budget), stop_at_violation=True)


def replay(variant: str, seed: int, space: Space | ChainSpace | None = None, log=print) -> ProtocolViolation | None:
    """Re-run walk ``seed`` of ``variant`` on ``space`` (default :func:`space_of`), printing every action."""
    rng = random.Random(seed)
    setup = (space or space_of(variant)).draw(rng)
    if log is not None:
        log(f"setup: {setup.describe()}; variant {variant}; seed {seed}")
    return run_schedule(make_run(setup, variant), RandomChooser(rng), log=log)[2]
