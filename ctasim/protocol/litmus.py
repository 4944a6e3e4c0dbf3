"""Litmus tests from the PTX memory model's published sources, and an exhaustive explorer of their outcomes.

A litmus test is a few threads (each placed on a GPU, a CTA and a cluster) running a few operations, and a
question about the final registers: a ``forbid`` condition no execution may satisfy, or a ``permit`` condition
some execution must satisfy.  Every test names its **source** and the **official verdict** there:

* ``PTX ISA`` -- the litmus tests of the PTX ISA's Memory Consistency Model chapter (section 8.10-8.11 of
  https://docs.nvidia.com/cuda/parallel-thread-execution/ , "Axioms" and "Special Cases");
* ``mixedproxy`` -- the test suite of NVIDIA's mixed-proxy model artifact (github.com/NVlabs/mixedproxy, commit
  0807da2, tests/*.test; Lustig, Cooksey, Giroux, ISCA 2022), whose ``assert`` / ``permit`` lines are the verdicts
  of its Alloy model;
* ``derived`` -- tests of this project, each a one-step variation of an official test whose verdict follows from
  the cited PTX rule (they pin the rules the protocol relies on: proxies, scopes across GPUs, the scoreboard).

:data:`INEXPRESSIBLE` lists the official tests the model cannot run, with the reason.  :func:`outcomes`
enumerates *every* schedule (thread steps, load picks and deferrals, landings with each atomic's choices,
acknowledgements, deferred-load resolutions) by stateless replay, with a partial-order reduction: between two
memory events, thread steps run in non-decreasing thread order (they touch only their own thread and the pending
pool); ``fence.sc`` and barrier steps do not commute and reset the order.

Leaves out: loops (litmus programs are straight-line, so the enumeration is finite) and the protocol itself.
"""

from __future__ import annotations

from dataclasses import dataclass

from .memory import Memory
from .ops import Atom, Bar, BulkSt, BulkWait, ClusterSync, Fence, Ld, ProxyFence, St
from .system import Kernel, System

__all__ = ["T", "Litmus", "outcomes", "verdict", "LITMUS", "litmus_tests", "INEXPRESSIBLE"]


@dataclass(frozen=True)
class T:
    """A litmus thread: its program ``f(regs) -> generator``, GPU, CTA and cluster (``cluster=None``: its own)."""

    prog: object
    gpu: int = 0
    cta: int = 0
    cluster: int | None = None


@dataclass(frozen=True)
class Litmus:
    """``check`` is ``("forbid", pred)`` or ``("permit", pred)``; ``pred(outcome)`` sees a dict of the registers
    and of the ``finals`` locations' last values."""

    name: str
    source: str
    verdict: str
    threads: tuple
    check: tuple
    finals: tuple = ()
    doc: str = ""
    model: str = ""
    """The verdict the model must give, where it is not the official one (sources that disagree); else empty."""

    @property
    def expected(self) -> str:
        return self.model or self.check[0]


def _build(test: Litmus):
    regs: dict = {}
    by_gpu: dict[int, dict] = {}
    for th in test.threads:
        cl = th.cluster if th.cluster is not None else ("cta", th.cta)
        by_gpu.setdefault(th.gpu, {}).setdefault(cl, []).append(th)
    kernels, slots = [], {}
    for gpu, clusters in by_gpu.items():
        units = list(clusters.values())
        blocks = max(len({t.cta for t in u}) for u in units)

        def program(c, units=units):
            ths = units[c.index]
            ctas = sorted({t.cta for t in ths})
            return [(ctas.index(t.cta), t.prog(regs)) for t in ths]

        kernels.append(Kernel(gpu, 0, len(units), program, name=f"litmus.gpu{gpu}", blocks=blocks))
        slots[gpu] = len(units) * blocks
    system = System(kernels, slots, Memory(default=0))
    system.verbose = False
    return system, regs


def _value(v):
    return getattr(v, "value", v)


