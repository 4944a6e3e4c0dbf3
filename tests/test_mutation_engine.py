"""ctasim.engine on what `python bench/mutation.py engine` showed no test asserted: the calendar's own rules (its
refusal of a SimPy without the internals it uses, what is due at an instant, a process started by one of its
calls), the clock's regimes and onset at their edges, the wave slowdown's cap, tile_cv's clipping, a kernel's
fixed time and a persistent grid's launch, copies on fair and first-come links, a switch port shared by two
producers, a producer tile that signals two counters, a consumer that arrives just as its tile is published, the
row-block's ready delay, the chain kernel's wake-ups, and the engine's errors word for word (a counter signalled
past zero, a work-queue overflow, a deadlock, an unknown operation, the seed and jitter bounds)."""

from __future__ import annotations

import dataclasses
import gc
from types import SimpleNamespace

import numpy as np
import pytest
import simpy

from ctasim.engine import SimulationError, _Lane, kernel_rng, push_ns, simulate
from ctasim.invariants import find_violations
from ctasim.machine import Fabric, ProtocolError
from ctasim.plan import Op, Plan, Transfer
from ctasim.spec import KernelConfig, Layer, Strategy, Workload
from ctasim.strategies import build_plans
from ctasim.strategies.ctapipe import build_chain
from tests.helpers import chain, tiny_hw

TILE = 1000.0
KEY = ["kernel", "tile_m", "tile_n"]


def _plan(kind, wl, hw, gpus=2, **kw):
    return build_plans(Strategy(kind, **kw), wl, hw, gpus, "t")[0]


def _durations(tr):
    t = tr.tiles.sort_values(KEY).reset_index(drop=True)
    return (t.t_compute_end - t.t_acquire).to_numpy()


# ----------------------------------------------------------------------------------------------- the calendar
def test_the_calendar_needs_simpys_queue_and_counter(monkeypatch):
    want = f"ctasim's engine needs SimPy 4's Environment (its _queue and _eid); simpy {simpy.__version__} has none"
    for env in (SimpleNamespace(_eid=iter(())), SimpleNamespace(_queue=[]), SimpleNamespace(_queue=(), _eid=iter(()))):
        with pytest.raises(RuntimeError) as e:
            _Lane(env)
        assert str(e.value) == want
    monkeypatch.delattr(simpy, "__version__")  # a SimPy that does not say its version
    with pytest.raises(RuntimeError) as e:
        _Lane(SimpleNamespace())
    assert str(e.value) == "ctasim's engine needs SimPy 4's Environment (its _queue and _eid); simpy ? has none"


def test_calls_scheduled_by_a_calendar_call_stay_off_simpys_queue():
    """While the calendar runs its calls, what they schedule goes onto the calendar only (one proxy at most in
    SimPy's queue, none while it runs)."""
    env = simpy.Environment()
    lane = _Lane(env)
    log = []

    def first():
        lane.push(1.0, lambda: log.append(("same instant", env.now)))
        lane.push(2.0, lambda: log.append(("later", env.now)))
        log.append(len(env._queue))

    lane.push(1.0, first)
    lane.push(3.0, lambda: log.append(("last", env.now)))
    assert len(env._queue) == 1  # the proxy of the first entry
    env.run()
    assert log == [0, ("same instant", 1.0), ("later", 2.0), ("last", 3.0)]


def test_due_sees_the_calendars_entries_and_simpys_events_of_this_instant():
    """``_Lane.due(now)``: an entry of the calendar at ``now`` (alone or in a FIFO, not one whose FIFO has just
    emptied) or a SimPy event at ``now``; not a SimPy event later, whatever its priority."""
    env = simpy.Environment()
    lane = _Lane(env)
    got = {}

    def fifo_a():
        got["fifo, one left"] = lane.due(5.0)

    def fifo_b():
        got["fifo emptied"] = lane.due(5.0)
        env.timeout(0.0)
        got["simpy now"] = lane.due(5.0)

    def lone():
        got["nothing"] = lane.due(5.0)
        env.timeout(5.0)  # at 10
        got["simpy later"] = lane.due(5.0)
        lane.push(5.0, fifo_a)
        got["one entry"] = lane.due(5.0)
        lane.push(5.0, fifo_b)
        got["two entries"] = lane.due(5.0)

    lane.push(5.0, lone)
    env.run()
    assert got == {"nothing": False, "simpy later": False, "one entry": True, "two entries": True,
                   "fifo, one left": True, "fifo emptied": False, "simpy now": True}


