"""The link's sharing models (``Hardware.link_sharing``): FCFS reservations and the fair (processor-sharing)
:class:`~ctasim.machine.FairLink`, on cases small enough to work out by hand.

Units: a transfer's *work* is the channel time it needs alone (ns); a rate is a fraction of the channel.
"""

from __future__ import annotations

import dataclasses

import pytest
import simpy

from ctasim.engine import push_ns, simulate
from ctasim.machine import Fabric
from ctasim.spec import SpecError, Strategy, hardware_from_dict
from ctasim.strategies import build_plans
from tests.helpers import TINY, chain, finish_times, tiny_hw


def test_two_equal_transfers_started_together_end_together():
    # Each gets 1/2 of the channel: 100 ns of work takes 200 ns, for both.
    ends, _ = finish_times([(0, 100, 1.0), (0, 100, 1.0)])
    assert ends == pytest.approx([200, 200])


def test_two_unequal_transfers_started_together():
    # 0..200: both at 1/2; A (100) ends at 200, B has received 100 of 300.
    # 200..400: B alone at rate 1, its last 200 -> 400.
    ends, _ = finish_times([(0, 100, 1.0), (0, 300, 1.0)])
    assert ends == pytest.approx([200, 400])


def test_three_staggered_transfers():
    # A (t=0, 300), B (t=100, 100), C (t=150, 50), no cap.
    #   0..100: A alone, rate 1           -> A 200 left
    # 100..150: A, B at 1/2 (25 each)     -> A 175, B 75 left
    # 150..300: A, B, C at 1/3; C's 50 takes 150 -> C ends at 300; A 125, B 25 left
    # 300..350: A, B at 1/2; B's 25 takes 50      -> B ends at 350; A 100 left
    # 350..450: A alone                           -> A ends at 450 (= total work: nothing idles)
    ends, _ = finish_times([(0, 300, 1.0), (100, 100, 1.0), (150, 50, 1.0)])
    assert ends == pytest.approx([450, 350, 300])


def test_equal_caps_bind_below_the_fair_share():
    # Three transfers of 100 capped at 0.25: the fair share 1/3 is above the cap, so each runs at 0.25 -> 400
    # (the channel is a quarter idle).  Five: share 1/5 < 0.25 -> each at 0.2 -> 500.
    ends, _ = finish_times([(0, 100, 0.25)] * 3)
    assert ends == pytest.approx([400] * 3)
    ends, _ = finish_times([(0, 100, 0.25)] * 5)
    assert ends == pytest.approx([500] * 5)


def test_staggered_transfers_with_a_cap():
    # Cap 0.4 for all.  A, B (t=0, 100 each); C (t=100, 30).
    #   0..100: 2 active, min(0.4, 1/2) = 0.4 -> A, B 60 left
    # 100..190: 3 active, min(0.4, 1/3) = 1/3; C's 30 takes 90 -> C ends at 190; A, B 30 left
    # 190..265: 2 active, 0.4; 30 takes 75 -> A, B end at 265
    ends, _ = finish_times([(0, 100, 0.4), (0, 100, 0.4), (100, 30, 0.4)])
    assert ends == pytest.approx([265, 265, 190])


def test_unequal_caps_are_max_min_fair():
    # A (50, cap 0.1) and B (100, uncapped) together.  The equal share 1/2 is above A's cap, so A runs at 0.1
    # and B gets the rest, 0.9 (not 1/2): B ends at 100/0.9 = 111.1; A, never slowed, at 50/0.1 = 500.
    ends, _ = finish_times([(0, 50, 0.1), (0, 100, 1.0)])
    assert ends == pytest.approx([500, 100 / 0.9])
    # Three classes: caps 0.1, 0.3, 1 (work 10, 30, 60).  Water-filling: share 1/3 > 0.1 -> A at 0.1; the
    # remaining 0.9 over 2 = 0.45 > 0.3 -> B at 0.3; C gets 0.6.  All three end at 100 (10/0.1, 30/0.3, 60/0.6).
    ends, _ = finish_times([(0, 10, 0.1), (0, 30, 0.3), (0, 60, 1.0)])
    assert ends == pytest.approx([100, 100, 100])


def test_fcfs_and_fair_end_the_last_of_simultaneous_equal_transfers_together():
    # Four transfers of 1000 bytes at 100 GB/s (10 ns each) issued at t=0, no cap.  FCFS: one after another,
    # ending at 10, 20, 30, 40 (+ latency 10 on arrival); fair: each at 1/4, all ending at 40.
    fcfs = Fabric(tiny_hw())
    fcfs_arrivals = [fcfs.reserve(0.0, 0, 1, 1000.0, 100.0)[1] for _ in range(4)]
    assert fcfs_arrivals == pytest.approx([20, 30, 40, 50])
    ends, _ = finish_times([(0, 1000.0 / 100.0, 1.0)] * 4)
    assert ends == pytest.approx([40] * 4)
    assert max(ends) + 10 == pytest.approx(max(fcfs_arrivals))


