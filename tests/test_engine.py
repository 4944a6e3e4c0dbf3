"""The engine: schedules that can be computed by hand on a 4-SM toy GPU (1000 ns per tile)."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pandas as pd
import pytest

from ctasim import costs
from ctasim.engine import SimulationError, push_ns, simulate
from ctasim.plan import Plan
from ctasim.spec import Layer, Strategy
from ctasim.strategies import build_plans
from tests.helpers import chain, tiny_hw

TILE = 1000.0


def run(kind, wl, hw=None, gpus=2, **kw):
    hw = hw or tiny_hw()
    plans = build_plans(Strategy(kind, **kw), wl, hw, gpus, "t")
    return [(p, simulate(p, hw)) for p in plans]


def test_wave_quantization_of_a_persistent_grid():
    # 5 tiles on 4 slots: two rounds.
    ((plan, tr),) = run("sequential", chain(1, m=640, n=128))
    assert tr.makespan_ns == pytest.approx(100 + 2 * TILE)
    assert sorted(tr.tiles.groupby("cta").size().tolist()) == [1, 1, 1, 2]


def test_sequential_layers_follow_stream_order():
    ((plan, tr),) = run("sequential", chain(2, m=512, n=128))
    assert tr.makespan_ns == pytest.approx(100 + TILE + 10 + TILE)
    l1 = tr.tiles[tr.tiles.layer == 1]
    assert l1.t_acquire.min() == pytest.approx(100 + TILE + 10)


def test_ctapipe_schedule_by_hand():
    hw = tiny_hw()
    ((plan, tr),) = run("ctapipe", chain(2, m=512, k=128, n=128), hw)
    store = 128 * 128 * 2 / hw.link_gbps  # 327.68 ns per tile on the link, FIFO
    arrivals = [100 + TILE + (i + 1) * store + hw.link_latency_ns for i in range(4)]
    signals = [a + hw.fence_sys_ns + hw.remote_atomic_ns for a in arrivals]
    prod = tr.tiles[tr.tiles.gpu == 0].sort_values("tile_m")
    assert prod.t_store_end.tolist() == pytest.approx(arrivals)
    assert prod.t_signal.tolist() == pytest.approx(signals)
    zeros = tr.events[tr.events.kind == "zero"].sort_values("dep")
    assert zeros.t_ns.tolist() == pytest.approx(signals)
    cons = tr.tiles[tr.tiles.gpu == 1].sort_values("tile_m")
    visible = [s + push_ns(hw) for s in signals]
    assert cons.t_ready.tolist() == pytest.approx(visible)
    assert cons.t_acquire.tolist() == pytest.approx([v + hw.poll_ns / 2 for v in visible])
    assert tr.makespan_ns == pytest.approx(visible[-1] + hw.poll_ns / 2 + TILE)
    # No overlap: the producer CTA holds its slot until its store has arrived.
    assert tr.ops.loc[plan.pipes[0].producer, "t_end"] == pytest.approx(arrivals[-1])


def test_epilogue_overlap_frees_the_slot_earlier():
    wl = chain(2, m=1024, k=128, n=128)
    ((_, slow),) = run("ctapipe", wl, tiny_hw(epilogue_store_overlap=0.0))
    ((_, fast),) = run("ctapipe", wl, tiny_hw(epilogue_store_overlap=1.0))
    p_slow = slow.tiles[slow.tiles.gpu == 0].t_compute_end.max()
    p_fast = fast.tiles[fast.tiles.gpu == 0].t_compute_end.max()
    assert p_fast < p_slow  # second-round producer tiles start earlier when the store is hidden


def test_column_raster_delays_the_consumer():
    wl = chain(2, m=1024, k=128, n=512)
    ((_, row),) = run("ctapipe", wl, raster="row")
    ((_, col),) = run("ctapipe", wl, raster="column")
    first = lambda tr: tr.tiles[tr.tiles.gpu == 1].t_acquire.min()
    assert first(col) > first(row)
    assert col.makespan_ns > row.makespan_ns


def test_queue_and_wait_variants_run_every_tile_once():
    wl = chain(3, m=1024, k=128, n=256)
    for source in ("queue", "static"):
        for persistent in (True, False):
            ((plan, tr),) = run("ctapipe", wl, gpus=3, tile_source=source, persistent=persistent)
            assert len(tr.tiles) == plan.total_tiles
            assert not tr.tiles.duplicated(["kernel", "tile_m", "tile_n"]).any()


def test_microbatch_handoff_is_a_copy_between_chunks():
    hw = tiny_hw()
    plans = run("microbatch", chain(2, m=512, k=128, n=128), hw, chunks=(2,))
    ((plan, tr),) = plans
    copies = tr.ops[tr.ops.kind == "transfer"].sort_values("t_begin")
    assert len(copies) == 2
    # chunk 0: layer 0 on 2 slots (2 tiles) ends at 1100; copy of 256x128 bf16 at 100 B/ns + 10 ns latency.
    assert copies.iloc[0].t_end == pytest.approx(1100 + 256 * 128 * 2 / 100 + 10)
    l1c0 = tr.tiles[(tr.tiles.layer == 1) & (tr.tiles.tile_m < 2)]
    assert l1c0.t_acquire.min() == pytest.approx(copies.iloc[0].t_end + hw.event_wait_ns)


def test_tp_allreduce_is_a_blocking_collective():
    hw = tiny_hw()
    ((plan, tr),) = run("tp", chain(2, m=512, k=128, n=256), hw, gpus=2, tp_degree=2)
    (coll,) = tr.ops[tr.ops.kind == "allreduce"].itertuples()
    nbytes = 512 * 256 * 2
    assert coll.t_end - coll.t_begin == pytest.approx(costs.allreduce_ns(nbytes, 2, hw))
    assert costs.allreduce_ns(nbytes, 2, hw) == pytest.approx(nbytes / 50.0 + 2 * 7.0)
    assert tr.makespan_ns == pytest.approx(coll.t_end)


def test_deterministic_for_a_seed():
    hw = tiny_hw()
    plan = build_plans(Strategy("ctapipe"), chain(2, m=1024, n=256), hw, 2, "t")[0]
    a = simulate(plan, hw, seed=3, jitter=0.1).tiles
    b = simulate(plan, hw, seed=3, jitter=0.1).tiles
    c = simulate(plan, hw, seed=4, jitter=0.1).tiles
    assert a.equals(b)
    assert not a.equals(c)


def test_a_consumer_without_producer_is_reported_as_deadlock():
    hw = tiny_hw()
    plan = build_plans(Strategy("ctapipe"), chain(2), hw, 2, "t")[0]
    plan.ops[plan.pipes[0].producer].outbound = -1  # the producer never signals
    with pytest.raises(SimulationError, match="deadlock"):
        simulate(plan, hw)


def test_switch_topology_shares_the_ingress_port():
    # Two producers storing into one consumer GPU: on a switch they share GPU 2's ingress port.
    from ctasim.machine import Fabric

    direct, switch = Fabric(tiny_hw()), Fabric(tiny_hw(topology="switch"))
    for f in (direct, switch):
        f.reserve(0.0, 0, 2, 1000.0, 100.0)
    assert direct.reserve(0.0, 1, 2, 1000.0, 100.0)[0] == 0.0
    assert switch.reserve(0.0, 1, 2, 1000.0, 100.0)[0] == pytest.approx(10.0)


def _with_tile_cv(hw, cv):
    return dataclasses.replace(hw, kernel_configs=tuple(dataclasses.replace(c, tile_cv=cv) for c in hw.kernel_configs))


def _remote_d_slowdown(hw, m, tile):
    """Producer GEMM time with its output on the peer GPU / with local output (the DEVICE.md experiment)."""
    from ctasim.spec import Layer, Workload

    layer = Layer(m, 8192, 8192, *tile)
    remote = simulate(build_plans(Strategy("ctapipe"), Workload("w", "bf16", (layer, layer)), hw, 2, "r")[0], hw)
    local = simulate(build_plans(Strategy("sequential"), Workload("w", "bf16", (layer,)), hw, 1, "l")[0], hw)
    span = lambda tr: tr.ops.iloc[0].t_end - tr.ops.iloc[0].t_begin
    return span(remote) / span(local)


def test_remote_store_model_reproduces_its_fit_and_a_held_out_config():
    from ctasim.spec import load_hardware

    hw = load_hardware("h200-x2")
    # Fitted: cooperative 128x256 at M=16384, 2.93 -> 3.34 ms (DEVICE.md).
    assert _remote_d_slowdown(hw, 16384, (128, 256)) == pytest.approx(3.34 / 2.93, rel=0.01)
    # Held out: pingpong 128x128 (two CTAs share an SM's store rate), 3.09 -> 3.52 ms (+13.9%).
    assert _remote_d_slowdown(hw, 16384, (128, 128)) == pytest.approx(3.52 / 3.09, rel=0.02)


def test_calibrated_profile_reproduces_its_remote_d_fit():
    """h200-x2-calibrated's sm_remote_store_gbps is fitted (ctahw.calibrate.fit_sm_remote_store) to the measured
    remote-D GEMM of run2: CUTLASS 16384x8192x8192, local D 2.7989 ms, D on GPU1 2.9461 ms (x1.0526), under the
    profile's link model ("fair") with the default config's measured tile_cv (0.0075, seed 0) and fitted
    kernel_fixed_ns; the rate must reproduce it and a wrong rate must not."""
    from ctasim.spec import load_hardware

    hw = load_hardware("h200-x2-calibrated")
    assert hw.link_sharing == "fair" and hw.config(128, 256).tile_cv == 0.0075
    measured = 2.9461439847946167 / 2.7989120483398438
    assert _remote_d_slowdown(hw, 16384, (128, 256)) == pytest.approx(measured, rel=2e-4)
    for f in (0.5, 2.0):
        bad = dataclasses.replace(hw, sm_remote_store_gbps=hw.sm_remote_store_gbps * f)
        assert _remote_d_slowdown(bad, 16384, (128, 256)) != pytest.approx(measured, rel=5e-3)


@pytest.mark.parametrize("kind, kw, gpus", [
    ("sequential", {}, 1), ("microbatch", {"chunks": (2, 4)}, 2), ("tp", {"tp_degree": 2}, 2),
])
@pytest.mark.parametrize("jitter, tile_cv", [(0.0, 0.0), (0.1, 0.0), (0.0, 0.1), (0.05, 0.1)])
def test_closed_form_kernels_equal_the_event_path(kind, kw, gpus, jitter, tile_cv):
    hw = _with_tile_cv(tiny_hw(), tile_cv)
    wl = chain(2, m=1280, k=128, n=512)  # 40 tiles on 4 slots: 10 rounds
    for persistent in (True, False):
        for plan in build_plans(Strategy(kind, **kw), wl, hw, gpus, "t"):
            for k in plan.kernels():
                k.persistent = persistent
                k.cta_launch_ns = 0.0 if persistent else 3.0
            fast = simulate(plan, hw, seed=5, jitter=jitter, closed_form=True)
            slow = simulate(plan, hw, seed=5, jitter=jitter, closed_form=False)
            key = ["kernel", "tile_m", "tile_n"]
            a = fast.tiles.sort_values(key).reset_index(drop=True)
            b = slow.tiles.sort_values(key).reset_index(drop=True)
            cols = ["gpu", "layer", "cta", "sm", "t_start", "t_acquire", "t_compute_end", "t_signal"]
            pd.testing.assert_frame_equal(a[key + cols], b[key + cols], check_exact=False, rtol=1e-12)
            assert fast.makespan_ns == pytest.approx(slow.makespan_ns)


def _with_kernel_fixed(hw, ns):
    return dataclasses.replace(hw, kernel_configs=tuple(dataclasses.replace(c, kernel_fixed_ns=ns) for c in hw.kernel_configs))


def test_kernel_fixed_time_delays_every_kernels_first_tile():
    hw = _with_kernel_fixed(tiny_hw(), 50.0)
    ((plan, tr),) = run("sequential", chain(2, m=512, n=128), hw=hw)
    # launch 100, fixed 50, one round; gap 10, fixed 50, one round.
    assert tr.makespan_ns == pytest.approx(100 + 50 + TILE + 10 + 50 + TILE)
    l0, l1 = tr.tiles[tr.tiles.layer == 0], tr.tiles[tr.tiles.layer == 1]
    assert l0.t_acquire.min() == pytest.approx(150)
    assert l1.t_acquire.min() == pytest.approx(100 + 50 + TILE + 10 + 50)
    fast = simulate(plan, hw, closed_form=True)
    slow = simulate(plan, hw, closed_form=False)
    assert fast.makespan_ns == pytest.approx(slow.makespan_ns)


def test_kernel_fixed_time_applies_to_ctapipelined_kernels():
    hw = _with_kernel_fixed(tiny_hw(), 50.0)
    base = run("ctapipe", chain(2, m=512, n=256))[0][1]
    fixed = run("ctapipe", chain(2, m=512, n=256), hw=hw)[0][1]
    assert fixed.tiles[fixed.tiles.layer == 0].t_acquire.min() == pytest.approx(100 + 50)
    assert fixed.makespan_ns > base.makespan_ns


@pytest.mark.parametrize("tiles_m, boost, want", [
    (1, 1.2, 1.2),            # 1 of 4 slots busy: cube root of 4 = 1.587, capped at 1.2
    (1, 2.0, 4 ** (1 / 3)),   # below the cap: the cube-root law
    (4, 2.0, 1.0),            # every slot busy: no boost
    (1, 1.0, 1.0),            # boost off
])
def test_partial_grid_runs_tiles_faster_up_to_the_boost_ceiling(tiles_m, boost, want):
    hw = tiny_hw(max_clock_boost=boost)
    ((plan, tr),) = run("sequential", chain(1, m=128 * tiles_m, n=128), hw=hw)
    assert plan.kernels()[0].tile_ns == pytest.approx(TILE / want)
    assert tr.makespan_ns == pytest.approx(100 + TILE / want)


def test_clock_boost_law():
    hw = tiny_hw(max_clock_boost=1.5)
    assert costs.clock_boost(hw, 132, 132) == 1.0
    assert costs.clock_boost(hw, 128, 132) == pytest.approx((132 / 128) ** (1 / 3))
    assert costs.clock_boost(hw, 8, 132) == 1.5


def test_records_packed_in_blocks_give_the_same_trace(monkeypatch):
    import ctasim.engine as engine

    hw = tiny_hw()
    plan = build_plans(Strategy("ctapipe"), chain(3, m=1024, k=128, n=256), hw, 3, "t")[0]
    whole = simulate(plan, hw, seed=2, jitter=0.05)
    monkeypatch.setattr(engine, "FLUSH_RECORDS", 7)  # pack every 7 records
    packed = simulate(plan, hw, seed=2, jitter=0.05)
    key = ["kernel", "tile_m", "tile_n"]
    pd.testing.assert_frame_equal(whole.tiles.sort_values(key).reset_index(drop=True),
                                  packed.tiles.sort_values(key).reset_index(drop=True))
    ekey = ["kind", "pipe", "dep", "slot"]
    pd.testing.assert_frame_equal(whole.events.sort_values(ekey).reset_index(drop=True),
                                  packed.events.sort_values(ekey).reset_index(drop=True))
    assert len(packed.tiles) == plan.total_tiles


def test_inlined_switch_reservation_matches_the_fabric():
    # Two producers (hybrid, t=2) store through a switch: the engine's inlined port bookkeeping must give
    # the arrivals that Fabric.reserve gives for the same stores in the same order.
    from ctasim.machine import Fabric

    hw = tiny_hw(topology="switch", sm_remote_store_gbps=1e9)
    plan = build_plans(Strategy("hybrid", tp_degree=2), chain(2, m=512, k=128, n=512), hw, 4, "t")[0]
    tr = simulate(plan, hw)
    prod = tr.tiles[tr.tiles.layer == 0].sort_values(["t_compute_end", "gpu"], kind="stable")
    fabric = Fabric(hw)
    expect = [fabric.reserve(r.t_compute_end, r.gpu, r.gpu + 2, 128 * 128 * 2, hw.link_gbps)[1]
              for r in prod.itertuples()]
    assert prod.t_store_end.tolist() == pytest.approx(expect)


def _tile_times(tr):
    return (tr.tiles.sort_values(["kernel", "tile_m", "tile_n"])["t_compute_end"]
            - tr.tiles.sort_values(["kernel", "tile_m", "tile_n"])["t_acquire"]).to_numpy()


def test_tile_cv_is_deterministic_per_seed_and_has_its_spread():
    """KernelConfig.tile_cv: tile times vary with the configured relative spread, the same for a seed."""
    import numpy as np

    from tests.helpers import Layer, Workload

    wl = Workload("one", "bf16", (Layer(m=128 * 400, k=128, n=128 * 10, tile_m=128, tile_n=128),))  # 4000 tiles
    plan = build_plans(Strategy("sequential"), wl, tiny_hw(), 1, "t")[0]
    base = _tile_times(simulate(plan, tiny_hw(), seed=1))
    assert np.allclose(base, TILE)
    for cv in (0.02, 0.1):
        hw = _with_tile_cv(tiny_hw(), cv)
        plan = build_plans(Strategy("sequential"), wl, hw, 1, "t")[0]  # the plan's kernels carry the config's tile_cv
        a, b, c = (_tile_times(simulate(plan, hw, seed=s)) for s in (1, 1, 2))
        assert np.array_equal(a, b) and not np.array_equal(a, c)
        sample_cv = a.std() / a.mean()
        assert sample_cv == pytest.approx(cv, rel=0.2)
        assert a.mean() == pytest.approx(TILE, rel=0.01)


def test_tile_cv_zero_is_bit_for_bit_the_model_without_it():
    """tile_cv = 0 draws nothing: the seeded jitter draws, and so every tile time, are exactly those of a fresh
    generator of the kernel's stream (the model before tile_cv)."""
    import numpy as np

    from tests.helpers import Layer, Workload

    wl = Workload("one", "bf16", (Layer(m=128 * 40, k=128, n=128 * 10, tile_m=128, tile_n=128),))  # 400 tiles
    hw = _with_tile_cv(tiny_hw(), 0.0)
    plan = build_plans(Strategy("sequential"), wl, hw, 1, "t")[0]
    k = plan.kernels()[0]
    t = simulate(plan, hw, seed=3, jitter=0.1).tiles
    t = t.assign(tile=t["tile_m"] * k.tiles_n + t["tile_n"]).set_index("tile").loc[k.order]
    want = TILE * np.clip(1.0 + 0.1 * np.random.default_rng([3, k.id]).standard_normal(k.tiles), 0.5, 1.5)
    assert np.allclose((t["t_compute_end"] - t["t_acquire"]).to_numpy(), want, rtol=1e-12, atol=0)
    hw5 = _with_tile_cv(tiny_hw(), 0.05)
    with_cv = simulate(build_plans(Strategy("sequential"), wl, hw5, 1, "t")[0], hw5, seed=3, jitter=0.1).tiles
    assert not np.allclose(np.sort((with_cv["t_compute_end"] - with_cv["t_acquire"]).to_numpy()), np.sort(want))


