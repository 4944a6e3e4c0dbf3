"""Litmus tests of the memory model, and an exhaustive explorer of their outcomes.

A litmus test is a few threads (each a CTA on a given GPU) running a few operations, and the question which
final register values the model allows.  :func:`outcomes` enumerates *every* schedule (which thread
steps -- all threads are resident from the start --, which pending write lands or bulk store is acknowledged, how stale each load reads) by stateless replay
(with a partial-order reduction, see :func:`_actions`) and returns the set of outcomes.  The tests in
``tests/protocol/test_protocol_litmus.py`` assert the allowed and forbidden outcomes written in docs/protocol.md.

Leaves out: loops (litmus programs are straight-line, so the enumeration is finite) and the protocol itself.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .memory import Memory
from .ops import Atom, BulkSt, BulkWait, Fence, Ld, ProxyFence, St
from .system import Kernel, System

__all__ = ["Litmus", "outcomes", "LITMUS", "litmus_tests"]


@dataclass(frozen=True)
class Litmus:
    """``threads``: (gpu, program) pairs; a program is ``f(regs) -> generator of ops`` that stores what it loads
    into ``regs``.  ``forbidden`` outcomes must never occur, ``allowed`` ones must be reachable.  Outcomes are
    tuples of ``regs`` values in the order of ``registers``."""

    name: str
    doc: str
    threads: tuple
    registers: tuple
    forbidden: frozenset = field(default_factory=frozenset)
    allowed: frozenset = field(default_factory=frozenset)
    finals: tuple = ()
    """Locations whose final value (after every write landed) is appended to the outcome."""


def _actions(system: System, floor: int) -> list:
    """Every choice at this point: thread steps (one per readable value for loads) of threads with launch index
    ``>= floor``, then memory events.

    Thread steps only touch their own thread and the pending pool (loads read landed memory, which only memory
    events change), so steps of different threads commute; between two memory events the explorer therefore
    runs threads in non-decreasing index order (a sound partial-order reduction: every schedule is equivalent
    to one it explores)."""
    acts = []
    for c in system.runnable():
        if c.cid < floor:
            continue
        if c.wait is None and isinstance(c.op, Ld):
            n = len(system.mem.readable(c.thread, c.op.loc, c.op.proxy))
            acts += [("step", c, pick) for pick in range(n)]
        else:
            acts.append(("step", c, 0))
    acts += [("deliver", ev) for ev in system.memory_events()]
    return acts


def _apply(system: System, act) -> None:
    if act[0] == "step":
        system.step(act[1], act[2])
    else:
        system.deliver(act[1])


def _build(test: Litmus):
    regs: dict = {}
    by_gpu: dict[int, list] = {}
    for gpu, prog in test.threads:
        by_gpu.setdefault(gpu, []).append(prog)
    kernels = [Kernel(g, 0, len(progs), (lambda c, progs=progs: progs[c.index](regs)), name=f"litmus.gpu{g}")
               for g, progs in by_gpu.items()]
    system = System(kernels, {g: len(p) for g, p in by_gpu.items()}, Memory(default=0))
    return system, regs


def outcomes(test: Litmus, limit: int = 1_000_000, reduce: bool = True) -> tuple[set, int]:
    """All outcomes of ``test`` over every schedule, and the number of schedules explored (``reduce=False``
    turns the partial-order reduction off, for checking it)."""
    found: set = set()
    stack: list[list[int]] = [[]]
    runs = 0
    while stack:
        prefix = stack.pop()
        system, regs = _build(test)
        while system.launchable():  # every thread is resident from the start (a late launch is a delay)
            system.launch(system.launchable()[0])
        choices = list(prefix)
        depth = 0
        floor = 0
        while True:
            acts = _actions(system, floor)
            if not acts:
                break
            if depth >= len(prefix):
                for j in range(1, len(acts)):
                    stack.append(choices[:depth] + [j])
                choices.append(0)
            act = acts[choices[depth]]
            floor = act[1].cid if (act[0] == "step" and reduce) else 0
            _apply(system, act)
            depth += 1
        if not system.finished():
            if system.runnable():
                continue  # only lower-index threads can move: a non-canonical order, explored elsewhere
            raise RuntimeError(f"litmus {test.name}: a schedule got stuck")
        found.add(tuple(regs.get(r) for r in test.registers) + tuple(system.mem.value(x) for x in test.finals))
        runs += 1
        if runs >= limit:
            raise RuntimeError(f"litmus {test.name}: more than {limit} schedules")
    return found, runs


# ---------------------------------------------------------------------------------------------- the tests
X0, Y1, DATA1, FLAG1, CTR1, DATA0, FLAG0 = (("x", 0), ("y", 1), ("data", 1), ("flag", 1), ("ctr", 1),
                                            ("data", 0), ("flag", 0))


def _mp(name, doc, *, fence=None, release=None, acquire="sys", acq_fence=None, bulk=False, proxy_fence=True,
        bulk_load=False, load_proxy_fence=True, gpus=(0, 1), locs=(DATA1, FLAG1), forbid=True):
    """Message passing: the producer writes data then flag; the consumer reads flag then data."""
    data, flag = locs

    def producer(regs):
        if bulk:
            yield BulkSt(data, 1)
            yield BulkWait()
            if proxy_fence:
                yield ProxyFence()
        else:
            yield St(data, 1)
        if fence:
            yield Fence(fence)
        yield St(flag, 1, release=release)

    def consumer(regs):
        regs["r0"] = yield Ld(flag, acquire=acquire)
        if acq_fence:
            yield Fence(acq_fence)
        if bulk_load and load_proxy_fence:
            yield ProxyFence()
        regs["r1"] = yield Ld(data, proxy="async" if bulk_load else "generic")

    bad = frozenset({(1, 0)})
    return Litmus(name, doc, ((gpus[0], producer), (gpus[1], consumer)), ("r0", "r1"),
                  forbidden=bad if forbid else frozenset(),
                  allowed=frozenset({(0, 0), (1, 1), (0, 1)}) | (frozenset() if forbid else bad))


def _sb(name, doc, sc: bool):
    def t0(regs):
        yield St(X0, 1)
        yield Fence("sys", sc=sc)
        regs["r0"] = yield Ld(Y1)

    def t1(regs):
        yield St(Y1, 1)
        yield Fence("sys", sc=sc)
        regs["r1"] = yield Ld(X0)

    both0 = frozenset({(0, 0)})
    return Litmus(name, doc, ((0, t0), (1, t1)), ("r0", "r1"),
                  forbidden=both0 if sc else frozenset(),
                  allowed=frozenset({(0, 1), (1, 0), (1, 1)}) | (frozenset() if sc else both0))


def _corr():
    def w(regs):
        yield St(DATA1, 1)
        yield St(DATA1, 2)

    def r(regs):
        regs["r0"] = yield Ld(DATA1)
        regs["r1"] = yield Ld(DATA1)

    return Litmus("CoRR", "coherence: two reads of one location never see its writes in reverse order",
                  ((0, w), (1, r)), ("r0", "r1"),
                  forbidden=frozenset({(2, 1), (2, 0), (1, 0)}),
                  allowed=frozenset({(0, 0), (0, 1), (0, 2), (1, 1), (1, 2), (2, 2)}))


def _coww():
    def w(regs):
        yield St(DATA1, 1)
        yield St(DATA1, 2)

    return Litmus("CoWW", "coherence: one thread's two writes to a location land in program order (final value)",
                  ((0, w),), (), finals=(DATA1,), forbidden=frozenset({(1,)}), allowed=frozenset({(2,)}))


def _cowr():
    def t(regs):
        yield St(DATA1, 1)
        regs["r0"] = yield Ld(DATA1)

    return Litmus("CoWR", "a thread always reads its own latest write (store forwarding)",
                  ((0, t),), ("r0",), forbidden=frozenset({(0,)}), allowed=frozenset({(1,)}))


def _atomics():
    def t(name):
        def prog(regs):
            regs[name] = yield Atom(CTR1, 1)
        return prog

    return Litmus("atomic-add", "two remote atom.add never lose an update: they return 0 and 1, final 2",
                  ((0, t("a")), (0, t("b"))), ("a", "b"), finals=(CTR1,),
                  forbidden=frozenset({(0, 0, 1), (1, 1, 1)}), allowed=frozenset({(0, 1, 2), (1, 0, 2)}))


def _counter_chain(acquire_fence: bool, release_fence: bool = True):
    """The scoreboard pattern: P0 writes data, releases, increments; P1 increments, sees it is last, acquires,
    publishes a flag with release; C acquires the flag and reads P0's data."""
    def p0(regs):
        yield St(DATA1, 1)
        if release_fence:
            yield Fence("sys")
        yield Atom(CTR1, 1)

    def p1(regs):
        old = yield Atom(CTR1, 1)
        if old == 1:
            if acquire_fence:
                yield Fence("sys")
            yield St(FLAG1, 1, release="sys")

    def c(regs):
        regs["r0"] = yield Ld(FLAG1, acquire="sys")
        regs["r1"] = yield Ld(DATA1)

    ok = release_fence and acquire_fence
    name = "counter-chain" + ("" if ok else ("-no-acquire" if release_fence else "-no-release"))
    doc = ("cumulativity through the scoreboard: the last incrementer's release carries the other producers' "
           "data only if they released before incrementing and it acquired after")
    bad = frozenset({(1, 0)})
    return Litmus(name, doc, ((0, p0), (0, p1), (1, c)), ("r0", "r1"),
                  forbidden=bad if ok else frozenset(), allowed=frozenset({(1, 1)}) | (frozenset() if ok else bad))