def outcomes(test: Litmus, limit: int = 2_000_000, reduce: bool = True) -> tuple[list, int]:
    """All outcomes of ``test`` (dicts) over every schedule, and the number of schedules explored
    (``reduce=False`` turns the partial-order reduction off, for checking it)."""
    found: dict = {}
    stack: list[list[int]] = [[]]
    runs = 0
    while stack:
        prefix = stack.pop()
        system, regs = _build(test)
        while system.launchable():
            system.launch(system.launchable()[0])
        choices = list(prefix)
        depth = 0
        floor = 0
        while True:
            acts = [a for a in system.actions()
                    if not (reduce and a[0] in ("step", "resolve") and a[1].cid < floor)]
            if not acts:
                break
            if depth >= len(prefix):
                for j in range(1, len(acts)):
                    stack.append(choices[:depth] + [j])
                choices.append(0)
            act = acts[choices[depth]]
            if act[0] in ("step", "resolve") and reduce:
                op = act[1].op
                barrier = act[0] == "step" and (isinstance(op, (Bar, ClusterSync))
                                                or (isinstance(op, Fence) and op.sc))
                floor = 0 if barrier else act[1].cid
            else:
                floor = 0
            system.apply(act)
            depth += 1
        if not system.finished():
            if system.actions():
                continue  # only lower-index threads can move: a non-canonical order, explored elsewhere
            raise RuntimeError(f"litmus {test.name}: a schedule got stuck: {system.stuck()}")
        out = {k: _value(v) for k, v in regs.items()}
        for loc in test.finals:
            out[loc] = system.mem.value(loc)
        found.setdefault(tuple(sorted(out.items(), key=str)), out)
        runs += 1
        if runs >= limit:
            raise RuntimeError(f"litmus {test.name}: more than {limit} schedules")
    return list(found.values()), runs


def verdict(test: Litmus) -> tuple[str, list, int]:
    """The model's verdict: ``"forbid"`` (no outcome satisfies the condition) or ``"permit"``, the outcomes, and
    the schedules explored."""
    outs, runs = outcomes(test)
    pred = test.check[1]
    return ("permit" if any(pred(o) for o in outs) else "forbid"), outs, runs


# ---------------------------------------------------------------------------------------------- helpers
X, Y, DATA, FLAG, FLAG2, CTR = ("x", 0), ("y", 0), ("data", 0), ("flag", 0), ("flag2", 0), ("ctr", 0)
PTX = "PTX ISA 8.10-8.11"
MP_REPO = "mixedproxy 0807da2"


def _prog(*ops_or_loads):
    """A straight-line program: items are ops, or ``("r0", Ld(...))`` pairs that store the load's value."""
    def prog(regs):
        for item in ops_or_loads:
            if isinstance(item, tuple):
                reg, op = item
                regs[reg] = yield op
            else:
                yield item
    return prog


def R(reg, op):
    return (reg, op)


