"""An operational weak-memory model of the operations the CTA-pipelining protocol uses, at the level of PTX.

What it models
--------------
* **Locations** are tuples ``(kind, home_gpu, *index)``; ``loc[1]`` is the GPU whose memory holds it.  The
  observers of a location are taken to be the threads of its home GPU (the protocol never loads remote memory;
  remote *atomics* execute at the home memory).
* **Writes are delayed.**  Every store, bulk (TMA) store and atomic is *issued* by a thread into a pending pool
  and later *lands* in the home memory, which is the point of coherence for that location.  The scheduler chooses
  which landable write lands next (:meth:`Memory.landable`).  Each landed write gets a global timestamp ``ts``;
  the writes of a location in ``ts`` order are its coherence order.
* **What orders two writes of one thread** (write ``p`` issued before ``w``; ``w`` may not land before ``p``):
  same location (coherence); or a fence of scope ``s`` between them that *covers* the pair: ``sys`` covers every
  pair, ``gpu`` covers a pair only when both locations live on the fencing GPU, ``cta`` covers nothing another
  thread could observe.  A ``st.release`` / ``atom.release`` of scope ``s`` is a fence of scope ``s`` followed by
  the relaxed operation.  Nothing else orders writes: two remote writes without a fence land in either order.
* **Reads may be stale.**  Each thread has a *view* (per location, the oldest timestamp it may still read).  A
  load returns any landed write of the location not older than the view (the scheduler's ``pick`` chooses how
  stale; ``pick=0`` is the newest), or the thread's own latest pending write to it (store forwarding).  Reading
  a write raises the view of that location to it (read-read coherence).
* **Release / acquire synchronisation.**  A write issued after a fence carries, per fence scope, a *message
  view*: the fencing thread's view at the fence joined with the timestamps of its own writes captured by the
  fence.  An acquire load of scope ``a`` (or a relaxed load followed by a fence of scope ``a``, the PTX
  "acquire pattern") that reads such a write joins that message view into the reader's view -- if the release
  scope includes the reader's GPU and the acquire scope includes the writer's GPU.  Atomics read the latest value
  at the home memory and extend the release sequence of the write they read (their message view joins it).
* **Two proxies.**  Bulk stores (``cp.async.bulk``, TMA) are async-proxy writes: generic fences do not capture
  them.  ``cp.async.bulk.wait_group`` blocks until the thread's bulk stores are *acknowledged* (a separate
  scheduler event, which may come before or after the write lands remotely); ``fence.proxy.async`` then makes
  the acknowledged bulk stores capturable by later generic fences, and brings the async-proxy read view (used by
  bulk loads) up to the generic view.
* ``fence.sc`` additionally waits until the thread's covered writes have landed and then reads a snapshot of the
  newest timestamps of every covered location (this forbids store buffering, as fence.sc does in PTX).

What it leaves out
------------------
Timing (only orders matter), caches as such, data races on non-atomic ("weak") accesses (weak and relaxed are
the same here), ``ld.volatile``, shared memory and the source side of bulk copies, mbarriers, multicast,
IRIW-style non-multi-copy-atomicity (landing in the home memory makes a write visible to all its observers at
once, which matches a single point of coherence per location), and morally-strong / data-race rules of the PTX
model in full.  Scopes are reduced to which *GPUs* a fence covers; ``cta`` scope never orders anything another
CTA observes.
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass, field

__all__ = [
    "SCOPES",
    "ModelError",
    "Write",
    "FenceRecord",
    "Thread",
    "Memory",
    "covers",
]

SCOPES = ("cta", "gpu", "sys")
"""Fence / release / acquire scopes, weakest first."""

_SCOPE_RANK = {s: i for i, s in enumerate(SCOPES)}


class ModelError(RuntimeError):
    """A program asked the model for something it cannot do (a bug in the program, not a protocol violation)."""


def covers(scope: str, fencer_gpu: int, home_a: int, home_b: int) -> bool:
    """Does a fence of ``scope`` on ``fencer_gpu`` order a write to ``home_a`` before a write to ``home_b``?

    The observers of a location are the threads of its home GPU, so the fence's scope must include both homes.
    """
    if scope == "sys":
        return True
    if scope == "gpu":
        return home_a == fencer_gpu and home_b == fencer_gpu
    return False


@dataclass(eq=False, slots=True)
class FenceRecord:
    """What a fence captured: the thread's view and the writes ordered before it (in program order)."""

    scope: str
    view: dict
    writes: tuple


