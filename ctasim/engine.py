"""The discrete-event engine: runs a :class:`~ctasim.plan.Plan` on SimPy and returns a trace.

What is simulated
    * Operations start when everything they wait on has finished, plus the launch delay of each wait.
    * A kernel's CTAs start ``Kernel.fixed_ns`` after it begins (per-launch fill and drain), then occupy CTA slots (``sm_count * cta_slots_per_sm``).  A persistent kernel runs one
      CTA per slot, each looping over tiles; a non-persistent grid starts a new CTA (paying
      ``cta_launch_ns``) in a slot as soon as the slot frees, in blockIdx order.
    * A tile holds its slot for the tile time.  A producer tile whose output lives on another GPU
      reserves the link (:class:`~ctasim.machine.Fabric`) for its store; the store lasts until the
      link delivers it, and at least ``bytes / sm_remote_store_gbps`` plus the link latency (one SM
      cannot keep more stores in flight); the slot is held for the part of the store that the next
      tile's mainloop does not hide (``1 - epilogue_store_overlap``), plus ``signal_hold_ns`` of the
      kernel's config (a CTA that stays resident for its fence and counter atomic).  With
      ``link_sharing = "fair"`` the store enters the link's :class:`~ctasim.machine.FairLink` at compute
      end, capped at the per-SM rate, and the tile's signal is decided when its last byte has left.
    * Wave slowdown (``KernelConfig.wave_slowdown``): the tile at grid position i (a queue kernel: its slot)
      takes ``1 + s * min(1, (i // slots) / wave_slowdown_waves)`` times the tile time.
    * Tile-time variation (``KernelConfig.tile_cv``): every tile's time (wave slowdown included, a
      non-persistent grid's CTA launch not) is multiplied by ``1 + tile_cv * N(0, 1)``, clipped to [0.5, 1.5],
      drawn before the global ``jitter`` (which multiplies on top). Every kernel draws from a stream of its own,
      seeded by ``(seed, kernel id)`` (:func:`kernel_rng`): changing one operation's parameters or adding
      operations leaves every other kernel's draws where they were.
    * After the store has arrived: system-scope fence, remote atomic on the scoreboard counter (the kernel
      config's ``signal_ns`` when set: the two as measured under load).  The
      signal that completes a counter pushes its consumer tiles into the work-queue: atomic result back
      to the producer, slot reservation round trip, slot write and release-publish.
    * A consumer CTA claims the next head index and waits for that slot to be published; it sees the
      slot half a poll interval after it became visible (the mean delay of a polling loop).
    * Clock regime (``Hardware.clock_onset_ns``, ``clock_sustained_slowdown``; :func:`clock_steps`): a kernel
      tile that starts at or after the onset (``regime = "burst"``: every GPU rested at time 0; ``"sustained"``:
      onset 0) takes ``clock_sustained_slowdown`` times its time (the CTA launch included).  Where the profile holds
      a clock curve (``clock_curve_ns``, ``clock_curve_factor``: measured trajectories averaged), a burst tile
      takes the curve's factor at its start time instead: a step function of the run's time, the same on every GPU.
    * The chain kernel (``Kernel.source = "chain"``, intra-GPU CTA-pipelining): persistent CTAs take the tiles of
      every layer by tickets in the plan's topological order, the next ticket when the current tile starts; a
      tile of layer l > 0 waits until its row-block of layer l - 1 is complete (seen half a poll interval
      later); each tile holds its CTA ``chain_signal_ns`` after its compute (stores complete, GPU-scope release).
      A ring placement runs one per GPU on shared counters; a tile whose output feeds the next GPU stores it at the
      per-SM store rate and signals there (the link's sharing left out for these stores).
    * Copy-engine transfers use the fabric at copy-engine rate; collectives and memory passes take the
      time their cost function gives.

Simultaneous events
    SimPy orders events by (time, priority, insertion).  Within one nanosecond, everything is processed
    in the order it was scheduled.  A producer tile's store time and signal time are decided when the tile
    *acquires its slot* (its compute time is known then): the link is reserved in acquire order, which is
    the order stores are issued when tile times are equal (with ``jitter`` a tile that started later but
    finished earlier queues behind the earlier one -- a model decision), and a counter's completion is
    the latest of its signals, so the order in which two tiles finishing at the same instant are
    processed cannot change whether or when a counter completes.  Under ``link_sharing = "fair"`` a
    store's end depends on the stores issued after it, so it is decided when the store ends (stores join
    the link in compute-end order), and so is its signal.

How it runs
    Operations are SimPy processes.  A kernel's CTA slots are generators driven from the run's own calendar
    (:class:`_Lane`), not a process each: its entries are keyed like SimPy's ``(time, priority, id)`` with ids
    from SimPy's counter, taken where the process version scheduled the same step, and merged into SimPy's
    queue through one proxy event, so simultaneous events run in the order they always did (a test compares
    the traces of small plans with ``tests/data/engine-reference.trace.npz``, written by the process version,
    float for float).  Waiting CTAs are woken in place when nothing else is due at that instant; fair links
    schedule through the calendar too; tile records are packed bytes, turned into the trace's columns once.
    Relies on SimPy 4's ``Environment`` internals (``_queue``, ``_eid``, ``_now``).

Left out
    SM contention between two kernels on one GPU (plans keep one kernel per GPU at a time; the chain kernel is
    one kernel), L2 and HBM
    contention beyond the per-tile costs, clock variation (see ``jitter``), the clock's recovery while a
    GPU idles and any dependence of the cap's onset on the kernel's power (one onset or one curve per machine), the
    cap's effect on memory-bound operations (copies, collectives, memory passes), host-side launch
    throughput, and the protocol's memory-ordering details (modelled separately in
    :mod:`ctasim.protocol`).
"""

from __future__ import annotations

import gc
import math
import struct
from bisect import bisect_right
from collections import deque
from heapq import heappop, heappush

import numpy as np
import simpy

