"""Kernels, resident slots, the drain and deadlock detection."""

from ctasim.protocol import CORRECT, MUTANTS, Chain, DrainPolicy, Run, Setup
from ctasim.protocol.memory import Memory
from ctasim.protocol.ops import Poll, St
from ctasim.protocol.system import Kernel, System


def test_correct_protocol_finishes_under_every_drain_policy():
    for land in ("oldest", "newest"):
        for stale in (False, True):
            for store in ("generic", "async"):
                run = Run(Setup(Chain(2, (2, 3, 2), 2), epochs=3, slots=(2, 1, 3), store_proxy=store,
                                load_proxy=store), CORRECT)
                assert run.finish(DrainPolicy(land, stale)).finished
                run = Run(Setup(Chain(2, (2, 2, 2), 1), epochs=2, slots=(1, 2, 3), store_proxy=store,
                                load_proxy=store, cluster=2), CORRECT)
                assert run.finish(DrainPolicy(land, stale)).finished


def test_resident_slots_are_never_exceeded():
    run = Run(Setup(Chain(2, (3, 3), 1), epochs=2, slots=(2, 1)))
    most = {0: 0, 1: 0}
    while True:
        for g in most:
            most[g] = max(most[g], sum(c.kernel.blocks for c in run.system.live if c.gpu == g))
        if run.system.fair_step() is None:
            break
    assert run.system.finished()
    assert most == {0: 2, 1: 1}


def test_deadlock_is_reported():
    def waiter(c):
        def t():
            yield Poll(("flag", 0), 1, acquire="sys")
        return [(0, t())]

    s = System([Kernel(0, 0, 1, waiter)], {0: 1}, Memory(default=0))
    r = s.drain()
    assert not r.finished and "deadlock" in r.reason and "flag@gpu0" in r.reason


def test_kernel_waits_for_its_dependencies():
    def writer(c):
        def t():
            yield St(("x", 1), 1)
        return [(0, t())]

    a = Kernel(0, 0, 1, writer)
    b = Kernel(1, 0, 1, writer, after=[a])
    s = System([a, b], {0: 1, 1: 1}, Memory(default=0))
    assert s.launchable() == [0]
    s.launch(0)
    s.step(s.threads[0])
    assert s.launchable() == []  # a returned but its write has not landed: not complete
    s.deliver(s.memory_events()[0])
    assert s.launchable() == [1]


def test_push_off_by_one_deadlocks_with_one_producer_tile():
    run = Run(Setup(Chain(1, (1, 1), 1)), MUTANTS["push-off-by-one"])
    try:
        run.finish()
    except AssertionError as err:
        assert err.invariant == 5
    else:
        raise AssertionError("expected a deadlock")


def test_bar_sync_hands_a_view_to_the_other_thread():
    from ctasim.protocol.ops import Bar, Ld

    got = {}

    def unit(c):
        def a():
            yield St(("x", 0), 1, scope=None)
            yield Bar(1, 2)

        def b():
            yield Bar(1, 2)
            got["x"] = yield Ld(("x", 0), scope=None)
        return [(0, a()), (0, b())]

    s = System([Kernel(0, 0, 1, unit)], {0: 1}, Memory(default=0))
    s.launch(0)
    a, b = s.threads
    s.step(b)  # b waits at the barrier
    assert not s.can_step(b)
    s.step(a)
    s.step(a)
    assert not s.can_step(b)  # released, but its floor for x is a's store, which has not landed
    s.deliver(s.memory_events()[0])
    assert s.can_step(b) and [w.value for w in s.mem.readable(b.mem, ("x", 0))] == [1]
    s.step(b)
    assert got["x"] == 1


def test_deferred_load_reads_later_from_its_issue_floor():
    from ctasim.protocol.ops import Ld

    regs = {}

    def unit(c):
        def t():
            regs["r"] = yield Ld(("x", 0), scope=None, dep=False)
            yield St(("y", 0), 1, scope=None)
        return [(0, t())]

    s = System([Kernel(0, 0, 1, unit)], {0: 1}, Memory(default=0))
    s.launch(0)
    thr = s.threads[0]
    s.step(thr, defer=True)
    assert not regs["r"].resolved
    s.step(thr)  # the store runs before the load has read
    assert s.resolvable() == [thr]
    s.resolve(thr)
    assert regs["r"].value == 0 and thr.done