@dataclass(eq=False, slots=True)
class Write:
    """One issued write (store, bulk store or atomic read-modify-write).

    States: *pending* (issued, ``ts is None``) -> *landed* (``ts`` set, appended to the location's coherence
    order).  Bulk stores also go from un-acknowledged to *acked* (``acked``), independently of landing.
    """

    wid: int
    thread: "Thread | None"  # None: the initial value of a location
    loc: tuple
    value: object
    proxy: str = "generic"  # "generic" | "async"
    preds: tuple = ()  # writes that must land first
    fences: dict = field(default_factory=dict)  # scope -> FenceRecord in force when issued
    rmw: object = None  # callable old -> new for atomics
    ts: int | None = None
    acked: bool = True
    generic_ok: bool = True  # captured by later generic fences (False for un-proxy-fenced bulk stores)
    read_from: "Write | None" = None  # atomics: the write whose value they read
    old: object = None  # atomics: the value read
    mview: dict = field(default_factory=dict)  # scope -> {loc: ts}, computed when it lands

    @property
    def home(self) -> int:
        return self.loc[1]

    @property
    def gpu(self) -> int | None:
        return None if self.thread is None else self.thread.gpu

    def __repr__(self) -> str:
        where = "init" if self.thread is None else f"cta{self.thread.tid}"
        state = "pending" if self.ts is None else f"ts={self.ts}"
        return f"W{self.wid}({where} {self.loc}={self.value!r} {self.proxy} {state})"


@dataclass(eq=False, slots=True)
class Thread:
    """The memory-side state of one CTA (its signalling thread): views, fences in force, its writes."""

    tid: int
    gpu: int
    view: dict = field(default_factory=dict)  # generic proxy: loc -> oldest readable ts
    aview: dict = field(default_factory=dict)  # async proxy (bulk loads)
    writes: list = field(default_factory=list)  # own writes, program order
    fences: dict = field(default_factory=dict)  # scope -> latest FenceRecord covering that scope
    unsynced: list = field(default_factory=list)  # writes read by relaxed loads since the last fence
    outstanding: int = 0  # own writes not yet landed, plus bulk stores not yet acknowledged


def _join(into: dict, other: dict) -> None:
    for loc, ts in other.items():
        if ts > into.get(loc, 0):
            into[loc] = ts