from ctasim import costs
from ctasim.machine import Fabric, ProtocolError, Scoreboard, WorkQueue
from ctasim.plan import Collective, Kernel, MemoryPass, Plan, Transfer
from ctasim.spec import Hardware
from ctasim.trace import EVENT_COLUMNS, EVENT_KINDS, TILE_COLUMNS, TIME_COLUMNS, Trace, records_array

__all__ = ["simulate", "SimulationError", "push_ns", "kernel_rng"]

ZERO, PUSH = (EVENT_KINDS.index(k) for k in ("zero", "push"))
FLUSH_RECORDS = 1 << 16
"""Tile records gathered (packed bytes) before they become a numpy block with the trace's columns."""
_RECORD = struct.Struct("<qqqqddddddq")
"""A tile record as the engine writes it: kernel (op id), cta, sm, tile id, the six TIME_COLUMNS, slot."""
_RECORD_DTYPE = np.dtype([("kernel", "<i8"), ("cta", "<i8"), ("sm", "<i8"), ("tile", "<i8")]
                         + [(c, "<f8") for c in TIME_COLUMNS] + [("slot", "<i8")])


URGENT, NORMAL = 0, 1
"""SimPy's event priorities (``simpy.events.URGENT`` / ``NORMAL``): a process starts before the ordinary events
of its instant."""


class _Lane:
    """The run's own calendar of CTA steps and protocol calls, merged into SimPy's event queue in exact order.

    SimPy processes its queue in ``(time, priority, id)`` order, ``id`` counting every scheduling.  Each entry
    pushed here takes its ``id`` from the same counter at the moment the SimPy version of the engine scheduled
    the same step (a ``Timeout``, an ``Event.succeed``), so the merged order is the one SimPy would follow.
    Entries are kept as a heap of distinct times, each with its ``(id, function)`` or, from the second one on, a
    FIFO of them in id order (ids grow, so appending keeps it sorted): cheaper than SimPy's heap of tuples when
    many CTAs finish at one instant.

    While the lane is idle, one *proxy* event sits in SimPy's queue with the key of the lane's first entry.  When
    SimPy processes it, the lane runs its entries, setting the clock as SimPy would, for as long as each comes
    before SimPy's next event, then schedules a proxy for the next one.  A push that comes before the pending
    proxy's key (from outside the lane's own run) schedules a new proxy; the old one is left in the queue and does
    nothing.  Every entry is NORMAL priority.
    """

    __slots__ = ("env", "queue", "eid", "times", "buckets", "running", "proxy", "proxy_key")

    def __init__(self, env: simpy.Environment):
        if not isinstance(getattr(env, "_queue", None), list) or not hasattr(env, "_eid"):
            raise RuntimeError(f"ctasim's engine needs SimPy 4's Environment (its _queue and _eid); simpy "
                               f"{getattr(simpy, '__version__', '?')} has none")
        self.env, self.queue, self.eid = env, env._queue, env._eid
        self.times: list[float] = []
        self.buckets: dict[float, deque] = {}
        self.running = False
        self.proxy = None
        self.proxy_key = None

    def push(self, t: float, fn) -> None:
        """Call ``fn()`` at ``t`` (>= now), after everything already scheduled for ``t``."""
        eid = next(self.eid)
        buckets = self.buckets
        b = buckets.get(t)
        if b is None:  # a lone entry is kept as it is; a second one at the same time makes a FIFO
            buckets[t] = (eid, fn)
            heappush(self.times, t)
        elif b.__class__ is tuple:
            buckets[t] = deque((b, (eid, fn)))
        else:
            b.append((eid, fn))
        if not self.running and (self.proxy is None or (t, eid) < self.proxy_key):
            self._schedule(t, eid)

    def due(self, now: float) -> bool:
        """Whether an entry is due at ``now`` (here or in SimPy's queue)."""
        times, q = self.times, self.queue
        if times and times[0] <= now:
            b = self.buckets[times[0]]
            if b.__class__ is tuple or b:  # (the FIFO running now may be empty)
                return True
        return bool(q and q[0][0] <= now)

    def _schedule(self, t: float, eid: int) -> None:
        self.proxy = p = _Proxy(self)
        self.proxy_key = (t, eid)
        heappush(self.queue, (t, NORMAL, eid, p))

    def run(self, proxy) -> None:
        if proxy is not self.proxy:  # stale: a later proxy replaced it
            return
        self.proxy = None
        self.running = True
        env, q, times, buckets = self.env, self.queue, self.times, self.buckets
        try:
            while times:
                t = times[0]
                b = buckets[t]
                if b.__class__ is tuple:  # a lone entry
                    eid, fn = b
                    if q:  # SimPy's next event first, if it comes before this entry
                        h = q[0]
                        if h[0] < t or (h[0] == t and (h[1] < NORMAL or h[2] < eid)):
                            self._schedule(t, eid)
                            return
                    del buckets[t]
                    heappop(times)
                    env._now = t
                    try:
                        fn()
                    except StopIteration:  # a CTA's generator ended
                        pass
                    continue
                env._now = t
                while b:  # a FIFO, which grows while it runs when its entries schedule more for this instant
                    eid, fn = b[0]
                    if q:
                        h = q[0]
                        if h[0] < t or (h[0] == t and (h[1] < NORMAL or h[2] < eid)):
                            self._schedule(t, eid)
                            return
                    b.popleft()
                    try:
                        fn()
                    except StopIteration:
                        pass
                del buckets[t]
                heappop(times)
        finally:
            self.running = False


class _Proxy:
    """The lane's entry in SimPy's queue (see :class:`_Lane`)."""

    __slots__ = ("callbacks",)
    _ok = True  # what Environment.step reads of a processed event

    def __init__(self, lane: _Lane):
        self.callbacks = [lane.run]

    def __lt__(self, other) -> bool:  # a stale proxy can share its key with a live one: either order is fine
        return False