def test_a_process_started_by_a_calendar_call_runs_before_the_next_call_of_that_instant():
    """SimPy starts a process (URGENT) before the ordinary events of its instant, even those scheduled before it."""
    for fifo in (False, True):
        env = simpy.Environment()
        lane = _Lane(env)
        log = []

        def proc():
            log.append("process")
            yield env.timeout(0.0)

        def first():
            lane.push(env.now, lambda: log.append("second"))
            env.process(proc())
            log.append("first")

        lane.push(1.0, first)
        if fifo:
            lane.push(1.0, lambda: log.append("queued"))
        env.run()
        assert log == (["first", "process", "queued", "second"] if fifo else ["first", "process", "second"])


# ----------------------------------------------------------------------------------------------- the clock
@pytest.mark.parametrize("slowdown", [1.25, 2.0])
@pytest.mark.parametrize("closed_form", [True, False])
def test_the_sustained_clock_slows_every_tile_from_time_zero(slowdown, closed_form):
    hw = tiny_hw(launch_ns=0.0, clock_onset_ns=1e9, clock_sustained_slowdown=slowdown)
    plan = _plan("sequential", chain(1, m=1024, n=128), hw, 1)  # 8 tiles, 2 rounds
    assert plan.ops[0].start_ns == 0.0
    tr = simulate(plan, hw, regime="sustained", closed_form=closed_form)
    assert tr.tiles.t_acquire.min() == 0.0
    assert _durations(tr) == pytest.approx([slowdown * TILE] * 8)
    assert tr.makespan_ns == pytest.approx(2 * slowdown * TILE)
    burst = simulate(plan, hw, closed_form=closed_form)  # onset far away: nothing slowed
    assert _durations(burst) == pytest.approx([TILE] * 8)


@pytest.mark.parametrize("case", ["persistent", "grid", "chain"])
@pytest.mark.parametrize("closed_form", [True, False])
def test_a_tile_that_starts_exactly_at_the_clock_onset_is_slowed(case, closed_form):
    hw = tiny_hw()
    if case == "chain":
        plan = build_chain(Strategy("ctapipe", gpus=1), chain(2, m=1024, k=128, n=128), hw, "t")
    else:
        plan = _plan("sequential", chain(1, m=1536, n=128), hw, 1)  # 12 tiles on 4 slots
        for k in plan.kernels():
            k.persistent = case == "persistent"
            k.cta_launch_ns = 0.0 if k.persistent else 3.0
    base = simulate(plan, hw, closed_form=closed_form)
    starts = np.unique(base.tiles.t_acquire)
    onset = float(starts[1])  # the start of the second round
    step = dataclasses.replace(hw, clock_onset_ns=onset, clock_sustained_slowdown=1.25)
    curve = dataclasses.replace(hw, clock_curve_ns=(0.0, onset), clock_curve_factor=(1.0, 1.25))  # the same, as a curve
    # and with a later knot the run never reaches: the onset is then a knot inside the curve, not its last
    inner = dataclasses.replace(hw, clock_curve_ns=(0.0, onset, 1e12), clock_curve_factor=(1.0, 1.25, 1.5))
    for h in (step, curve, inner):
        capped = simulate(plan, h, closed_form=closed_form)
        a = capped.tiles.sort_values(KEY).reset_index(drop=True)
        ratio = _durations(capped) / _durations(base)
        late = (a.t_acquire >= onset).to_numpy()
        assert (a.t_acquire == onset).any() and (~late).any()
        assert ratio[late] == pytest.approx(1.25) and ratio[~late] == pytest.approx(1.0)