def test_each_kernel_draws_its_own_noise_whatever_else_changes():
    """Tile noise per kernel from (seed, kernel id): a parameter that moves other operations (event_wait_ns) or more
    chunks elsewhere in the plan leave a kernel's tile times as they were; a different seed or kernel id does not."""
    import numpy as np

    from ctasim.engine import kernel_rng
    from tests.helpers import chain

    hw = _with_tile_cv(tiny_hw(), 0.05)
    wl = chain(2, m=1024)
    plan = build_plans(Strategy("microbatch", chunks=(4,)), wl, hw, 2, "t")[0]
    slow = dataclasses.replace(hw, event_wait_ns=hw.event_wait_ns + 50_000.0)
    plan_slow = build_plans(Strategy("microbatch", chunks=(4,)), wl, slow, 2, "t")[0]

    def durations(p, h, seed=7):
        t = simulate(p, h, seed=seed, jitter=0.02).tiles
        t = t.assign(d=t["t_compute_end"] - t["t_acquire"])
        return {name: g.sort_values(["tile_m", "tile_n"])["d"].to_numpy()
                for name, g in t.groupby(t["kernel"].map({k.id: k.name for k in p.kernels()}))}

    base, moved = durations(plan, hw), durations(plan_slow, slow)
    k0 = next(k for k in plan.kernels() if k.name == "gemm L0 chunk2")
    last = [simulate(p, h, seed=7, jitter=0.02).tiles["t_acquire"].max() for p, h in ((plan, hw), (plan_slow, slow))]
    assert last[1] > last[0] + 40_000  # the change did move the consumer's tiles
    for name in base:
        np.testing.assert_allclose(base[name], moved[name], rtol=1e-9, err_msg=name)  # times shifted: float rounding
    other_seed = durations(plan, hw, seed=8)
    assert not np.allclose(base["gemm L0 chunk2"], other_seed["gemm L0 chunk2"])
    # two kernels of one run draw different noise (not one stream restarted per kernel)
    assert not np.allclose(np.sort(base["gemm L0 chunk2"]), np.sort(base["gemm L0 chunk1"]))
    a = kernel_rng(7, k0.id).standard_normal(4)
    np.testing.assert_array_equal(a, kernel_rng(7, k0.id).standard_normal(4))
    assert not np.allclose(a, kernel_rng(7, k0.id + 1).standard_normal(4))


