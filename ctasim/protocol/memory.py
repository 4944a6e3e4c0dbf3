"""An operational weak-memory model of the operations the CTA-pipelining protocol uses, after the PTX memory model.

What it models (PTX ISA, "Memory Consistency Model"; section numbers of that chapter in brackets)
--------------------------------------------------------------------------------------------------------------
* **Threads and scopes [8.5].**  A :class:`Thread` has a GPU, a CTA (thread block) and a cluster.  A scope is the
  set of threads it names relative to a thread: ``cta`` (same CTA), ``cluster``, ``gpu`` (same GPU), ``sys``
  (all).  Where a location lives plays no part in any rule (a location ``(kind, home_gpu, ...)`` names its home
  only for the protocol's bookkeeping).
* **Strong and weak [8.4], morally strong [8.7].**  Every access has a scope (strong: relaxed / acquire / release
  / atomic) or none (weak).  Two operations are morally strong when they are in one thread, or both are strong,
  each one's scope includes the other's thread, and they use the same proxy (:func:`morally_strong`).
* **Writes are delayed.**  A store, bulk (TMA) store or atomic is *issued* into a pending pool and later *lands*
  (the scheduler's choice, :meth:`Memory.landable`); the landed writes of a location in landing order are its
  coherence order.  Nothing orders the landing of two writes of a thread to different locations: ordering is
  observed only through views.
* **Views.**  Each thread has, per location, the coherence-oldest write it may still read (its *floor*), for the
  generic proxy (``view``) and the async proxy (``aview``, read by TMA loads).  A floor may be a write that has not
  landed yet (a write that happened before): a load of that location then waits until it lands, and the thread's
  own later writes there land after it (coherence [8.10.1]).  A thread's own write becomes its floor at once
  (store forwarding).  A load returns any landed write not older than the floor (``pick``).  A *strong* load raises
  the floor to what it read (SC per location [8.10.5]); a weak load does not.
* **Release and acquire patterns [8.8], synchronisation [8.9.4].**  A fence ``fence.acq_rel.s`` / ``fence.sc.s``
  records a *message*: its scope, its thread, and the thread's views at the fence.  A later *strong* write of the
  thread carries the messages of the fences before it (release pattern 3); ``st.release.s`` / ``atom.release.s``
  carries its own message (pattern 1), and so does a later strong write of the same location (pattern 2) --
  nothing else is left in force after it: a release operation is not a fence.  A read R that reads a write W synchronises with W's messages when R and W are morally strong
  (observation order [8.9.2]) and the message's scope / thread and the acquire's (``ld.acquire.s``, or the
  ``fence.acq_rel.s`` after a strong read: acquire pattern 3) are morally strong; it joins the message's views
  into its own.  Views are joined transitively, so causality is cumulative.
* **Observation through atomics [8.9.2].**  An atomic that reads a write it is morally strong with inherits that
  write's messages (release sequences continue through morally strong read-modify-writes; ``red`` never acquires).
* **Scoped atomicity [8.10.3].**  An atomic lands at the end of its location's coherence order and reads a write
  *r* such that no write after *r* is morally strong with it: atomics whose scopes do not include each other's
  threads may both read the same value (a lost update).  :meth:`Memory.atomic_choices` lists the choices.
* **fence.sc [8.9.3, 8.9.4].**  ``fence.sc`` fences are totally ordered in execution order; a fence.sc joins the
  views of every earlier fence.sc it is morally strong with (Fence-SC order synchronises), then acts as
  ``fence.acq_rel``.  It never reads memory: a ``fence.sc.gpu`` after a relaxed poll of another GPU's release is
  not an acquire of it.
* **Two proxies.**  Bulk stores (``cp.async.bulk``) are async-proxy writes: they enter the issuing thread's generic
  view only once acknowledged (``cp.async.bulk.wait_group``) and passed through ``fence.proxy.async``.  TMA loads
  read with the async view, which ``fence.proxy.async`` raises to the generic view.  Following the mixed-proxy
  model (NVlabs/mixedproxy, ``proxy_fence_ops``: a proxy fence acts on operations of its own thread block), an
  async view travels through synchronisation only between threads of one CTA: a proxy fence in one CTA does not
  serve another CTA's TMA loads, even after a cluster barrier.
* **Load buffering [8.10.4].**  A load the program marks as dependency-free may be *deferred*: later operations run
  first and the load reads later, from the floor it had when issued (see :mod:`ctasim.protocol.system`).

What it leaves out
------------------
Timing, caches as such, mixed-size accesses, virtual aliases and alias / texture / surface proxies, ``.volatile``
and ``.mmio`` beyond their relaxed-sys meaning, multimem, non-multi-copy-atomic propagation (a landed write is
visible to every thread at once, and coherence is total even between racing weak writes), the implicit proxy fence
at a bulk copy's completion (the model asks for the explicit ``fence.proxy.async``: stricter than PTX), and joins
of two unordered pending writes of one location (the floor keeps one of them: weaker than PTX, never stronger).
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["SCOPES", "ModelError", "Write", "Msg", "Thread", "Memory", "in_scope", "morally_strong"]

SCOPES = ("cta", "cluster", "gpu", "sys")
"""Scopes, narrowest first."""

_RANK = {s: i for i, s in enumerate(SCOPES)}


class ModelError(RuntimeError):
    """A program asked the model for something it cannot do (a bug in the program, not a protocol violation)."""


@dataclass(eq=False, slots=True)
class Thread:
    """The memory-side state of one thread: where it runs, its views, the fences in force, its writes."""

    tid: int
    gpu: int
    cta: int = -1  # globally unique thread-block id (-1: a block of its own)
    cluster: int = -1  # globally unique cluster id (-1: the block's own)
    view: dict = field(default_factory=dict)  # generic proxy: loc -> floor Write
    aview: dict = field(default_factory=dict)  # async proxy (TMA loads)
    fence_msgs: dict = field(default_factory=dict)  # scope -> Msg of the latest fence of that scope
    loc_release: dict = field(default_factory=dict)  # loc -> Msg of the latest release operation on it
    unsynced: list = field(default_factory=list)  # [write read, read scope, widest fence scope applied]
    writes: list = field(default_factory=list)  # own writes not yet landed-and-acknowledged, program order
    outstanding: int = 0  # own writes not yet landed, plus bulk stores not yet acknowledged
    bulk_groups: int = 0  # bulk async-groups committed (cp.async.bulk.commit_group); the open one has this index
    tag: object = None  # the system's handle on the thread (its CTA), for event bookkeeping

    def __post_init__(self) -> None:
        if self.cta < 0:
            self.cta = -self.tid - 1
        if self.cluster < 0:
            self.cluster = self.cta


def in_scope(scope: str, a: Thread, b: Thread) -> bool:
    """Is thread ``b`` in scope ``scope`` of thread ``a``?"""
    if scope == "sys":
        return True
    if scope == "gpu":
        return a.gpu == b.gpu
    if scope == "cluster":
        return a.gpu == b.gpu and a.cluster == b.cluster
    if scope == "cta":
        return a.gpu == b.gpu and a.cta == b.cta
    raise ModelError(f"unknown scope {scope!r}")


def morally_strong(a: Thread | None, sa: str | None, b: Thread, sb: str | None) -> bool:
    """Are an operation of ``a`` with scope ``sa`` and one of ``b`` with ``sb`` morally strong (same proxy assumed)?
    ``None`` scope: a weak access.  ``a is None``: the initial write, before every thread."""
    if a is None or a is b:
        return True
    if sa is None or sb is None:
        return False
    return in_scope(sa, a, b) and in_scope(sb, b, a)


@dataclass(frozen=True, slots=True)
class Msg:
    """What a release (fence or release operation) publishes: its scope and thread, and that thread's views."""

    scope: str
    thread: Thread
    view: dict
    aview: dict