def litmus_tests() -> list[Litmus]:
    """Every litmus test of docs/protocol.md."""
    return [
        _mp("MP+fence.sys", "message passing across GPUs, fence.acq_rel.sys then st; ld.acquire.sys",
            fence="sys"),
        _mp("MP+st.release.sys", "message passing across GPUs with st.release.sys / ld.acquire.sys",
            release="sys"),
        _mp("MP-nofence", "message passing across GPUs without a fence: data may land after the flag",
            forbid=False),
        _mp("MP+fence.gpu", "message passing across GPUs with only a gpu-scope fence: not enough",
            fence="gpu", forbid=False),
        _mp("MP+fence.sys+ld.relaxed", "the consumer polls with a relaxed load: its data read may be stale",
            fence="sys", acquire=None, forbid=False),
        _mp("MP+fence.sys+ld.relaxed+fence", "relaxed load followed by fence.acq_rel.sys (acquire pattern)",
            fence="sys", acquire=None, acq_fence="sys"),
        _mp("MP+fence.gpu-same-gpu", "message passing within one GPU: gpu scope suffices",
            fence="gpu", acquire="gpu", gpus=(0, 0), locs=(DATA0, FLAG0)),
        _mp("MP-tma+proxy", "TMA store, wait_group, fence.proxy.async, fence.sys, flag: ordered",
            fence="sys", bulk=True),
        _mp("MP-tma-noproxy", "TMA store without fence.proxy.async: the generic fence does not order it",
            fence="sys", bulk=True, proxy_fence=False, forbid=False),
        _mp("MP-tmaload+proxy", "acquire, fence.proxy.async, then a TMA load of the data: ordered",
            fence="sys", bulk_load=True),
        _mp("MP-tmaload-noproxy", "acquire then a TMA load without fence.proxy.async: may be stale",
            fence="sys", bulk_load=True, load_proxy_fence=False, forbid=False),
        _sb("SB+fence.acq_rel", "store buffering with acq_rel fences: both reads may miss the other's write",
            sc=False),
        _sb("SB+fence.sc", "store buffering with fence.sc.sys: at least one read sees the other's write", sc=True),
        _corr(),
        _coww(),
        _cowr(),
        _atomics(),
        _counter_chain(True),
        _counter_chain(False),
        _counter_chain(True, release_fence=False),
    ]


LITMUS = {t.name: t for t in litmus_tests()}
