"""Machine entities: the NVLink fabric, scoreboards and work-queues.

What these things *are* lives here; how tiles are scheduled onto them lives in :mod:`ctasim.engine`.

Fabric (sharing model, ``Hardware.link_sharing``)
    A transfer of ``b`` bytes at rate ``r`` GB/s needs its channel for ``b / r`` ns (its *work*) and
    arrives ``link_latency_ns`` after its last byte leaves.  ``direct`` topology: one channel per ordered
    GPU pair.  ``switch`` topology (NVSwitch): each GPU has one egress and one ingress port; a transfer
    holds the source's egress and the destination's ingress port.  Kernel stores and copy-engine copies
    share the same channels, each at its own rate.

    ``fcfs``: transfers on a channel are served one after another in the order they are reserved, each
    for its whole work; a switch transfer holds both ports for the same interval, starting when both are
    free.  ``fair`` (:class:`FairLink`): processor sharing of the channel's time: each of the n active
    transfers gets 1/n of it, except that a transfer never runs faster than its cap (a CTA's store: the
    per-SM rate ``sm_remote_store_gbps / cta_slots_per_sm``); what a capped transfer leaves unused is
    shared by the others (max-min fair; with equal caps every transfer runs at ``min(cap, 1/n)``).  Both
    give the same aggregate throughput and the same end for the last of a batch of transfers started
    together; they differ in when the others end: FCFS ends the first of 132 simultaneous stores after
    1/132 of the batch, fair sharing ends them all together.  ``fair`` on a ``switch`` shares each
    ordered pair's (egress, ingress) ports as one channel; two pairs using one port at the same time
    (two sources into one GPU) would need sharing across ports, which is not modelled and raises.

Scoreboard
    One counter per dependency, in the consumer GPU's memory, starting at its threshold.  A producer
    tile's signal decrements it by one.  States: *pending* (count > 0) -> *complete* (count == 0), entered
    exactly once; a signal to a complete counter is a protocol violation and raises.

WorkQueue
    A ring of ``capacity`` slots in the consumer GPU's memory.  Producers *reserve* the next tail slot,
    write the tile id and *publish* it (visible to the consumer after the push latency).  Consumer CTAs
    *claim* the next head index (an atomic on local memory) and then wait until that slot is published.
    Indices only grow: ``head`` and ``tail`` never exceed ``capacity``, and a slot is published once.
"""

from __future__ import annotations

import heapq

from simpy.events import Event

from ctasim.spec import Hardware

__all__ = ["Fabric", "FairLink", "Scoreboard", "WorkQueue", "ProtocolError"]


class ProtocolError(RuntimeError):
    """The simulated protocol did something the protocol forbids (a model bug, never a user error)."""


class Fabric:
    """NVLink channels, shared first-come-first-served or fairly (see the module docstring).

    ``fcfs``: :meth:`reserve` decides a transfer's timing when it is issued.  ``fair``: :meth:`link` gives
    the channel's :class:`FairLink` (``env``, the SimPy environment, is needed), whose
    :meth:`FairLink.submit` returns an event that fires when the last byte has left.
    """

    def __init__(self, hw: Hardware, env=None, schedule=None):
        self.hw = hw
        self.switch = hw.topology == "switch"
        self.fair = hw.link_sharing == "fair"
        self.env = env
        self.schedule = schedule  # passed on to every FairLink (see FairLink)
        self._free: dict = {}
        self._links: dict = {}
        self._owner: dict = {}  # fair + switch: port -> the FairLink using it now

    def link(self, src: int, dst: int) -> "FairLink":
        """The fair-shared channel from ``src`` to ``dst`` (one per ordered pair; see the module docstring)."""
        fl = self._links.get((src, dst))
        if fl is None:
            if self.env is None:
                raise ValueError("Fabric.link needs the SimPy environment (Fabric(hw, env))")
            ports = (("out", src), ("in", dst)) if self.switch else ()
            fl = self._links[(src, dst)] = FairLink(self.env, ports, self._owner, f"{src}->{dst}", self.schedule)
        return fl

    def channel(self, src: int, dst: int) -> tuple[list, ...]:
        """The port(s) a transfer from ``src`` to ``dst`` holds: one per ordered pair, or egress + ingress."""
        if self.switch:
            return (self._port(("out", src)), self._port(("in", dst)))
        return (self._port((src, dst)),)

    def _port(self, key) -> list:
        return self._free.setdefault(key, [0.0])

    def reserve(self, t_issue: float, src: int, dst: int, nbytes: float, gbps: float) -> tuple[float, float]:
        """Reserve the channel(s) for a transfer issued at ``t_issue``; return (first byte, arrival) in ns."""
        return self.reserve_on(self.channel(src, dst), t_issue, nbytes, gbps)

    def reserve_on(self, ports: tuple[list, ...], t_issue: float, nbytes: float, gbps: float) -> tuple[float, float]:
        """As :meth:`reserve`, on ports from :meth:`channel` (the engine looks them up once per kernel)."""
        begin = t_issue
        for p in ports:
            if p[0] > begin:
                begin = p[0]
        end = begin + nbytes / gbps
        for p in ports:
            p[0] = end
        return begin, end + self.hw.link_latency_ns


