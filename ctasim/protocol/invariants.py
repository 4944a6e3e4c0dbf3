"""The protocol's memory-level invariants, checked event by event against an independent oracle.

The checker consumes a trace of protocol events (the dataclasses below) in the order they happened and raises
:class:`ProtocolViolation` at the first event that breaks an invariant.  It knows only the shape of the chain
(``m_tiles``, ``n_tiles``, ``elems``) and recomputes every dependency, threshold and queue range itself; it never
calls the protocol programs or :mod:`ctasim.protocol.grid`, so a bug there cannot hide itself.

Invariants (numbered as in issue 3):

1. a consumer tile reads each input element only after the producer's write of it (this epoch's value) is
   visible to it, and reads all of them before it completes;
2. every consumer tile is dispatched exactly once per epoch;
3. each scoreboard counter reaches its threshold exactly once per epoch and never passes it, and its tiles are
   pushed only once it has (counted in increments by that epoch's producers, so the check holds for monotone
   and for reset counters alike); with wait consumers (no queue), a tile is dispatched only once its counter has;
4. work-queue: a ticket is claimed once, pushed once within its epoch's range (tail <= capacity), and its entry
   is read only after it was published, holding exactly what was pushed (consumed <= published <= pushed);
5. progress: the run finishes (no deadlock, no livelock) and every consumer tile completes;
6. epochs: nothing read in epoch ``e`` (input element, queue entry) comes from an earlier epoch.

The simulator's trace checks (``ctasim.invariants``) cover schedule-level properties of whole tiles; this module
is the memory-level half and is meant to be called from there for traces that carry these events.

Leaves out: timing, and GPU 0 (a pure producer reading nothing through the protocol).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "ProtocolViolation",
    "Claim",
    "EntryRead",
    "Dispatch",
    "InputRead",
    "Complete",
    "Push",
    "CounterUpdate",
    "Publish",
    "End",
    "Checker",
    "check_trace",
]


class ProtocolViolation(AssertionError):
    """An invariant failed; ``invariant`` is its number (1-6)."""

    def __init__(self, invariant: int, message: str) -> None:
        super().__init__(f"invariant ({invariant}) violated: {message}")
        self.invariant = invariant
        self.detail = message


@dataclass(frozen=True, slots=True)
class Claim:
    """A consumer CTA took ``ticket`` from the queue head (atomic add)."""
    gpu: int
    epoch: int
    cta: int
    ticket: int


@dataclass(frozen=True, slots=True)
class EntryRead:
    """A consumer CTA read the queue entry of its ticket after its poll succeeded."""
    gpu: int
    epoch: int
    cta: int
    ticket: int
    value: object


@dataclass(frozen=True, slots=True)
class Dispatch:
    """A consumer CTA starts work on ``tile``."""
    gpu: int
    epoch: int
    cta: int
    tile: tuple


@dataclass(frozen=True, slots=True)
class InputRead:
    """A consumer CTA read element ``elem`` of producer tile ``src`` for its tile and got ``value``."""
    gpu: int
    epoch: int
    cta: int
    tile: tuple
    src: tuple
    elem: int
    value: object


@dataclass(frozen=True, slots=True)
class Complete:
    gpu: int
    epoch: int
    cta: int
    tile: tuple


@dataclass(frozen=True, slots=True)
class Push:
    """A producer CTA (on ``gpu - 1``) pushes ``tile`` of row ``row`` as ``ticket`` into ``gpu``'s queue."""
    gpu: int
    epoch: int
    cta: int
    row: int
    ticket: int
    tile: tuple


@dataclass(frozen=True, slots=True)
class CounterUpdate:
    """A write to scoreboard counter ``row`` of ``gpu`` landed (``rmw``: an increment; else a plain store)."""
    gpu: int
    row: int
    epoch: int
    value: object
    rmw: bool


@dataclass(frozen=True, slots=True)
class Publish:
    """The publish word of ``ticket`` in ``gpu``'s queue became visible."""
    gpu: int
    epoch: int
    ticket: int


@dataclass(frozen=True, slots=True)
class End:
    """The run ended; ``finished`` is False on deadlock or livelock."""
    finished: bool
    reason: str = ""


def data_value(epoch: int, layer: int, tile: tuple, elem: int) -> tuple:
    """The value a producer of ``layer`` writes into element ``elem`` of ``tile`` in ``epoch``."""
    return ("d", epoch, layer, tuple(tile), elem)