class _Cta:
    """One CTA slot's generator, driven from the run's :class:`_Lane` (cheaper than a ``simpy.Process``).

    The generator pushes its next step into the lane (``lane.push(t, cta.next)``) and yields, or registers the
    CTA with what it waits on, which calls :meth:`wake`, or appends :meth:`step` to a SimPy event's callbacks
    (a fair link's); it yields nothing.  Steps are pushed exactly where the process version of the engine
    created its ``Timeout`` or succeeded its ``Event``, so simultaneous events run in the same order (see
    'Simultaneous events').  The start is an URGENT entry in SimPy's queue, like a process's ``Initialize``.
    A CTA whose generator ends leaves nothing behind (a process would schedule its own end, which no one
    waits on).
    """

    __slots__ = ("callbacks", "next", "lane", "env")
    _ok = True  # what Environment.step reads of a processed event

    def __init__(self, env: simpy.Environment, lane: _Lane):
        self.env, self.lane = env, lane
        self.callbacks = None

    def start(self, gen) -> None:
        self.next = gen.__next__
        self.callbacks = [self.step]
        heappush(self.env._queue, (self.env._now, URGENT, next(self.env._eid), self))

    def step(self, _event=None) -> None:
        """The next step, as a SimPy callback."""
        try:
            self.next()
        except StopIteration:
            pass

    def wake(self) -> None:
        """Run the next step now, after the events already due (what ``Event.succeed`` does)."""
        self.lane.push(self.env._now, self.next)


def _wake_all(lane: _Lane, ctas: list) -> None:
    """Wake waiting CTAs, in order, from an event's callback.

    When no other event is due at this instant, each runs its next step here and now: exactly what would
    happen if each were woken by :meth:`_Cta.wake`, since their wake-ups would be the next events processed,
    one after another, and a CTA's step schedules nothing that would run before the next one's (nothing
    URGENT, nothing earlier than now).  Otherwise they are woken through the lane.
    """
    if lane.due(lane.env._now):
        for cta in ctas:
            cta.wake()
    else:
        for cta in ctas:
            cta.step()


class SimulationError(RuntimeError):
    """The plan could not run to completion (a deadlock: operations left waiting)."""


def push_ns(hw: Hardware) -> float:
    """Counter-complete to queue-slot-visible: atomic result back, slot reservation round trip, publish."""
    return hw.remote_atomic_ns + 2.0 * hw.remote_atomic_ns + hw.fence_sys_ns + hw.link_latency_ns


def clock_steps(hw: Hardware, regime: str) -> tuple[list[float], list[float]]:
    """The clock regime as steps: (times, factors), a tile starting at time t >= times[j] (the last such j) taking
    factors[j] times its time, 1 before times[0]; ([], []) when nothing slows.  Sustained: one step at 0 to
    ``clock_sustained_slowdown``; burst: the profile's clock curve where it has one, else one step at
    ``clock_onset_ns``.  Leading steps of factor 1 are dropped (``times[0]`` is where the clock first costs)."""
    if regime not in ("burst", "sustained"):
        raise ValueError(f"regime must be 'burst' or 'sustained', got {regime!r}")
    if regime == "sustained":
        steps = [(0.0, float(hw.clock_sustained_slowdown))]
    elif hw.clock_curve_ns:
        steps = list(zip(map(float, hw.clock_curve_ns), map(float, hw.clock_curve_factor)))
    else:
        steps = [(float(hw.clock_onset_ns), float(hw.clock_sustained_slowdown))]
    while steps and (steps[0][1] == 1.0 or steps[0][0] == math.inf):
        steps.pop(0)
    return [t for t, _ in steps], [f for _, f in steps]


def step_factor(times: list[float], factors: list[float], t: float) -> float:
    """The factor of steps (:func:`clock_steps`) at time ``t``: the last step at or before it, 1 before the first."""
    j = bisect_right(times, t)
    return factors[j - 1] if j else 1.0


def clock_factor(hw: Hardware, regime: str, t: float) -> float:
    """The tile-time factor of a tile starting at busy time ``t`` (ns) under :func:`clock_steps`."""
    return step_factor(*clock_steps(hw, regime), t)