def test_tile_cv_scales_a_queue_kernels_wave_slowdown_too():
    """A queue consumer's wave slowdown (added per slot) is multiplied by the tile's tile_cv draw as well: with
    a huge slowdown the consumer tiles' spread is tile_cv of the whole tile, not of the base tile alone."""
    import numpy as np

    hw = _with_tile_cv(tiny_hw(), 0.1)
    plan = build_plans(Strategy("ctapipe", tile_source="queue"), chain(2, m=128 * 800, n=128), hw, 2, "t")[0]
    cons = max(plan.kernels(), key=lambda k: k.layer)
    cons.wave_slowdown, cons.wave_slowdown_waves = 9.0, 1.0  # from wave 1 on: 10x the base tile
    tr = simulate(plan, hw, seed=4)
    t = tr.tiles[(tr.tiles["kernel"] == cons.id) & (tr.tiles["slot"] >= cons.slots)]
    d = (t["t_compute_end"] - t["t_acquire"]).to_numpy()
    assert d.std() / d.mean() == pytest.approx(0.1, rel=0.2)


def _clock_case(kind, kw, gpus, persistent):
    """A small 2-layer plan of ``kind`` on tiny_hw, its kernels persistent or not: (hw, plan, its trace)."""
    hw = tiny_hw()
    plan = build_plans(Strategy(kind, **kw), chain(2, m=1280, k=128, n=512), hw, gpus, "t")[0]
    for k in plan.kernels():
        k.persistent = persistent
        k.cta_launch_ns = 0.0 if persistent else 3.0
    return hw, plan, simulate(plan, hw)