# ----------------------------------------------------------------------------------------------- tile times
def test_a_kernels_fixed_time_of_under_a_nanosecond_still_delays_its_first_tiles():
    hw = tiny_hw()
    plan = _plan("sequential", chain(1, m=512, n=128), hw, 1)
    plan.kernels()[0].fixed_ns = 0.5
    for cf in (True, False):
        tr = simulate(plan, hw, closed_form=cf)
        assert tr.tiles.t_acquire.min() == pytest.approx(hw.launch_ns + 0.5)
        assert tr.makespan_ns == pytest.approx(hw.launch_ns + 0.5 + TILE)


def test_a_persistent_grid_pays_no_cta_launch_per_tile():
    hw = tiny_hw()
    plan = _plan("sequential", chain(1, m=1024, n=128), hw, 1)  # 8 tiles on 4 slots
    k = plan.kernels()[0]
    k.cta_launch_ns = 3.0
    for persistent, tile in ((True, TILE), (False, TILE + 3.0)):
        k.persistent = persistent
        for cf in (True, False):
            tr = simulate(plan, hw, closed_form=cf)
            assert _durations(tr) == pytest.approx([tile] * 8), (persistent, cf)
            assert tr.makespan_ns == pytest.approx(hw.launch_ns + 2 * tile)


def test_the_wave_slowdown_stops_growing_after_its_ramp():
    """1 + s x min(1, wave / waves): waves 0, 1, 2, 3 of a 16-tile grid on 4 slots with s = 0.5, waves = 1 take
    1000, 1500, 1500, 1500 ns."""
    hw = tiny_hw()
    plan = _plan("sequential", chain(1, m=2048, n=128), hw, 1)
    k = plan.kernels()[0]
    k.wave_slowdown, k.wave_slowdown_waves = 0.5, 1.0
    for cf in (True, False):
        tr = simulate(plan, hw, closed_form=cf)
        t = tr.tiles.sort_values("t_acquire")
        assert (t.t_compute_end - t.t_acquire).tolist() == pytest.approx([TILE] * 4 + [1.5 * TILE] * 12)
        assert tr.makespan_ns == pytest.approx(hw.launch_ns + TILE + 3 * 1.5 * TILE)


def test_a_queue_consumers_wave_slowdown_without_tile_cv():
    """A queue consumer's wave slowdown goes by its slot (its grid position), with no tile_cv multiplier."""
    hw = tiny_hw()
    plan = _plan("ctapipe", chain(2, m=1024, k=128, n=128), hw, 2, tile_source="queue")
    cons = max(plan.kernels(), key=lambda k: k.layer)
    cons.wave_slowdown, cons.wave_slowdown_waves = 0.5, 1.0
    tr = simulate(plan, hw)
    t = tr.tiles[tr.tiles.kernel == cons.id].sort_values("slot")
    assert t.slot.tolist() == list(range(8))
    assert (t.t_compute_end - t.t_acquire).tolist() == pytest.approx([TILE] * 4 + [1.5 * TILE] * 4)


def test_tile_cv_multipliers_are_clipped_to_half_and_one_and_a_half():
    hw = tiny_hw()
    wl = Workload("one", "bf16", (Layer(m=128 * 40, k=128, n=128 * 10, tile_m=128, tile_n=128),))  # 400 tiles
    plan = _plan("sequential", wl, hw, 1)
    k = plan.kernels()[0]
    k.tile_cv = 0.45  # the largest spread the spec allows (< 0.5): a quarter of the draws beyond the clip
    d = _durations(simulate(plan, hw, seed=1)) / TILE
    assert d.min() == pytest.approx(0.5) and d.max() == pytest.approx(1.5)
    assert (np.isclose(d, 0.5)).sum() > 10 and (np.isclose(d, 1.5)).sum() > 10
    z = kernel_rng(1, k.id).standard_normal(k.tiles)
    want = np.clip(1.0 + 0.45 * z, 0.5, 1.5)
    t = simulate(plan, hw, seed=1).tiles
    t = t.assign(tile=t.tile_m * k.tiles_n + t.tile_n).set_index("tile").loc[k.order]
    assert (t.t_compute_end - t.t_acquire).to_numpy() == pytest.approx(TILE * want, rel=1e-12)