@dataclass(eq=False, slots=True)
class Write:
    """One issued write (store, bulk store or atomic read-modify-write).

    States: *pending* (issued, ``ts is None``) -> *landed* (``ts`` set, appended to the location's coherence
    order at ``index``).  Bulk stores also go from un-acknowledged to *acked*, independently of landing."""

    wid: int
    thread: Thread | None  # None: the initial value of a location
    loc: tuple
    value: object
    scope: str | None = "sys"  # None: weak
    proxy: str = "generic"  # "generic" | "async"
    preds: tuple = ()  # writes that must land first (coherence)
    msgs: tuple = ()  # release messages it carries
    inherited: tuple = ()  # atomics: messages of the write they read (observation order)
    rmw: object = None  # callable old -> new for atomics
    ts: int | None = None
    index: int = -1
    acked: bool = True
    in_view: bool = True  # bulk stores: entered the issuer's generic view (acked + fence.proxy.async)
    read_from: "Write | None" = None
    old: object = None
    group: int = -1  # bulk stores: the issuer's bulk async-group

    @property
    def home(self) -> int:
        return self.loc[1]

    def __repr__(self) -> str:
        where = "init" if self.thread is None else f"t{self.thread.tid}"
        state = "pending" if self.ts is None else f"ts={self.ts}"
        return f"W{self.wid}({where} {self.loc}={self.value!r} {self.proxy} {state})"