def test_one_pending_wake_up_per_link_and_linear_work():
    # 1000 transfers at once, then as many staggered: the link schedules a wake-up per arrival at most (one
    # that must come earlier than the pending one) plus one per departure: O(n) SimPy events, not O(n^2).
    n = 1000
    ends, link = finish_times([(0, 1.0, 1.0)] * n + [(2000 + 0.5 * i, 1.0, 1.0) for i in range(n)])
    assert ends[:n] == pytest.approx([n] * n)  # all of the first batch end together, after n ns of work
    assert link.gen <= 3 * n and link.n == 0


def test_engine_fair_stores_of_one_wave_arrive_together():
    # The hand schedule of test_engine.test_ctapipe_schedule_by_hand under fair sharing: 4 producer tiles end
    # their compute at 100 + 1000 and store 327.68 ns of link each (no cap: the SM rate 1000 GB/s > link).
    # FCFS: arrivals 1100 + (i+1) * 327.68 + 10.  Fair: all four at 1/4 -> all at 1100 + 4 * 327.68 + 10.
    store = 128 * 128 * 2 / 100.0
    fair_hw = tiny_hw(link_sharing="fair")
    plan = build_plans(Strategy("ctapipe"), chain(2, m=512, k=128, n=128), fair_hw, 2, "t")[0]
    fair = simulate(plan, fair_hw)
    fcfs = simulate(build_plans(Strategy("ctapipe"), chain(2, m=512, k=128, n=128), tiny_hw(), 2, "t")[0], tiny_hw())
    arrive = 1100 + 4 * store + 10
    prod = fair.tiles[fair.tiles.gpu == 0]
    assert prod.t_store_end.tolist() == pytest.approx([arrive] * 4)
    assert prod.t_signal.tolist() == pytest.approx([arrive + 20 + 5] * 4)
    assert fcfs.tiles[fcfs.tiles.gpu == 0].sort_values("tile_m").t_store_end.tolist() == pytest.approx(
        [1100 + (i + 1) * store + 10 for i in range(4)])
    # The last store ends at the same time in both, and so does the run (the consumer waits for all four).
    cons = fair.tiles[fair.tiles.gpu == 1]
    assert cons.t_acquire.tolist() == pytest.approx([arrive + 25 + push_ns(fair_hw) + 4] * 4)
    assert fair.makespan_ns == pytest.approx(fcfs.makespan_ns)


def test_engine_fair_store_is_capped_by_the_sm_rate():
    # sm_remote_store_gbps = 20 (cap 20/100 = 0.2 of the link): 4 simultaneous stores get min(0.2, 1/4) = 0.2,
    # so each takes 327.68 / 0.2 = 1638.4 ns -> arrival 1100 + 1638.4 + 10.  Eight SMs' worth would share:
    # with sm_remote_store_gbps = 50 (cap 0.5), min(0.5, 1/4) = 1/4 -> 1100 + 4 * 327.68 + 10.
    store = 128 * 128 * 2 / 100.0
    for sm_gbps, took in ((20.0, store / 0.2), (50.0, 4 * store)):
        hw = tiny_hw(link_sharing="fair", sm_remote_store_gbps=sm_gbps)
        tr = simulate(build_plans(Strategy("ctapipe"), chain(2, m=512, k=128, n=128), hw, 2, "t")[0], hw)
        assert tr.tiles[tr.tiles.gpu == 0].t_store_end.tolist() == pytest.approx([1100 + took + 10] * 4)


def test_engine_fair_runs_copies_and_every_strategy_on_a_switch():
    from ctasim.invariants import check_trace

    for topo in ("direct", "switch"):
        hw = tiny_hw(link_sharing="fair", topology=topo)
        for kind, kw in (("microbatch", {"chunks": (2,)}), ("ctapipe", {}), ("ctapipe", {"persistent": False})):
            for plan in build_plans(Strategy(kind, **kw), chain(3, m=1024), hw, 3, "t"):
                check_trace(simulate(plan, hw, seed=1, jitter=0.1), plan)


def test_fair_sharing_across_switch_ports_is_refused():
    env = simpy.Environment()
    fabric = Fabric(tiny_hw(link_sharing="fair", topology="switch"), env)
    fabric.link(0, 2).submit(10.0)
    with pytest.raises(NotImplementedError, match="switch"):
        fabric.link(1, 2).submit(10.0)  # GPU 2's ingress port is busy with 0 -> 2


def test_link_sharing_is_validated():
    with pytest.raises(SpecError, match="link_sharing"):
        hardware_from_dict({**TINY, "link_sharing": "round-robin"})
    with pytest.raises(SpecError, match="epilogue_store_overlap"):
        hardware_from_dict({**TINY, "link_sharing": "fair", "epilogue_store_overlap": 0.5})
    assert hardware_from_dict(dict(TINY)).link_sharing == "fcfs"
    assert hardware_from_dict({**TINY, "link_sharing": "fair"}).link_sharing == "fair"
    with pytest.raises(ValueError, match="epilogue_store_overlap"):
        hw = dataclasses.replace(tiny_hw(), link_sharing="fair", epilogue_store_overlap=0.5)
        simulate(build_plans(Strategy("ctapipe"), chain(2), hw, 2, "t")[0], hw)