def _closed_equals_event(plan, hw, base):
    """The plan on ``hw`` by the closed form and the event path, their tiles asserted equal: (traces by closed_form,
    the event path's tiles in tile order, each tile's time over its time in ``base``)."""
    key = ["kernel", "tile_m", "tile_n"]
    traces = {cf: simulate(plan, hw, closed_form=cf) for cf in (True, False)}
    a, b = (traces[cf].tiles.sort_values(key).reset_index(drop=True) for cf in (True, False))
    pd.testing.assert_frame_equal(a[key + ["t_acquire", "t_compute_end"]], b[key + ["t_acquire", "t_compute_end"]],
                                  check_exact=False, rtol=1e-12)
    ratio = (b.t_compute_end - b.t_acquire) / (base.tiles.sort_values(key).reset_index(drop=True).pipe(
        lambda t: t.t_compute_end - t.t_acquire))
    return traces, b, ratio


@pytest.mark.parametrize("kind, kw, gpus", [("sequential", {}, 1), ("ctapipe", {}, 2)])
@pytest.mark.parametrize("persistent", [True, False])
def test_clock_onset_slows_exactly_the_tiles_that_start_after_it(kind, kw, gpus, persistent):
    """Burst regime: tiles starting at or after clock_onset_ns take clock_sustained_slowdown times longer; the
    closed form equals the event path; sustained: every tile is slow; no onset (inf) or slowdown 1: unchanged."""
    hw, plan, base = _clock_case(kind, kw, gpus, persistent)
    onset = base.makespan_ns * 0.5
    capped = dataclasses.replace(hw, clock_onset_ns=onset, clock_sustained_slowdown=1.25)
    traces, b, ratio = _closed_equals_event(plan, capped, base)
    late = b.t_acquire >= onset
    assert late.any() and (~late).any()
    assert ratio[late].to_numpy() == pytest.approx(1.25) and ratio[~late].to_numpy() == pytest.approx(1.0)
    assert base.makespan_ns < traces[True].makespan_ns < 1.25 * base.makespan_ns
    sus = simulate(plan, capped, regime="sustained")
    assert sus.makespan_ns > traces[True].makespan_ns
    for off in (dataclasses.replace(hw, clock_onset_ns=0.0), dataclasses.replace(capped, clock_onset_ns=math.inf)):
        assert simulate(plan, off).makespan_ns == pytest.approx(base.makespan_ns)
    with pytest.raises(ValueError, match="regime"):
        simulate(plan, hw, regime="hot")