class _Class:
    """The transfers of one cap on a :class:`FairLink`: they all run at the same rate, so one virtual clock
    (the work each has received since the class was last empty) orders their ends."""

    __slots__ = ("cap", "n", "v", "rate", "heap")

    def __init__(self, cap: float):
        self.cap, self.n, self.v, self.rate, self.heap = cap, 0, 0.0, 0.0, []


class FairLink:
    """One channel under processor sharing with per-transfer rate caps (max-min fair).

    Rates are in units of the channel's time: a transfer of work ``w`` ns (its bytes over its own full
    rate) that gets rate x ends after ``w / x`` ns; the n active transfers' rates add up to at most 1.
    Transfers of equal cap share one virtual clock ``v`` (work received by each since the class was last
    empty), so a transfer submitted with work w ends when its class's clock reaches ``v + w``; a heap per
    class holds those finish points.  On every arrival and departure the clocks are advanced, the rates
    recomputed (water-filling over the classes: a handful at most) and the next end re-planned; one SimPy
    wake-up is pending per link, a stale one is ignored by its generation number, one that comes too
    early (the end moved later since) re-plans.  Cost: O(log n) per transfer.

    ``schedule(t, fn)``, when given, calls ``fn()`` at time ``t`` in place of a SimPy timeout with a callback (the
    engine passes its own calendar, which keeps SimPy's order of simultaneous events); a transfer submitted with
    ``done`` is ended by ``schedule(now, done)`` where one with an event has it succeed.
    """

    EPS = 1e-6
    """Work (ns of channel time) within which a transfer counts as finished (floating-point slack)."""

    def __init__(self, env, ports=(), owner=None, name: str = "", schedule=None):
        self.env = env
        self.schedule = schedule
        self.name = name
        self.classes: dict[float, _Class] = {}
        self.active: list[_Class] = []
        self.n = 0
        self.t_last = 0.0
        self.gen = 0
        self.wake_at = float("inf")
        self.seq = 0
        self.ports, self.owner = ports, owner

    def submit(self, work_ns: float, cap: float = 1.0, done=None):
        """Start a transfer of ``work_ns`` of channel time, at most ``cap`` (0 < cap <= 1) of the channel;
        return a SimPy event that succeeds when its last byte has left (or, given ``done`` and a ``schedule``,
        call ``done()`` then through the schedule, and return None)."""
        env = self.env
        now = env._now
        self._advance(now)
        c = self.classes.get(cap)
        if c is None:
            if not 0.0 < cap <= 1.0:
                raise ValueError(f"a transfer's cap must be within (0, 1], got {cap}")
            c = self.classes[cap] = _Class(cap)
        if c.n == 0:
            c.v = 0.0
            self.active.append(c)
            self.active.sort(key=lambda k: k.cap)
        if self.n == 0 and self.ports:
            self._claim()
        ev = env.event() if done is None else done
        self.seq += 1
        heapq.heappush(c.heap, (c.v + work_ns, self.seq, ev))
        c.n += 1
        self.n += 1
        self._rates()
        self._plan(now)
        return ev

    # ---------------------------------------------------------------- internals
    def _claim(self) -> None:
        for p in self.ports:
            other = self.owner.get(p)
            if other is not None and other is not self and other.n > 0:
                raise NotImplementedError(
                    f"fair link sharing: port {p} is used by transfers {other.name} and {self.name} at once "
                    "(sharing across switch ports is not modelled; use link_sharing = 'fcfs')")
            self.owner[p] = self

    def _advance(self, now: float) -> None:
        dt = now - self.t_last
        if dt > 0.0:
            for c in self.active:
                c.v += c.rate * dt
        self.t_last = now

    def _rates(self) -> None:
        """Max-min fair rates: classes in increasing cap; a class whose cap is below the fair share of what
        is left runs at its cap, the rest share the remainder equally."""
        left, n = 1.0, self.n
        active = self.active
        if len(active) == 1:  # one cap (the common case): the loop below, unrolled
            c = active[0]
            c.rate = c.cap if c.cap * n <= left else left / n
            return
        for c in active:  # sorted by cap
            if c.cap * n <= left:
                c.rate = c.cap
                left -= c.cap * c.n
                n -= c.n
            else:
                share = left / n
                for d in self.active:
                    if d.cap >= c.cap:
                        d.rate = share
                return

    def _plan(self, now: float) -> None:
        active = self.active
        if len(active) == 1:
            c = active[0]
            t_next = now + (c.heap[0][0] - c.v) / c.rate
        else:
            t_next = float("inf")
            for c in active:
                t = now + (c.heap[0][0] - c.v) / c.rate
                if t < t_next:
                    t_next = t
        if t_next < now:
            t_next = now
        if t_next < self.wake_at:  # a pending later wake-up becomes stale; a pending earlier one re-plans
            self.gen += 1
            self.wake_at = t_next
            gen = self.gen
            if self.schedule is not None:
                self.schedule(now + (t_next - now), lambda: self._wake(gen))  # the time a timeout would get
            else:
                ev = self.env.timeout(t_next - now)
                ev.callbacks.append(lambda _ev: self._wake(gen))

    def _wake(self, gen: int) -> None:
        if gen != self.gen:
            return
        self.wake_at = float("inf")
        now = self.env._now
        self._advance(now)
        active = self.active
        done = False
        for c in (active if len(active) == 1 else list(active)):  # (removing the lone class ends the loop)
            heap, eps = c.heap, self.EPS + 1e-12 * c.v
            while heap and heap[0][0] <= c.v + eps:
                ev = heapq.heappop(heap)[2]
                c.n -= 1
                self.n -= 1
                if ev.__class__ is Event:
                    ev.succeed()
                else:  # a done callback (submit)
                    self.schedule(now, ev)
                done = True
            if c.n == 0:
                self.active.remove(c)
        if done and self.n:
            self._rates()
        if self.n:
            self._plan(now)


