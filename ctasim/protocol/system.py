"""Threads, CTAs, clusters, kernels and resident slots on several GPUs, and the scheduler's choices over them.

What it models
--------------
* A **kernel** is one launch on one GPU in one epoch: a grid of ``n_ctas`` scheduling units, each a cluster of
  ``blocks`` thread blocks (CTAs; ``blocks=1``: a plain CTA).  ``program(unit)`` returns the unit's threads as
  ``(block, generator)`` pairs; a generator yields :mod:`ctasim.protocol.ops` operations and receives their
  results.  A kernel may start once the kernels it depends on are *complete* (stream order on its GPU, or an
  event from another GPU); complete means every unit returned and every write it issued has landed and been
  acknowledged (the end of a kernel synchronises with the start of the next one: its threads start with a view of
  everything landed when it started, in both proxies).
* Each GPU has a fixed number of **resident slots** (thread blocks).  Units of the running kernel take free slots
  in order (a cluster takes ``blocks`` slots at once); a unit frees its slots when all its threads returned.
* **Barriers.**  ``bar.sync id, n`` (:class:`~ctasim.protocol.ops.Bar`): the block's ``n`` threads meet; each
  arrival releases the thread's views into the barrier, its completion joins them into every participant (CTA
  scope release / acquire).  :class:`~ctasim.protocol.ops.ClusterSync` does the same for every thread of the
  cluster (cluster scope); an async view crosses it only to threads of the block it came from.
* **Deferred loads** (load buffering): a load with ``dep=False`` may be *deferred* -- the thread goes on with a
  :class:`Deferred` placeholder and the load reads later (a ``resolve`` choice) from the floor it had when issued.
  A deferred load must resolve before its thread runs a fence, a release, a barrier, another access to the same
  location, or returns.
* The **scheduler's choices** (:meth:`System.actions`): ``launch`` a unit into free slots, ``step`` a runnable
  thread (loads choose ``pick``, how stale; dependency-free loads may ``defer``), ``resolve`` a deferred load,
  ``land`` a pending write (an atomic chooses which write it reads, where scoped atomicity allows a choice), or
  ``ack`` a bulk store.  :meth:`System.drain` finishes a run with a fixed, fair policy and reports a deadlock when
  nothing can change any more.

What it leaves out
------------------
Time, SM placement, warps (a thread stands for a warp's elected lane), preemption, named-barrier ids shared across
warps of different roles beyond ``bar.sync``'s count, mbarrier phases and transaction counts, and any fairness
beyond what :meth:`System.drain` guarantees.  Spin loops are unbounded; a deadlock is a state in which no action
changes anything (the hardware's bounded spin would report a timeout instead).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .memory import Memory, Thread
from .ops import Atom, Bar, BulkCommit, BulkSt, BulkWait, ClusterSync, Fence, Ld, Poll, ProxyFence, St, fmt_loc

__all__ = ["Kernel", "Cta", "Thr", "Deferred", "System", "DrainPolicy", "DrainResult"]


@dataclass(eq=False)
class Kernel:
    """One launch: ``program(unit)`` returns ``[(block, generator), ...]``.  ``after`` lists kernels that must be
    complete before this one starts.  States: waiting -> started (first unit launched) -> complete."""

    gpu: int
    epoch: int
    n_ctas: int
    program: object
    after: list = field(default_factory=list)
    name: str = ""
    blocks: int = 1
    launched: int = 0
    returned: int = 0
    started: bool = False
    complete: bool = False
    snapshot: dict = field(default_factory=dict)
    ctas: list = field(default_factory=list)


class Deferred:
    """The placeholder a deferred load hands its program; ``value`` is set when the load resolves."""

    __slots__ = ("value", "resolved")

    def __init__(self) -> None:
        self.value, self.resolved = None, False

    def __repr__(self) -> str:
        return repr(self.value) if self.resolved else "<deferred>"


@dataclass(eq=False)
class Thr:
    """One thread of a unit: its block, memory-side state, generator, next operation, pending atomic, deferred
    loads, and whether it waits at a barrier.  ``op is None`` once its program returned."""

    unit: "Cta"
    index: int
    block: int
    mem: Thread
    gen: object = None
    op: object = None
    wait: object = None
    deferred: list = field(default_factory=list)  # [Deferred, Ld, floor write or None]
    at_barrier: bool = False
    done: bool = False
    poll_cache: tuple | None = None
    ver: int = 0  # bumped whenever the thread's own state may have changed (its step, resolve, advance)
    progress_cache: tuple | None = None  # ((ver, clock, acks), would_progress)

    @property
    def cid(self) -> int:
        return self.mem.tid

    def __repr__(self) -> str:
        return f"{self.unit}.t{self.index}" + (f"b{self.block}" if self.unit.kernel.blocks > 1 else "")


@dataclass(eq=False)
class Cta:
    """A resident scheduling unit (a CTA, or a cluster of ``kernel.blocks`` CTAs): its kernel, index, threads.

    ``emit`` sends protocol events to the run's checker; ``threads`` are created by :meth:`System.launch`."""

    cid: int
    kernel: Kernel
    index: int
    emit: object = None
    threads: list = field(default_factory=list)
    barriers: dict = field(default_factory=dict)
    returned: bool = False

    @property
    def gpu(self) -> int:
        return self.kernel.gpu

    @property
    def epoch(self) -> int:
        return self.kernel.epoch

    def __repr__(self) -> str:
        return f"gpu{self.gpu}.e{self.epoch}.cta{self.index}"


