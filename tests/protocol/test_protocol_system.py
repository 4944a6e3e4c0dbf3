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


def test_resident_slots_are_never_exceeded():
    run = Run(Setup(Chain(2, (3, 3), 1), epochs=2, slots=(2, 1)))
    most = {0: 0, 1: 0}
    while True:
        for g in most:
            most[g] = max(most[g], sum(1 for c in run.system.live if c.gpu == g))
        if run.system.fair_step() is None:
            break
    assert run.system.finished()
    assert most == {0: 2, 1: 1}


def test_deadlock_is_reported():
    def waiter(c):
        yield Poll(("flag", 0), 1, acquire="sys")

    s = System([Kernel(0, 0, 1, waiter)], {0: 1}, Memory(default=0))
    r = s.drain()
    assert not r.finished and "deadlock" in r.reason and "flag@gpu0" in r.reason


def test_kernel_waits_for_its_dependencies():
    def writer(c):
        yield St(("x", 1), 1)

    a = Kernel(0, 0, 1, writer)
    b = Kernel(1, 0, 1, writer, after=[a])
    s = System([a, b], {0: 1, 1: 1}, Memory(default=0))
    assert s.launchable() == [0]
    s.launch(0)
    s.step(s.live[0])
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
