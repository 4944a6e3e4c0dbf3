"""ctasim.machine's entities by themselves (what `python bench/mutation.py machine` showed no test asserted): the
scoreboard and work-queue the engine inlines, the fabric's ports and messages, and the fair link's edges (caps at
the bounds of (0, 1], a capped class of several transfers, the order of simultaneous ends, a stale wake-up, a
finish point the clock has passed by rounding, a zero-work transfer, a long one)."""

from __future__ import annotations

import pytest
import simpy

from ctasim.machine import Fabric, FairLink, ProtocolError, Scoreboard, WorkQueue
from tests.helpers import finish_times, tiny_hw


def _ends(transfers):
    """``(start_ns, work_ns, cap)`` transfers on one fair link: their end times."""
    return finish_times(transfers)[0]


# ----------------------------------------------------------------------------------------------- scoreboard
def test_scoreboard_counts_down_once_and_keeps_the_latest_signal():
    sb = Scoreboard([2, 1.0])
    assert sb.remaining == [2, 1] and all(type(r) is int for r in sb.remaining)
    assert sb.last_signal_ns == [0.0, 0.0]
    assert sb.signal(0, 50.0) is False and sb.remaining == [1, 1]
    assert sb.signal(0, 30.0) is True and sb.remaining == [0, 1]
    assert sb.last_signal_ns == [50.0, 0.0]  # the later of the two
    assert sb.signal(1, 0.5) is True and sb.last_signal_ns == [50.0, 0.5]
    with pytest.raises(ProtocolError) as e:
        sb.signal(0, 80.0)
    assert str(e.value) == "scoreboard counter 0 signalled after it reached zero"
    assert sb.remaining == [0, 0] and sb.last_signal_ns == [50.0, 0.5]


# ----------------------------------------------------------------------------------------------- work-queue
def test_work_queue_reserves_and_claims_each_slot_once():
    q = WorkQueue(2)
    assert (q.capacity, q.head, q.tail, q.tile, q.visible_ns) == (2, 0, 0, [-1, -1], [float("inf")] * 2)
    assert q.reserve(7, 100.0) == 0 and (q.tail, q.tile, q.visible_ns) == (1, [7, -1], [100.0, float("inf")])
    assert q.reserve(9, 90.0) == 1 and (q.tail, q.tile, q.visible_ns) == (2, [7, 9], [100.0, 90.0])
    with pytest.raises(ProtocolError) as e:
        q.reserve(3, 1.0)
    assert str(e.value) == "work-queue overflow: slot 2 >= capacity 2"
    assert q.tail == 2 and q.tile == [7, 9]
    assert [q.claim(), q.claim(), q.claim(), q.claim()] == [0, 1, -1, -1]
    assert q.head == 2


# ----------------------------------------------------------------------------------------------- fabric
def test_fcfs_ports_direct_and_switch():
    direct = Fabric(tiny_hw())
    assert direct.reserve(0.0, 0, 1, 1000.0, 100.0) == (0.0, 20.0)  # 10 ns of work + 10 ns latency
    assert direct.reserve(0.0, 1, 0, 1000.0, 100.0) == (0.0, 20.0)  # the other direction: its own channel
    assert direct.reserve(5.0, 0, 1, 1000.0, 100.0) == (10.0, 30.0)  # behind the first
    assert direct.reserve(50.0, 0, 1, 500.0, 100.0) == (50.0, 65.0)  # the channel is free again
    switch = Fabric(tiny_hw(topology="switch"))
    assert switch.reserve(0.0, 0, 1, 1000.0, 100.0) == (0.0, 20.0)
    assert switch.reserve(0.0, 2, 1, 1000.0, 100.0) == (10.0, 30.0)  # GPU 1's ingress port
    assert switch.reserve(0.0, 0, 3, 1000.0, 100.0) == (10.0, 30.0)  # GPU 0's egress port
    assert switch.reserve(0.0, 1, 0, 1000.0, 100.0) == (0.0, 20.0)  # GPU 1's egress, GPU 0's ingress: free


def test_fabric_link_needs_the_environment():
    with pytest.raises(ValueError) as e:
        Fabric(tiny_hw(link_sharing="fair")).link(0, 1)
    assert str(e.value) == "Fabric.link needs the SimPy environment (Fabric(hw, env))"


def test_fair_links_ports_names_and_the_refusal_message():
    env = simpy.Environment()
    switch = Fabric(tiny_hw(link_sharing="fair", topology="switch"), env)
    link = switch.link(0, 2)
    assert switch.link(0, 2) is link
    assert (link.name, link.ports) == ("0->2", (("out", 0), ("in", 2)))
    link.submit(10.0)
    with pytest.raises(NotImplementedError) as e:
        switch.link(1, 2).submit(10.0)
    assert str(e.value) == ("fair link sharing: port ('in', 2) is used by transfers 0->2 and 1->2 at once (sharing "
                            "across switch ports is not modelled; use link_sharing = 'fcfs')")
    with pytest.raises(NotImplementedError) as e:
        switch.link(0, 3).submit(10.0)
    assert str(e.value).startswith("fair link sharing: port ('out', 0) is used by transfers 0->2 and 0->3 at once")
    # direct topology: a channel per ordered pair, no ports to share
    direct = Fabric(tiny_hw(link_sharing="fair"), env)
    assert direct.link(0, 2).ports == () and direct.link(1, 2).name == "1->2"
    direct.link(0, 2).submit(10.0)
    direct.link(1, 2).submit(10.0)
    assert FairLink(env).name == ""