@dataclass(frozen=True)
class DrainPolicy:
    """How :meth:`System.drain` finishes a run.

    ``land``: which memory event comes first when nothing else can move -- ``"oldest"``: land writes in issue
    order, acknowledge bulk stores only once nothing can land; ``"newest"``: acknowledge bulk stores first, then
    land the newest landable write.  ``stale_loads``: plain (non-poll) loads return the *oldest* value the model
    allows instead of the newest.  Polls always read the newest value, so a correct program makes progress."""

    land: str = "oldest"
    stale_loads: bool = False


@dataclass(frozen=True)
class DrainResult:
    finished: bool
    steps: int
    reason: str = ""


_ORDERING = (Fence, Bar, ClusterSync)


class System:
    """All GPUs, their kernels and resident slots, one shared :class:`Memory`, and the action interface."""

    def __init__(self, kernels: list[Kernel], slots: dict[int, int], memory: Memory, emit=None) -> None:
        self.kernels = kernels
        self.slots = dict(slots)
        self.mem = memory
        self.emit = emit or (lambda event: None)
        self._queue = {}
        for k in kernels:
            self._queue.setdefault(k.gpu, []).append(k)
        for ks in self._queue.values():
            ks.sort(key=lambda k: k.epoch)
        self.live: list[Cta] = []
        self.threads: list[Thr] = []  # threads of resident units, launch order
        self._live_on = {g: 0 for g in self._queue}
        self._next_id = 0
        self._rr = 0
        self.verbose = True  # False: actions return "" instead of a description (the random walks' fast path)
        self._attempt: tuple = ()
        self._open = sorted(kernels, key=lambda k: (k.epoch, k.gpu))
        self._units_ver = 0  # bumped when a unit launches or returns
        self._launchable: tuple | None = None

    @property
    def attempt(self) -> str:
        """The action being executed, as one line (formatted only when asked for)."""
        a = self._attempt
        if not a:
            return ""
        if a[0] in ("step", "resolve"):
            thr = a[1]
            what = thr.op.ptx() if thr.op is not None else "return"
            return f"{thr}: {what}" + (" (returns)" if thr.wait is not None else "")
        w = a[1]
        return f"{a[0]} {fmt_loc(w.loc)} (from t{w.thread.tid})"

    # ---------------------------------------------------------------- state
    def _kernel_complete(self, k: Kernel) -> bool:
        if not k.complete and k.started and k.returned == k.n_ctas:
            if all(t.mem.outstanding == 0 for c in k.ctas for t in c.threads):
                k.complete = True
        return k.complete

    def finished(self) -> bool:
        while self._open and self._kernel_complete(self._open[0]):
            self._open.pop(0)
        return not self._open

    def _current_kernel(self, gpu: int) -> Kernel | None:
        for k in self._queue.get(gpu, ()):
            if k.launched < k.n_ctas:
                return k
        return None

    # ---------------------------------------------------------------- launch
    def launchable(self) -> list[int]:
        """GPUs whose running (or next) kernel can put a unit into free slots now (the list is shared: do not
        change it).  Cached until a unit launches or returns, a write lands or a bulk store is acknowledged."""
        key = (self._units_ver, self.mem.clock, self.mem.acks)
        if self._launchable is not None and self._launchable[0] == key:
            return self._launchable[1]
        out = self._launchable_now()
        self._launchable = (key, out)
        return out

    def _launchable_now(self) -> list[int]:
        out = []
        for gpu, ks in self._queue.items():
            k = self._current_kernel(gpu)
            if k is None or self._live_on[gpu] + k.blocks > self.slots[gpu]:
                continue
            if not k.started:
                prev = [p for p in ks if p.epoch < k.epoch]
                if not all(self._kernel_complete(p) for p in prev + list(k.after)):
                    continue
            out.append(gpu)
        return sorted(out)

    def launch(self, gpu: int) -> str:
        k = self._current_kernel(gpu)
        if gpu not in self.launchable():
            raise RuntimeError(f"no CTA of gpu{gpu} can launch now")
        if not k.started:
            k.started = True
            k.snapshot = self.mem.snapshot()
        self._next_id += 1
        c = Cta(self._next_id, k, k.launched, emit=self.emit)
        k.launched += 1
        self._units_ver += 1
        k.ctas.append(c)
        self.live.append(c)
        self._live_on[gpu] += k.blocks
        for i, (block, gen) in enumerate(k.program(c)):
            self._next_id += 1
            blk = c.cid * 4 + block
            t = Thread(self._next_id, gpu, cta=blk, cluster=c.cid, view=dict(k.snapshot), aview=dict(k.snapshot),
                       tag=c)
            thr = Thr(c, i, block, t, gen=gen)
            c.threads.append(thr)
            self.threads.append(thr)
        for thr in list(c.threads):
            self._advance(thr, None, first=True)
        return f"launch {c}" if self.verbose else ""

    def _advance(self, thr: Thr, result, first: bool = False) -> None:
        try:
            thr.op = next(thr.gen) if first else thr.gen.send(result)
        except StopIteration:
            thr.op = None
        thr.poll_cache = None
        thr.ver += 1
        if thr.op is None and not thr.deferred:
            self._thread_done(thr)

    def _thread_done(self, thr: Thr) -> None:
        if thr.done:
            return
        thr.done = True
        self.threads.remove(thr)
        c = thr.unit
        if all(t.done for t in c.threads) and not c.returned:
            c.returned = True
            self._units_ver += 1
            c.kernel.returned += 1
            self.live.remove(c)
            self._live_on[c.gpu] -= c.kernel.blocks

    # ---------------------------------------------------------------- thread steps
    def _blocked_by_deferred(self, thr: Thr) -> bool:
        op = thr.op
        if not thr.deferred:
            return False
        if op is None or isinstance(op, _ORDERING) or isinstance(op, BulkWait):
            return True
        if getattr(op, "release", None) or getattr(op, "acquire", None):
            return True
        loc = getattr(op, "loc", None)
        return loc is not None and any(d[1].loc == loc for d in thr.deferred)

    def can_step(self, thr: Thr) -> bool:
        op = thr.op
        if op is None or thr.at_barrier or thr.done:
            return False
        if thr.wait is not None:
            return thr.wait.ts is not None
        if self._blocked_by_deferred(thr):
            return False
        if isinstance(op, (Ld, Poll)):
            return self.mem.can_read(thr.mem, op.loc, getattr(op, "proxy", "generic"))
        if isinstance(op, BulkWait):
            return self.mem.bulk_done(thr.mem, op.pending)
        return True

    def runnable(self) -> list[Thr]:
        """Threads that can execute their next operation now, in launch order."""
        return [t for t in self.threads if self.can_step(t)]

    def resolvable(self) -> list[Thr]:
        """Threads with a deferred load whose floor has landed."""
        out = []
        for t in self.threads:
            if t.deferred:
                f = t.deferred[0][2]
                if f is None or f.ts is not None or f.thread is t.mem:
                    out.append(t)
        return out

    def would_progress(self, thr: Thr) -> bool:
        """A step of ``thr`` changes more than its view (a poll would succeed reading the newest value).  Cached
        until the thread's own state changes or a write lands or a bulk store is acknowledged (nothing else can
        change the answer: other threads reach this one only through barriers, which advance it)."""
        mem = self.mem
        key = (thr.ver, mem.clock, mem.acks)
        cache = thr.progress_cache
        if cache is not None and cache[0] == key:
            return cache[1]
        result = self._would_progress(thr)
        thr.progress_cache = (key, result)
        return result

    def _would_progress(self, thr: Thr) -> bool:
        if not self.can_step(thr):
            return False
        op = thr.op
        if isinstance(op, Poll) and thr.wait is None:
            clock = self.mem.clock
            if thr.poll_cache is None or thr.poll_cache[0] != clock:
                thr.poll_cache = (clock, op.done(self.mem.newest_readable(thr.mem, op.loc).value))
            return thr.poll_cache[1]
        return True

    def step(self, thr: Thr, pick: int = 0, defer: bool = False) -> str:
        """Execute ``thr``'s next operation (``defer``: a dependency-free load goes on as a placeholder)."""
        m, t, op = self.mem, thr.mem, thr.op
        thr.ver += 1
        self._attempt = ("step", thr)
        verbose = self.verbose
        if thr.wait is not None:
            w, thr.wait = thr.wait, None
            old = m.complete_rmw(t, w, op.acquire)
            self._advance(thr, old)
            return f"{thr}: {op.ptx()} returns {old!r}" if verbose else ""
        desc = op.ptx() if verbose else ""
        if isinstance(op, St):
            m.issue(t, op.loc, op.value, scope=op.op_scope, release=op.release)
            self._advance(thr, None)
        elif isinstance(op, BulkSt):
            m.issue(t, op.loc, op.value, scope=None, proxy="async")
            self._advance(thr, None)
        elif isinstance(op, BulkWait):
            self._advance(thr, None)
        elif isinstance(op, BulkCommit):
            m.bulk_commit(t)
            self._advance(thr, None)
        elif isinstance(op, ProxyFence):
            m.proxy_fence(t)
            self._advance(thr, None)
        elif isinstance(op, Fence):
            m.fence(t, op.scope, sc=op.sc)
            self._advance(thr, None)
        elif isinstance(op, Ld):
            if defer and not op.dep and op.acquire is None:
                box = Deferred()
                f = (t.view if op.proxy == "generic" else t.aview).get(op.loc)
                thr.deferred.append([box, op, f])
                self._advance(thr, box)
                return f"{thr}: {desc} deferred" if verbose else ""
            w = m.load(t, op.loc, pick=pick, scope=op.op_scope, acquire=op.acquire is not None, proxy=op.proxy)
            self._advance(thr, w.value)
            return f"{thr}: {desc} -> {w.value!r}" if verbose else ""
        elif isinstance(op, Poll):
            w = m.load(t, op.loc, pick=pick, scope=op.op_scope, acquire=op.acquire is not None)
            if op.done(w.value):
                self._advance(thr, w.value)
                return f"{thr}: {desc}: read {w.value!r}, done" if verbose else ""
            thr.poll_cache = None
            return f"{thr}: {desc}: read {w.value!r}, spin" if verbose else ""
        elif isinstance(op, Atom):
            add = op.add
            w = m.issue(t, op.loc, rmw=lambda old, add=add: old + add, scope=op.op_scope, release=op.release)
            if op.returns:
                thr.wait = w
                return f"{thr}: {desc} issued" if verbose else ""
            self._advance(thr, None)
        elif isinstance(op, (Bar, ClusterSync)):
            self._arrive(thr, op)
        else:  # pragma: no cover - programs only yield ops
            raise TypeError(f"{thr} yielded {op!r}, not an operation")
        return f"{thr}: {desc}" if verbose else ""

    def _arrive(self, thr: Thr, op) -> None:
        c = thr.unit
        if isinstance(op, Bar):
            key, count = (thr.block, op.bid), op.count
        else:
            key, count = ("cluster",), len(c.threads)
        b = c.barriers.setdefault(key, {"view": {}, "aview": {}, "waiting": []})
        from .memory import join

        join(b["view"], thr.mem.view)
        join(b["aview"].setdefault(thr.block, {}), thr.mem.aview)
        b["waiting"].append(thr)
        thr.at_barrier = True
        if len(b["waiting"]) >= count:
            del c.barriers[key]
            for w in b["waiting"]:
                join(w.mem.view, b["view"])
                join(w.mem.aview, b["aview"].get(w.block, {}))
                w.at_barrier = False
            for w in b["waiting"]:
                self._advance(w, None)

    def resolve(self, thr: Thr, pick: int = 0) -> str:
        """The oldest deferred load of ``thr`` reads now, from the floor it had when issued."""
        self._attempt = ("resolve", thr)
        thr.ver += 1
        box, op, f = thr.deferred.pop(0)
        w = self.mem.load(thr.mem, op.loc, pick=pick, scope=None, proxy=op.proxy, floor={op.loc: f})
        box.value, box.resolved = w.value, True
        if thr.op is None and not thr.deferred:
            self._thread_done(thr)
        return f"{thr}: deferred {op.ptx()} -> {w.value!r}" if self.verbose else ""

    # ---------------------------------------------------------------- memory events
    def memory_events(self) -> list[tuple[str, object]]:
        """``('land', write)`` for each landable write, then ``('ack', write)`` for each bulk store to ack."""
        return [("land", w) for w in self.mem.landable()] + [("ack", w) for w in self.mem.ackable()]

    def deliver(self, event: tuple[str, object], pick: int = 0) -> str:
        kind, w = event
        self._attempt = event
        if kind == "land":
            self.mem.land(w, pick)
            if not self.verbose:
                return ""
            what = f"{w.old!r}+ -> {w.value!r}" if w.rmw else repr(w.value)
            return f"land {fmt_loc(w.loc)} = {what} (from t{w.thread.tid}, ts {w.ts})"
        self.mem.ack(w)
        return f"ack bulk store {fmt_loc(w.loc)} to t{w.thread.tid}" if self.verbose else ""

    # ---------------------------------------------------------------- every choice
    def actions(self) -> list[tuple]:
        """Every scheduler choice now, each with its full set of sub-choices (for exhaustive exploration):
        ``('launch', gpu)``, ``('step', thr, pick, defer)``, ``('resolve', thr, pick)``, ``('land', w, pick)``,
        ``('ack', w)``."""
        acts = [("launch", g) for g in self.launchable()]
        m = self.mem
        for thr in self.runnable():
            op = thr.op
            if thr.wait is None and isinstance(op, Ld):
                n = len(m.readable(thr.mem, op.loc, op.proxy))
                acts += [("step", thr, p, False) for p in range(n)]
                if not op.dep and op.acquire is None:
                    acts.append(("step", thr, 0, True))
            elif thr.wait is None and isinstance(op, Poll):
                n = len(m.readable(thr.mem, op.loc))
                acts += [("step", thr, p, False) for p in range(n)]
            else:
                acts.append(("step", thr, 0, False))
        for thr in self.resolvable():
            box, op, f = thr.deferred[0]
            h = m.history(op.loc)
            n = len(h) - (0 if f is None or f.ts is None else f.index)
            acts += [("resolve", thr, p) for p in range(n)]
        for w in m.landable():
            n = len(m.atomic_choices(w)) if w.rmw is not None else 1
            acts += [("land", w, p) for p in range(n)]
        acts += [("ack", w) for w in m.ackable()]
        return acts

    def apply(self, act: tuple) -> str:
        kind = act[0]
        if kind == "launch":
            return self.launch(act[1])
        if kind == "step":
            return self.step(act[1], act[2], act[3])
        if kind == "resolve":
            return self.resolve(act[1], act[2])
        if kind == "land":
            return self.deliver(("land", act[1]), act[2])
        return self.deliver(("ack", act[1]))

    # ---------------------------------------------------------------- drain
    def fair_step(self, policy: DrainPolicy = DrainPolicy()) -> str | None:
        """One step of the drain's fixed policy: launch into free slots if possible, else resolve a deferred load,
        else step a thread that makes progress (round-robin), else deliver a memory event.  Returns its
        description, or None when nothing can change (finished, or deadlocked)."""
        gpus = self.launchable()
        if gpus:
            return self.launch(gpus[0])
        res = self.resolvable()
        if res:
            return self.resolve(res[0], 1 << 30 if policy.stale_loads else 0)
        movers = [t for t in self.threads if self.would_progress(t)]
        if movers:
            self._rr = (self._rr + 1) % len(movers)
            thr = movers[self._rr]
            pick = 0
            if policy.stale_loads and isinstance(thr.op, Ld) and thr.wait is None:
                pick = 1 << 30
            return self.step(thr, pick)
        events = self.memory_events()
        if not events:
            return None
        lands = [e for e in events if e[0] == "land"]
        acks = [e for e in events if e[0] == "ack"]
        if policy.land == "oldest":
            ev = lands[0] if lands else acks[0]
        else:
            ev = acks[0] if acks else lands[-1]
        return self.deliver(ev)

    def stuck(self) -> str:
        return ", ".join(f"{t} at {t.op.ptx() if t.op is not None else 'return'}" for t in self.threads) \
            or "no resident CTA"

    def drain(self, policy: DrainPolicy = DrainPolicy(), max_steps: int = 200_000, log=None) -> DrainResult:
        """Run to completion with :meth:`fair_step`.  Returns ``finished=False`` with the stuck threads when no
        action can change the state (a deadlock) or ``max_steps`` pass (a livelock)."""
        for n in range(max_steps):
            if self.finished():
                return DrainResult(True, n)
            desc = self.fair_step(policy)
            if desc is None:
                return DrainResult(False, n, f"deadlock: nothing can change; {self.stuck()}")
            if log is not None:
                log(desc)
        return DrainResult(False, max_steps, "livelock: step limit reached")