# ----------------------------------------------------------------------------------------------- copies
def _copies_plan():
    """Four copies issued at time 0 on a direct topology: two on the 0->1 link, one 0->2, one 2->1."""
    plan = Plan("hand", "copies", 3)
    for src, dst in ((0, 1), (0, 2), (2, 1), (0, 1)):
        plan.add(Transfer, name=f"copy {src}->{dst}", src=src, dst=dst, nbytes=1000.0)
    return plan


@pytest.mark.parametrize("sharing", ["fcfs", "fair"])
def test_copies_share_only_the_link_of_their_own_pair_of_gpus(sharing):
    hw = tiny_hw(link_sharing=sharing)  # copy engine 100 B/ns: 10 ns a copy alone, + 10 ns latency
    tr = simulate(_copies_plan(), hw)
    assert len(tr.tiles) == 0 and len(tr.events) == 0  # no kernel: no tile
    ends = tr.ops.sort_values("op").t_end.tolist()
    if sharing == "fcfs":  # the second 0->1 copy queues behind the first
        assert ends == pytest.approx([20.0, 20.0, 20.0, 30.0])
    else:  # the two 0->1 copies share the link at half rate each
        assert ends == pytest.approx([30.0, 20.0, 20.0, 30.0])
    assert tr.ops.t_begin.tolist() == [0.0] * 4
    assert tr.ops.gpu.tolist() == [0, 0, 2, 0] and tr.ops.dst.tolist() == [1, 2, 1, 1]


def test_an_operation_of_no_known_kind_is_refused():
    plan = Plan("hand", "bad", 1)
    plan.add(Op, name="mystery")
    with pytest.raises(TypeError) as e:
        simulate(plan, tiny_hw())
    assert str(e.value) == "unknown op Op(id=0, name='mystery', deps=(), start_ns=0.0)"


# ----------------------------------------------------------------------------------------------- stores
def test_two_producers_storing_into_one_gpu_share_its_switch_ingress_port():
    hw = tiny_hw(topology="switch", sm_remote_store_gbps=1e9)
    plan = _plan("hybrid", chain(2, m=512, k=128, n=512), hw, 4, tp_degree=2)
    assert [(p.src_gpu, p.dst_gpu) for p in plan.pipes] == [(0, 2), (1, 3)]
    plan.pipes[1].dst_gpu = 2  # both producers store into GPU 2 (the second pipe's consumer still runs on GPU 3)
    tr = simulate(plan, hw)
    prod = tr.tiles[tr.tiles.layer == 0].sort_values(["t_compute_end", "gpu"], kind="stable")
    fabric = Fabric(hw)
    want = [fabric.reserve(r.t_compute_end, r.gpu, 2, 128 * 128 * 2, hw.link_gbps)[1] for r in prod.itertuples()]
    assert prod.t_store_end.tolist() == pytest.approx(want)
    # the first round's 8 stores (4 from each producer) go one after another through GPU 2's ingress
    first = prod[prod.t_compute_end == hw.launch_ns + TILE]
    assert len(first) == 8 and first.t_store_end.max() == pytest.approx(hw.launch_ns + TILE + 8 * 327.68 + 10.0)


def test_a_kernel_that_starts_at_an_instant_takes_its_tiles_before_ctas_scheduled_later():
    """Simultaneous events run in the order they were scheduled: the GPU 1 producer, whose start at 1100 was planned
    at time 0, acquires its first tiles and reserves the switch before the GPU 0 producer's CTAs, whose steps at
    1100 were planned when their first tiles began (at 100); both store into GPU 2 (a hidden store: the CTAs move on
    at compute end)."""
    hw = tiny_hw(topology="switch", sm_remote_store_gbps=1e9, epilogue_store_overlap=1.0)
    plan = _plan("hybrid", chain(2, m=512, k=128, n=512), hw, 4, tp_degree=2)
    plan.pipes[1].dst_gpu = 2
    late = plan.ops[plan.pipes[1].producer]
    assert late.gpu == 1 and late.deps == () and late.fixed_ns == 0.0
    late.start_ns = hw.launch_ns + TILE  # when GPU 0's first round ends
    tr = simulate(plan, hw)
    prod = tr.tiles[tr.tiles.layer == 0].assign(first=lambda t: -t.gpu)
    prod = prod.sort_values(["t_acquire", "first", "cta"])  # at 1100: GPU 1's CTAs, then GPU 0's
    assert prod.t_acquire.tolist() == [100.0] * 4 + [1100.0] * 8 + [2100.0] * 4
    assert prod.gpu.tolist() == [0] * 4 + [1] * 4 + [0] * 4 + [1] * 4
    fabric = Fabric(hw)
    want = [fabric.reserve(r.t_compute_end, r.gpu, 2, 128 * 128 * 2, hw.link_gbps)[1] for r in prod.itertuples()]
    assert prod.t_store_end.tolist() == pytest.approx(want)


