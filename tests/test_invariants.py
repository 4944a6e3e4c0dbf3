"""Invariant checks: every strategy's trace passes; each check fires on a trace broken in its own way."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from ctasim.engine import simulate
from ctasim.invariants import CHECKS, InvariantError, check_trace, find_violations
from ctasim.spec import Strategy
from ctasim.strategies import build_plans
from tests.helpers import chain, tiny_hw


@pytest.fixture(scope="module")
def pipelined():
    hw = tiny_hw()
    plan = build_plans(Strategy("ctapipe"), chain(3, m=1024, k=128, n=256), hw, 3, "t")[0]
    return plan, simulate(plan, hw, seed=1, jitter=0.05)


@pytest.mark.parametrize("kind, kw, gpus", [
    ("sequential", {}, 1), ("microbatch", {"chunks": (2, 4)}, 3), ("tp", {"tp_degree": 2}, 2),
    ("ctapipe", {}, 3), ("ctapipe", {"tile_source": "static"}, 3), ("ctapipe", {"persistent": False}, 3),
    ("hybrid", {"tp_degree": 2}, 4),
])
def test_every_strategy_passes(kind, kw, gpus):
    hw = tiny_hw()
    wl = chain(2 if kind in ("tp", "hybrid") else 3, m=1024, k=128, n=256)
    for plan in build_plans(Strategy(kind, **kw), wl, hw, gpus, "t"):
        check_trace(simulate(plan, hw, seed=2, jitter=0.05), plan)


def broken(trace, fn):
    t = trace.copy()
    fn(t)
    return t


def consumer_rows(plan, t):
    return t.tiles.index[(t.tiles.kernel == plan.pipes[0].consumer).to_numpy()]


def fires(plan, trace) -> set[str]:
    return {v.check for v in find_violations(trace, plan)}


def test_clean_trace_has_no_violations(pipelined):
    plan, tr = pipelined
    assert find_violations(tr, plan) == []


def test_duplicate_dispatch_fires_exactly_once(pipelined):
    plan, tr = pipelined
    bad = broken(tr, lambda t: setattr(t, "tiles", pd.concat([t.tiles, t.tiles.iloc[[0]]])))
    assert "exactly_once" in fires(plan, bad)


def test_lost_tile_fires_all_done(pipelined):
    plan, tr = pipelined
    bad = broken(tr, lambda t: setattr(t, "tiles", t.tiles.drop(t.tiles.index[5])))
    assert "all_done" in fires(plan, bad)


def test_unfinished_tile_fires_all_done(pipelined):
    plan, tr = pipelined

    def unfinished(t):
        t.tiles.loc[t.tiles.index[3], "t_signal"] = np.nan

    bad = broken(tr, unfinished)
    assert "all_done" in fires(plan, bad)


def test_consumer_before_its_inputs_fires_deps_visible(pipelined):
    plan, tr = pipelined

    def early(t):
        i = consumer_rows(plan, t)[0]
        t.tiles.loc[i, ["t_start", "t_ready", "t_acquire"]] = 0.0

    bad = broken(tr, early)
    got = fires(plan, bad)
    assert "deps_visible" in got and "queue" in got  # also popped before its slot was published


def test_time_order_fires(pipelined):
    plan, tr = pipelined

    def swap(t):
        i = t.tiles.index[0]
        t.tiles.loc[i, "t_store_end"] = t.tiles.loc[i, "t_compute_end"] - 5.0

    assert "time_order" in fires(plan, broken(tr, swap))


def test_two_ctas_on_one_slot_fire_slot_capacity(pipelined):
    plan, tr = pipelined

    def crowd(t):
        rows = t.tiles.index[(t.tiles.kernel == 0).to_numpy()]
        t.tiles.loc[rows, "sm"] = 0  # every tile of kernel 0 on SM 0, overlapping in time

    assert "slot_capacity" in fires(plan, broken(tr, crowd))


def test_counter_completing_twice_fires_counters(pipelined):
    plan, tr = pipelined

    def twice(t):
        z = t.events[t.events.kind == "zero"].iloc[[0]]
        t.events = pd.concat([t.events, z], ignore_index=True)

    assert "counters" in fires(plan, broken(tr, twice))


def test_counter_over_signalled_fires_counters(pipelined):
    plan, tr = pipelined

    def extra(t):
        # A producer tile of row-block 1 reports itself as row-block 0: counter 0 gets one signal too many.
        i = t.tiles.index[((t.tiles.kernel == plan.pipes[0].producer) & (t.tiles.tile_m == 1)).to_numpy()][0]
        t.tiles.loc[i, "tile_m"] = 0

    got = fires(plan, broken(tr, extra))
    assert "counters" in got and "exactly_once" in got


def test_counter_completing_early_fires_counters(pipelined):
    plan, tr = pipelined

    def early(t):
        i = t.events.index[(t.events.kind == "zero").to_numpy()][0]
        t.events.loc[i, "t_ns"] -= 100.0

    assert "counters" in fires(plan, broken(tr, early))


def test_queue_slots_visible_out_of_index_order_are_allowed(pipelined):
    # Two producers publishing at once can make a later slot visible first (seen on 2xH200); consumers
    # wait on their own slot, so only each pop's own publication matters.
    plan, tr = pipelined

    def swap(t):
        pushes = t.events.index[((t.events.kind == "push") & (t.events["pipe"] == 0)).to_numpy()]
        a, b = pushes[4], pushes[5]
        t.events.loc[b, "t_ns"] = t.events.loc[a, "t_ns"] - 1.0  # slot 5 visible just before slot 4

    bad = broken(tr, swap)
    assert "queue" not in fires(plan, bad)


def test_queue_slot_published_before_its_counter_fires_queue(pipelined):
    plan, tr = pipelined

    def early(t):
        pushes = t.events.index[((t.events.kind == "push") & (t.events["pipe"] == 0)).to_numpy()]
        t.events.loc[pushes[-1], "t_ns"] = 0.0  # the last slot published at time 0

    assert "queue" in fires(plan, broken(tr, early))


def test_queue_slot_published_twice_fires_queue(pipelined):
    plan, tr = pipelined

    def twice(t):
        pushes = t.events.index[((t.events.kind == "push") & (t.events["pipe"] == 0)).to_numpy()]
        t.events.loc[pushes[1], "slot"] = t.events.loc[pushes[0], "slot"]

    assert "queue" in fires(plan, broken(tr, twice))


def test_queue_slot_popped_twice_fires_queue(pipelined):
    plan, tr = pipelined

    def twice(t):
        rows = consumer_rows(plan, t)
        t.tiles.loc[rows[1], "slot"] = t.tiles.loc[rows[0], "slot"]

    assert "queue" in fires(plan, broken(tr, twice))


def test_check_trace_raises_with_every_violation(pipelined):
    plan, tr = pipelined
    bad = broken(tr, lambda t: setattr(t, "tiles", t.tiles.drop(t.tiles.index[:3])))
    with pytest.raises(InvariantError) as ei:
        check_trace(bad, plan)
    assert {v.check for v in ei.value.violations} >= {"all_done"}


def test_every_check_is_exercised_by_a_test():
    # Keeps this file in step with CHECKS: a new check needs its own broken-trace test above.
    import inspect
    import sys

    src = inspect.getsource(sys.modules[__name__])
    for name in CHECKS:
        assert f'"{name}" in' in src, name
