"""Machine entities: the NVLink fabric, scoreboards and work-queues.

What these things *are* lives here; how tiles are scheduled onto them lives in :mod:`ctasim.engine`.

Fabric (sharing model)
    A transfer of ``b`` bytes at rate ``r`` GB/s occupies its channel for ``b / r`` ns; transfers on a
    channel are served first-come-first-served in the order they are reserved, and arrive
    ``link_latency_ns`` after their last byte leaves.  ``direct`` topology: one channel per ordered GPU
    pair.  ``switch`` topology (NVSwitch): each GPU has one egress and one ingress port; a transfer
    holds the source's egress and the destination's ingress port for the same interval, starting when
    both are free.  FCFS gives the same aggregate throughput as fair (processor) sharing; it differs in
    which transfer finishes first, not in when the last one does.  Kernel stores and copy-engine copies
    share the same channels, each at its own rate.

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

from ctasim.spec import Hardware

__all__ = ["Fabric", "Scoreboard", "WorkQueue", "ProtocolError"]


class ProtocolError(RuntimeError):
    """The simulated protocol did something the protocol forbids (a model bug, never a user error)."""


class Fabric:
    """NVLink channels with first-come-first-served sharing (see the module docstring)."""

    def __init__(self, hw: Hardware):
        self.hw = hw
        self.switch = hw.topology == "switch"
        self._free: dict = {}

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