def _two_slot_hw(**changes):
    cfg = KernelConfig(tile_m=128, tile_n=128, tile_k=64, cta_slots_per_sm=2, sm_tflops=2 * 128 * 128 * 128 / 1e6,
                       tile_fixed_ns=0.0)
    return tiny_hw(kernel_configs=(cfg,), **changes)


def test_a_fair_store_is_capped_at_the_sms_rate_shared_by_its_resident_ctas():
    """2 CTAs per SM share its 50 GB/s: a lone 32 KiB store runs at 25 GB/s (a quarter of the 100 GB/s link)."""
    hw = _two_slot_hw(link_sharing="fair", sm_remote_store_gbps=50.0)
    plan = _plan("ctapipe", chain(2, m=128, k=128, n=128), hw, 2)  # one producer tile
    prod = plan.kernels()[0]
    assert prod.slots_per_sm == 2 and prod.tiles == 1
    tr = simulate(plan, hw)
    (p,) = tr.tiles[tr.tiles.kernel == prod.id].itertuples()
    assert p.t_store_end - p.t_compute_end == pytest.approx(128 * 128 * 2 / 25.0 + hw.link_latency_ns)


def test_a_kernels_own_signal_time_and_signal_hold():
    """KernelConfig.signal_ns (here 0.5 ns) replaces fence + atomic between a store's arrival and its signal;
    signal_hold_ns keeps the producer CTA that much longer after its store arrived."""
    hw = tiny_hw()
    plan = _plan("ctapipe", chain(2, m=1024, k=128, n=128), hw, 2)  # 8 producer tiles on 4 slots
    prod = plan.kernels()[0]
    prod.signal_ns, prod.signal_hold_ns = 0.5, 50.0
    tr = simulate(plan, hw)
    p = tr.tiles[tr.tiles.kernel == prod.id].sort_values("t_acquire")
    assert (p.t_signal - p.t_store_end).tolist() == pytest.approx([0.5] * 8)
    first, second = p.iloc[:4], p.iloc[4:]
    # a CTA's next tile starts at its store's arrival (no overlap) plus the hold
    by_cta = first.set_index("cta").t_store_end + 50.0
    assert second.set_index("cta").t_start.sort_index().tolist() == pytest.approx(by_cta.sort_index().tolist())


def _straddling_hw():
    cfg = KernelConfig(tile_m=192, tile_n=128, tile_k=64, cta_slots_per_sm=1, sm_tflops=2 * 192 * 128 * 128 / 1e6,
                       tile_fixed_ns=0.0)
    return tiny_hw(kernel_configs=tiny_hw().kernel_configs + (cfg,))


@pytest.mark.parametrize("source", ["queue", "static"])
def test_a_producer_tile_that_straddles_two_counters_signals_both(source):
    """Producer tiles of 192 rows, consumer tiles of 128: producer row-block 0 feeds counters 0 and 1, row-block 1
    counters 1 and 2; each counter completes at the latest signal of the producer tiles over its rows."""
    hw = _straddling_hw()
    wl = Workload("straddle", "bf16", (Layer(m=384, k=128, n=256, tile_m=192, tile_n=128),
                                       Layer(m=384, k=256, n=128, tile_m=128, tile_n=128)))
    plan = _plan("ctapipe", wl, hw, 2, tile_source=source)
    pipe = plan.pipes[0]
    assert pipe.prod_dep_ptr.tolist() == [0, 2, 4, 6, 8] and pipe.prod_dep_idx.tolist() == [0, 1, 0, 1, 1, 2, 1, 2]
    tr = simulate(plan, hw)
    assert not find_violations(tr, plan)
    prod = tr.tiles[tr.tiles.kernel == pipe.producer]
    sig = {r: prod[prod.tile_m == r].t_signal.max() for r in (0, 1)}
    zeros = tr.events[tr.events.kind == "zero"].sort_values("dep")
    assert zeros.dep.tolist() == [0, 1, 2]
    assert zeros.t_ns.tolist() == pytest.approx([sig[0], max(sig.values()), sig[1]])
    cons = tr.tiles[tr.tiles.kernel == pipe.consumer].sort_values("tile_m")
    delay = push_ns(hw) if source == "queue" else 0.0
    assert cons.t_ready.tolist() == pytest.approx([z + delay for z in zeros.t_ns])