class Memory:
    """Home memories of all GPUs, the pending pool and the rules above.

    ``initial`` gives the value every location holds before any write: a dict (``default`` for unlisted
    locations) or a function of the location.
    ``on_land(write)`` is called after each landing (the system turns some landings into trace events).
    """

    def __init__(self, initial=None, default: object = None, on_land=None) -> None:
        if callable(initial):
            self._initial_of = initial
        else:
            table = dict(initial or {})
            self._initial_of = lambda loc: table.get(loc, default)
        self._history: dict[tuple, list[Write]] = {}
        self._ts_list: dict[tuple, list[int]] = {}
        self.pending: list[Write] = []
        self.unacked: list[Write] = []
        self.clock = 0
        self._wid = 0
        self.on_land = on_land

    # ---------------------------------------------------------------- locations
    def history(self, loc: tuple) -> list[Write]:
        """Landed writes of ``loc`` in coherence order (the first is the initial value, ts 0)."""
        h = self._history.get(loc)
        if h is None:
            self._wid += 1
            init = Write(self._wid, None, loc, self._initial_of(loc), ts=0)
            h = self._history[loc] = [init]
            self._ts_list[loc] = [0]
        return h

    def latest(self, loc: tuple) -> Write:
        return self.history(loc)[-1]

    def value(self, loc: tuple) -> object:
        """The newest value at the home memory (what an oracle, not a thread, sees)."""
        return self.history(loc)[-1].value

    def snapshot(self, gpus=None) -> dict:
        """Newest timestamp of every location (of the given home GPUs)."""
        return {loc: h[-1].ts for loc, h in self._history.items() if gpus is None or loc[1] in gpus}

    # ---------------------------------------------------------------- writes
    def _own_pending(self, t: Thread, loc: tuple) -> Write | None:
        for w in reversed(t.writes):
            if w.loc == loc and w.ts is None:
                return w
        return None

    def issue(self, t: Thread, loc: tuple, value=None, *, proxy: str = "generic", rmw=None,
              release: str | None = None) -> Write:
        """Issue a store (``rmw=None``) or atomic into the pending pool; ``release`` is its release scope."""
        if release is not None:
            self.fence(t, release, acquire=False)
        preds = []
        prev = self._own_pending(t, loc)
        if prev is not None:
            preds.append(prev)
        fences = {}
        if proxy == "generic":
            for scope, rec in t.fences.items():
                fences[scope] = rec
                for p in rec.writes:
                    if p.ts is None and p is not prev and covers(scope, t.gpu, p.home, loc[1]):
                        preds.append(p)
        self._wid += 1
        w = Write(self._wid, t, loc, value, proxy=proxy, preds=tuple(dict.fromkeys(preds)), fences=fences,
                  rmw=rmw, acked=(proxy == "generic"), generic_ok=(proxy == "generic"))
        t.writes.append(w)
        self.pending.append(w)
        t.outstanding += 1
        if not w.acked:
            self.unacked.append(w)
            t.outstanding += 1
        return w

    def can_land(self, w: Write) -> bool:
        return w.ts is None and all(p.ts is not None for p in w.preds)

    def landable(self) -> list[Write]:
        """Pending writes the scheduler may land now, in issue order."""
        return [w for w in self.pending if all(p.ts is not None for p in w.preds)]

    def ackable(self) -> list[Write]:
        """Bulk stores the scheduler may acknowledge to their issuer now, in issue order."""
        return list(self.unacked)

    def land(self, w: Write) -> None:
        """Make ``w`` visible at its home memory (the scheduler's choice)."""
        if not self.can_land(w):
            raise ModelError(f"{w!r} cannot land yet")
        h = self.history(w.loc)
        if w.rmw is not None:
            w.read_from = h[-1]
            w.old = h[-1].value
            w.value = w.rmw(w.old)
        self.clock += 1
        w.ts = self.clock
        h.append(w)
        self._ts_list[w.loc].append(w.ts)
        self.pending.remove(w)
        t = w.thread
        t.outstanding -= 1
        if w.ts > t.view.get(w.loc, 0):
            t.view[w.loc] = w.ts  # a thread never reads older than its own write
        for scope, rec in w.fences.items():
            mv = dict(rec.view)
            for p in rec.writes:
                if p.ts is not None and covers(scope, t.gpu, p.home, w.home) and p.ts > mv.get(p.loc, 0):
                    mv[p.loc] = p.ts
            w.mview[scope] = mv
        if w.read_from is not None:  # release sequences continue through atomics
            for scope, mv in w.read_from.mview.items():
                _join(w.mview.setdefault(scope, {}), mv)
        if self.on_land is not None:
            self.on_land(w)

    def ack(self, w: Write) -> None:
        """Acknowledge a bulk store to its issuer (completion as seen by the issuing thread)."""
        if w.acked:
            raise ModelError(f"{w!r} was already acknowledged")
        w.acked = True
        self.unacked.remove(w)
        w.thread.outstanding -= 1

    # ---------------------------------------------------------------- reads
    def readable(self, t: Thread, loc: tuple, proxy: str = "generic") -> list[Write]:
        """Writes a load of ``loc`` by ``t`` may return, newest first (own pending write wins)."""
        own = self._own_pending(t, loc) if proxy == "generic" else None
        if own is not None:
            return [own]
        h = self.history(loc)
        floor = (t.view if proxy == "generic" else t.aview).get(loc, 0)
        i = bisect_left(self._ts_list[loc], floor)
        return h[i:][::-1]

    def load(self, t: Thread, loc: tuple, *, pick: int = 0, acquire: str | None = None,
             proxy: str = "generic") -> object:
        """Load ``loc``; ``pick`` chooses how stale (clamped); ``acquire`` is the acquire scope or None."""
        cands = self.readable(t, loc, proxy)
        w = cands[min(pick, len(cands) - 1)]
        if w.ts is None:  # forwarded from the thread's own pending write
            return w.value
        view = t.view if proxy == "generic" else t.aview
        if w.ts > view.get(loc, 0):
            view[loc] = w.ts
        if acquire is not None:
            self._sync(t, w, acquire)
        elif proxy == "generic":
            t.unsynced.append(w)
        return w.value

    def _sync(self, t: Thread, w: Write, acquire: str) -> None:
        """``t`` acquired (scope ``acquire``) having read ``w``: join w's message view if the scopes match."""
        wg = w.gpu
        if wg is None:
            return
        same_cta = w.thread is t
        if not (acquire == "sys" or (acquire == "gpu" and wg == t.gpu) or same_cta):
            return
        for scope, mv in w.mview.items():
            if scope == "sys" or (scope == "gpu" and wg == t.gpu) or same_cta:
                _join(t.view, mv)

    def complete_rmw(self, t: Thread, w: Write, acquire: str | None) -> object:
        """The issuing thread receives an atomic's old value (after it landed)."""
        if w.ts is None:
            raise ModelError(f"{w!r} has not landed")
        if acquire is not None:
            self._sync(t, w.read_from, acquire)
        else:
            t.unsynced.append(w.read_from)
        return w.old

    # ---------------------------------------------------------------- fences
    def fence(self, t: Thread, scope: str, *, acquire: bool = True) -> None:
        """``fence.acq_rel.<scope>`` (release part always; acquire part unless ``acquire=False``)."""
        if acquire:
            for w in t.unsynced:
                self._sync(t, w, scope)
            t.unsynced.clear()
        rec = FenceRecord(scope, dict(t.view), tuple(w for w in t.writes if w.generic_ok))
        for s in SCOPES[: _SCOPE_RANK[scope] + 1]:
            t.fences[s] = rec

    def sc_fence_ready(self, t: Thread, scope: str) -> bool:
        """``fence.sc`` may complete once the thread's covered writes have landed."""
        return all(w.ts is not None for w in t.writes
                   if w.generic_ok and covers(scope, t.gpu, w.home, w.home))

    def fence_sc(self, t: Thread, scope: str) -> None:
        if not self.sc_fence_ready(t, scope):
            raise ModelError("fence.sc issued before the thread's writes landed")
        self.fence(t, scope)
        gpus = None if scope == "sys" else {t.gpu}
        _join(t.view, self.snapshot(gpus))

    def proxy_fence(self, t: Thread) -> None:
        """``fence.proxy.async``: acknowledged bulk stores become capturable; async read view catches up."""
        for w in t.writes:
            if w.proxy == "async" and w.acked:
                w.generic_ok = True
        _join(t.aview, t.view)

    def bulk_done(self, t: Thread) -> bool:
        """``cp.async.bulk.wait_group 0`` may return: all of the thread's bulk stores are acknowledged."""
        return all(w.acked for w in t.writes if w.proxy == "async")