class Scoreboard:
    """Dependency counters of one pipe (see the module docstring for states)."""

    __slots__ = ("remaining", "last_signal_ns")

    def __init__(self, thresholds):
        self.remaining = [int(t) for t in thresholds]
        self.last_signal_ns = [0.0] * len(self.remaining)

    def signal(self, dep: int, t_ns: float) -> bool:
        """Record a signal landing at ``t_ns``; True when it completes the counter."""
        left = self.remaining[dep] - 1
        if left < 0:
            raise ProtocolError(f"scoreboard counter {dep} signalled after it reached zero")
        self.remaining[dep] = left
        if t_ns > self.last_signal_ns[dep]:
            self.last_signal_ns[dep] = t_ns
        return left == 0


class WorkQueue:
    """Ready consumer tile ids of one pipe (see the module docstring for semantics)."""

    __slots__ = ("capacity", "head", "tail", "tile", "visible_ns", "waiting")

    def __init__(self, capacity: int):
        self.capacity = capacity
        self.head = 0
        self.tail = 0
        self.tile = [-1] * capacity
        self.visible_ns = [float("inf")] * capacity
        self.waiting: dict = {}

    def reserve(self, tile: int, visible_ns: float) -> int:
        """Producer side: take the tail slot for ``tile``, published at ``visible_ns``."""
        slot = self.tail
        if slot >= self.capacity:
            raise ProtocolError(f"work-queue overflow: slot {slot} >= capacity {self.capacity}")
        self.tail = slot + 1
        self.tile[slot] = tile
        self.visible_ns[slot] = visible_ns
        return slot

    def claim(self) -> int:
        """Consumer side: the next head index, or -1 when every slot of this epoch is claimed."""
        h = self.head
        if h >= self.capacity:
            return -1
        self.head = h + 1
        return h