def test_a_counter_signalled_past_zero_is_a_protocol_error():
    hw = tiny_hw()
    for counter_rows in (0, 256):  # one counter per producer tile (the inlined path), and the general one
        plan = _plan("ctapipe", chain(2, m=512, k=128, n=128), hw, 2, counter_rows=counter_rows)
        plan.pipes[0].threshold[1] -= 1
        with pytest.raises(ProtocolError) as e:
            simulate(plan, hw)
        assert str(e.value) == "scoreboard counter 1 of pipe 0 signalled after it reached zero"


def test_a_work_queue_too_small_for_a_counters_tiles_overflows():
    hw = tiny_hw()
    plan = _plan("ctapipe", chain(2, m=512, k=128, n=256), hw, 2)  # 4 counters of 2 consumer tiles each
    pipe = plan.pipes[0]
    pipe.consumer_dep = pipe.consumer_dep[:7]  # a queue of 7 slots (Pipe.capacity) for 8 consumer tiles
    assert pipe.capacity == 7
    with pytest.raises(ProtocolError) as e:
        simulate(plan, hw)
    assert str(e.value) == "work-queue overflow: slot 7 >= capacity 7"


# ----------------------------------------------------------------------------------------------- consumers
@pytest.mark.parametrize("source", ["queue", "static"])
def test_a_consumer_that_arrives_as_its_tile_becomes_visible_takes_it_at_once(source):
    """A CTA that claims a slot (or a counter) at the instant it becomes visible does not wait for a poll."""
    hw = tiny_hw()
    plan = _plan("ctapipe", chain(2, m=512, k=128, n=128), hw, 2, tile_source=source)
    cons = plan.ops[plan.pipes[0].consumer]
    base = simulate(plan, hw)
    first = base.tiles[base.tiles.kernel == cons.id].t_ready.min()
    assert base.tiles[base.tiles.kernel == cons.id].t_acquire.min() == pytest.approx(first + hw.poll_ns / 2)
    cons.start_ns = float(first)  # the consumer's CTAs start at that very instant
    tr = simulate(plan, hw)
    c = tr.tiles[tr.tiles.kernel == cons.id].sort_values("t_ready")
    assert c.t_acquire.iloc[0] == first and c.t_ready.iloc[0] == first
    assert (c.t_acquire.iloc[1:] == c.t_ready.iloc[1:] + hw.poll_ns / 2).all()


@pytest.mark.parametrize("source", ["queue", "static"])
def test_a_row_wise_pass_delays_each_row_block_before_it_is_visible(source):
    hw = tiny_hw()
    plan = _plan("ctapipe", chain(2, m=512, k=128, n=128, rowwise="layernorm"), hw, 2, tile_source=source)
    pipe = plan.pipes[0]
    assert pipe.ready_delay_ns == pytest.approx(2 * 128 * 128 * 2 / hw.hbm_gbps)
    tr = simulate(plan, hw)
    zeros = tr.events[tr.events.kind == "zero"].sort_values("dep").t_ns.to_numpy()
    cons = tr.tiles[tr.tiles.kernel == pipe.consumer].sort_values("tile_m")
    extra = push_ns(hw) if source == "queue" else 0.0
    assert cons.t_ready.to_numpy() == pytest.approx(zeros + pipe.ready_delay_ns + extra)


