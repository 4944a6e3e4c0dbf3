"""CTAs, kernels and resident slots on several GPUs, and the scheduler's choices over them.

What it models
--------------
* A **kernel** is one launch on one GPU in one epoch: a grid of ``n_ctas`` CTAs, each running the same program
  (a generator of :mod:`ctasim.protocol.ops`).  A kernel may start once the kernels it depends on are
  *complete* (stream order on its own GPU, or an event from another GPU); complete means every CTA returned and
  every write it issued has landed (a kernel boundary flushes, like the end of a CUDA kernel).  Its CTAs start
  with a view of everything landed when the kernel started.
* Each GPU has a fixed number of **resident slots**.  CTAs of the running kernel take free slots in blockIdx
  order; a CTA frees its slot when its program returns.
* The **scheduler's choices** are the actions: ``step`` a runnable CTA (for loads, ``pick`` chooses how stale a
  value to read), ``deliver`` a memory event (land a pending write, or acknowledge a bulk store to its issuer),
  ``launch`` a CTA into a free slot.  :meth:`System.drain` finishes a run with a fixed, fair policy and reports
  a deadlock when nothing can change any more.

What it leaves out
------------------
Time, SM placement, warps within a CTA (a CTA is its one signalling thread), clusters, preemption, and any
fairness beyond what :meth:`System.drain` guarantees.  Spin loops are unbounded here; a deadlock is detected as a
state in which no action changes anything (the hardware's bounded spin would report a timeout instead).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .memory import Memory, Thread
from .ops import Atom, BulkSt, BulkWait, Fence, Ld, Poll, ProxyFence, St, fmt_loc

__all__ = ["Kernel", "Cta", "System", "DrainPolicy", "DrainResult"]


@dataclass(eq=False)
class Kernel:
    """One launch: ``program(cta)`` returns the generator a CTA runs.  ``after`` lists kernels that must be
    complete before this one starts.  States: waiting -> started (first CTA launched) -> complete."""

    gpu: int
    epoch: int
    n_ctas: int
    program: object
    after: list = field(default_factory=list)
    name: str = ""
    launched: int = 0
    returned: int = 0
    started: bool = False
    complete: bool = False
    snapshot: dict = field(default_factory=dict)
    ctas: list = field(default_factory=list)


@dataclass(eq=False)
class Cta:
    """A resident CTA: its kernel, blockIdx, memory-side thread, program and the operation it executes next.

    ``wait`` holds an issued atomic whose old value the CTA is waiting for.  ``op is None`` once returned."""

    cid: int
    kernel: Kernel
    index: int
    thread: Thread
    gen: object = None
    op: object = None
    wait: object = None
    spins: int = 0
    emit: object = None
    poll_cache: tuple | None = None

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
    order, acknowledge bulk stores only once nothing can land (benign); ``"newest"``: acknowledge bulk stores
    first, then land the newest landable write (the most reordering a fixed policy gives).  ``stale_loads``: plain (non-poll) loads return the *oldest* value the
    model allows instead of the newest.  Polls always read the newest value, so a correct program makes progress.
    """

    land: str = "oldest"
    stale_loads: bool = False


@dataclass(frozen=True)
class DrainResult:
    finished: bool
    steps: int
    reason: str = ""