@pytest.mark.parametrize("kind, kw, gpus", [("sequential", {}, 1), ("ctapipe", {}, 2)])
@pytest.mark.parametrize("persistent", [True, False])
def test_a_clock_curve_slows_each_tile_by_its_factor_at_its_start(kind, kw, gpus, persistent):
    """Burst regime with a clock curve: a tile starting in [t_j, t_j+1) takes factor_j times its time (1 before the
    first knot; the last factor holds), the closed form equal to the event path (sequential: a ctapipe plan's kernels
    take the event path either way); the curve replaces the one step (clock_onset_ns is ignored); sustained: every
    tile at clock_sustained_slowdown."""
    from ctasim.engine import clock_steps

    hw, plan, base = _clock_case(kind, kw, gpus, persistent)
    span = base.makespan_ns
    knots, factors = (0.0, 0.3 * span, 0.6 * span), (1.0, 1.1, 1.3)
    curved = dataclasses.replace(hw, clock_onset_ns=0.0, clock_sustained_slowdown=1.7, clock_curve_ns=knots,
                                 clock_curve_factor=factors)
    assert clock_steps(curved, "burst") == ([0.3 * span, 0.6 * span], [1.1, 1.3])  # the leading factor 1 dropped
    assert clock_steps(curved, "sustained") == ([0.0], [1.7])
    traces, b, ratio = _closed_equals_event(plan, curved, base)
    want = np.select([b.t_acquire >= knots[2], b.t_acquire >= knots[1]], [1.3, 1.1], 1.0)
    assert len(set(want)) == 3  # tiles in every step
    assert ratio.to_numpy() == pytest.approx(want)
    sus = simulate(plan, curved, regime="sustained")
    assert sus.makespan_ns == pytest.approx(1.7 * simulate(plan, dataclasses.replace(
        hw, clock_sustained_slowdown=1.0)).makespan_ns, rel=0.05)


def test_an_activation_epilogue_adds_its_per_element_cost_to_every_tile():
    from ctasim.costs import tile_ns

    hw = tiny_hw(activation_epilogue_ns_per_element=0.01)
    plain = chain(1, m=512, k=128, n=256).layers[0]
    for ops, extra in (((), 0.0), (("gelu",), 128 * 128 * 0.01), (("silu",), 128 * 128 * 0.01), (("residual",), None)):
        layer = dataclasses.replace(plain, epilogue=ops)
        t = tile_ns(layer, layer.k, hw, 2)
        if extra is None:  # the residual is a read, not an activation
            assert t == pytest.approx(tile_ns(layer, layer.k, tiny_hw(), 2))
        else:
            assert t == pytest.approx(tile_ns(plain, plain.k, hw, 2) + extra)


def test_a_swiglu_layer_stores_and_sends_half_its_columns():
    """The gated epilogue: the GEMM runs N columns, the stored tile is half of it (ctapipe stores, micro-batching
    transfers and the row-wise op all see N / 2), and the activation costs its per-element time."""
    from ctasim import costs
    from ctasim.spec import Workload

    hw = tiny_hw(activation_epilogue_ns_per_element=0.01)
    up = Layer(m=512, k=128, n=512, tile_m=128, tile_n=128, epilogue=("swiglu",))
    down = Layer(m=512, k=256, n=256, tile_m=128, tile_n=128)
    plain = dataclasses.replace(up, epilogue=())
    assert costs.tile_bytes(up, 2) == costs.tile_bytes(plain, 2) // 2
    assert costs.tile_ns(up, up.k, hw, 2) == pytest.approx(costs.tile_ns(plain, plain.k, hw, 2) + 128 * 128 * 0.01)
    wl = Workload("ffn", "bf16", (up, down))
    (pipe_plan,) = build_plans(Strategy("ctapipe"), wl, hw, 2, "t")
    assert pipe_plan.pipes[0].store_bytes == 128 * 64 * 2
    mb = build_plans(Strategy("microbatch", chunks=(2,)), wl, hw, 2, "t")[0]
    from ctasim.plan import Transfer

    sizes = {op.nbytes for op in mb.ops if isinstance(op, Transfer)}
    assert sizes == {256 * 256 * 2}  # a 256-row chunk of the 256 stored columns



def test_an_unfused_epilogue_is_a_memory_pass_after_its_gemm():
    """epilogue_fused = false: the GEMM tile costs what a plain tile costs and stores its whole tile; a pass reads the
    N columns (and the residual) and writes out_n, at HBM bandwidth; sequential and micro-batching put it between
    the GEMM and what reads it; the strategies with no place for it refuse."""
    from ctasim.plan import MemoryPass, Transfer
    from ctasim.spec import Workload
    from ctasim.strategies import build_plans, check_placement

    hw = tiny_hw(activation_epilogue_ns_per_element=0.01)
    up = Layer(m=512, k=128, n=512, tile_m=128, tile_n=128, epilogue=("swiglu",), epilogue_fused=False)
    down = Layer(m=512, k=256, n=256, tile_m=128, tile_n=128)
    plain = dataclasses.replace(up, epilogue=())
    assert up.epilogue_pass and not plain.epilogue_pass and not dataclasses.replace(up, epilogue_fused=True).epilogue_pass
    assert costs.tile_ns(up, up.k, hw, 2) == costs.tile_ns(plain, plain.k, hw, 2)  # no activation in the tile
    assert costs.tile_bytes(up, 2) == costs.tile_bytes(plain, 2)  # the GEMM stores all N columns
    assert up.out_n == 256  # the layer still stores N / 2 after the pass
    # (512 x 512 read + 512 x 256 written) x 2 B / hbm_gbps
    assert costs.epilogue_pass_ns(up, 2, hw) == pytest.approx((512 * 512 + 512 * 256) * 2 / hw.hbm_gbps)
    res = Layer(m=512, k=256, n=256, tile_m=128, tile_n=128, epilogue=("gelu", "residual"), epilogue_fused=False)
    assert costs.epilogue_pass_ns(res, 2, hw) == pytest.approx(3 * 512 * 256 * 2 / hw.hbm_gbps)  # + the residual read
    wl = Workload("ffn", "bf16", (up, down))
    (seq,) = build_plans(Strategy("sequential"), wl, hw, 1, "t")
    kinds = [(type(op).__name__, op.name) for op in seq.ops]
    assert kinds == [("Kernel", "gemm L0 gpu0"), ("MemoryPass", "swiglu L0 gpu0"), ("Kernel", "gemm L1 gpu0")]
    passes = [op for op in seq.ops if isinstance(op, MemoryPass)]
    assert passes[0].ns == pytest.approx(costs.epilogue_pass_ns(up, 2, hw)) and passes[0].deps[0][0] == seq.ops[0].id
    assert seq.ops[2].deps[0][0] == passes[0].id  # the next GEMM waits for the pass, not for the GEMM
    # against the same two GEMMs with no epilogue (plans do not check the chain's shapes): the pass and one more
    # launch gap, nothing else
    bare = Workload("ffn", "bf16", (plain, down))
    t_pass = simulate(seq, hw).makespan_ns
    t_bare = simulate(build_plans(Strategy("sequential"), bare, hw, 1, "t")[0], hw).makespan_ns
    assert t_pass - t_bare == pytest.approx(passes[0].ns + hw.kernel_gap_ns, rel=1e-9)
    mb = build_plans(Strategy("microbatch", chunks=(2,)), wl, hw, 2, "t")[0]
    copies = [op for op in mb.ops if isinstance(op, Transfer)]
    by_id = {op.id: op for op in mb.ops}
    assert all(isinstance(by_id[c.deps[0][0]], MemoryPass) for c in copies)  # each chunk's copy leaves after its pass
    assert {c.nbytes for c in copies} == {256 * 256 * 2}
    for kind, strat in (("tp", Strategy("tp")), ("ctapipe", Strategy("ctapipe")), ("hybrid", Strategy("hybrid", tp_degree=1)),
                        ("ctapipe", Strategy("ctapipe", gpus=1))):
        assert f"{kind} runs fused epilogues only" in check_placement(strat, wl, hw, 2), kind
    assert check_placement(Strategy("sequential"), wl, hw, 2) is None