class Checker:
    """Feed events with :meth:`observe`; raises :class:`ProtocolViolation` at the first broken invariant."""

    def __init__(self, m_tiles: int, n_tiles, elems: int, epochs: int, queue: bool = True) -> None:
        self.queue = queue  # False: wait consumers (no queue); a dispatch then needs its counter complete (3)
        self.m = int(m_tiles)
        self.n = tuple(int(x) for x in n_tiles)
        self.elems = int(elems)
        self.epochs = int(epochs)
        self.events = 0
        self._count = {}  # (gpu, row, epoch) -> increments landed
        self._pushed_rows = {}  # (gpu, row, epoch) -> pushes
        self._pushed = {}  # (gpu, ticket) -> tile
        self._pushed_tiles = set()  # (gpu, epoch, tile)
        self._published = set()  # (gpu, ticket)
        self._claimed = {}  # (gpu, ticket) -> cta
        self._cta_ticket = {}  # cta -> (gpu, ticket)
        self._entry = {}  # cta -> tile read from its entry
        self._read_tickets = set()
        self._dispatched = {}  # (gpu, epoch, tile) -> cta
        self._cta_tile = {}  # cta -> (gpu, epoch, tile)
        self._inputs = {}  # cta -> set of (src, elem)
        self._completed = set()
        self.ended = False

    # the oracle: written out again here on purpose, from the shape numbers only
    def _capacity(self, gpu: int) -> int:
        return self.m * self.n[gpu]

    def _consumer_tiles(self, gpu: int):
        return {(r, c) for r in range(self.m) for c in range(self.n[gpu])}

    def _needed(self, gpu: int, tile: tuple):
        return {((tile[0], j), k) for j in range(self.n[gpu - 1]) for k in range(self.elems)}

    @staticmethod
    def _fail(invariant: int, msg: str):
        raise ProtocolViolation(invariant, msg)

    def observe(self, ev) -> None:
        self.events += 1
        getattr(self, "_on_" + type(ev).__name__)(ev)

    def _on_Claim(self, ev: Claim) -> None:
        key = (ev.gpu, ev.ticket)
        if key in self._claimed:
            self._fail(4, f"ticket {ev.ticket} of gpu{ev.gpu} claimed twice (ctas {self._claimed[key]}, {ev.cta})")
        cap = self._capacity(ev.gpu)
        if not ev.epoch * cap <= ev.ticket < (ev.epoch + 1) * cap:
            self._fail(6, f"epoch {ev.epoch} claimed ticket {ev.ticket} outside [{ev.epoch * cap}, "
                          f"{(ev.epoch + 1) * cap}) on gpu{ev.gpu}")
        self._claimed[key] = ev.cta
        self._cta_ticket[ev.cta] = key

    def _on_CounterUpdate(self, ev: CounterUpdate) -> None:
        if not ev.rmw:
            return
        key = (ev.gpu, ev.row, ev.epoch)
        c = self._count.get(key, 0) + 1
        self._count[key] = c
        if c > self.n[ev.gpu - 1]:
            self._fail(3, f"counter row {ev.row} of gpu{ev.gpu} passed its threshold {self.n[ev.gpu - 1]} "
                          f"in epoch {ev.epoch}")

    def _on_Push(self, ev: Push) -> None:
        key = (ev.gpu, ev.row, ev.epoch)
        have, need = self._count.get(key, 0), self.n[ev.gpu - 1]
        if have != need:
            self._fail(3, f"gpu{ev.gpu} tile {ev.tile} pushed in epoch {ev.epoch} when counter row {ev.row} had "
                          f"{have} of {need} producer tiles")
        if ev.tile[0] != ev.row or ev.tile not in self._consumer_tiles(ev.gpu):
            self._fail(2, f"tile {ev.tile} is not a consumer tile of row {ev.row} on gpu{ev.gpu}")
        cap = self._capacity(ev.gpu)
        if not ev.epoch * cap <= ev.ticket < (ev.epoch + 1) * cap:
            self._fail(4, f"push of ticket {ev.ticket} overflows epoch {ev.epoch}'s queue range on gpu{ev.gpu} "
                          f"(tail > capacity {cap})")
        if (ev.gpu, ev.ticket) in self._pushed:
            self._fail(4, f"ticket {ev.ticket} of gpu{ev.gpu} pushed twice")
        if (ev.gpu, ev.epoch, ev.tile) in self._pushed_tiles:
            self._fail(2, f"tile {ev.tile} of gpu{ev.gpu} pushed twice in epoch {ev.epoch}")
        self._pushed[(ev.gpu, ev.ticket)] = ev.tile
        self._pushed_tiles.add((ev.gpu, ev.epoch, ev.tile))

    def _on_Publish(self, ev: Publish) -> None:
        key = (ev.gpu, ev.ticket)
        if key not in self._pushed:
            self._fail(4, f"ticket {ev.ticket} of gpu{ev.gpu} published but never pushed")
        self._published.add(key)

    def _on_EntryRead(self, ev: EntryRead) -> None:
        key = (ev.gpu, ev.ticket)
        if self._cta_ticket.get(ev.cta) != key:
            self._fail(4, f"cta {ev.cta} read the entry of ticket {ev.ticket} it did not claim")
        if key not in self._published:
            self._fail(4, f"gpu{ev.gpu} entry of ticket {ev.ticket} read before it was published")
        if key in self._read_tickets:
            self._fail(4, f"gpu{ev.gpu} entry of ticket {ev.ticket} consumed twice")
        want = (ev.ticket, self._pushed[key])
        if ev.value != want:
            cap = self._capacity(ev.gpu)
            if isinstance(ev.value, tuple) and ev.value[0] < ev.epoch * cap:
                self._fail(6, f"epoch {ev.epoch} read queue entry {ev.value!r} of an earlier epoch for ticket "
                              f"{ev.ticket} on gpu{ev.gpu} (expected {want!r})")
            self._fail(4, f"gpu{ev.gpu} entry of ticket {ev.ticket} read as {ev.value!r}, expected {want!r} "
                          f"(read before its write was visible)")
        self._read_tickets.add(key)
        self._entry[ev.cta] = want[1]

    def _on_Dispatch(self, ev: Dispatch) -> None:
        if not self.queue:  # a wait consumer: its tile's counter must be complete in this epoch
            have, need = self._count.get((ev.gpu, ev.tile[0], ev.epoch), 0), self.n[ev.gpu - 1]
            if have != need:
                self._fail(3, f"gpu{ev.gpu} tile {ev.tile} dispatched in epoch {ev.epoch} when counter row "
                              f"{ev.tile[0]} had {have} of {need} producer tiles")
        elif self._entry.get(ev.cta) != ev.tile:
            self._fail(4, f"cta {ev.cta} dispatched {ev.tile} but its queue entry held {self._entry.get(ev.cta)}")
        key = (ev.gpu, ev.epoch, ev.tile)
        if key in self._dispatched:
            self._fail(2, f"tile {ev.tile} of gpu{ev.gpu} dispatched twice in epoch {ev.epoch} "
                          f"(ctas {self._dispatched[key]}, {ev.cta})")
        self._dispatched[key] = ev.cta
        self._cta_tile[ev.cta] = key
        self._inputs[ev.cta] = set()

    def _on_InputRead(self, ev: InputRead) -> None:
        if self._cta_tile.get(ev.cta) != (ev.gpu, ev.epoch, ev.tile):
            self._fail(2, f"cta {ev.cta} read inputs for {ev.tile}, which it was not dispatched")
        if (ev.src, ev.elem) not in self._needed(ev.gpu, ev.tile):
            self._fail(1, f"tile {ev.tile} of gpu{ev.gpu} read {ev.src}[{ev.elem}], which is not an input of it")
        want = data_value(ev.epoch, ev.gpu - 1, ev.src, ev.elem)
        if ev.value != want:
            if isinstance(ev.value, tuple) and ev.value[1] < ev.epoch:
                self._fail(6, f"epoch {ev.epoch} tile {ev.tile} of gpu{ev.gpu} read {ev.src}[{ev.elem}] = "
                              f"{ev.value!r} from epoch {ev.value[1]}")
            self._fail(1, f"tile {ev.tile} of gpu{ev.gpu} (epoch {ev.epoch}) read {ev.src}[{ev.elem}] = "
                          f"{ev.value!r} before the producer's write {want!r} was visible")
        self._inputs[ev.cta].add((ev.src, ev.elem))

    def _on_Complete(self, ev: Complete) -> None:
        key = (ev.gpu, ev.epoch, ev.tile)
        if self._cta_tile.get(ev.cta) != key:
            self._fail(2, f"cta {ev.cta} completed {ev.tile}, which it was not dispatched")
        missing = self._needed(ev.gpu, ev.tile) - self._inputs[ev.cta]
        if missing:
            self._fail(1, f"tile {ev.tile} of gpu{ev.gpu} completed without reading {sorted(missing)}")
        if key in self._completed:
            self._fail(2, f"tile {ev.tile} of gpu{ev.gpu} completed twice in epoch {ev.epoch}")
        self._completed.add(key)

    def _on_End(self, ev: End) -> None:
        self.ended = True
        if not ev.finished:
            self._fail(5, ev.reason or "the run did not finish")
        for g in range(1, len(self.n)):
            for e in range(self.epochs):
                for tile in sorted(self._consumer_tiles(g)):
                    if (g, e, tile) not in self._completed:
                        self._fail(5, f"tile {tile} of gpu{g} never completed in epoch {e}")
                for r in range(self.m):
                    if self._count.get((g, r, e), 0) != self.n[g - 1]:
                        self._fail(3, f"counter row {r} of gpu{g} saw {self._count.get((g, r, e), 0)} of "
                                      f"{self.n[g - 1]} increments in epoch {e}")

    def queue_bounds(self) -> None:
        """(4) as a state invariant: per GPU, consumed <= published <= pushed."""
        for g in range(1, len(self.n)):
            consumed = sum(1 for k in self._read_tickets if k[0] == g)
            published = sum(1 for k in self._published if k[0] == g)
            pushed = sum(1 for k in self._pushed if k[0] == g)
            if not consumed <= published <= pushed <= self.epochs * self._capacity(g):
                self._fail(4, f"gpu{g} queue: consumed {consumed}, published {published}, pushed {pushed}")


def check_trace(events, m_tiles: int, n_tiles, elems: int, epochs: int, queue: bool = True) -> Checker:
    """Check a whole trace; raises :class:`ProtocolViolation` at the first broken invariant."""
    ck = Checker(m_tiles, n_tiles, elems, epochs, queue)
    for ev in events:
        ck.observe(ev)
    ck.queue_bounds()
    return ck