class System:
    """All GPUs, their kernels and resident slots, one shared :class:`Memory`, and the action interface."""

    def __init__(self, kernels: list[Kernel], slots: dict[int, int], memory: Memory, emit=None) -> None:
        self.kernels = kernels
        self.slots = dict(slots)
        self.mem = memory
        self.emit = emit or (lambda event: None)
        self._queue = {}  # gpu -> kernels in launch order
        for k in kernels:
            self._queue.setdefault(k.gpu, []).append(k)
        for ks in self._queue.values():
            ks.sort(key=lambda k: k.epoch)
        self.live: list[Cta] = []
        self._live_on = {g: 0 for g in self._queue}
        self._next_cid = 0
        self._rr = 0
        self.verbose = True  # False: actions return "" instead of a description (the random walks' fast path)
        self._attempt: tuple = ()  # the action being executed (names the step that raised, if one does)
        self._open = sorted(kernels, key=lambda k: (k.epoch, k.gpu))  # kernels not yet known complete

    @property
    def attempt(self) -> str:
        """The action being executed, as one line (formatted only when asked for)."""
        a = self._attempt
        if not a:
            return ""
        if a[0] == "step":
            c, op, returning = a[1:]
            return f"{c}: {op.ptx()}" + (" (returns)" if returning else "")
        w = a[1]
        return f"{a[0]} {fmt_loc(w.loc)} (from gpu{w.thread.gpu}.cta{w.thread.tid})"

    # ---------------------------------------------------------------- state
    def _kernel_complete(self, k: Kernel) -> bool:
        if not k.complete and k.started and k.returned == k.n_ctas:
            if all(c.thread.outstanding == 0 for c in k.ctas):
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
        """GPUs whose running (or next) kernel can put a CTA into a free slot now."""
        out = []
        for gpu, ks in self._queue.items():
            k = self._current_kernel(gpu)
            if k is None:
                continue
            if self._live_on[gpu] >= self.slots[gpu]:
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
        self._next_cid += 1
        t = Thread(self._next_cid, gpu, view=dict(k.snapshot), aview=dict(k.snapshot))
        c = Cta(self._next_cid, k, k.launched, t, emit=self.emit)
        k.launched += 1
        k.ctas.append(c)
        c.gen = k.program(c)
        self.live.append(c)
        self._live_on[gpu] += 1
        self._advance(c, None, first=True)
        return f"launch {c}" if self.verbose else ""

    def _advance(self, c: Cta, result, first: bool = False) -> None:
        try:
            c.op = next(c.gen) if first else c.gen.send(result)
        except StopIteration:
            c.op = None
            c.kernel.returned += 1
            self.live.remove(c)
            self._live_on[c.gpu] -= 1
        c.spins = 0
        c.poll_cache = None

    # ---------------------------------------------------------------- CTA steps
    def can_step(self, c: Cta) -> bool:
        op = c.op
        if c.wait is not None:
            return c.wait.ts is not None
        if isinstance(op, Fence) and op.sc:
            return self.mem.sc_fence_ready(c.thread, op.scope)
        if isinstance(op, BulkWait):
            return self.mem.bulk_done(c.thread)
        return True

    def runnable(self) -> list[Cta]:
        """Resident CTAs that can execute their next operation now, in launch order."""
        return [c for c in self.live if self.can_step(c)]

    def would_progress(self, c: Cta) -> bool:
        """A step of ``c`` changes more than its view (a poll would succeed reading the newest value)."""
        if not self.can_step(c):
            return False
        op = c.op
        if isinstance(op, Poll) and c.wait is None:
            clock = self.mem.clock
            if c.poll_cache is None or c.poll_cache[0] != clock:  # only a landing can change the answer
                c.poll_cache = (clock, self.mem.readable(c.thread, op.loc)[0].value == op.expect)
            return c.poll_cache[1]
        return True

    def step(self, c: Cta, pick: int = 0) -> str:
        """Execute ``c``'s next operation; returns a one-line description."""
        m, t, op = self.mem, c.thread, c.op
        self._attempt = ("step", c, op, c.wait is not None)
        verbose = self.verbose
        if c.wait is not None:
            w, c.wait = c.wait, None
            old = m.complete_rmw(t, w, op.acquire)
            self._advance(c, old)
            return f"{c}: {op.ptx()} returns {old!r}" if verbose else ""
        if isinstance(op, St):
            m.issue(t, op.loc, op.value, release=op.release)
            self._advance(c, None)
            return f"{c}: {op.ptx()}" if verbose else ""
        if isinstance(op, BulkSt):
            m.issue(t, op.loc, op.value, proxy="async")
            self._advance(c, None)
            return f"{c}: {op.ptx()}" if verbose else ""
        if isinstance(op, (BulkWait, ProxyFence)):
            if isinstance(op, ProxyFence):
                m.proxy_fence(t)
            self._advance(c, None)
            return f"{c}: {op.ptx()}" if verbose else ""
        if isinstance(op, Fence):
            (m.fence_sc if op.sc else m.fence)(t, op.scope)
            self._advance(c, None)
            return f"{c}: {op.ptx()}" if verbose else ""
        if isinstance(op, Ld):
            v = m.load(t, op.loc, pick=pick, acquire=op.acquire, proxy=op.proxy)
            self._advance(c, v)
            return f"{c}: {op.ptx()} -> {v!r}" if verbose else ""
        if isinstance(op, Poll):
            v = m.load(t, op.loc, pick=pick, acquire=op.acquire)
            if v == op.expect:
                self._advance(c, v)
                return f"{c}: {op.ptx()}: read {v!r}, done" if verbose else ""
            c.spins += 1
            return f"{c}: {op.ptx()}: read {v!r}, spin" if verbose else ""
        if isinstance(op, Atom):
            add = op.add
            w = m.issue(t, op.loc, rmw=lambda old, add=add: old + add, release=op.release)
            if op.returns:
                c.wait = w
                return f"{c}: {op.ptx()} issued" if verbose else ""
            self._advance(c, None)
            return f"{c}: {op.ptx()}" if verbose else ""
        raise TypeError(f"{c} yielded {op!r}, not an operation")  # pragma: no cover - programs only yield ops

    # ---------------------------------------------------------------- memory events
    def memory_events(self) -> list[tuple[str, object]]:
        """``('land', write)`` for each landable write, then ``('ack', write)`` for each bulk store to ack."""
        return [("land", w) for w in self.mem.landable()] + [("ack", w) for w in self.mem.ackable()]

    def deliver(self, event: tuple[str, object]) -> str:
        kind, w = event
        self._attempt = event
        if kind == "land":
            self.mem.land(w)
            if not self.verbose:
                return ""
            what = f"{w.old!r}+ -> {w.value!r}" if w.rmw else repr(w.value)
            return f"land {fmt_loc(w.loc)} = {what} (from gpu{w.thread.gpu}.cta{w.thread.tid}, ts {w.ts})"
        self.mem.ack(w)
        return f"ack bulk store {fmt_loc(w.loc)} to gpu{w.thread.gpu}.cta{w.thread.tid}" if self.verbose else ""

    # ---------------------------------------------------------------- drain
    def fair_step(self, policy: DrainPolicy = DrainPolicy()) -> str | None:
        """One step of the drain's fixed policy: launch into a free slot if possible, else step a CTA that makes
        progress (round-robin), else deliver a memory event.  Returns its description, or None when nothing can
        change (finished, or deadlocked)."""
        gpus = self.launchable()
        if gpus:
            return self.launch(gpus[0])
        movers = [c for c in self.live if self.would_progress(c)]
        if movers:
            self._rr = (self._rr + 1) % len(movers)
            c = movers[self._rr]
            pick = 0
            if policy.stale_loads and isinstance(c.op, Ld) and c.wait is None:
                pick = 1 << 30
            return self.step(c, pick)
        events = self.memory_events()
        if not events:
            return None
        lands = [e for e in events if e[0] == "land"]
        acks = [e for e in events if e[0] == "ack"]
        if policy.land == "oldest":
            ev = lands[0] if lands else acks[0]
        else:  # acknowledge bulk stores before they land; land the newest write first
            ev = acks[0] if acks else lands[-1]
        return self.deliver(ev)

    def drain(self, policy: DrainPolicy = DrainPolicy(), max_steps: int = 200_000, log=None) -> DrainResult:
        """Run to completion with :meth:`fair_step`.  Returns ``finished=False`` with the stuck CTAs when no
        action can change the state (a deadlock) or ``max_steps`` pass (a livelock)."""
        for n in range(max_steps):
            if self.finished():
                return DrainResult(True, n)
            desc = self.fair_step(policy)
            if desc is None:
                stuck = ", ".join(f"{c} at {c.op.ptx()}" for c in self.live) or "no resident CTA"
                return DrainResult(False, n, f"deadlock: nothing can change; {stuck}")
            if log is not None:
                log(desc)
        return DrainResult(False, max_steps, "livelock: step limit reached")