# ---------------------------------------------------------------- reference traces
REFERENCE = "tests/data/engine-reference.trace.npz"
"""Traces of the plans of :func:`_reference_cases`, written by the engine as it was before its per-tile event
path was reworked for speed (``python -m tests.test_engine`` rewrites it: only when the model changes on purpose).
Rewritten once since, when each kernel got its own random stream (``ctasim.engine.kernel_rng``) and the calibrated
profile's two harness fits moved with it (max_clock_boost 1.093 -> 1.094, kernel_fixed_ns 3209.3 -> 3207.7): the
10 cases on the tiny and x8 profiles without tile noise came out bit for bit as the process-per-CTA engine wrote
them; the 14 with noise or on the calibrated profile were redrawn."""


def _reference_cases():
    """name -> (plan, hardware, simulate keywords): every per-tile path of the engine on small plans (queue and wait
    consumers, persistent or not, direct / switch, fcfs / fair links, the chain kernel's tickets and static designs,
    wave slowdown, tile_cv, jitter, signal hold, epilogue overlap, the clock onset, the closed-form strategies)."""
    from ctasim.spec import load_hardware, load_workload
    from ctasim.strategies import ctapipe

    # the calibrated profile with its clock curve off: the references were written with the one step, whose onset
    # (56 ms) these runs never reach
    tiny, x8 = tiny_hw(), load_hardware("h200-x8")
    cal = dataclasses.replace(load_hardware("h200-x2-calibrated"), clock_curve_ns=(), clock_curve_factor=())
    wl3 = chain(3, m=1024, k=128, n=256)

    def big(m, layers, h=8192):
        wl = load_workload("chain2-16384")
        return dataclasses.replace(wl, layers=(dataclasses.replace(wl.layers[0], m=m, k=h, n=h),) * layers)

    def one(kind, wl, hw, gpus, **kw):
        return build_plans(Strategy(kind, **kw), wl, hw, gpus, "ref")

    out = {}
    for src in ("queue", "static"):
        for pers in (True, False):
            out[f"tiny-{src}-{'p' if pers else 'np'}"] = (
                one("ctapipe", wl3, tiny, 3, tile_source=src, persistent=pers)[0], tiny, {})
    out["tiny-queue-jitter"] = (one("ctapipe", wl3, tiny, 3)[0], tiny, {"seed": 3, "jitter": 0.1})
    out["tiny-wait-np-jitter"] = (one("ctapipe", wl3, tiny, 3, tile_source="static", persistent=False)[0], tiny,
                                  {"seed": 4, "jitter": 0.2})
    tov = tiny_hw(epilogue_store_overlap=0.5)
    out["tiny-overlap-counter-rows"] = (one("ctapipe", chain(3, m=1024, k=128, n=512), tov, 3, counter_rows=256)[0],
                                        tov, {"seed": 1, "jitter": 0.05})
    tonset = tiny_hw(clock_onset_ns=3000.0, clock_sustained_slowdown=1.25)
    out["tiny-queue-onset"] = (one("ctapipe", wl3, tonset, 3)[0], tonset, {})
    out["tiny-wait-np-sustained"] = (one("ctapipe", wl3, tonset, 3, tile_source="static", persistent=False)[0],
                                     tonset, {"regime": "sustained"})
    out["x8-queue"] = (one("ctapipe", big(1024, 3), x8, 3)[0], x8, {})
    out["x8-wait-column"] = (one("ctapipe", big(1024, 2), x8, 2, tile_source="static", raster="column")[0], x8,
                             {"seed": 2, "jitter": 0.03})
    out["x8-hybrid"] = (one("hybrid", big(1024, 2), x8, 4, tp_degree=2)[0], x8, {})
    out["cal-fair-queue"] = (one("ctapipe", big(1024, 2), cal, 2)[0], cal, {"seed": 1})
    out["cal-fair-wait-np-jitter"] = (one("ctapipe", big(1024, 2), cal, 2, tile_source="static", persistent=False)[0],
                                      cal, {"seed": 5, "jitter": 0.05})
    out["cal-variant-w21g4"] = (one("ctapipe", big(1024, 2), cal, 2, variant="cutlass_ctapipe_w21g4")[0], cal,
                                {"seed": 0})
    out["cal-variant-c21"] = (one("ctapipe", big(1024, 2), cal, 2, variant="cutlass_ctapipe_c21")[0], cal,
                               {"seed": 0})
    conset = dataclasses.replace(cal, clock_onset_ns=20000.0, clock_curve_ns=(), clock_curve_factor=())  # the one step
    out["cal-fair-queue-onset"] = (one("ctapipe", big(2048, 2), conset, 2)[0], conset, {"seed": 0})
    for src in ("queue", "static"):
        plan = ctapipe.build_chain(Strategy("ctapipe", gpus=1, tile_source=src), big(512, 3), cal, "ref")
        out[f"chain-{src}"] = (plan, cal, {"seed": 0})
        out[f"chain-{src}-onset-jitter"] = (plan, conset, {"seed": 2, "jitter": 0.05})
    out["tiny-sequential"] = (one("sequential", wl3, tiny, 1)[0], tiny, {"seed": 1, "jitter": 0.1})
    out["tiny-microbatch"] = (one("microbatch", wl3, tiny, 3, chunks=(4,))[0], tiny, {})
    out["tiny-tp"] = (one("tp", chain(2, m=1024, k=128, n=256), tiny, 2, tp_degree=2)[0], tiny, {})
    return out