def litmus_tests() -> list[Litmus]:
    """Every litmus test of docs/protocol.md section 2."""
    t = []
    # -------------------------------------------------------------------- PTX ISA, chapter 8.10 / 8.11
    t.append(Litmus("PTX-Atomicity-1", f"{PTX} (8.10.3, Litmus Test 1)", "x == 2 (FINAL STATE)",
                    (T(_prog(R("a", Atom(X, 1, scope="sys"))), cta=0), T(_prog(R("b", Atom(X, 1, scope="sys"))), cta=1)),
                    ("forbid", lambda o: o[X] != 2), finals=(X,)))
    t.append(Litmus("PTX-Atomicity-2", f"{PTX} (8.10.3, Litmus Test 2)", "x == 1 OR x == 2: a lost update allowed",
                    (T(_prog(R("a", Atom(X, 1, scope="cta"))), cta=0), T(_prog(R("b", Atom(X, 1, scope="gpu"))), cta=1)),
                    ("permit", lambda o: o[X] == 1), finals=(X,)))

    def lb(dep: bool):
        def t0(regs):
            regs["r0"] = yield Ld(X, scope=None, dep=dep)
            yield St(Y, regs["r0"] if dep else 1, scope=None)

        def t1(regs):
            regs["r1"] = yield Ld(Y, scope=None, dep=dep)
            yield St(X, regs["r1"] if dep else 1, scope=None)
        return (T(t0, cta=0), T(t1, cta=1))

    t.append(Litmus("PTX-LB+deps", f"{PTX} (8.10.4, Load Buffering with true dependencies)",
                    "x == 0 AND y == 0 (no value out of thin air)", lb(True),
                    ("forbid", lambda o: o[X] != 0 or o[Y] != 0), finals=(X, Y)))
    t.append(Litmus("PTX-LB", f"{PTX} (8.10.4, Load Buffering without dependencies)",
                    "permitted: both loads read 1 (x == 1 AND y == 1)", lb(False),
                    ("permit", lambda o: o["r0"] == 1 and o["r1"] == 1), finals=(X, Y)))
    t.append(Litmus("PTX-CoRR", f"{PTX} (8.10.5, CoRR)", "IF r0 == 1 THEN r1 == 1",
                    (T(_prog(St(X, 1)), cta=0), T(_prog(R("r0", Ld(X)), R("r1", Ld(X))), cta=1)),
                    ("forbid", lambda o: o["r0"] == 1 and o["r1"] != 1)))
    t.append(Litmus("PTX-MP", f"{PTX} (8.10.6, Message Passing; fence.sys = fence.acq_rel.sys)",
                    "IF r0 == 1 THEN r1 == 1",
                    (T(_prog(St(DATA, 1, scope=None), Fence("sys"), St(FLAG, 1)), cta=0),
                     T(_prog(R("r0", Ld(FLAG)), Fence("sys"), R("r1", Ld(DATA, scope=None))), cta=1)),
                    ("forbid", lambda o: o["r0"] == 1 and o["r1"] != 1)))
    for sc in (True, False):
        f = Fence("sys", sc=sc)
        t.append(Litmus("PTX-SB" if sc else "PTX-SB+acq_rel",
                        f"{PTX} (8.10.6, Store Buffering" + (")" if sc else "; its fence.acq_rel variant)"),
                        "r0 == 1 OR r1 == 1" if sc else "both loads may return 0",
                        (T(_prog(St(X, 1, scope=None), f, R("r0", Ld(Y, scope=None))), cta=0),
                         T(_prog(St(Y, 1, scope=None), f, R("r1", Ld(X, scope=None))), cta=1)),
                        ("forbid" if sc else "permit", lambda o: o["r0"] == 0 and o["r1"] == 0)))
    t.append(Litmus("PTX-MP-red", f"{PTX} (8.11.1, Message Passing with a Red Instruction)",
                    "permitted: r1 == 0 AND flag == 2",
                    (T(_prog(St(X, 42, scope=None), St(FLAG, 1, release="gpu")), cta=0),
                     T(_prog(Atom(FLAG, 1, returns=False, scope="sys"), Fence("gpu"), R("r1", Ld(X, scope=None))),
                       cta=1)),
                    ("permit", lambda o: o["r1"] == 0 and o[FLAG] == 2), finals=(FLAG,)))
    # -------------------------------------------------------------------- NVlabs/mixedproxy tests/
    t.append(Litmus("MP-ISA2", f"{MP_REPO} tests/ISA2.test", "assert r2 == 42 (given r0 == 1, r1 == 1)",
                    (T(_prog(St(X, 42, scope=None), St(FLAG, 1, release="cta")), cta=0),
                     T(_prog(R("r0", Ld(FLAG, acquire="cta")), St(FLAG2, 1, release="gpu")), cta=0),
                     T(_prog(R("r1", Ld(FLAG2, acquire="gpu")), R("r2", Ld(X, scope=None))), cta=1)),
                    ("forbid", lambda o: o["r0"] == 1 and o["r1"] == 1 and o["r2"] != 42)))
    for name, rel, ctas in (("MP_cta", "cta", (0, 0)), ("MP_gpu", "gpu", (0, 1))):
        t.append(Litmus(f"MP-{name}", f"{MP_REPO} tests/{name}.test (row st [x] / ld [x])",
                        "assert r1 == 2 (given r0 == 1)",
                        (T(_prog(St(X, 2, scope=None), St(FLAG, 1, release=rel)), cta=ctas[0]),
                         T(_prog(R("r0", Ld(FLAG, acquire=rel)), R("r1", Ld(X, scope=None))), cta=ctas[1])),
                        ("forbid", lambda o: o["r0"] == 1 and o["r1"] != 2)))
    t.append(Litmus("MP-SB_cta", f"{MP_REPO} tests/SB_cta.test", "assert r0 == 2 || r1 == 1",
                    (T(_prog(St(X, 1, scope=None), Fence("cta", sc=True), R("r0", Ld(Y, scope=None))), cta=0),
                     T(_prog(St(Y, 2, scope=None), Fence("cta", sc=True), R("r1", Ld(X, scope=None))), cta=0)),
                    ("forbid", lambda o: o["r0"] != 2 and o["r1"] != 1)))
    acq_rel_gpu = dict(release="gpu", acquire="gpu", scope="gpu")
    t.append(Litmus("MP-SB_rmw", f"{MP_REPO} tests/SB_rmw.test", "assert r2 != 0 || r4 != 0",
                    (T(_prog(R("r1", Atom(X, 1, **acq_rel_gpu)), R("r2", Atom(Y, 1, **acq_rel_gpu))), cta=0),
                     T(_prog(R("r3", Atom(Y, 1, **acq_rel_gpu)), R("r4", Atom(X, 1, **acq_rel_gpu))), cta=1)),
                    ("forbid", lambda o: o["r2"] == 0 and o["r4"] == 0)))
    t.append(Litmus("MP-SB_rmw_2", f"{MP_REPO} tests/SB_rmw_2.test", "permit r2 == 0 && r3 == 0",
                    (T(_prog(R("r1", Atom(X, 1, **acq_rel_gpu)), R("r2", Atom(Y, 1, **acq_rel_gpu))), cta=0),
                     T(_prog(St(Y, 1, scope="gpu"), R("r3", Ld(X, scope="gpu"))), cta=1)),
                    ("permit", lambda o: o["r2"] == 0 and o["r3"] == 0)))
    t.append(Litmus("MP-CoMP_volatile", f"{MP_REPO} tests/CoMP_volatile.test (volatile = relaxed.sys)",
                    "permit r1 != 2 (given r0 == 2)",
                    (T(_prog(St(X, 1, scope=None), St(X, 2, scope="sys")), cta=0),
                     T(_prog(R("r0", Ld(X, scope=None)), R("r1", Ld(X, scope="sys"))), cta=1)),
                    ("permit", lambda o: o["r0"] == 2 and o["r1"] != 2)))
    t.append(Litmus("MP-Release_acquire_pattern", f"{MP_REPO} tests/Release_acquire_pattern.test",
                    "permit r1 == 2 && r3 == 0 (the artifact); the PTX ISA 8.8 release pattern 2 "
                    "(st.release [M]; st.relaxed [M]) forbids it",
                    (T(_prog(St(Y, 1, scope=None), St(X, 1, release="sys"), St(X, 2, scope="sys")), cta=0),
                     T(_prog(R("r1", Ld(X, scope="sys")), Fence("sys"), R("r3", Ld(Y, scope=None))), cta=1)),
                    ("permit", lambda o: o["r1"] == 2 and o["r3"] == 0), model="forbid"))
    t.append(Litmus("MP-CoWR", f"{MP_REPO} tests/CoWR.test (row st [x] / ld [x])", "assert r0 == 1",
                    (T(_prog(St(X, 1, scope=None), R("r0", Ld(X, scope=None))), cta=0),),
                    ("forbid", lambda o: o["r0"] != 1)))
    # -------------------------------------------------------------------- derived: what the protocol relies on
    D1, F1 = ("data", 1), ("flag", 1)  # homes only name a GPU; scopes alone decide

    def mp(prod, cons, gpus=(0, 1)):
        return (T(_prog(*prod), gpu=gpus[0]), T(_prog(*cons), gpu=gpus[1]))

    acq = [R("r0", Ld(F1, acquire="sys")), R("r1", Ld(D1, scope=None))]
    stale = ("permit", lambda o: o["r0"] == 1 and o["r1"] == 0)
    ordered = ("forbid", lambda o: o["r0"] == 1 and o["r1"] == 0)
    t.append(Litmus("MP-2gpu+fence.sys", "derived from PTX-MP (two GPUs, sys scope)", "forbid stale data",
                    mp([St(D1, 1, scope=None), Fence("sys"), St(F1, 1)], acq), ordered))
    t.append(Litmus("MP-2gpu-nofence", "derived from PTX-MP (fence removed: no release pattern)", "permit stale data",
                    mp([St(D1, 1, scope=None), St(F1, 1)], acq), stale))
    t.append(Litmus("MP-2gpu+fence.gpu", "derived from PTX-MP (8.7: fence.gpu is not morally strong with a "
                    "thread of another GPU)", "permit stale data",
                    mp([St(D1, 1, scope=None), Fence("gpu"), St(F1, 1)], acq), stale))
    t.append(Litmus("MP-2gpu+relaxed-poll+fence.sc.gpu", "derived from PTX-MP (8.9.4: fence.sc.gpu on GPU 1 is not "
                    "morally strong with GPU 0's release)", "permit stale data",
                    mp([St(D1, 1, scope=None), Fence("sys"), St(F1, 1)],
                       [R("r0", Ld(F1)), Fence("gpu", sc=True), R("r1", Ld(D1, scope=None))]), stale))
    t.append(Litmus("MP-2gpu+relaxed-poll+fence.sys", "derived from PTX-MP (acquire pattern 3)", "forbid stale data",
                    mp([St(D1, 1, scope=None), Fence("sys"), St(F1, 1)],
                       [R("r0", Ld(F1)), Fence("sys"), R("r1", Ld(D1, scope=None))]), ordered))
    t.append(Litmus("MP-2gpu+relaxed-poll", "derived from PTX-MP (no acquire pattern)", "permit stale data",
                    mp([St(D1, 1, scope=None), Fence("sys"), St(F1, 1)],
                       [R("r0", Ld(F1)), R("r1", Ld(D1, scope=None))]), stale))
    t.append(Litmus("MP-2gpu+st.release.sys", "derived from PTX-MP (release pattern 1)", "forbid stale data",
                    mp([St(D1, 1, scope=None), St(F1, 1, release="sys")], acq), ordered))
    t.append(Litmus("MP-release-not-lasting", "derived from PTX-MP (8.8: a release operation releases only "
                    "through its own location)", "permit stale data",
                    mp([St(D1, 1, scope=None), St(("z", 1), 1, release="sys"), St(F1, 1)], acq), stale))
    t.append(Litmus("MP-1gpu+fence.gpu", "derived from PTX-MP (gpu scope inside one GPU)", "forbid stale data",
                    mp([St(D1, 1, scope=None), Fence("gpu"), St(F1, 1, scope="gpu")],
                       [R("r0", Ld(F1, acquire="gpu")), R("r1", Ld(D1, scope=None))], gpus=(0, 0)), ordered))
    t.append(Litmus("Atomicity-2gpu-gpu-scope", "derived from PTX-Atomicity-2 (both .gpu, two GPUs)",
                    "permit a lost update (x == 1)",
                    (T(_prog(R("a", Atom(X, 1, scope="gpu"))), gpu=0), T(_prog(R("b", Atom(X, 1, scope="gpu"))), gpu=1)),
                    ("permit", lambda o: o[X] == 1), finals=(X,)))
    t.append(Litmus("Atomicity-2gpu-sys", "derived from PTX-Atomicity-1 (two GPUs)", "x == 2",
                    (T(_prog(R("a", Atom(X, 1))), gpu=0), T(_prog(R("b", Atom(X, 1))), gpu=1)),
                    ("forbid", lambda o: o[X] != 2), finals=(X,)))
    # proxies (async proxy rules as the model states them; the mixed-proxy model's CTA-local proxy fences)
    tma = [BulkSt(D1, 1), BulkWait()]
    t.append(Litmus("MP-tma+proxy", "derived from PTX-MP + mixed-proxy (proxy fence on the path)", "forbid stale",
                    mp(tma + [ProxyFence(), Fence("sys"), St(F1, 1)], acq), ordered))
    t.append(Litmus("MP-tma-noproxy", "derived from PTX-MP + mixed-proxy (no proxy fence: 8.9.5 does not order "
                    "an async write before a generic read)", "permit stale",
                    mp(tma + [Fence("sys"), St(F1, 1)], acq), stale))
    tma_ld = [R("r0", Ld(F1, acquire="sys")), ProxyFence(), R("r1", Ld(D1, proxy="async", scope=None))]
    t.append(Litmus("MP-tmaload+proxy", "derived from PTX-MP + mixed-proxy", "forbid stale",
                    mp([St(D1, 1, scope=None), Fence("sys"), St(F1, 1)], tma_ld), ordered))
    t.append(Litmus("MP-tmaload-noproxy", "derived from PTX-MP + mixed-proxy", "permit stale",
                    mp([St(D1, 1, scope=None), Fence("sys"), St(F1, 1)], [tma_ld[0], tma_ld[2]]), stale))

    def handover(partner_fence: bool, same_cta: bool):
        """GPU 1: thread A acquires and proxy-fences, meets thread B at a barrier; B's TMA load reads the data."""
        prod = T(_prog(St(D1, 1, scope=None), Fence("sys"), St(F1, 1)), gpu=0)
        a = [R("r0", Ld(F1, acquire="sys")), ProxyFence(), Bar(1, 2) if same_cta else ClusterSync()]
        b = [Bar(1, 2) if same_cta else ClusterSync()] + ([ProxyFence()] if partner_fence else []) \
            + [R("r1", Ld(D1, proxy="async", scope=None))]
        return (prod, T(_prog(*a), gpu=1, cta=0, cluster=0), T(_prog(*b), gpu=1, cta=0 if same_cta else 1, cluster=0))

    t.append(Litmus("MP-handover-bar.sync", "derived from mixedproxy ptx.als proxy_fence_ops (a proxy fence acts on "
                    "its CTA) + PTX 8.9.4 (bar.sync synchronises)", "forbid stale",
                    handover(False, True), ordered))
    t.append(Litmus("MP-handover-cluster-partner-nofence", "derived from mixedproxy ptx.als proxy_fence_ops (the "
                    "leader CTA's proxy fence does not act on the partner CTA's TMA load)", "permit stale",
                    handover(False, False), stale))
    t.append(Litmus("MP-handover-cluster-partner-fence", "derived from mixedproxy ptx.als proxy_fence_ops + PTX "
                    "8.9.4 (barrier.cluster synchronises)", "forbid stale", handover(True, False), ordered))

    def chain(acquire_fence: bool, release_fence: bool, scope="sys"):
        """The scoreboard: P0 releases and increments; P1 increments, sees it is last, acquires, publishes."""
        def p0(regs):
            yield St(D1, 1, scope=None)
            if release_fence:
                yield Fence(scope)
            yield Atom(("ctr", 1), 1)

        def p1(regs):
            old = yield Atom(("ctr", 1), 1)
            if old == 1:
                if acquire_fence:
                    yield Fence("sys")
                yield St(F1, 1, release="sys")
        return (T(p0, gpu=0, cta=0), T(p1, gpu=0, cta=1), T(_prog(*acq), gpu=1))

    t.append(Litmus("counter-chain", "derived from PTX 8.9.2 (observation through atomics) + 8.9.5 (transitivity)",
                    "forbid stale", chain(True, True), ordered))
    t.append(Litmus("counter-chain-no-acquire", "derived (no acquire pattern at the last incrementer)",
                    "permit stale", chain(False, True), stale))
    t.append(Litmus("counter-chain-no-release", "derived (no release pattern before the first increment)",
                    "permit stale", chain(True, False), stale))
    t.append(Litmus("counter-chain-gpu-fence", "derived from MP-ISA2 (cumulativity: a .gpu release to a thread of "
                    "the same GPU, then that thread's .sys release)", "forbid stale", chain(True, True, "gpu"),
                    ordered))
    return t


LITMUS = {t.name: t for t in litmus_tests()}

INEXPRESSIBLE = {
    "PTX ISA 8.10.6 CoWR (virtual aliases + fence.proxy.alias)": "virtual aliases are not modelled",
    "mixedproxy tests/CoWR.test, MP_cta.test, MP_gpu.test (rows with sust/suld/tld, fence.proxy.surface/texture)":
        "surface and texture proxies are not modelled (only generic and async)",
    "mixedproxy tests/MP_cta_synonym.test, MP_gpu_synonym.test": "physical aliases are not modelled",
    "Lustig et al. ASPLOS 2019 (NVlabs/ptxmemorymodel)": "its artifact holds the Alloy model and the RC11 mapping "
        "proofs, no stand-alone litmus tests with verdicts were found; its examples are the PTX ISA's above",
}
"""Official tests the model cannot express, and why."""