def test_slots_are_published_by_their_own_counter_only():
    """Stores limited by the SM's rate and tile times with jitter: a counter that completed later in issue order
    can become visible first; publishing it must not wake the CTAs waiting on an earlier counter's slots."""
    hw = tiny_hw(sm_remote_store_gbps=10.0)
    plan = _plan("ctapipe", chain(2, m=2048, k=128, n=128), hw, 2, tile_source="queue")
    pipe = plan.pipes[0]
    tr = simulate(plan, hw, seed=0, jitter=0.3)
    pushes = tr.events[tr.events.kind == "push"].sort_values("slot")
    assert not pushes.t_ns.is_monotonic_increasing  # slot 1 visible before slot 0: the case this test is about
    cons = tr.tiles[tr.tiles.kernel == pipe.consumer]
    waited = cons.t_ready > cons.t_start
    assert waited.any() and (cons.t_acquire[waited] == cons.t_ready[waited] + hw.poll_ns / 2).all()
    assert not find_violations(tr, plan)


# ----------------------------------------------------------------------------------------------- the chain kernel
def test_a_chain_of_one_tile_per_layer_keeps_each_tiles_layer():
    hw = tiny_hw()
    plan = build_chain(Strategy("ctapipe", gpus=1), chain(3, m=128, k=128, n=128), hw, "t")
    tr = simulate(plan, hw)
    t = tr.tiles.sort_values("t_acquire")
    assert t.layer.tolist() == [0, 1, 2] and t.tile_m.tolist() == [0, 0, 0] and t.tile_n.tolist() == [0, 0, 0]
    # each layer's tile is ready at the previous one's signal (compute + local signal) and seen half a poll later
    sig = t.t_signal.tolist()
    assert t.t_ready.tolist()[1:] == pytest.approx(sig[:2])
    assert t.t_acquire.tolist()[1:] == pytest.approx([s + hw.poll_ns / 2 for s in sig[:2]])


def test_a_chain_row_block_is_visible_at_its_last_signal_however_early():
    """With poll_ns = 0 a waiting tile starts at the very instant its row-block completes, even at 0.25 ns: three
    layers of one 0.25 ns tile from time 0, the last one taken by a CTA that waits for it."""
    hw = tiny_hw(poll_ns=0.0, local_signal_ns=0.0)
    plan = build_chain(Strategy("ctapipe", gpus=1), chain(3, m=128, k=128, n=128), hw, "t")
    (k,) = plan.kernels()
    k.start_ns, k.fixed_ns, k.tile_ns = 0.0, 0.0, 0.25
    tr = simulate(plan, hw)
    t = tr.tiles.sort_values("layer")
    assert t.t_start.iloc[2] < 0.5  # (its CTA was waiting)
    assert t.t_acquire.tolist() == [0.0, 0.25, 0.5] and t.t_ready.tolist() == [0.0, 0.25, 0.5]
    assert tr.makespan_ns == 0.75


def test_a_chain_cta_whose_row_block_is_visible_as_it_arrives_takes_its_next_ticket_in_turn():
    """poll_ns = 0: a CTA whose next tile's row-block becomes visible at the very instant the CTA reaches it does
    not wait for the wake-up; it takes its next ticket in its own turn, before the CTAs whose steps come later in
    that instant (here: which CTA runs each of layer 1's tickets). Every CTA takes its first ticket before any takes
    a second (CTA w: ticket w, as the measured chain traces show), so the tickets go round the CTAs in turn."""
    hw = tiny_hw(poll_ns=0.0)
    plan = build_chain(Strategy("ctapipe", gpus=1), chain(2, m=512, k=256, n=256), hw, "t")
    tr = simulate(plan, hw)
    l1 = tr.tiles[tr.tiles.layer == 1].sort_values("slot")
    assert (l1.t_ready == l1.t_start).any()  # the case this test is about
    assert (l1.t_acquire == np.maximum(l1.t_start, l1.t_ready)).all()
    assert l1.slot.tolist() == list(range(8, 16))
    assert l1.cta.tolist() == [0, 1, 2, 3, 0, 1, 2, 3]
    l0 = tr.tiles[tr.tiles.layer == 0].sort_values("slot")
    assert l0.cta.tolist() == [0, 1, 2, 3, 0, 1, 2, 3] and l0.slot.tolist() == list(range(8))