def test_traces_equal_the_reference_engine():
    """Every table of every reference plan, float for float and row for row, as the engine wrote it before its
    per-tile path was reworked for speed."""
    import pathlib

    from ctasim.trace import load_traces

    want = load_traces(pathlib.Path(__file__).resolve().parent.parent / REFERENCE)
    got = _reference_traces()
    assert list(got) == list(want)
    text = pd.Series(np.array(["sim"], dtype=object)).dtype  # what Trace.from_records has always given it
    for name, tr in got.items():
        assert tr.tiles["source"].dtype == text and (tr.tiles["source"] == "sim").all()
        for table in ("tiles", "events", "ops"):
            a, b = getattr(tr, table), getattr(want[name], table)
            if table == "tiles":  # the bundle stores text columns as unicode arrays
                a, b = a.drop(columns="source"), b.drop(columns="source")
            if table == "ops":
                a, b = a.astype({"name": str, "kind": str}), b.astype({"name": str, "kind": str})
            pd.testing.assert_frame_equal(a, b, check_exact=True, obj=f"{name}.{table}")
        assert tr.meta == want[name].meta, name


def _reference_traces():
    return {name: simulate(plan, hw, **kw) for name, (plan, hw, kw) in _reference_cases().items()}


if __name__ == "__main__":  # rewrite the reference traces (only when the model changes on purpose)
    import pathlib

    from ctasim.trace import save_traces

    pathlib.Path(REFERENCE).parent.mkdir(parents=True, exist_ok=True)
    traces = _reference_traces()
    save_traces(traces, REFERENCE)
    print(f"wrote {REFERENCE}: " + ", ".join(f"{k} ({len(t.tiles)} tiles)" for k, t in traces.items()))


def test_the_calendar_keeps_simpys_order_of_simultaneous_events():
    """Calls scheduled partly on the engine's calendar (_Lane) and partly as SimPy timeouts run in exactly the
    order SimPy alone runs them: by time, then by when they were scheduled, including calls scheduled by calls,
    at the same instant, and a process started (URGENT) in the middle."""
    import random

    import simpy

    from ctasim.engine import _Lane

    def schedule_all(via_lane: bool, seed: int) -> list:
        env, log = simpy.Environment(), []
        lane = _Lane(env)
        rnd = random.Random(seed)

        def at(t, name, on_lane):
            fn = lambda: call(name)  # noqa: E731
            if on_lane:
                lane.push(env.now + (t - env.now), fn)
            else:
                env.timeout(t - env.now).callbacks.append(lambda _ev: fn())

        def call(name):
            log.append((env.now, name))
            if len(name) < 4:  # every call schedules two more, some at this very instant
                for j in range(2):
                    dt, on_lane = rnd.choice([0.0, 0.0, 1.0, 2.5]), rnd.random() < 0.6
                    at(env.now + dt, name + str(j), via_lane and on_lane)
            if name == "10":
                def proc():
                    log.append((env.now, "process"))
                    yield env.timeout(0.0)
                    log.append((env.now, "process again"))
                env.process(proc())

        for i in range(6):
            at(rnd.choice([0.0, 1.0, 2.0]), str(i), via_lane and i % 2 == 0)
        env.run()
        return log

    for seed in range(20):
        want = schedule_all(False, seed)
        assert len(want) == 6 * 15 + 2
        assert schedule_all(True, seed) == want


# ---------------------------------------------------------------------------------------------------- costs
# Each cost below is computed by hand from its formula (in the comment) on round numbers, not read back from the code.


def _two_slot_hw(**changes):
    """The toy GPU (4 SMs, 1000 GB/s HBM) with a 128x64 config of 2 slots per SM, a faster 'v2' variant and a 'v1'
    variant of 1 slot per SM."""
    from ctasim.spec import KernelConfig

    base = KernelConfig(tile_m=128, tile_n=64, tile_k=64, cta_slots_per_sm=2, sm_tflops=1.048576, tile_fixed_ns=30.0)
    fast = dataclasses.replace(base, kernel="v2", sm_tflops=2.097152)
    one_slot = dataclasses.replace(base, kernel="v1", cta_slots_per_sm=1)
    return tiny_hw(kernel_configs=(base, fast, one_slot), **changes)


def test_slot_hbm_bandwidth_and_tile_bytes_by_hand():
    hw = _two_slot_hw()
    cfg = hw.config(128, 64)
    assert costs.slot_hbm_gbps(hw, cfg) == pytest.approx(125.0)  # hbm / (sm_count x slots) = 1000 / (4 x 2)
    layer = Layer(m=256, k=128, n=128, tile_m=128, tile_n=64)
    assert costs.tile_bytes(layer, 4) == 32768  # tile_m x tile_n x bytes = 128 x 64 x 4
    gated = dataclasses.replace(layer, epilogue=("swiglu",))
    assert costs.tile_bytes(gated, 2) == 8192  # 128 x (64 / 2) x 2