def test_a_switch_port_passes_to_another_link_once_the_first_is_idle():
    env = simpy.Environment()
    fabric = Fabric(tiny_hw(link_sharing="fair", topology="switch"), env)
    ends = {}

    def send(name, src, dst, start, work):
        yield env.timeout(start)
        yield fabric.link(src, dst).submit(work)
        ends[name] = env.now

    env.process(send("a", 0, 2, 0.0, 10.0))
    env.process(send("b", 1, 2, 20.0, 10.0))  # GPU 2's ingress, after a's transfer ended
    env.run()
    assert ends == {"a": 10.0, "b": 30.0}


# ----------------------------------------------------------------------------------------------- fair link
def test_caps_must_be_within_0_and_1():
    link = FairLink(simpy.Environment())
    for cap in (0.0, -0.5, 1.5):
        with pytest.raises(ValueError) as e:
            link.submit(10.0, cap)
        assert str(e.value) == f"a transfer's cap must be within (0, 1], got {cap}"
    assert link.n == 0
    link.submit(10.0, 1.0)
    assert link.n == 1


def test_a_capped_class_of_two_leaves_the_rest_to_the_uncapped():
    # Two transfers capped at 0.1 (work 10 each) and one uncapped (work 80): the capped class takes 2 x 0.1, the
    # uncapped one the remaining 0.8. All three end at 100.
    assert _ends([(0, 10, 0.1), (0, 10, 0.1), (0, 80, 1.0)]) == pytest.approx([100, 100, 100])


def test_simultaneous_ends_are_reported_in_submission_order_and_stale_wake_ups_ignored():
    env = simpy.Environment()
    calls = []  # (time a callback is scheduled for, what)

    def schedule(t, fn):
        calls.append((t, getattr(fn, "__name__", "wake")))
        env.timeout(t - env.now).callbacks.append(lambda _ev: fn())

    link = FairLink(env, schedule=schedule)
    done = []

    def a():
        done.append(("a", env.now))

    def b():
        done.append(("b", env.now))

    def c():
        done.append(("c", env.now))

    link.submit(100.0, done=a)  # alone: ends at 100
    link.submit(10.0, done=b)  # both at 1/2: b ends at 20, a has 90 left then -> 110
    env.run()
    assert done == [("b", 20.0), ("a", 110.0)]
    # the wake-up planned for 100 went stale when b arrived: it plans nothing when it fires
    assert calls == [(100.0, "<lambda>"), (20.0, "<lambda>"), (20.0, "b"), (110.0, "<lambda>"), (110.0, "a")]
    # two equal transfers end together: their callbacks in the order they were submitted
    done.clear()
    link.submit(10.0, done=c)
    link.submit(10.0, done=a)
    link.submit(10.0, done=b)
    env.run()
    assert done == [("c", 140.0), ("a", 140.0), ("b", 140.0)]


def test_a_finish_point_the_clock_passed_by_rounding_is_due_now():
    # At 1.1 the first transfer's virtual clock has run a rounding error past its finish point
    # (0.1 + 0.7 / 0.7 = 1.0999999999999999 < 1.1): its end is planned at now, not in the past.
    #   0.1..1.1: B (cap 0.3) at 0.3, A at 0.7 -> A ends at 1.1, B has 1/30 left
    #   1.1..: B at 0.3, C at 0.7 -> B ends at 1.1 + (1/30)/0.3; C, 0.1 - 0.7 x (1/9) left, then alone
    ends = _ends([(0.1, 0.7, 1.0), (0.1, 1 / 3, 0.3), (1.1, 0.1, 1.0)])
    t_b = 1.1 + (1 / 30) / 0.3
    assert ends == pytest.approx([1.1, t_b, t_b + (0.1 - 0.7 * (t_b - 1.1))])


def test_a_zero_work_transfer_ends_at_once_and_a_long_one_on_time():
    assert _ends([(5.0, 0.0, 1.0)]) == [5.0]
    assert _ends([(0.0, 0.0, 1.0), (0.0, 10.0, 1.0)]) == pytest.approx([0.0, 10.0])
    # 2 ms alone: the virtual clock reaches 2e6, where the finish test's slack is 1e-6 + 2e-6 ns
    assert _ends([(0.0, 2e6, 1.0)]) == [2e6]
    assert _ends([(0.0, 2e6, 1.0), (1e6, 1e6, 1.0)]) == pytest.approx([3e6, 3e6])