def test_chain_row_blocks_completing_together_wake_their_waiting_ctas():
    """2 x 2 tiles a layer on 4 CTAs, in row-major order: both row-blocks of layer 0 complete at the same instant
    (their last tiles end together) and every tile of layer 1, waiting on one or the other, starts half a poll
    after it. Each CTA ran one tile of layer 0 first (its first ticket), so it reaches its layer-1 tile as the
    row-blocks complete."""
    hw = tiny_hw()
    plan = build_chain(Strategy("ctapipe", gpus=1), chain(2, m=256, k=256, n=256), hw, "t")
    (k,) = plan.kernels()
    k.order = np.arange(k.tiles)
    tr = simulate(plan, hw)
    l0, l1 = tr.tiles[tr.tiles.layer == 0], tr.tiles[tr.tiles.layer == 1]
    done = l0.t_signal.max()
    assert l0.groupby("tile_m").t_signal.max().tolist() == [done, done]
    assert l1.t_ready.tolist() == [done] * 4
    assert l1.t_acquire.tolist() == [done + hw.poll_ns / 2] * 4
    assert (l1.t_start == done).all() and (l0.cta.sort_values().tolist() == [0, 1, 2, 3])


# ----------------------------------------------------------------------------------------------- errors
def test_a_deadlock_names_the_first_five_stuck_operations_and_the_queues():
    hw = tiny_hw()
    plan = _plan("ctapipe", chain(7, m=512, k=128, n=128), hw, 7)
    plan.ops[plan.pipes[0].producer].outbound = -1  # layer 0 never signals: the 6 layers after it wait forever
    with pytest.raises(SimulationError) as e:
        simulate(plan, hw)
    assert str(e.value) == (
        "deadlock in plan ctapipe/t: 6 operation(s) never finished (ctapipe L1 gpu1, ctapipe L2 gpu2, ctapipe L3 gpu3, "
        "ctapipe L4 gpu4, ctapipe L5 gpu5); work-queue (head, tail) per pipe: "
        "{0: (4, 0), 1: (4, 0), 2: (4, 0), 3: (4, 0), 4: (4, 0), 5: (4, 0)}")


def test_seed_and_jitter_bounds_are_refused_by_name():
    with pytest.raises(ValueError) as e:
        kernel_rng(-1, 0)
    assert str(e.value) == "seed must be >= 0, got -1"
    hw = tiny_hw()
    plan = _plan("sequential", chain(1), hw, 1)
    for bad in (0.5, -0.1, 1.0):
        with pytest.raises(ValueError) as e:
            simulate(plan, hw, jitter=bad)
        assert str(e.value) == f"jitter must be within [0, 0.5), got {bad}"
    # a negative seed is refused even where no kernel draws noise (no tile_cv, no jitter)
    assert all(c.tile_cv == 0 for c in hw.kernel_configs)
    with pytest.raises(ValueError) as e:
        simulate(plan, hw, seed=-1)
    assert str(e.value) == "seed must be >= 0, got -1"
    simulate(plan, hw, seed=0)


def test_fair_links_with_an_overlapped_epilogue_are_refused():
    hw = dataclasses.replace(tiny_hw(link_sharing="fair"), epilogue_store_overlap=0.5)  # past the spec's check
    plan = _plan("ctapipe", chain(2), tiny_hw(), 2)
    with pytest.raises(ValueError) as e:
        simulate(plan, hw)
    assert str(e.value) == "link_sharing = 'fair' needs epilogue_store_overlap = 0 (see Hardware.link_sharing)"


def test_a_run_turns_the_cyclic_collector_back_on_only_if_it_was_on():
    hw = tiny_hw()
    plan = _plan("sequential", chain(1), hw, 1)
    was = gc.isenabled()
    try:
        gc.enable()
        simulate(plan, hw)
        assert gc.isenabled()
        gc.disable()
        simulate(plan, hw)
        assert not gc.isenabled()
    finally:
        (gc.enable if was else gc.disable)()