def later(a: Write | None, b: Write | None) -> Write | None:
    """The coherence-later of two writes of one location (a pending write is later than every landed one)."""
    if a is None:
        return b
    if b is None or a is b:
        return a
    if a.ts is None:
        return a if (b.ts is not None or a.wid > b.wid) else b
    if b.ts is None:
        return b
    return a if a.ts > b.ts else b


def join(into: dict, other: dict) -> None:
    """Per location, keep the coherence-later floor (``later``, written out: this is the model's hottest loop)."""
    get = into.get
    for loc, w in other.items():
        cur = get(loc)
        if cur is w:
            continue
        if cur is None:
            into[loc] = w
        elif w.ts is None:
            if cur.ts is not None or w.wid > cur.wid:
                into[loc] = w
        elif cur.ts is not None and w.ts > cur.ts:
            into[loc] = w


class Memory:
    """The locations' coherence orders, the pending pool and the rules above.

    ``initial`` gives the value every location holds before any write: a dict (``default`` for unlisted
    locations) or a function of the location.  ``on_land(write)`` is called after each landing."""

    def __init__(self, initial=None, default: object = None, on_land=None) -> None:
        if callable(initial):
            self._initial_of = initial
        else:
            table = dict(initial or {})
            self._initial_of = lambda loc: table.get(loc, default)
        self._history: dict[tuple, list[Write]] = {}
        self.pending: list[Write] = []
        self.unacked: list[Write] = []
        self.sc_log: list[Msg] = []
        self.clock = 0  # landings so far
        self.acks = 0  # bulk-store acknowledgements so far
        self._wid = 0
        self.on_land = on_land

    # ---------------------------------------------------------------- locations
    def history(self, loc: tuple) -> list[Write]:
        """Landed writes of ``loc`` in coherence order (the first is the initial value, ts 0)."""
        h = self._history.get(loc)
        if h is None:
            self._wid += 1
            h = self._history[loc] = [Write(self._wid, None, loc, self._initial_of(loc), ts=0, index=0)]
        return h

    def value(self, loc: tuple) -> object:
        """The newest value at the location (what an oracle, not a thread, sees)."""
        return self.history(loc)[-1].value

    def snapshot(self) -> dict:
        """The newest write of every location (a kernel's start: everything before it is visible)."""
        return {loc: h[-1] for loc, h in self._history.items()}

    # ---------------------------------------------------------------- writes
    def issue(self, t: Thread, loc: tuple, value=None, *, scope: str | None = "sys", proxy: str = "generic",
              rmw=None, release: str | None = None) -> Write:
        """Issue a store (``rmw=None``) or atomic; ``scope`` None is a weak store; ``release`` its release scope."""
        floor = t.view.get(loc)
        preds = (floor,) if floor is not None and floor.ts is None else ()
        own_async = t.aview.get(loc) if proxy == "async" else None
        if own_async is not None and own_async.ts is None and own_async not in preds:
            preds += (own_async,)
        msgs = ()
        if scope is not None and proxy == "generic":
            msgs = tuple(t.fence_msgs.values())
            if loc in t.loc_release:  # release pattern 2: a release operation on loc, then a strong write on loc
                msgs += (t.loc_release[loc],)
            if release is not None:
                m = Msg(release, t, dict(t.view), dict(t.aview))
                t.loc_release[loc] = m
                msgs += (m,)
        self._wid += 1
        w = Write(self._wid, t, loc, value, scope=scope, proxy=proxy, preds=preds, msgs=msgs, rmw=rmw,
                  acked=(proxy == "generic"), in_view=(proxy == "generic"))
        t.writes.append(w)
        self.pending.append(w)
        t.outstanding += 1
        if proxy == "generic":
            t.view[loc] = w
        else:
            t.aview[loc] = w
            w.group = t.bulk_groups
            self.unacked.append(w)
            t.outstanding += 1
        return w

    def bulk_commit(self, t: Thread) -> None:
        """``cp.async.bulk.commit_group``: the thread's bulk stores issued so far form a group; later ones the next."""
        t.bulk_groups += 1

    def landable(self) -> list[Write]:
        """Pending writes the scheduler may land now, in issue order."""
        return [w for w in self.pending if all(p.ts is not None for p in w.preds)]

    def ackable(self) -> list[Write]:
        """Bulk stores the scheduler may acknowledge to their issuer now, in issue order."""
        return list(self.unacked)

    def atomic_choices(self, w: Write) -> list[Write]:
        """Writes a pending atomic may read when it lands now, newest first: the newest, and older ones as long
        as every write after them is not morally strong with the atomic (scoped atomicity)."""
        h = self.history(w.loc)
        floor = w.thread.view.get(w.loc)
        lo = 0 if floor is None or floor is w or floor.ts is None else floor.index
        out = []
        for i in range(len(h) - 1, lo - 1, -1):
            out.append(h[i])
            if morally_strong(h[i].thread, h[i].scope, w.thread, w.scope):
                break
        return out

    def land(self, w: Write, pick: int = 0) -> None:
        """Make ``w`` visible (the scheduler's choice); an atomic reads ``atomic_choices(w)[pick]``."""
        if w.ts is not None or not all(p.ts is not None for p in w.preds):
            raise ModelError(f"{w!r} cannot land yet")
        h = self.history(w.loc)
        if w.rmw is not None:
            choices = self.atomic_choices(w)
            r = choices[min(pick, len(choices) - 1)]
            w.read_from, w.old = r, r.value
            w.value = w.rmw(r.value)
            if morally_strong(r.thread, r.scope, w.thread, w.scope):
                w.inherited = r.msgs + r.inherited
        self.clock += 1
        w.ts = self.clock
        w.index = len(h)
        h.append(w)
        self.pending.remove(w)
        t = w.thread
        t.outstanding -= 1
        if w.acked:
            t.writes.remove(w)
        if self.on_land is not None:
            self.on_land(w)

    def ack(self, w: Write) -> None:
        """Acknowledge a bulk store to its issuer (its completion as the issuing thread sees it)."""
        if w.acked:
            raise ModelError(f"{w!r} was already acknowledged")
        w.acked = True
        self.acks += 1
        self.unacked.remove(w)
        w.thread.outstanding -= 1
        if w.ts is not None:
            w.thread.writes.remove(w)

    # ---------------------------------------------------------------- reads
    def readable(self, t: Thread, loc: tuple, proxy: str = "generic") -> list[Write]:
        """Writes a load of ``loc`` by ``t`` may return now, newest first; empty while its floor has not landed."""
        floor = (t.view if proxy == "generic" else t.aview).get(loc)
        if floor is not None and floor.ts is None:
            return [floor] if floor.thread is t and proxy == "generic" else []
        h = self.history(loc)
        return h[(0 if floor is None else floor.index):][::-1]

    def can_read(self, t: Thread, loc: tuple, proxy: str = "generic") -> bool:
        """``bool(readable(t, loc, proxy))`` without building the list."""
        floor = (t.view if proxy == "generic" else t.aview).get(loc)
        if floor is not None and floor.ts is None:
            return floor.thread is t and proxy == "generic"
        return True  # the history holds the initial write, and a landed floor is in it

    def newest_readable(self, t: Thread, loc: tuple) -> Write:
        """``readable(t, loc)[0]`` (generic proxy; the caller knows the list is not empty)."""
        floor = t.view.get(loc)
        if floor is not None and floor.ts is None:
            return floor
        return self.history(loc)[-1]

    def load(self, t: Thread, loc: tuple, *, pick: int = 0, scope: str | None = "sys", acquire: bool = False,
             proxy: str = "generic", floor: dict | None = None) -> Write:
        """Load ``loc`` (``scope`` None: weak); returns the write read.  ``floor``: a deferred load's views."""
        if floor is None:
            cands = self.readable(t, loc, proxy)
        else:
            f = floor.get(loc)
            h = self.history(loc)
            cands = h[(0 if f is None or f.ts is None else f.index):][::-1]
        if not cands:
            raise ModelError(f"load of {loc} by t{t.tid} before its floor landed")
        w = cands[min(pick, len(cands) - 1)]
        if w.ts is None:
            return w  # forwarded from the thread's own pending write
        if scope is not None and proxy == "generic":
            view = t.view
            cur = view.get(loc)
            if cur is None or later(w, cur) is w:
                view[loc] = w
            if acquire:
                self._sync(t, w, scope, scope)
            else:
                t.unsynced.append([w, scope, -1])
        return w

    def _sync(self, t: Thread, w: Write, read_scope: str, acq_scope: str) -> None:
        """``t`` read ``w`` (scope ``read_scope``) and acquires at ``acq_scope``: join the messages it may."""
        if w.thread is None or not morally_strong(w.thread, w.scope, t, read_scope):
            return
        for m in w.msgs + w.inherited:
            if morally_strong(m.thread, m.scope, t, acq_scope):
                join(t.view, m.view)
                if m.thread.cta == t.cta and m.thread.gpu == t.gpu:
                    join(t.aview, m.aview)

    def complete_rmw(self, t: Thread, w: Write, acquire: str | None) -> object:
        """The issuing thread receives an atomic's old value (after it landed)."""
        if w.ts is None:
            raise ModelError(f"{w!r} has not landed")
        if acquire is not None:
            self._sync(t, w.read_from, w.scope, acquire)
        elif w.read_from.thread is not None:
            t.unsynced.append([w.read_from, w.scope, -1])
        return w.old

    # ---------------------------------------------------------------- fences
    def fence(self, t: Thread, scope: str, *, sc: bool = False) -> None:
        """``fence.acq_rel.<scope>`` or ``fence.sc.<scope>``."""
        rank = _RANK[scope]
        for entry in t.unsynced:
            if entry[2] < rank:
                self._sync(t, entry[0], entry[1], scope)
                entry[2] = rank
        if sc:
            for m in self.sc_log:
                if morally_strong(m.thread, m.scope, t, scope):
                    join(t.view, m.view)
                    if m.thread.cta == t.cta and m.thread.gpu == t.gpu:
                        join(t.aview, m.aview)
        msg = Msg(scope, t, dict(t.view), dict(t.aview))
        t.fence_msgs[scope] = msg
        if sc:
            self.sc_log.append(msg)

    def proxy_fence(self, t: Thread) -> None:
        """``fence.proxy.async``: acknowledged bulk stores enter the generic view; the async view catches up."""
        for w in t.writes:
            if w.proxy == "async" and w.acked and not w.in_view:
                w.in_view = True
                cur = t.view.get(w.loc)
                if cur is None or later(w, cur) is w:
                    t.view[w.loc] = w
        for w in self._acked_landed_async(t):
            cur = t.view.get(w.loc)
            if cur is None or later(w, cur) is w:
                t.view[w.loc] = w
        join(t.aview, t.view)

    def _acked_landed_async(self, t: Thread):
        out = []
        for loc, w in t.aview.items():
            if w.thread is t and w.proxy == "async" and w.acked and not w.in_view:
                w.in_view = True
                out.append(w)
        return out

    def bulk_done(self, t: Thread, pending: int = 0) -> bool:
        """``cp.async.bulk.wait_group pending`` may return: with 0, all of the thread's bulk stores are acknowledged;
        else those of every committed group but the ``pending`` most recent ones."""
        if pending == 0:
            return all(w.acked for w in t.writes if w.proxy == "async")
        done_below = t.bulk_groups - pending
        return all(w.acked for w in t.writes if w.proxy == "async" and w.group < done_below)