def test_tile_time_of_mainloop_activation_and_residual_read_by_hand():
    hw = _two_slot_hw(activation_epilogue_ns_per_element=0.01)
    layer = Layer(m=256, k=128, n=128, tile_m=128, tile_n=64)
    # mainloop: tile_fixed + 2 x tile_m x tile_n x K / (sm_tflops x 1e3) = 30 + 2 x 128 x 64 x K / 1048.576 = 30 + 15.625 K
    assert costs.tile_ns(layer, 128, hw, 2) == pytest.approx(30 + 2000)
    assert costs.tile_ns(layer, 64, hw, 2) == pytest.approx(30 + 1000)  # the K given, not the layer's
    assert costs.tile_ns(layer, 64, hw, 2, kernel="v2") == pytest.approx(30 + 500)  # the variant's config (2x rate)
    # one activation: + tile_m x tile_n x 0.01 ns = 81.92; two: 163.84
    assert costs.tile_ns(dataclasses.replace(layer, epilogue=("gelu",)), 64, hw, 2) == pytest.approx(1030 + 81.92)
    assert costs.tile_ns(dataclasses.replace(layer, epilogue=("gelu", "relu")), 64, hw, 2) == pytest.approx(1030 + 163.84)
    # residual: reads one output tile from HBM at the slot's share: 128 x 64 x 2 B / (1000 / (4 x 2)) GB/s = 131.072 ns
    res = dataclasses.replace(layer, epilogue=("residual",))
    assert costs.tile_ns(res, 64, hw, 2) == pytest.approx(1030 + 131.072)
    assert costs.tile_ns(res, 64, hw, 4) == pytest.approx(1030 + 262.144)  # 4-byte elements: twice the bytes
    both = dataclasses.replace(layer, epilogue=("silu", "residual"))
    assert costs.tile_ns(both, 64, hw, 2) == pytest.approx(1030 + 81.92 + 131.072)
    # swiglu and a residual: the activation over the whole accumulator (81.92), the read of the stored half
    # (128 x 32 x 2 / 125 = 65.536)
    gated = dataclasses.replace(layer, epilogue=("swiglu", "residual"))
    assert costs.tile_ns(gated, 64, hw, 2) == pytest.approx(1030 + 81.92 + 65.536)


def test_clock_boost_edges_and_the_boosted_gemm_tile_by_hand():
    hw = tiny_hw(max_clock_boost=2.0)
    assert costs.clock_boost(hw, 0, 4) == 1.0  # no active slot: no boost (and no division by zero)
    assert costs.clock_boost(hw, 6, 4) == 1.0  # more tiles than slots: every slot busy
    assert costs.clock_boost(hw, 2, 4) == pytest.approx(2 ** (1 / 3))  # (slots / active)^(1/3) = (4/2)^(1/3)
    assert costs.clock_boost(tiny_hw(max_clock_boost=1.0), 1, 4) == 1.0
    assert costs.clock_boost(tiny_hw(max_clock_boost=0.5), 1, 4) == 1.0  # a ceiling below 1 is off, not a slowdown
    # gemm_tile_ns = tile_ns / clock_boost(min(tiles, slots), slots): 2 tiles of 1000 ns on 4 slots
    two = Layer(m=256, k=128, n=128, tile_m=128, tile_n=128)
    assert costs.gemm_tile_ns(two, hw, 2) == pytest.approx(1000 / 2 ** (1 / 3))
    # 8 tiles on 4 slots: min(8, 4) = 4 active, no boost
    eight = Layer(m=1024, k=128, n=256, tile_m=128, tile_n=128)
    assert costs.gemm_tile_ns(eight, hw, 2) == pytest.approx(1000)
    # 2 slots per SM: 8 slots, 2 tiles active: (8/2)^(1/3), below the 2.0 ceiling; the 'v2' config's tile time
    hw2 = _two_slot_hw(max_clock_boost=2.0)
    l2 = Layer(m=256, k=64, n=64, tile_m=128, tile_n=64)
    assert costs.gemm_tile_ns(l2, hw2, 2) == pytest.approx(1030 / 4 ** (1 / 3))
    assert costs.gemm_tile_ns(l2, hw2, 2, kernel="v2") == pytest.approx(530 / 4 ** (1 / 3))
    # the variant's slots: 'v1' has 1 per SM, 4 slots, 2 tiles active: (4/2)^(1/3)
    assert costs.gemm_tile_ns(l2, hw2, 2, kernel="v1") == pytest.approx(1030 / 2 ** (1 / 3))
    # with a residual read: (1030 + 128 x 64 x 2 B / 125 GB/s) / (8/2)^(1/3) = (1030 + 131.072) / 4^(1/3)
    res = dataclasses.replace(l2, epilogue=("residual",))
    assert costs.gemm_tile_ns(res, hw2, 2) == pytest.approx(1161.072 / 4 ** (1 / 3))


def test_transfer_allreduce_and_rowwise_costs_by_hand():
    hw = tiny_hw()  # allreduce_bus_gbps 50, allreduce_latency_ns 7, hbm_gbps 1000
    assert costs.transfer_ns(1000.0, 50.0, 7.0) == pytest.approx(27.0)  # latency + bytes / GB/s = 7 + 1000 / 50
    # ring all-reduce: 2(p-1)/p x bytes / bus + 2(p-1) x latency
    assert costs.allreduce_ns(1000.0, 4, hw) == pytest.approx(6 / 4 * 1000 / 50 + 6 * 7)  # 30 + 42 = 72
    assert costs.allreduce_ns(1000.0, 8, hw) == pytest.approx(14 / 8 * 1000 / 50 + 14 * 7)  # 35 + 98 = 133
    assert costs.allreduce_ns(1000.0, 1, hw) == 0.0 and costs.allreduce_ns(1000.0, 0, hw) == 0.0
    # LayerNorm / RMSNorm: one read and one write of rows x cols elements at HBM bandwidth: 2 x 256 x 512 x 2 / 1000
    assert costs.rowwise_ns(256, 512, 2, hw) == pytest.approx(524.288)
    assert costs.rowwise_ns(128, 512, 4, hw) == pytest.approx(524.288)  # half the rows, twice the element size


def test_a_layernorm_costs_one_read_and_one_write_of_its_rows_in_every_plan():
    from ctasim.plan import MemoryPass

    hw = tiny_hw()
    wl = chain(2, m=512, n=256, rowwise="layernorm")
    (seq,) = build_plans(Strategy("sequential"), wl, hw, 1, "t")
    passes = [op for op in seq.ops if isinstance(op, MemoryPass)]
    # the whole output after each layer: 2 x 512 rows x 256 cols x 2 B / 1000 GB/s = 524.288 ns
    assert [op.ns for op in passes] == pytest.approx([524.288, 524.288])
    (pipe_plan,) = build_plans(Strategy("ctapipe"), wl, hw, 2, "t")
    # ctapipe: one consumer row-block before its push: 2 x 128 rows x 256 cols x 2 B / 1000 GB/s = 131.072 ns
    assert pipe_plan.pipes[0].ready_delay_ns == pytest.approx(131.072)
