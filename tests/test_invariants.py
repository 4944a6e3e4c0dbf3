"""Invariant checks: every strategy's trace passes; each check fires on a trace broken in its own way."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from ctasim.engine import simulate
from ctasim.invariants import CHECKS, TOL_NS, InvariantError, Violation, check_trace, find_violations
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


def fires(plan, trace, tol_ns: float = TOL_NS) -> set[str]:
    return {v.check for v in violations(plan, trace, tol_ns)}


def violations(plan, trace, tol_ns: float = TOL_NS) -> list:
    """Every violation, each checked for a known check name and a message that says something."""
    got = find_violations(trace, plan, tol_ns)
    for v in got:
        assert v.check in CHECKS and isinstance(v.message, str) and v.message, v
        assert str(v) == f"[{v.check}] {v.message}"
    return got


def messages(plan, trace, check: str, tol_ns: float = TOL_NS) -> list[str]:
    return [v.message for v in violations(plan, trace, tol_ns) if v.check == check]


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


# ---- each check's message, its edges and its loops (found by mutation testing: bench/mutation.py) --------------

def kernel_rows(t, kernel):
    return t.tiles.index[(t.tiles.kernel == kernel).to_numpy()]


def pipe_events(t, kind, pipe):
    return t.events.index[((t.events.kind == kind) & (t.events["pipe"] == pipe)).to_numpy()]


def drop_kernel(t, kernel):
    t.tiles = t.tiles.drop(kernel_rows(t, kernel))


def test_invariant_error_lists_twenty_violations_and_counts_the_rest():
    vs = [Violation("all_done", f"v{i}") for i in range(25)]
    text = str(InvariantError(vs))
    assert text.split("\n")[0] == "25 invariant violation(s):"
    assert text.split("\n")[1:21] == [f"  [all_done] v{i}" for i in range(20)]
    assert text.split("\n")[21:] == ["  ... and 5 more"]
    assert InvariantError(vs).violations == vs
    assert str(InvariantError(vs[:20])).split("\n")[-1] == "  [all_done] v19"  # exactly 20: no "more" line
    assert str(InvariantError(vs[:21])).split("\n")[-1] == "  ... and 1 more"


def test_unfinished_tiles_are_counted_and_checked_without_numpy_warnings(pipelined):
    import warnings

    plan, tr = pipelined

    def unfinished(t):
        t.tiles.loc[t.tiles.index[[3, 20]], "t_signal"] = np.nan

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a NaN time is a finding, not a RuntimeWarning
        assert "2 tile(s) with unfinished times" in messages(plan, broken(tr, unfinished), "all_done")


def test_an_unfinished_operation_fires_all_done(pipelined):
    plan, tr = pipelined
    bad = broken(tr, lambda t: t.ops.__setitem__("t_end", t.ops["t_end"].where(t.ops["op"] != 1, np.nan)))
    assert messages(plan, bad, "all_done") == [f"operation {plan.ops[1].name!r} never finished"]
    assert violations(plan, broken(tr, lambda t: setattr(t, "ops", t.ops.iloc[:0]))) == []  # no op table: no op check


def test_a_kernel_with_no_tiles_is_reported_and_the_other_kernels_still_checked(pipelined):
    # Kernel 0 (producer of pipe 0) ran nothing; kernel 2's faults must still be found by every check's loop.
    plan, tr = pipelined
    k0, k2 = plan.ops[0], plan.ops[2]

    def faults(t):
        drop_kernel(t, 0)
        rows = kernel_rows(t, 2)
        t.tiles = pd.concat([t.tiles, t.tiles.loc[rows[[0]]]])  # a tile of kernel 2 run twice, on the same slot
        z = t.events.loc[pipe_events(t, "zero", 1)[[0]]]
        t.events = pd.concat([t.events, z], ignore_index=True)  # a counter of pipe 1 completes twice

    msgs = [str(v) for v in violations(plan, broken(tr, faults))]
    assert f"[all_done] kernel {k0.name!r}: 0 of {k0.tiles} tiles ran" in msgs
    assert any(m.startswith(f"[exactly_once] kernel {k2.name!r}: tile(s) [") for m in msgs)
    assert any(m.startswith(f"[slot_capacity] kernel {k2.name!r}: SM ") for m in msgs)
    assert "[queue] pipe 1: a queue slot was popped by more than one CTA" in msgs
    assert any(m.startswith("[counters] pipe 1: counter(s) [0] completed [2] times") for m in msgs)


def test_a_kernel_with_no_tiles_does_not_stop_the_dependency_check(pipelined):
    plan, tr = pipelined

    def faults(t):
        drop_kernel(t, 0)
        i = kernel_rows(t, 2)[0]
        t.tiles.loc[i, ["t_start", "t_ready", "t_acquire"]] = 0.0

    got = messages(plan, broken(tr, faults), "deps_visible")
    assert len(got) == 1 and got[0].startswith("pipe 1: 1 consumer tile(s) started before their inputs were visible")
    # a consumer kernel that ran nothing: its pipe is skipped, nothing raises
    assert "deps_visible" not in fires(plan, broken(tr, lambda t: drop_kernel(t, 1)))


def test_a_lost_last_row_block_of_a_producer_is_reported_not_raised(pipelined):
    plan, tr = pipelined
    k0 = plan.ops[0]

    def lose(t):
        t.tiles = t.tiles.drop(t.tiles.index[((t.tiles.kernel == 0) & (t.tiles.tile_m == k0.tiles_m - 1)).to_numpy()])

    got = fires(plan, broken(tr, lose))
    assert "all_done" in got


def test_tiles_outside_the_grid_fire_exactly_once(pipelined):
    plan, tr = pipelined
    k = plan.ops[1]
    for row, col, value in ((k.tiles_m - 1, "tile_m", k.tiles_m), (0, "tile_m", -1), (k.tiles_m - 1, "tile_n", k.tiles_n),
                            (0, "tile_n", k.tiles_n)):  # the last: a column past the grid that aliases the next row
        def off(t, row=row, col=col, value=value):
            rows = kernel_rows(t, 1)
            t.tiles.loc[rows[0], ["tile_m", "tile_n"]] = [row, 0]
            t.tiles.loc[rows[0], col] = value

        got = [str(v) for v in CHECKS["exactly_once"](broken(tr, off), plan, TOL_NS)]
        assert f"[exactly_once] kernel {k.name!r}: 1 tile(s) outside its grid" in got, (row, col, value)


@pytest.mark.parametrize("kernel", [0, 1])  # the producer (counters) and the consumer (deps, queue)
@pytest.mark.parametrize("row", ["past", "negative"])
def test_a_tile_outside_its_grid_is_reported_by_find_violations(pipelined, kernel, row):
    # The checks that index per-tile arrays by tile id read only in-grid rows: an out-of-grid tile is reported by
    # exactly_once (it once raised IndexError, and a negative row wrapped to another tile's dependency).
    plan, tr = pipelined

    def off(t):
        t.tiles.loc[kernel_rows(t, kernel)[0], "tile_m"] = plan.ops[kernel].tiles_m if row == "past" else -1

    assert "exactly_once" in fires(plan, broken(tr, off))


def test_a_tile_that_never_ran_fires_exactly_once(pipelined):
    # The last tile replaced by a second run of the first: as many rows as tiles, one id missing, one twice.
    plan, tr = pipelined
    k = plan.ops[1]

    def replace(t):
        rows = kernel_rows(t, 1)
        last = t.tiles.loc[rows][(t.tiles.loc[rows, "tile_m"] == k.tiles_m - 1)
                                 & (t.tiles.loc[rows, "tile_n"] == k.tiles_n - 1)].index[0]
        t.tiles.loc[last, ["tile_m", "tile_n"]] = [0, 0]

    got = messages(plan, broken(tr, replace), "exactly_once")
    assert f"kernel {k.name!r}: tile(s) [0] dispatched [2] times" in got
    assert f"kernel {k.name!r}: tile(s) [{k.tiles - 1}] never ran" in got


def test_exactly_once_names_at_most_five_tiles(pipelined):
    plan, tr = pipelined
    k = plan.ops[1]
    bad = broken(tr, lambda t: setattr(t, "tiles", pd.concat([t.tiles, t.tiles.loc[kernel_rows(t, 1)[:6]]])))
    ids = sorted(int(r.tile_m * k.tiles_n + r.tile_n) for r in tr.tiles.loc[kernel_rows(tr, 1)[:6]].itertuples())
    assert f"kernel {k.name!r}: tile(s) {ids[:5]} dispatched [2, 2, 2, 2, 2] times" in messages(plan, bad, "exactly_once")
    # ... and the tiles that never ran, five of them
    bad = broken(tr, lambda t: setattr(t, "tiles", pd.concat([t.tiles.drop(kernel_rows(t, 1)[-6:]),
                                                              t.tiles.loc[kernel_rows(t, 1)[:6]]])))
    gone = sorted(int(r.tile_m * k.tiles_n + r.tile_n) for r in tr.tiles.loc[kernel_rows(tr, 1)[-6:]].itertuples())
    assert f"kernel {k.name!r}: tile(s) {gone[:5]} never ran" in messages(plan, bad, "exactly_once")


@pytest.mark.parametrize("sm_from, sm_to", [(1, 0), (0, 3)])
def test_two_ctas_at_once_on_a_one_slot_sm_fire_slot_capacity(pipelined, sm_from, sm_to):
    # Exactly two overlapping CTAs, on the first SM and on the last (the running count is per SM).
    plan, tr = pipelined
    k = plan.ops[0]

    def move(t):
        rows = kernel_rows(t, 0)
        first_wave = t.tiles.loc[rows][t.tiles.loc[rows, "t_acquire"] == t.tiles.loc[rows, "t_acquire"].min()]
        t.tiles.loc[first_wave.index[first_wave.sm == sm_from][0], "sm"] = sm_to

    assert messages(plan, broken(tr, move), "slot_capacity") == [
        f"kernel {k.name!r}: SM {sm_to} ran 2 CTAs at once (has {k.slots_per_sm} slot(s))"]


def test_differences_of_exactly_the_tolerance_are_allowed(pipelined):
    # A measured trace is quantized to its timer tick: tol_ns = 0.5 (a power of two, so sums are exact).
    plan, tr = pipelined
    tol = 0.5
    pipe = plan.pipes[0]
    k0 = plan.ops[pipe.producer]
    assert violations(plan, tr, tol) == []

    def row_block_0(t):
        rows = t.tiles[(t.tiles.kernel == k0.id).to_numpy() & (t.tiles.tile_m == 0).to_numpy()]
        return float(rows["t_signal"].max())

    def at_the_edge(t):
        latest = row_block_0(t)
        z = pipe_events(t, "zero", 0)[t.events.loc[pipe_events(t, "zero", 0), "dep"].to_numpy() == 0][0]
        pushes = pipe_events(t, "push", 0)
        p = pushes[t.events.loc[pushes, "slot"].to_numpy() == 0][0]
        t.events.loc[z, "t_ns"] = latest + tol  # counter completes tol after its last signal
        t.events.loc[p, "t_ns"] = latest  # slot 0 published tol before its counter completed
        c = t.tiles.index[((t.tiles.kernel == pipe.consumer) & (t.tiles.slot == 0)).to_numpy()][0]
        t.tiles.loc[c, ["t_start", "t_ready", "t_acquire"]] = latest - tol  # popped tol before both

    edge = broken(tr, at_the_edge)
    assert violations(plan, edge, tol) == []
    check_trace(edge, plan, tol_ns=tol)
    assert {"deps_visible", "queue", "counters"} <= fires(plan, edge)  # each is a violation at the default tolerance

    def start_after_acquire(t):
        i = t.tiles.index[0]
        t.tiles.loc[i, "t_start"] = t.tiles.loc[i, "t_acquire"] + tol

    assert violations(plan, broken(tr, start_after_acquire), tol) == []
    assert "time_order" in fires(plan, broken(tr, start_after_acquire))


def test_counter_messages_name_the_counter_and_its_counts(pipelined):
    plan, tr = pipelined
    pipe = plan.pipes[0]

    def extra(t):  # a producer tile of row-block 1 reports itself as row-block 0
        i = t.tiles.index[((t.tiles.kernel == pipe.producer) & (t.tiles.tile_m == 1)).to_numpy()][0]
        t.tiles.loc[i, "tile_m"] = 0

    got = messages(plan, broken(tr, extra), "counters")
    assert f"pipe 0: counter(s) [0] signalled [3] times, threshold [{pipe.threshold[0]}] (counter went negative)" in got

    def never(t):  # the last counter never completes
        z = pipe_events(t, "zero", 0)
        t.events = t.events.drop(z[t.events.loc[z, "dep"].to_numpy() == pipe.deps - 1])

    got = messages(plan, broken(tr, never), "counters")
    assert f"pipe 0: counter(s) [{pipe.deps - 1}] completed [0] times (must be exactly once)" in got

    def twice(t):
        z = t.events.loc[pipe_events(t, "zero", 0)[[2]]]
        t.events = pd.concat([t.events, z], ignore_index=True)

    assert messages(plan, broken(tr, twice), "counters") == ["pipe 0: counter(s) [2] completed [2] times (must be "
                                                             "exactly once)"]

    def late(t):
        z = pipe_events(t, "zero", 0)[0]
        t.events.loc[z, "t_ns"] += 100.0

    got = messages(plan, broken(tr, late), "counters")
    assert len(got) == 1 and got[0].startswith(f"pipe 0: counter {int(tr.events.loc[pipe_events(tr, 'zero', 0)[0], 'dep'])} "
                                               "completed at a time other than its last signal")


def test_queue_messages_for_each_fault(pipelined):
    plan, tr = pipelined
    cap = plan.pipes[0].capacity

    def slot_twice(t):
        pushes = pipe_events(t, "push", 0)
        t.events.loc[pushes[1], "slot"] = t.events.loc[pushes[0], "slot"]

    assert messages(plan, broken(tr, slot_twice), "queue") == [
        f"pipe 0: published slots are not exactly 0..{cap - 1} once each ({cap} pushes, max slot {cap - 1})"]
    no_pushes = broken(tr, lambda t: setattr(t, "events", t.events.drop(pipe_events(t, "push", 0))))
    assert messages(plan, no_pushes, "queue") == [
        f"pipe 0: published slots are not exactly 0..{cap - 1} once each (0 pushes, max slot -1)"]

    def tile_twice(t):  # slots 0..cap-1 once each, but two of them name the same tile
        pushes = pipe_events(t, "push", 0)
        t.events.loc[pushes[1], "tile"] = t.events.loc[pushes[0], "tile"]

    got = messages(plan, broken(tr, tile_twice), "queue")
    assert "pipe 0: a tile id was pushed twice" in got
    assert "pipe 0: a consumer CTA ran a tile other than the one its slot named" in got

    def popped_twice(t):
        rows = consumer_rows(plan, t)
        t.tiles.loc[rows[1], "slot"] = t.tiles.loc[rows[0], "slot"]

    assert "pipe 0: a queue slot was popped by more than one CTA" in messages(plan, broken(tr, popped_twice), "queue")

    for slot in (cap, -1):  # at capacity, below zero
        def outside(t, slot=slot):
            t.tiles.loc[consumer_rows(plan, t)[0], "slot"] = slot

        assert messages(plan, broken(tr, outside), "queue") == [
            f"pipe 0: consumer tile(s) with a slot outside 0..{cap - 1}"], slot

    def early_push(t):
        pushes = pipe_events(t, "push", 0)
        t.events.loc[pushes[-1], "t_ns"] = 0.0

    got = messages(plan, broken(tr, early_push), "queue")
    assert len(got) == 1 and got[0].startswith("pipe 0: 1 slot(s) published before their counter completed, e.g. slot ")

    def early_pop(t):
        i = consumer_rows(plan, t)[0]
        t.tiles.loc[i, ["t_start", "t_ready", "t_acquire"]] = 0.0

    assert "pipe 0: 1 pop(s) before the slot was published" in messages(plan, broken(tr, early_pop), "queue")


def test_a_pipe_whose_consumer_takes_static_tiles_does_not_stop_the_queue_check(pipelined):
    import copy
    import dataclasses

    plan, tr = pipelined
    mixed = copy.copy(plan)
    mixed.ops = list(plan.ops)
    mixed.ops[1] = dataclasses.replace(plan.ops[1], source="static")  # pipe 0: no queue to check

    def popped_twice(t):
        rows = kernel_rows(t, 2)
        t.tiles.loc[rows[1], "slot"] = t.tiles.loc[rows[0], "slot"]

    assert messages(mixed, tr, "queue") == []
    assert "pipe 1: a queue slot was popped by more than one CTA" in messages(mixed, broken(tr, popped_twice), "queue")


@pytest.fixture(scope="module")
def chained():
    """The chain kernel (one GPU, three layers of 4 x 2 tiles) on the 4-SM test GPU."""
    hw = tiny_hw()
    plan = build_plans(Strategy("ctapipe", gpus=1), chain(3, m=512, k=256, n=256), hw, 1, "t")[0]
    return plan, simulate(plan, hw, seed=1, jitter=0.05)


def chain_rows(t, layer, tile_m):
    return t.tiles.index[((t.tiles.layer == layer) & (t.tiles.tile_m == tile_m)).to_numpy()]


def test_a_chain_row_block_short_of_a_tile_holds_back_only_the_next_layers_row_block(chained):
    # Layer 0, row-block 0 lost one tile: the tiles_n tiles of layer 1, row-block 0 started on an incomplete input.
    plan, tr = chained
    k = plan.ops[0]
    assert violations(plan, tr) == []
    bad = broken(tr, lambda t: setattr(t, "tiles", t.tiles.drop(chain_rows(t, 0, 0)[:1])))
    got = messages(plan, bad, "deps_visible")
    assert len(got) == 1 and got[0].startswith(f"kernel {k.name!r}: {k.tiles_n} tile(s) started before their row-block "
                                               "of the layer before was complete, e.g. layer 1 tile (0,")
    # the same for layer 1 -> layer 2
    bad = broken(tr, lambda t: setattr(t, "tiles", t.tiles.drop(chain_rows(t, 1, 2)[:1])))
    got = messages(plan, bad, "deps_visible")
    assert len(got) == 1 and got[0].startswith(f"kernel {k.name!r}: {k.tiles_n} tile(s) started before their row-block "
                                               "of the layer before was complete, e.g. layer 2 tile (2,")


def test_a_chain_tile_at_exactly_the_tolerance_is_allowed_and_unfinished_ones_do_not_warn(chained):
    import warnings

    plan, tr = chained
    tol = 0.5

    def at_the_edge(t):
        need = float(t.tiles.loc[chain_rows(t, 0, 0), "t_signal"].max())
        i = chain_rows(t, 1, 0)[0]
        t.tiles.loc[i, ["t_start", "t_ready", "t_acquire"]] = need - tol

    edge = broken(tr, at_the_edge)  # (its SM's slot may now be taken twice: only the dependency is checked here)
    assert messages(plan, edge, "deps_visible", tol) == []
    assert "deps_visible" in fires(plan, edge)

    def unfinished(t):
        t.tiles.loc[chain_rows(t, 0, 1)[0], "t_signal"] = np.nan

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert "all_done" in fires(plan, broken(tr, unfinished))


def test_chain_tile_ids_are_relative_to_the_kernels_first_layer_and_row(chained):
    # The same kernel placed at layer 2 and row 8 of a larger model: its tiles carry those numbers.
    import copy
    import dataclasses

    plan, tr = chained
    moved = copy.copy(plan)
    moved.ops = [dataclasses.replace(plan.ops[0], layer=2, row_offset=8)]

    def shift(t):
        t.tiles["layer"] += 2
        t.tiles["tile_m"] += 8

    shifted = broken(tr, shift)
    assert violations(moved, shifted) == []
    bad = broken(shifted, lambda t: t.tiles.__setitem__("layer", t.tiles["layer"].where(t.tiles.index != 8, 2)))
    assert {"exactly_once", "deps_visible"} <= fires(moved, bad)


def test_a_chain_kernel_with_no_tiles_does_not_stop_the_chain_check_of_the_next(chained):
    import copy
    import dataclasses

    plan, tr = chained
    two = copy.copy(plan)
    two.ops = [plan.ops[0], dataclasses.replace(plan.ops[0], id=1, name="second")]

    def second_early(t):
        t.tiles["kernel"] = 1  # every tile belongs to the second kernel; the first ran nothing
        t.tiles.loc[chain_rows(t, 1, 0)[0], ["t_start", "t_ready", "t_acquire"]] = 0.0

    got = messages(two, broken(tr, second_early), "deps_visible")
    assert len(got) == 1 and got[0].startswith("kernel 'second': 1 tile(s) started before")


def test_counter_messages_name_at_most_five_counters(pipelined):
    plan, tr = pipelined
    pipe = plan.pipes[0]

    def six_twice(t):  # the producer tiles of row-blocks 0..5 signal twice each
        rows = t.tiles.index[((t.tiles.kernel == pipe.producer) & (t.tiles.tile_m < 6)).to_numpy()]
        t.tiles = pd.concat([t.tiles, t.tiles.loc[rows]])

    got = messages(plan, broken(tr, six_twice), "counters")
    assert (f"pipe 0: counter(s) [0, 1, 2, 3, 4] signalled [4, 4, 4, 4, 4] times, threshold "
            f"{pipe.threshold[:5].tolist()} (counter went negative)") in got
    no_zeros = broken(tr, lambda t: setattr(t, "events", t.events.drop(pipe_events(t, "zero", 0))))
    assert ("pipe 0: counter(s) [0, 1, 2, 3, 4] completed [0, 0, 0, 0, 0] times (must be exactly once)"
            in messages(plan, no_zeros, "counters"))


def test_a_queue_fault_on_one_pipe_does_not_stop_the_queue_check_of_the_next(pipelined):
    plan, tr = pipelined

    def pipe1_popped_twice(t):
        rows = kernel_rows(t, 2)
        t.tiles.loc[rows[1], "slot"] = t.tiles.loc[rows[0], "slot"]

    def slot_outside(t):
        t.tiles.loc[consumer_rows(plan, t)[0], "slot"] = plan.pipes[0].capacity

    for fault in (lambda t: setattr(t, "events", t.events.drop(pipe_events(t, "push", 0))),  # nothing published
                  lambda t: drop_kernel(t, 1),  # pipe 0's consumer ran nothing
                  slot_outside):
        def both(t, fault=fault):
            pipe1_popped_twice(t)
            fault(t)

        assert "pipe 1: a queue slot was popped by more than one CTA" in messages(plan, broken(tr, both), "queue")