class _Run:
    """State of one simulation (one plan on one machine)."""

    def __init__(self, plan: Plan, hw: Hardware, seed: int, jitter: float, closed_form: bool = True,
                 regime: str = "burst"):
        self.plan, self.hw = plan, hw
        # A tile starting at t >= slow_from takes clock(t) times longer (the power-capped clock); from flat_from on
        # the factor is `slow`; slow_from = inf: no cap.
        self.clock_t, self.clock_f = clock_steps(hw, regime)
        self.slow_from = self.clock_t[0] if self.clock_t else math.inf
        self.flat_from = self.clock_t[-1] if self.clock_t else math.inf
        self.slow = self.clock_f[-1] if self.clock_f else 1.0
        self.env = simpy.Environment()
        self.lane = _Lane(self.env)
        self.fabric = Fabric(hw, self.env, self.lane.push)
        if self.fabric.fair and hw.epilogue_store_overlap != 0.0:
            raise ValueError("link_sharing = 'fair' needs epilogue_store_overlap = 0 (see Hardware.link_sharing)")
        self.seed = seed
        self.jitter = jitter
        self.done = [self.env.event() for _ in plan.ops]
        self.t_done = [math.nan] * len(plan.ops)
        self.t_begin = [math.nan] * len(plan.ops)
        self.records = bytearray()  # tile records (_RECORD), packed as they are made
        # Records already packed into arrays: closed-form kernels, and tuples flushed every FLUSH_RECORDS
        # so that a million-CTA run does not hold a million Python tuples.
        self.blocks: list[np.ndarray] = []
        self.event_blocks: list[np.ndarray] = []
        self.closed_form = closed_form
        self.events: list[tuple] = []
        self.boards = {p.id: Scoreboard(p.threshold) for p in plan.pipes}
        self.queues = {p.id: WorkQueue(p.capacity) for p in plan.pipes}
        self.dep_visible = {p.id: [math.inf] * p.deps for p in plan.pipes}
        self.dep_waiters = {p.id: {} for p in plan.pipes}
        self.push_ns = push_ns(hw)
        self.half_poll = 0.5 * hw.poll_ns
        # Plain lists of the plan's arrays: indexing them is several times cheaper than numpy scalars.
        self.orders = {k.id: k.order.tolist() for k in plan.kernels()}
        self.lists = {p.id: (p.prod_dep_ptr.tolist(), p.prod_dep_idx.tolist(),
                             (p.dep_tile_ptr.tolist(), p.dep_tile_idx.tolist()), p.consumer_dep.tolist())
                      for p in plan.pipes}
        self.consumer_source = {p.id: plan.ops[p.consumer].source for p in plan.pipes}
        # Every pipe's dep_tile_idx in one array, starting at dep_tiles_at[pipe] (see flush_records).
        self.dep_tiles = np.concatenate([np.zeros(0, dtype=np.int64)] + [p.dep_tile_idx for p in plan.pipes])
        self.dep_tiles_at = np.cumsum([0] + [len(p.dep_tile_idx) for p in plan.pipes])
        # A pipe whose producer tiles each decrement one counter: that counter by tile (else None).
        self.one_dep = {p.id: p.prod_dep_idx.tolist() if (np.diff(p.prod_dep_ptr) == 1).all() else None
                        for p in plan.pipes}
        # By kernel id, what a tile record's kernel and tile id give: gpu, first layer, tiles per layer, tiles_n,
        # row offset (see flush_records).
        cols = np.zeros((6, len(plan.ops)), dtype=np.int64)
        for k in plan.kernels():
            cols[:, k.id] = (k.gpu, k.layer, max(1, k.tiles_m * k.tiles_n), max(1, k.tiles_n), k.row_offset,
                             k.chain_stride)
        self.kernel_columns = tuple(cols)
        # The chain kernels' row-block counters (layer * tiles_m + row-block), one set for the run: a ring placement's
        # kernels wait on each other's (Kernel.chain_stride). Counts, latest signal, visible time, waiting CTAs.
        chains = [k for k in plan.kernels() if k.source == "chain"]
        n = max((k.tiles_m * (k.layer + (k.chain_layers - 1) * k.chain_stride + 1) for k in chains), default=0)
        self.chain_count, self.chain_last = [0] * n, [0.0] * n
        self.chain_visible, self.chain_waiters = [math.inf] * n, {}
        # Chain kernels on shares of one device (Hardware.device_shares): the latest compute end of any tile each has
        # issued; a kernel is computing while that is ahead of now.
        self.share_busy = {k.id: -math.inf for k in chains if len(k.tile_scale_by_active)}

    # ---------------------------------------------------------------- operations
    def op_process(self, op):
        env = self.env
        start = op.start_ns
        for dep, delay in op.deps:
            yield self.done[dep]
            start = max(start, self.t_done[dep] + delay)
        if start > env.now:
            yield env.timeout(start - env.now)
        self.t_begin[op.id] = env.now
        if isinstance(op, Kernel):
            yield from self.kernel(op)
        elif isinstance(op, Transfer):
            if self.fabric.fair:
                yield self.fabric.link(op.src, op.dst).submit(op.nbytes / self.hw.copy_engine_gbps)
                yield env.timeout(self.hw.link_latency_ns)
            else:
                _, arrival = self.fabric.reserve(env.now, op.src, op.dst, op.nbytes, self.hw.copy_engine_gbps)
                yield env.timeout(arrival - env.now)
        elif isinstance(op, (Collective, MemoryPass)):
            yield env.timeout(op.ns)
        else:  # pragma: no cover - programming error
            raise TypeError(f"unknown op {op!r}")
        self.t_done[op.id] = env.now
        self.done[op.id].succeed()

    def kernel(self, k: Kernel):
        if k.fixed_ns > 0:  # grid start and first-wave fill: no CTA holds a tile yet
            yield self.env.timeout(k.fixed_ns)
        n_workers = min(k.tiles, k.slots)
        launch = 0.0 if k.persistent else k.cta_launch_ns
        by_slot = k.source == "queue" and len(k.tile_times) > 0  # a queue kernel's memory-model times: per slot
        durations = (np.asarray(k.tile_times, dtype=float) + launch if len(k.tile_times) and not by_slot
                     else np.full(k.tiles, launch if by_slot else k.tile_ns + launch))  # tile_times: per entry of order
        extra = None  # per grid position: tile time added by the wave slowdown (KernelConfig.wave_slowdown)
        if k.wave_slowdown > 0:
            wave = np.arange(k.tiles) // n_workers
            extra = k.tile_ns * k.wave_slowdown * np.minimum(1.0, wave / k.wave_slowdown_waves)
            if k.source != "queue":  # durations are indexed by grid position; a queue kernel's by tile id
                durations += extra
                extra = None
        if by_slot:  # the tile popped from slot s takes tile_times[s] (its wave's time), plus any wave slowdown
            extra = np.asarray(k.tile_times, dtype=float) + (extra if extra is not None else 0.0)
        extra_mult = None  # a queue kernel's tile_cv (and, for by_slot, jitter) multiplier of ``extra``, by tile id
        cv = float(k.tile_cv)  # KernelConfig.tile_cv, copied onto the plan's kernel
        rng = kernel_rng(self.seed, k.id) if cv > 0 or self.jitter > 0 else None
        if cv > 0:  # KernelConfig.tile_cv: the tile (not the CTA launch) varies within a wave
            mult = np.clip(1.0 + cv * rng.standard_normal(k.tiles), 0.5, 1.5)
            durations = (durations - launch) * mult + launch
            if extra is not None:
                extra_mult = mult.tolist()
        if self.jitter > 0:
            jm = np.clip(1.0 + self.jitter * rng.standard_normal(k.tiles), 0.5, 1.5)
            durations *= jm
            if by_slot:  # the tile's time is in ``extra`` (by slot); its jitter goes with its tile id, as tile_cv's
                extra_mult = (jm if extra_mult is None else np.asarray(extra_mult) * jm).tolist()
        if k.source == "chain":
            yield from self.chain_kernel(k, n_workers, durations.tolist())
            return
        if self.closed_form and k.source == "static" and k.outbound < 0:
            end = self.closed_form_kernel(k, n_workers, durations)
            yield self.env.timeout(end - self.env.now)
            return
        state = {"next": 0, "live": n_workers, "durations": durations.tolist(),
                 "extra": extra.tolist() if extra is not None else None, "extra_mult": extra_mult}
        finished = self.env.event()
        for w in range(n_workers):
            cta = _Cta(self.env, self.lane)
            cta.start(self.worker(k, w, n_workers, state, finished, cta))
        yield finished

    def closed_form_kernel(self, k: Kernel, n_workers: int, durations: np.ndarray) -> float:
        """Tile times of a kernel that neither waits on nor signals anything, without per-tile events.

        Such a kernel's CTAs interact with nothing but their own slot, so their schedule follows from the
        durations alone: a persistent CTA ``w`` runs tiles ``w, w+W, ...`` back to back; a non-persistent
        grid starts CTA ``i`` in the first slot to free up (list scheduling).  The result is the same as
        the per-tile event path (a test holds them equal); returns the kernel's end time.
        """
        t0, n = self.env.now, k.tiles
        slow_from, clock = self.slow_from, self.clock
        if t0 >= self.flat_from:  # the whole kernel at the last step
            durations = durations * self.slow
            slow_from = math.inf
        if k.persistent:
            rounds = -(-n // n_workers)
            d = np.zeros(rounds * n_workers)
            d[:n] = durations
            d = d.reshape(rounds, n_workers)
            end = t0 + np.cumsum(d, axis=0)
            if end.max() > slow_from:  # the kernel reaches a step: round by round (exact at the boundaries)
                ct, cf = np.asarray(self.clock_t), np.asarray([1.0] + self.clock_f)
                t = np.full(n_workers, t0)
                for r in range(rounds):
                    d[r] = d[r] * cf[np.searchsorted(ct, t, side="right")]
                    t = t + d[r]
                    end[r] = t
            end = end.ravel()[:n]
            durations = d.ravel()[:n]
            start = end - durations
            cta = np.arange(n) % n_workers
        else:
            import heapq

            free = [(t0, w) for w in range(n_workers)]
            start, slot_of = np.empty(n), np.empty(n, dtype=np.int64)
            dl = durations.tolist()
            for i in range(n):
                t, w = heapq.heappop(free)
                start[i], slot_of[i] = t, w
                if t >= slow_from:
                    dl[i] *= clock(t)
                heapq.heappush(free, (t + dl[i], w))
            durations = np.asarray(dl)
            end = start + durations
            cta = np.arange(n)
            sm_slot = slot_of
        tiles = np.asarray(k.order)[:n]
        sm = (cta if k.persistent else sm_slot) % self.hw.sm_count
        block = np.empty(n, dtype=_RECORD_DTYPE)  # records as the CTAs would write them
        block["kernel"], block["cta"], block["sm"], block["tile"], block["slot"] = k.id, cta, sm, tiles, -1
        for c, v in zip(TIME_COLUMNS, (start, start, start, end, end, end)):
            block[c] = v
        self.blocks.append(block)
        return float(end.max())

    def clock(self, t: float) -> float:
        """The tile-time factor of a tile starting at ``t`` (1 before ``slow_from``, which the callers test first)."""
        if t >= self.flat_from:  # past the last step: most tiles of a long run
            return self.slow
        return step_factor(self.clock_t, self.clock_f, t)

    # ---------------------------------------------------------------- one CTA slot
    def worker(self, k: Kernel, w: int, n_workers: int, state: dict, finished, me: _Cta):
        """One CTA slot of kernel ``k``: acquire a tile, compute, store, signal; repeat until no tile is left.

        A generator driven by ``me`` (:class:`_Cta`): it pushes its next step into the run's calendar and yields."""
        env, hw = self.env, self.hw
        push, step = self.lane.push, me.next
        records, pack = self.records, _RECORD.pack
        flush_at = FLUSH_RECORDS * _RECORD.size
        sm = w % hw.sm_count
        order = self.orders[k.id]
        durations = state["durations"]
        extra = state["extra"]  # a queue kernel's wave slowdown, by slot (its grid position)
        extra_mult = state["extra_mult"]  # its tile_cv multiplier, by tile id (None: 1)
        tiles, kid = k.tiles, k.id
        slow_from, clock = self.slow_from, self.clock
        source, persistent = k.source, k.persistent
        from_queue, waits = source == "queue", source == "wait"
        inbound = self.plan.pipes[k.inbound] if k.inbound >= 0 else None
        outbound = self.plan.pipes[k.outbound] if k.outbound >= 0 else None
        if inbound is not None:
            queue = self.queues[inbound.id]
            waiters = self.dep_waiters[inbound.id]
            dep_visible = self.dep_visible[inbound.id]
            consumer_dep = self.lists[inbound.id][3]
            capacity = queue.capacity
            q_tile, q_visible = queue.tile, queue.visible_ns
        fair = False
        if outbound is not None:
            ports = self.fabric.channel(k.gpu, outbound.dst_gpu)
            store_bytes, link_gbps = outbound.store_bytes, hw.link_gbps
            # Fabric.reserve_on is inlined below for the one port of a direct link or the two of a switch.
            port, port2 = ports[0], (ports[1] if len(ports) == 2 else None)
            if len(ports) > 2:  # pragma: no cover - Fabric.channel gives one or two ports
                raise ValueError(f"unexpected channel with {len(ports)} ports")
            link_ns, link_latency = store_bytes / link_gbps, hw.link_latency_ns
            exposed = 1.0 - hw.epilogue_store_overlap
            # The per-SM limit is shared by the SM's resident CTAs (e.g. a pingpong kernel's two tiles).
            sm_store_ns = costs.remote_store_ns(store_bytes, hw, k.slots_per_sm)
            sig_delay = k.signal_ns if k.signal_ns > 0 else hw.fence_sys_ns + hw.remote_atomic_ns
            signal_hold = k.signal_hold_ns
            signal = self.signal
            # Scoreboard.signal inlined for the common case of one counter per producer tile.
            board = self.boards[outbound.id]
            remaining, last_sig = board.remaining, board.last_signal_ns
            one_dep = self.one_dep[outbound.id]
            complete = self.complete
            fair = self.fabric.fair
            if fair:  # the store's rate cap, as a fraction of the channel (see machine.FairLink)
                submit = self.fabric.link(k.gpu, outbound.dst_gpu).submit
                cap = min(1.0, hw.sm_remote_store_gbps / k.slots_per_sm / link_gbps)
        i = w  # grid position (persistent: w, w + W, ...)
        cta = w
        while True:
            t_start = env._now
            slot = -1
            # ---- acquire a tile
            if from_queue:
                slot = queue.head  # WorkQueue.claim, inlined
                if slot >= capacity:
                    break
                queue.head = slot + 1
                vis = q_visible[slot]
                if vis > t_start:  # woken half a poll interval after the slot is published
                    waiters[slot] = me
                    yield
                    vis = q_visible[slot]
                tile = i = q_tile[slot]
                t_ready = vis
                t_acquire = env._now
                if not persistent:
                    cta = slot
            else:
                if not persistent:
                    i = state["next"]
                    state["next"] = i + 1
                    cta = i
                if i >= tiles:
                    break
                tile = order[i]
                t_ready = t_start
                if waits:
                    dep = consumer_dep[tile]
                    vis = dep_visible[dep]
                    if vis > t_start:  # woken half a poll interval after the counter completes
                        waiters.setdefault(dep, []).append(me)
                        yield
                        vis = dep_visible[dep]
                    t_ready = vis
                    t_acquire = env._now
                else:
                    t_acquire = t_start
            # ---- compute and store
            dur = durations[i]
            if extra is not None:
                dur += extra[slot] if extra_mult is None else extra[slot] * extra_mult[i]
            if t_acquire >= slow_from:
                dur *= clock(t_acquire)
            t_ce = t_acquire + dur
            if outbound is None:
                t_store = t_sig = t_ce
                t_next = t_ce
            elif not fair:
                begin = port[0] if port[0] > t_ce else t_ce
                if port2 is None:
                    port[0] = begin + link_ns
                else:
                    if port2[0] > begin:
                        begin = port2[0]
                    port[0] = port2[0] = begin + link_ns
                arrival = begin + link_ns + link_latency
                if arrival < t_ce + sm_store_ns:
                    arrival = t_ce + sm_store_ns
                t_store = arrival
                t_sig = arrival + sig_delay
                if one_dep is None:
                    signal(outbound, tile, t_sig)
                else:
                    dep = one_dep[tile]
                    left = remaining[dep] - 1
                    if left < 0:
                        signal(outbound, tile, t_sig)  # raises ProtocolError
                    remaining[dep] = left
                    if t_sig > last_sig[dep]:
                        last_sig[dep] = t_sig
                    if left == 0:
                        complete(outbound, dep, last_sig[dep])
                t_next = t_acquire + (dur + (arrival - t_ce) * exposed + signal_hold)
            else:
                push(t_ce, step)
                yield
                submit(link_ns, cap, step)  # step runs when its last byte has left
                yield
                now = env._now
                arrival = t_store = now + link_latency
                t_sig = arrival + sig_delay
                signal(outbound, tile, t_sig)
                t_next = now + (link_latency + signal_hold)  # exposed = 1 (Hardware validation)
            push(t_next, step)
            yield
            records += pack(kid, cta, sm, tile, t_start, t_acquire, t_ready, t_ce, t_store, t_sig, slot)
            if len(records) >= flush_at:
                self.flush_records()
            i += n_workers
        state["live"] -= 1
        if state["live"] == 0:
            finished.succeed()

    def chain_kernel(self, k: Kernel, n_workers: int, durations: list[float]):
        """The chain kernel (``Kernel.source = "chain"``): persistent CTAs take the tiles of every layer in
        ``k.order`` by tickets; a tile of layer l > 0 waits for row-block ``r`` of layer l - 1 (all its column
        tiles signalled, seen half a poll interval later), whichever of the plan's chain kernels runs layer l - 1.

        A CTA takes its first ticket when the kernel's CTAs start -- CTA ``w`` ticket ``w``, every first ticket before
        any second one, as the measured traces show -- and each further one when its current tile starts computing
        (the scheduler warp runs one tile ahead); the wait for the inputs overlaps that tile.
        A tile whose output stays on this GPU holds its CTA ``chain_signal_ns`` after its compute (stores complete,
        then the release) and signals its row-block counter then. A tile whose layer feeds another GPU
        (``Kernel.chain_remote``, a ring placement) stores there: its store arrives ``chain_store_ns`` after its
        compute, its counter update ``chain_remote_signal_ns`` later, and it holds its CTA until
        ``chain_remote_hold_ns`` after the arrival (the link's sharing is left out: the per-SM store rate binds
        first). Durations are indexed by ticket. ``Kernel.chain_static``: CTA ``w`` runs order entries
        ``w, w + W, ...`` instead (the static design; all CTAs resident). On a share of one device
        (``Kernel.tile_scale_by_active``, ``Hardware.device_shares``) a tile's time is its entry's in the table of the
        number of the plan's shared kernels computing as it starts (a kernel computes until the latest compute end
        of the tiles it has issued): ``ctasim.costs.active_share``."""
        env, lane = self.env, self.lane
        push = lane.push
        per = k.tiles_m * k.tiles_n
        tiles_n, tiles_m, order = k.tiles_n, k.tiles_m, self.orders[k.id]
        stride = k.chain_stride
        # the run's counter (global layer * tiles_m + row-block) of each tile id, and the one it waits on (-1: none)
        own_of = [(k.layer + (t // per) * stride) * tiles_m + (t % per) // tiles_n for t in range(k.tiles)]
        dep_of = [c - tiles_m if c >= tiles_m else -1 for c in own_of]
        remote = list(k.chain_remote) + [False] * (k.chain_layers - len(k.chain_remote))
        remote_of = [remote[t // per] for t in range(k.tiles)]
        count, last, visible, waiters = self.chain_count, self.chain_last, self.chain_visible, self.chain_waiters
        # every CTA takes its first ticket as the grid starts (CTA w: ticket w), before any CTA takes a second one
        state = {"next": n_workers, "live": n_workers}
        finished = env.event()
        hold, half_poll = k.chain_signal_ns, self.half_poll
        store_ns, rsig, rhold = k.chain_store_ns, k.chain_remote_signal_ns, k.chain_remote_hold_ns
        slow_from, clock = self.slow_from, self.clock
        gpu, kid, sm_count, n_tiles = k.gpu, k.id, self.hw.sm_count, k.tiles
        events_append = self.events.append
        records, pack = self.records, _RECORD.pack
        flush_at = FLUSH_RECORDS * _RECORD.size
        at = self.at

        def publish(dep: int) -> None:
            ctas = waiters.pop(dep, None)
            if ctas:
                _wake_all(lane, ctas)

        static = k.chain_static
        # one share of a device: each entry's time scaled by how many shares compute as it starts (costs.active_share)
        scales = [sc.tolist() for sc in k.tile_scale_by_active] or None
        busy = self.share_busy
        others = [o for o in busy if o != kid]

        # a remote counter lives on the next GPU of the ring (layer l + 1 on GPU (l + 1) mod stride)
        remote_gpu = (gpu + 1) % stride if stride > 1 else gpu

        def signal(own: int, t_sig: float, where: int) -> None:
            count[own] += 1
            if t_sig > last[own]:
                last[own] = t_sig
            if count[own] == tiles_n:
                visible[own] = last[own]
                events_append((ZERO, -1, where, own, -1, -1, last[own], 1))
                at(last[own] + half_poll, publish, own)

        def worker(w: int, me: _Cta):
            nonlocal records  # += on the bytearray extends it in place
            step = me.next
            sm = w % sm_count
            i = w  # the first ticket (tickets) or order entry (static) of CTA w
            while i < n_tiles:
                t_start = env._now
                tile = order[i]
                t_ready = t_start
                dep = dep_of[tile]
                if dep >= 0:
                    if visible[dep] + half_poll > t_start:
                        waiters.setdefault(dep, []).append(me)
                        yield
                        t_acquire = env._now
                    else:
                        t_acquire = t_start
                    t_ready = visible[dep]
                else:
                    t_acquire = t_start
                # tickets: the scheduler warp takes the next ticket as this tile starts; static: CTA w's next entry
                if static:
                    nxt = i + n_workers
                else:
                    nxt = state["next"]
                    state["next"] = nxt + 1
                dur = durations[i] * (clock(t_acquire) if t_acquire >= slow_from else 1.0)
                if scales is not None:
                    active = 1 + sum(1 for o in others if busy[o] > t_acquire)
                    dur *= scales[min(active, len(scales)) - 1][i]
                t_ce = t_acquire + dur
                if scales is not None and t_ce > busy[kid]:
                    busy[kid] = t_ce
                if remote_of[tile]:  # stored into the next GPU's memory, signalled there: decided now, at issue
                    t_store = t_ce + store_ns
                    t_sig = t_store + rsig
                    signal(own_of[tile], t_sig, remote_gpu)
                    push(t_store + rhold, step)
                    yield
                else:
                    t_store = t_sig = t_ce + hold
                    push(t_sig, step)
                    yield
                    signal(own_of[tile], t_sig, gpu)
                records += pack(kid, w, sm, tile, t_start, t_acquire, t_ready, t_ce, t_store, t_sig, i)
                if len(records) >= flush_at:
                    self.flush_records()
                i = nxt
            state["live"] -= 1
            if state["live"] == 0:
                finished.succeed()

        for w in range(n_workers):
            cta = _Cta(env, self.lane)
            cta.start(worker(w, cta))
        yield finished

    def flush_records(self) -> None:
        """Move the tile records packed so far (``_RECORD``) and the event tuples into numpy blocks (the buffer
        and list are cleared in place)."""
        if self.records:
            self.blocks.append(np.frombuffer(self.records, dtype=_RECORD_DTYPE).copy())  # the view goes first
            del self.records[:]
        if self.events:
            # An event record is an EVENT_COLUMNS row plus a count n: n = 1, the row itself; a push record stands
            # for n pushes, slots slot.., tiles dep_tile_idx[tile..] of its pipe.
            e = records_array(self.events, len(EVENT_COLUMNS) + 1)
            n = e[:, -1].astype(np.int64)
            e = np.repeat(e[:, :-1], n, axis=0)
            k = np.arange(len(e)) - np.repeat(np.cumsum(n) - n, n)  # index within its record
            push = e[:, 0] == PUSH
            pipe, first = e[push, 1].astype(np.int64), e[push, 5].astype(np.int64)
            e[push, 4] += k[push]
            e[push, 5] = self.dep_tiles[self.dep_tiles_at[pipe] + first + k[push]]
            self.event_blocks.append(e)
            self.events.clear()

    # ---------------------------------------------------------------- protocol
    def signal(self, pipe, tile: int, t_sig: float) -> None:
        """A producer tile's signals, decided when its store is issued (see 'Simultaneous events')."""
        board = self.boards[pipe.id]
        remaining, last = board.remaining, board.last_signal_ns
        ptr, idx, _, _ = self.lists[pipe.id]
        for d in range(ptr[tile], ptr[tile + 1]):
            dep = idx[d]  # Scoreboard.signal, inlined: this runs once per producer tile
            left = remaining[dep] - 1
            if left < 0:
                raise ProtocolError(f"scoreboard counter {dep} of pipe {pipe.id} signalled after it reached zero")
            remaining[dep] = left
            if t_sig > last[dep]:
                last[dep] = t_sig
            if left == 0:
                self.complete(pipe, dep, last[dep])

    def complete(self, pipe, dep: int, t_zero: float) -> None:
        """Counter ``dep`` reached zero at ``t_zero``: push its consumer tiles (or raise its flag)."""
        if self.consumer_source[pipe.id] == "queue":
            t_vis = t_zero + pipe.ready_delay_ns + self.push_ns
            queue = self.queues[pipe.id]
            dep_tile_ptr, dep_tile_idx = self.lists[pipe.id][2]
            a, b = dep_tile_ptr[dep], dep_tile_ptr[dep + 1]
            s0, n = queue.tail, b - a  # WorkQueue.reserve, for the counter's tiles at once
            if s0 + n > queue.capacity:
                raise ProtocolError(f"work-queue overflow: slot {max(s0, queue.capacity)} >= capacity {queue.capacity}")
            queue.tail = s0 + n
            queue.tile[s0:s0 + n] = dep_tile_idx[a:b]
            queue.visible_ns[s0:s0 + n] = [t_vis] * n
            # one record for the zero and one for the n pushes (slots s0.., tiles dep_tile_idx[a:b]): flush_records
            self.events.append((ZERO, pipe.id, pipe.dst_gpu, dep, -1, -1, t_zero, 1))
            self.events.append((PUSH, pipe.id, pipe.dst_gpu, dep, s0, a, t_vis, n))
            self.at(t_vis + self.half_poll, self.publish_slots, pipe.id, range(s0, s0 + n))
        else:
            self.events.append((ZERO, pipe.id, pipe.dst_gpu, dep, -1, -1, t_zero, 1))
            t_vis = t_zero + pipe.ready_delay_ns
            self.dep_visible[pipe.id][dep] = t_vis
            self.at(t_vis + self.half_poll, self.publish_dep, pipe.id, dep)

    def at(self, t: float, fn, *args) -> None:
        """Call ``fn(*args)`` at ``t`` (or now, if ``t`` has passed)."""
        now = self.env._now
        self.lane.push(now + max(0.0, t - now), lambda: fn(*args))

    def publish_slots(self, pipe_id: int, slots: range) -> None:
        waiters = self.dep_waiters[pipe_id]
        ctas = [cta for cta in map(waiters.pop, slots, [None] * len(slots)) if cta is not None]
        if ctas:
            _wake_all(self.lane, ctas)

    def publish_dep(self, pipe_id: int, dep: int) -> None:
        ctas = self.dep_waiters[pipe_id].pop(dep, None)
        if ctas:
            _wake_all(self.lane, ctas)

    # ---------------------------------------------------------------- run
    def run(self) -> Trace:
        for op in self.plan.ops:
            self.env.process(self.op_process(op))
        self.env.run()
        stuck = [op for op in self.plan.ops if math.isnan(self.t_done[op.id])]
        if stuck:
            names = ", ".join(op.name for op in stuck[:5])
            waits = {p.id: (self.queues[p.id].head, self.queues[p.id].tail) for p in self.plan.pipes}
            raise SimulationError(
                f"deadlock in plan {self.plan.strategy}/{self.plan.case}: {len(stuck)} operation(s) never finished "
                f"({names}); work-queue (head, tail) per pipe: {waits}"
            )
        return self.trace()

    def trace(self) -> Trace:
        ops = []
        for op in self.plan.ops:
            kind = type(op).__name__.lower()
            gpu = getattr(op, "gpu", getattr(op, "src", -1))
            dst = getattr(op, "dst", -1)
            if isinstance(op, Collective):
                kind, gpu = op.kind, op.gpus[0]
            ops.append((op.id, op.name, kind, gpu, dst, float(getattr(op, "nbytes", 0.0)),
                        op.layer if isinstance(op, Kernel) else -1, self.t_begin[op.id], self.t_done[op.id]))
        self.flush_records()
        r = np.concatenate(self.blocks) if self.blocks else np.zeros(0, dtype=_RECORD_DTYPE)
        self.blocks.clear()
        # The columns that follow from a record's kernel and tile id, for all records at once.
        kid, tile = r["kernel"], r["tile"]
        gpu, layer0, per, tiles_n, row_offset, stride = (a[kid] for a in self.kernel_columns)
        layer, rb = np.divmod(tile, per)
        tile_m, tile_n = np.divmod(rb, tiles_n)
        cols = {"gpu": gpu, "kernel": kid, "layer": layer0 + layer * stride, "cta": r["cta"], "sm": r["sm"],
                "tile_m": tile_m + row_offset, "tile_n": tile_n, **{c: r[c] for c in TIME_COLUMNS}, "slot": r["slot"]}
        events = (np.concatenate(self.event_blocks) if self.event_blocks
                  else np.zeros((0, len(EVENT_COLUMNS))))
        return Trace.from_columns(cols, events, ops, source="sim",
                                  meta={"strategy": self.plan.strategy, "case": self.plan.case,
                                        "gpus": self.plan.gpus, **self.plan.params})


def kernel_rng(seed: int, kernel_id: int) -> np.random.Generator:
    """The random stream of one kernel of a run: seeded by ``(seed, kernel id)`` (numpy's SeedSequence of the
    pair), independent of every other kernel's and of the order in which kernels start."""
    if int(seed) < 0:
        raise ValueError(f"seed must be >= 0, got {seed}")
    return np.random.default_rng([int(seed), int(kernel_id)])


def simulate(plan: Plan, hw: Hardware, seed: int = 0, jitter: float = 0.0, closed_form: bool = True,
             regime: str = "burst") -> Trace:
    """Run ``plan`` on ``hw``; deterministic for a given ``seed`` (``jitter`` = relative tile-time noise).

    ``closed_form``: time kernels that neither wait nor signal without per-tile events (same result).
    ``regime``: ``burst`` (GPUs rested at time 0) or ``sustained`` (power-capped clock from the start).
    """
    if not 0.0 <= jitter < 0.5:
        raise ValueError(f"jitter must be within [0, 0.5), got {jitter}")
    if int(seed) < 0:  # refused whether or not a kernel draws noise (kernel_rng refuses it too)
        raise ValueError(f"seed must be >= 0, got {seed}")
    # The run allocates a tuple or two per tile and frees nothing cyclic: Python's cyclic collector would only
    # re-scan the growing record lists (10-30% of the run).  Off while the run lasts; the few cycles it leaves
    # (a CTA's generator and its driver) are collected afterwards.
    enabled = gc.isenabled()
    gc.disable()
    try:
        return _Run(plan, hw, seed, jitter, closed_form, regime).run()
    finally:
        if enabled:
            gc.enable()

