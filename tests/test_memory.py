"""The memory hierarchy in the engine: plain GEMMs timed wave by wave by ctasim.l2 (ctasim.costs.tuned_gemm)."""

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from ctasim import costs, l2
from ctasim.engine import simulate
from ctasim.predict import predict, without_drift, without_memory
from ctasim.profiles import before_h200_reuse
from ctasim.spec import Experiment, Layer, SpecError, Strategy, Workload, load_hardware
from ctasim.strategies import build_plans
from tests.helpers import load_bench

X1 = load_hardware("h200-x1-calibrated")
X1_BEFORE_REUSE = before_h200_reuse(X1)
"""The profile before registered plan 67's adoption on an H200 (2026-12-06): a panel's reuse across waves an LRU of the
whole L2. Every earlier state of the profile below had that law, and so has every twin file made before that day."""
X1_BEFORE_53 = X1_BEFORE_REUSE.with_ticket_law("partition", mainloop_factor=1.0)
"""The profile before registered plan 53's adoption: the partition ticket law, no tickets mainloop factor."""
X1_BEFORE_58 = X1_BEFORE_REUSE.with_tickets(ticket_gap_cv=0.0, ticket_touched=1.0)
"""The profile before registered plan 58's adoption (registered plan 53's): the survival law without the gap spread and
the touched bytes."""
X1_BEFORE_CURVE = dataclasses.replace(X1_BEFORE_53, l2_survival_taken=(), l2_survival_share=())
"""The profile as its twins (-partition, -threshold, -wave, -carried) hold it: they are registrations' records, made
before the L2 survival curve was measured (2026-12-04) and left unchanged; the curve is read by no law they have."""
FLAT = dataclasses.replace(X1, l2_bytes=0.0)


def one_gemm(m=4096, k=8192, n=8192, **kw) -> Workload:
    return Workload(name="g", dtype="bf16", layers=(Layer(m=m, k=k, n=n, **kw),))


def by_hand(layer: Layer, hw, order_name: str) -> np.ndarray:
    """The wave times of one named order, straight from ctasim.l2 (no costs.tuned_gemm), a panel's reuse across waves
    priced by the profile's own law (``l2_reuse_law``, reading its measured L2 survival curve) as ctasim.costs does."""
    raster, swz = order_name.split("/swizzle")
    cfg = hw.config(128, 256)
    tm, tn = layer.tiles_m, layer.tiles_n
    order = l2.cutlass_sm90_order(tm, tn, raster, int(swz), (cfg.cluster_m, cfg.cluster_n))
    slots = l2.cutlass_sm90_grid_ctas(tm, tn, raster, int(swz), (cfg.cluster_m, cfg.cluster_n), sm_count=hw.sm_count)
    tr = l2.wave_traffic(order, layer.m, layer.n, layer.k, 128, 256, 2, slots, hw.l2_bytes, drift=cfg.cta_drift,
                         cluster_m=cfg.cluster_m, drift_form=cfg.drift_form,
                         survival=(hw.l2_survival_taken, hw.l2_survival_share), reuse_law=hw.l2_reuse_law)
    compute = cfg.tile_fixed_ns + 2.0 * 128 * 256 * layer.k / (cfg.l2_sm_tflops * 1e3)
    return l2.wave_ns(tr, compute, hw.hbm_gbps, hw.l2_hbm_exposed)


def test_the_shipped_one_gpu_profile_has_the_memory_hierarchy_and_the_others_do_not():
    assert X1.l2_bytes == 62914560 and X1.config(128, 256).l2_sm_tflops > 0 and X1.config(128, 256).cluster_m == 2
    assert without_memory(X1) is not None and without_memory(X1).l2_bytes == 0
    for name in ("h200-x2-calibrated", "h200-x8", "b200-x8"):
        hw = load_hardware(name)
        assert without_memory(hw) is None
        assert costs.tuned_gemm(Layer(m=4096, k=8192, n=8192), hw, 2) is None


@pytest.mark.parametrize("m,n,k", [(4096, 8192, 8192), (3072, 28672, 5120), (16384, 8192, 28672), (2048, 4096, 4096)])
def test_the_tuned_order_is_the_least_modelled_time_of_every_cutlass_order(m, n, k):
    layer = Layer(m=m, k=k, n=n)
    g = costs.tuned_gemm(layer, X1, 2)
    totals = {f"{r}/swizzle{s}": by_hand(layer, X1, f"{r}/swizzle{s}").sum()
              for r in ("along_m", "along_n") for s in (1, 2, 4, 8)}
    assert g.total_ns == pytest.approx(min(totals.values()), rel=1e-12)
    assert totals[g.schedule] == pytest.approx(g.total_ns, rel=1e-12)
    assert np.array_equal(np.sort(g.order), np.arange(layer.tiles))  # every tile once, padding dropped


def test_each_tile_takes_its_waves_time():
    layer = Layer(m=3072, k=8192, n=8192)  # 24 x 32 tiles: 768 over 132 slots, a partial last wave
    g = costs.tuned_gemm(layer, X1, 2)
    waves = by_hand(layer, X1, g.schedule)
    assert len(waves) == 6 and np.allclose(g.waves_ns, waves)
    assert np.allclose(g.tile_ns, waves[np.arange(layer.tiles) // 132])
    lockstep = by_hand(layer, without_drift(X1), g.schedule)
    assert lockstep[-1] < lockstep[0]  # the last, partial wave moves fewer bytes; the first runs with a cold L2
    assert np.all(waves >= lockstep - 1e-6)  # drift only adds re-reads


def test_a_sequential_gemm_is_launch_plus_its_waves():
    wl = one_gemm(m=8192)
    (plan,) = build_plans(Strategy("sequential"), wl, X1, 1, "g")
    (k,) = plan.kernels()
    g = costs.tuned_gemm(wl.layers[0], X1, 2)
    assert k.schedule == g.schedule and np.array_equal(k.order, g.order) and np.array_equal(k.tile_times, g.tile_ns)
    t = simulate(plan, X1)
    assert t.makespan_ns == pytest.approx(X1.launch_ns + g.total_ns, rel=1e-9)
    # the trace's tiles are the order's, each in its own wave's slot of time
    tiles = t.tiles
    ids = sorted(tiles["tile_m"] * wl.layers[0].tiles_n + tiles["tile_n"])
    assert ids == list(range(wl.layers[0].tiles))
    assert np.allclose(np.sort(tiles["t_compute_end"] - tiles["t_start"]), np.sort(g.tile_ns))


def test_the_memory_hierarchy_changes_the_time_and_flat_is_the_config_rate():
    wl = one_gemm(m=16384, n=28672)
    (p_mem,) = build_plans(Strategy("sequential"), wl, X1, 1, "g")
    (p_flat,) = build_plans(Strategy("sequential"), wl, FLAT, 1, "g")
    (k_flat,) = p_flat.kernels()
    assert len(k_flat.tile_times) == 0 and k_flat.schedule == ""
    layer = wl.layers[0]
    # the clock curve off (its 1.0006 from 5 ms on would move the formula); the step's onset lies past this 10 ms GEMM
    flat_ns = simulate(p_flat, dataclasses.replace(FLAT, clock_curve_ns=(), clock_curve_factor=())).makespan_ns
    assert flat_ns == pytest.approx(X1.launch_ns + -(-layer.tiles // 132) * costs.tile_ns(layer, layer.k, X1, 2))
    mem_ns = simulate(p_mem, X1).makespan_ns
    assert abs(mem_ns / flat_ns - 1) > 0.005


def test_tile_times_drive_the_engine_on_both_paths():
    wl = one_gemm(m=3072)
    (plan,) = build_plans(Strategy("sequential"), wl, X1, 1, "g")
    base = simulate(plan, X1).makespan_ns
    assert simulate(plan, X1, closed_form=False).makespan_ns == pytest.approx(base, rel=1e-12)
    k = plan.kernels()[0]
    k.tile_times = k.tile_times * 2.0
    assert simulate(plan, X1).makespan_ns - X1.launch_ns == pytest.approx(2 * (base - X1.launch_ns), rel=1e-9)


def test_microbatch_and_tp_gemms_are_tuned_and_ctapipe_kernels_are_not():
    hw = dataclasses.replace(X1, gpus=2)
    wl = Workload(name="c", dtype="bf16", layers=(Layer(m=4096, k=8192, n=8192), Layer(m=4096, k=8192, n=8192)))
    mb = build_plans(Strategy("microbatch", chunks=(2,)), wl, hw, 2, "c")[0]
    assert all(len(k.tile_times) == k.tiles for k in mb.kernels())
    tp = build_plans(Strategy("tp"), wl, hw, 2, "c")[0]
    assert all(len(k.tile_times) == k.tiles and k.schedule for k in tp.kernels())
    cp = build_plans(Strategy("ctapipe"), wl, hw, 2, "c")[0]
    # CTA-pipelined kernels keep the plan's order (not tuned) and take their tiles' times from the hierarchy over it
    assert all(not k.schedule and len(k.tile_times) == k.tiles for k in cp.kernels())
    assert [k.order.tolist() for k in cp.kernels()] == [list(range(k.tiles)) for k in cp.kernels()]


def test_a_fused_gated_epilogue_stores_half_and_an_activation_adds_compute():
    plain = costs.tuned_gemm(Layer(m=8192, k=4096, n=28672), X1, 2)
    gelu = costs.tuned_gemm(Layer(m=8192, k=4096, n=28672, epilogue=("gelu",)), X1, 2)
    gated = costs.tuned_gemm(Layer(m=8192, k=4096, n=28672, epilogue=("swiglu",)), X1, 2)
    assert gelu.total_ns > plain.total_ns
    assert gated.total_ns > plain.total_ns  # the activation's cost, less the half store
    unfused = costs.tuned_gemm(Layer(m=8192, k=4096, n=28672, epilogue=("swiglu",), epilogue_fused=False), X1, 2)
    assert unfused.total_ns == pytest.approx(plain.total_ns)


def test_predict_writes_the_flat_predictor_only_beside_a_memory_model():
    exp = Experiment(name="e", description="", hardware=X1, workload=one_gemm(), strategies=(Strategy("sequential"),),
                     gpus=1)
    df = predict(exp, None, None)
    assert sorted(df["source"]) == ["clock-step", "flat", "lockstep", "model", "waves"]
    flat = df.loc[df.source == "flat", "makespan_ms"].item()
    model = df.loc[df.source == "model", "makespan_ms"].item()
    (p,) = build_plans(Strategy("sequential"), exp.workload, FLAT, 1, "x")
    assert flat == pytest.approx(simulate(p, FLAT).makespan_ns / 1e6) and flat != pytest.approx(model)
    exp2 = dataclasses.replace(exp, hardware=load_hardware("h200-x2-calibrated"))
    assert "flat" not in set(predict(exp2, None, None)["source"])


@pytest.mark.parametrize("field,value,words", [
    ("l2_bytes", -1.0, "must be >= 0"), ("l2_hbm_exposed", 1.5, "within [0, 1]"),
    ("l2_hbm_exposed", -0.1, "within [0, 1]")])
def test_memory_fields_of_the_profile_are_checked(field, value, words):
    from ctasim.spec import validate_hardware

    with pytest.raises(SpecError, match=field) as e:
        validate_hardware(dataclasses.replace(X1, **{field: value}), "x")
    assert words in str(e.value)


@pytest.mark.parametrize("field,value", [("l2_sm_tflops", -1.0), ("cluster_m", 0), ("cluster_n", 0),
                                         ("drift_form", "per-wave")])
def test_memory_fields_of_a_kernel_config_are_checked(field, value):
    from ctasim.spec import validate_hardware

    cfgs = (dataclasses.replace(X1.kernel_configs[0], **{field: value}),) + X1.kernel_configs[1:]
    with pytest.raises(SpecError, match=field):
        validate_hardware(dataclasses.replace(X1, kernel_configs=cfgs), "x")


def test_lockstep_is_the_memory_hierarchy_without_drift_and_drift_costs_time_on_a_long_gemm():
    assert X1.config(128, 256).cta_drift > 0
    lock = without_drift(X1)
    assert lock.l2_bytes == X1.l2_bytes and all(c.cta_drift == 0 for c in lock.kernel_configs)
    assert without_drift(FLAT) is None and without_drift(load_hardware("h200-x2-calibrated")) is None
    layer = Layer(m=32768, k=8192, n=8192)  # 62 rounds
    drifting, lockstep = costs.tuned_gemm(layer, X1, 2), costs.tuned_gemm(layer, lock, 2)
    assert drifting.total_ns > 1.01 * lockstep.total_ns
    assert drifting.waves_ns[0] == pytest.approx(lockstep.waves_ns[0])  # the first round starts together


def test_the_profiles_memory_constants_are_the_committed_derivations():
    """h200-x1-calibrated's cta_drift is the median drift of the committed per-tile traces (bench/order_drift.py), and
    its two L2 constants the drift model's fit of the committed tile-order probe (bench/l2_drift_model.py's table)."""
    from pathlib import Path

    import pandas as pd

    root = Path(__file__).resolve().parent.parent
    mod = load_bench("order_drift")
    traces = sorted((root / "bench/results/hw/2026-12-02-order-traces").glob("tiles-*.csv.gz"))
    assert len(traces) == 9
    drift = float(np.median([mod.drift(p)["start_sd_per_round"] for p in traces]))
    cfg = X1.config(128, 256)
    assert cfg.cta_drift == pytest.approx(drift, abs=5e-5)
    fit = pd.read_csv(root / "bench/results/l2-model/drift-summary.csv")
    fit = fit[fit.model.str.startswith("drift") & (fit.split == "A calibration")]
    row = fit[fit.model.str.endswith(f", {cfg.drift_form}")].iloc[0]
    assert cfg.drift_form == "interleaved"
    assert (cfg.l2_sm_tflops, X1.l2_hbm_exposed) == (pytest.approx(row.rate), pytest.approx(row.exposed))


def test_a_non_persistent_grid_adds_its_cta_launch_to_every_tiles_time():
    """Kernel.tile_times are the tiles' own times; a grid that launches a CTA per tile adds cta_launch_ns to each."""
    wl = one_gemm(m=3072)
    (plan,) = build_plans(Strategy("sequential"), wl, X1, 1, "g")
    (k,) = plan.kernels()
    base = simulate(plan, X1).tiles
    k.persistent, k.cta_launch_ns = False, 300.0
    tiles = simulate(plan, X1).tiles
    took = (tiles.t_compute_end - tiles.t_start).sort_values().to_numpy()
    assert np.allclose(took, np.sort(k.tile_times) + 300.0)
    assert tiles.t_compute_end.max() > base.t_compute_end.max()


# ------------------------------------------------------------------ the chain kernel (one GPU, every layer in one kernel)
def chain_wl(m=4096, h=8192, layers=2) -> Workload:
    return Workload(name="c", dtype="bf16", layers=tuple(Layer(m=m, k=h, n=h) for _ in range(layers)))


def test_the_tickets_mainloop_factor_slows_the_tickets_designs_compute_only():
    """ticket_mainloop_factor scales the chain kernel's tickets-design compute (a compute-bound wave by the factor,
    not its HBM time) and leaves the static design and the plain GEMM as they were."""
    slow = X1_BEFORE_53.with_ticket_law("partition", mainloop_factor=1.02)
    assert slow.config(128, 256).ticket_mainloop_factor == 1.02 and slow.config(128, 256).ticket_law == "partition"

    def plan(hw, **kw):
        return build_plans(Strategy("ctapipe", gpus=1, **kw), chain_wl(m=8192), hw, 1, "c")[0]

    base, slower = plan(X1_BEFORE_53).kernels()[0], plan(slow).kernels()[0]
    ratio = np.asarray(slower.tile_times) / np.asarray(base.tile_times)
    assert ratio.min() > 1.0 and ratio.max() <= 1.02 + 1e-9 and np.median(ratio) == pytest.approx(1.02, abs=2e-3)
    static = [np.asarray(plan(hw, tile_source="static").kernels()[0].tile_times) for hw in (X1_BEFORE_53, slow)]
    assert np.array_equal(static[0], static[1])
    seq = [build_plans(Strategy("sequential"), chain_wl(m=8192), hw, 1, "c")[0] for hw in (X1_BEFORE_53, slow)]
    assert [k.tile_ns for k in seq[0].kernels()] == [k.tile_ns for k in seq[1].kernels()]
    with pytest.raises(SpecError, match="ticket_mainloop_factor"):
        from ctasim.spec import hardware_from_dict  # noqa: PLC0415
        from tests.helpers import TINY  # noqa: PLC0415

        hardware_from_dict(dict(TINY, kernel_config=[dict(TINY["kernel_config"][0], ticket_mainloop_factor=1.3)]),
                           "hw.toml")


def test_each_layer_of_a_chain_reads_panels_of_its_own():
    # Both layers in one wave with an L2 that holds everything: every panel of both layers is read once.
    m, h = 512, 1024
    tm, tn = m // 128, h // 256
    order = np.arange(2 * tm * tn)
    tr = l2.wave_traffic(order, m, h, h, 128, 256, 2, slots=order.size, l2_bytes=1e12, layers=2)
    assert tr.a_hbm.tolist() == [2 * m * h * 2]
    assert tr.w_hbm.tolist() == [2 * h * h * 2]
    assert tr.store.tolist() == [2 * m * h * 2]
    one = l2.wave_traffic(order[: tm * tn], m, h, h, 128, 256, 2, slots=order.size, l2_bytes=1e12)
    assert one.a_hbm[0] * 2 == tr.a_hbm[0]
    with pytest.raises(ValueError, match="2 x 4 x 4 tile ids"):
        l2.wave_traffic(order[:-1], m, h, h, 128, 256, 2, slots=8, l2_bytes=1e12, layers=2)


def test_a_chain_orders_tiles_take_their_waves_time_and_the_engine_runs_them():
    wl = chain_wl()
    plan = build_plans(Strategy("ctapipe", gpus=1), wl, X1, 1, "c")[0]
    k = plan.kernels()[0]
    layer = wl.layers[0]
    cfg = X1.config(128, 256)  # tickets: no drift, their spread, the profile's mainloop factor (1.019, plan 53)
    waves = costs.order_waves(layer, X1, 2, k.order, k.slots, drift=0.0, cluster_m=1, layers=2,
                              ticket_spread=cfg.ticket_spread, boost=1.0 / cfg.ticket_mainloop_factor)
    assert cfg.ticket_mainloop_factor == 1.019
    assert len(k.tile_times) == k.tiles == 2 * layer.tiles
    assert np.array_equal(k.tile_times, waves[np.arange(k.tiles) // k.slots])
    assert plan.params["memory"] == "l2"
    flat = build_plans(Strategy("ctapipe", gpus=1), wl, FLAT, 1, "c")[0].kernels()[0]
    assert len(flat.tile_times) == 0 and "memory" not in build_plans(Strategy("ctapipe", gpus=1), wl, FLAT, 1, "c")[0].params
    slow = dataclasses.replace(k, tile_times=k.tile_times * 1.1)  # the engine reads tile_times, not tile_ns
    plan.ops[k.id] = slow
    assert simulate(plan, X1, seed=0).makespan_ns > 1.05 * simulate(build_plans(
        Strategy("ctapipe", gpus=1), wl, X1, 1, "c")[0], X1, seed=0).makespan_ns


def test_the_chain_order_moves_the_time_where_the_weights_do_not_fit_in_l2():
    def total(h, group, hw=X1):
        st = Strategy("ctapipe", gpus=1, chain_group=group)
        return simulate(build_plans(st, chain_wl(m=8192, h=h), hw, 1, "c")[0], hw, seed=0).makespan_ns

    # H = 8192: 128 MiB of W per layer; row order re-reads all of it every wave, groups of 8 or 16 row-blocks do not
    assert total(8192, 1) > 1.02 * total(8192, 8)
    assert total(8192, 16) < total(8192, 8)
    # H = 3072: 18 MiB of W, within the ~0.375 of the 60 MiB L2 that the measured survival curve keeps whole (the
    # profile's reuse law since registered plan 67's adoption on an H200, 2026-12-06): the order hardly matters
    assert abs(total(3072, 1) / total(3072, 8) - 1) < 0.005
    # H = 4096: 32 MiB of W fits in the 60 MiB L2 of an LRU (the profile before that adoption): the order hardly matters
    assert abs(total(4096, 1, X1_BEFORE_REUSE) / total(4096, 8, X1_BEFORE_REUSE) - 1) < 0.005


def test_tickets_have_no_drift_and_the_static_design_has_the_plain_gemms():
    wl = chain_wl(m=16384)
    tickets = build_plans(Strategy("ctapipe", gpus=1), wl, X1, 1, "c")[0].kernels()[0]
    static = build_plans(Strategy("ctapipe", gpus=1, tile_source="static"), wl, X1, 1, "c")[0].kernels()[0]
    layer = wl.layers[0]
    cfg = X1.config(128, 256)
    assert np.array_equal(static.tile_times, costs.order_tile_times(layer, X1, 2, static.order, static.slots,
                                                                    drift=cfg.cta_drift, cluster_m=2, layers=2))
    assert np.array_equal(tickets.tile_times, costs.order_tile_times(
        layer, X1, 2, tickets.order, tickets.slots, drift=0.0, cluster_m=1, layers=2, ticket_spread=cfg.ticket_spread,
        boost=1.0 / cfg.ticket_mainloop_factor))
    assert cfg.ticket_spread > 0
    assert static.tile_times.sum() > tickets.tile_times.sum()  # 63 rounds of drift re-read shared panels


def test_order_waves_refuses_a_profile_without_the_memory_hierarchy():
    layer = Layer(m=1024, k=1024, n=1024)
    with pytest.raises(ValueError, match="no memory hierarchy"):
        costs.order_waves(layer, FLAT, 2, np.arange(layer.tiles), 132)


@pytest.mark.parametrize("fields, words", [
    ({"kind": "ctapipe", "gpus": 1, "chain_group": -2}, "must be >= 0"),
    ({"kind": "ctapipe", "chain_group": 16}, "only the chain kernel"),
    ({"kind": "sequential", "chain_group": 16}, "only the chain kernel"),
])
def test_chain_group_is_checked(fields, words):
    from ctasim.spec import strategy_from_dict  # noqa: PLC0415

    with pytest.raises(SpecError, match=words):
        strategy_from_dict(fields, "x.toml", "strategy.")


def test_a_ring_of_one_gpu_per_layer_takes_a_chain_group():
    from ctasim.spec import strategy_from_dict  # noqa: PLC0415

    s = strategy_from_dict({"kind": "ctapipe", "placement": "ring", "chain_group": 4}, "x.toml", "strategy.")
    wl = Workload("ring", "bf16", (Layer(m=4096, k=8192, n=8192),) * 3)
    plan = build_plans(s, wl, load_hardware("h200-x8-mechanism"), 3, "c")[0]
    assert plan.gpus == 3 and plan.params["order"] == "chain_group4"


def test_the_chain_group_names_the_plans_order_and_the_static_design_pairs_only_grouped_rows():
    from ctasim.plan import chain_group_used  # noqa: PLC0415
    from ctasim.strategies.ctapipe import chain_cluster_m  # noqa: PLC0415

    plan = build_plans(Strategy("ctapipe", gpus=1, chain_group=16), chain_wl(), X1, 1, "c")[0]
    assert plan.params["order"] == "chain_group16"
    assert [chain_group_used(32, g) for g in (0, 1, 2, 8, 16, 12)] == [0, 0, 2, 8, 16, 8]
    assert chain_group_used(40, 16) == 10
    assert [chain_cluster_m(True, 32, 8), chain_cluster_m(True, 32, 1), chain_cluster_m(False, 32, 8),
            chain_cluster_m(True, 5, 8)] == [2, 1, 1, 1]


def test_a_later_sharer_misses_when_what_the_l2_takes_in_between_does_not_fit():
    # one panel (id 0, 10 bytes) read at positions 0 and 50 of a 100-slot wave; the second read comes
    # 50 / 100 * S tile times later, S = min(1, spread * wave)
    pos, panel, size = np.array([100, 150]), np.array([0, 0]), np.array([10.0])
    base = np.array([0.0, 100.0])  # wave 1 moves 100 bytes besides the re-read
    hit = l2.ticket_rereads(pos, panel, size, 2, 100, spread=0.5, capacity=1000.0, base=base)
    assert hit.tolist() == [0.0, 0.0]  # (100 + 10) * 0.5 * 0.5 = 27.5 <= 1000
    miss = l2.ticket_rereads(pos, panel, size, 2, 100, spread=0.5, capacity=20.0, base=base)
    assert miss.tolist() == [0.0, 10.0]  # 27.5 > 20 with the re-read; 25 > 20 without it too
    assert l2.ticket_rereads(pos, panel, size, 2, 100, spread=0.0, capacity=20.0, base=base).tolist() == [0.0, 0.0]
    # wave 0 starts in step (S_0 = 0): nothing is lost there
    assert l2.ticket_rereads(pos - 100, panel, size, 2, 100, spread=0.5, capacity=0.0, base=base).tolist() == [0.0, 0.0]


def test_a_grid_that_can_thrash_or_not_is_taken_to_thrash():
    # bistable: with the re-read the traffic over the gap is (100 + 10) * 0.25 = 27.5 > 26; without it 25 <= 26
    pos, panel, size = np.array([100, 150]), np.array([0, 0]), np.array([10.0])
    got = l2.ticket_rereads(pos, panel, size, 2, 100, spread=0.5, capacity=26.0, base=np.array([0.0, 100.0]))
    assert got.tolist() == [0.0, 10.0]
    # ... and a state that is not self-consistent when missing settles on hitting: 27.5 <= 28
    got = l2.ticket_rereads(pos, panel, size, 2, 100, spread=0.5, capacity=28.0, base=np.array([0.0, 100.0]))
    assert got.tolist() == [0.0, 0.0]


def test_the_partition_law_charges_the_share_lost_to_random_replacement_in_half_the_l2():
    # the pair of test_a_later_sharer_misses...: the second read 0.25 tile times after the first, wave 1 moving 100
    # bytes besides the re-read; the law's miss share m solves m = 1 - exp(-2 (100 + 10 m) 0.25 / C)
    pos, panel, size, base = np.array([100, 150]), np.array([0, 0]), np.array([10.0]), np.array([0.0, 100.0])

    def law(cap, spread=0.5, p=pos):
        return l2.ticket_rereads(p, panel, size, 2, 100, spread=spread, capacity=cap, base=base, law="partition")

    for cap in (20.0, 26.0, 1000.0):
        m = law(cap)[1] / 10.0
        assert m == pytest.approx(1.0 - np.exp(-2.0 * (100.0 + 10.0 * m) * 0.25 / cap), abs=1e-5)
        assert law(cap)[0] == 0.0
    # smooth where the threshold is all or nothing: a small loss where it keeps everything, not all where it loses all
    assert 0.0 < law(1000.0)[1] < 0.6 and law(1000.0)[1] == pytest.approx(10 * (1 - np.exp(-0.05)), rel=0.01)
    assert 9.0 < law(20.0)[1] < 10.0
    assert law(20.0, spread=0.0).tolist() == [0.0, 0.0] and law(0.0, p=pos - 100).tolist() == [0.0, 0.0]
    assert law(0.0).tolist() == [0.0, 10.0]  # no L2: every later sharer reads again
    # one consistent state, so the two states of the threshold law give the same
    assert law(26.0).tolist() == l2.ticket_rereads(pos, panel, size, 2, 100, spread=0.5, capacity=26.0, base=base,
                                                   law="partition", state="hold").tolist()
    with pytest.raises(ValueError, match="law must be one of"):
        l2.ticket_rereads(pos, panel, size, 2, 100, spread=0.5, capacity=26.0, base=base, law="lru")


def test_the_survival_law_charges_what_the_measured_curve_loses():
    # the pair of test_a_later_sharer_misses...: the second read 0.25 tile times after the first, wave 1 moving 100
    # bytes besides the re-read, so the L2 takes in (100 + 10 m) * 0.25 bytes between the two reads
    pos, panel, size, base = np.array([100, 150]), np.array([0, 0]), np.array([10.0]), np.array([0.0, 100.0])

    def law(cap, curve, spread=0.5):
        return l2.ticket_rereads(pos, panel, size, 2, 100, spread=spread, capacity=cap, base=base, law="survival",
                                 survival=curve)

    step = ((0.0, 1.0, 1.0 + 1e-9), (1.0, 1.0, 0.0))  # all kept up to one L2, none after: the threshold law
    for cap in (20.0, 26.0, 28.0, 1000.0):
        assert law(cap, step).tolist() == l2.ticket_rereads(pos, panel, size, 2, 100, spread=0.5, capacity=cap,
                                                            base=base).tolist()
    assert law(20.0, ((0.0,), (1.0,))).tolist() == [0.0, 0.0]  # a curve that keeps everything
    assert law(1000.0, ((0.0, 1e-9), (0.0, 0.0))).tolist() == [0.0, 10.0]  # one that keeps nothing
    # linear between points: at C = 100 the share left s(x) = 1 - x, x = (100 + 10 m) 0.25 / 100; m = 1 - s(x)
    m = law(100.0, ((0.0, 1.0), (1.0, 0.0)))[1] / 10.0
    assert m == pytest.approx((100.0 + 10.0 * m) * 0.25 / 100.0, abs=1e-6) and 0.25 < m < 0.3
    assert law(100.0, ((0.0, 1.0), (1.0, 0.0)), spread=0.0).tolist() == [0.0, 0.0]
    # the curve the profile holds, as measured: a sharp edge, nothing lost below 0.375 of the L2
    curve = (X1.l2_survival_taken, X1.l2_survival_share)
    assert l2.survival_share(np.array([0.0, 0.3, 0.7, 5.0]), curve).round(3).tolist()[0] == 1.0
    assert l2.survival_share(np.array([0.3]), curve)[0] > 0.99 and l2.survival_share(np.array([0.8]), curve)[0] < 0.05
    with pytest.raises(ValueError, match="survival curve"):
        law(100.0, ((0.5, 1.0), (1.0, 0.0)))


def test_the_gap_spread_and_the_touched_bytes_refine_the_survival_law():
    """ctasim.l2.gap_survival: no spread and one byte a byte is the survival law; ``touched`` reads the curve that
    much further; a spread averages the curve over a lognormal gap of mean 1, which a straight stretch of it does not
    move and an edge smooths (a sharer short of the edge loses some, one past it keeps some)."""
    curve = (X1.l2_survival_taken, X1.l2_survival_share)
    x = np.array([0.0, 0.2, 0.45, 0.6, 0.7, 1.5])
    np.testing.assert_array_equal(l2.gap_survival(x, curve), l2.survival_share(x, curve))
    np.testing.assert_allclose(l2.gap_survival(x, curve, touched=1.3), l2.survival_share(1.3 * x, curve))
    line = ((0.0, 10.0), (1.0, 0.0))  # s(x) = 1 - x / 10 on [0, 10]: E[1 - 0.2 X / 10] = 1 - 0.02
    assert l2.gap_survival(np.array([0.2]), line, gap_cv=0.3)[0] == pytest.approx(0.98, abs=1e-9)
    smooth = l2.gap_survival(np.array([0.3, 0.9]), curve, gap_cv=0.74)
    sharp = l2.survival_share(np.array([0.3, 0.9]), curve)
    assert sharp[0] > 0.99 and smooth[0] < sharp[0] - 0.05  # short of the edge: some lost
    assert sharp[1] < 0.01 and smooth[1] > sharp[1] + 0.05  # past it: some kept
    with pytest.raises(ValueError, match="gap_cv"):
        l2.gap_survival(x, curve, gap_cv=-0.1)
    # the average is over a lognormal of mean 1 (E[X^2] = 1 + cv^2), keeps the input's shape, and is each element's own
    for cv in (0.3, 0.74):
        assert l2.lognormal_average(np.square, np.array(2.0), cv) == pytest.approx(4 * (1 + cv * cv), rel=1e-9)
    grid = np.array([[0.3, 0.9], [0.45, 1.5]])
    np.testing.assert_array_equal(l2.gap_survival(grid, curve, gap_cv=0.74),
                                  [l2.gap_survival(row, curve, gap_cv=0.74) for row in grid])
    # in the law: the refinements reach ticket_rereads, and only under "survival"
    pos, panel, size, base = np.array([100, 150]), np.array([0, 0]), np.array([10.0]), np.array([0.0, 100.0])
    kw = dict(spread=0.5, capacity=60.0, base=base, survival=curve)  # (100 + 10 m) * 0.25 / 60 = 0.42-0.46 L2s
    plain = l2.ticket_rereads(pos, panel, size, 2, 100, law="survival", **kw)[1]
    more = l2.ticket_rereads(pos, panel, size, 2, 100, law="survival", touched=1.3, **kw)[1]
    spread = l2.ticket_rereads(pos, panel, size, 2, 100, law="survival", gap_cv=0.74, **kw)[1]
    assert plain < 1.0 and more > plain + 2.0 and spread > plain + 1.0
    with pytest.raises(ValueError, match="refine the 'survival' law only"):
        l2.ticket_rereads(pos, panel, size, 2, 100, law="partition", gap_cv=0.5, **kw)


def test_the_survival_law_prices_each_sharer_as_its_own_wave_and_reach_say():
    """ctasim.l2._survival_rereads prices each distinct (wave, reach) once and hands it to its sharers: bit for bit
    what the law gives when every sharer is priced on its own (the fixed point written out here, per sharer), on
    sharers that repeat their (wave, reach) and on ones that do not, with and without the refinements."""
    curve = (X1.l2_survival_taken, X1.l2_survival_share)
    rng = np.random.default_rng(7)

    def per_sharer(gw, nbytes, reach, waves, capacity, base, cv, touched):
        miss = (reach > 0).astype(float)
        for _ in range(100):
            again = np.bincount(gw, weights=nbytes * miss, minlength=waves)
            new = np.array([1.0 - l2.gap_survival(np.array([(base + again)[g] * r / capacity]), curve, cv, touched)[0]
                            if r > 0 else 0.0 for g, r in zip(gw, reach)])
            done = np.max(np.abs(new - miss), initial=0.0) < 1e-9
            miss = new
            if done:
                break
        return np.bincount(gw, weights=nbytes * miss, minlength=waves)

    for repeats in (True, False):
        n, waves = 300, 6
        gw = rng.integers(0, waves, n)
        gaps = rng.choice([20, 60, 120, 200], n) if repeats else rng.integers(1, 500, n)
        reach = gaps / 132 * np.minimum(1.0, 0.3 * gw)
        nbytes, base = rng.uniform(1.0, 3.0, n), rng.uniform(50.0, 400.0, waves)
        assert (len(np.unique(np.column_stack([gw, reach]), axis=0)) < n / 5) == repeats
        for cv, touched in ((0.0, 1.0), (0.74, 1.3)):
            got = l2._survival_rereads(gw, nbytes, reach, waves, 300.0, base, 100, curve, cv, touched)
            want = per_sharer(gw, nbytes, reach, waves, 300.0, base, cv, touched)
            np.testing.assert_array_equal(got, want)
            assert 0.02 < got.sum() / nbytes[reach > 0].sum() < 0.98  # some sharers miss, not all


def test_a_profile_refines_only_the_survival_law_and_changing_law_drops_the_refinements(tmp_path):
    twin = X1.with_tickets(ticket_gap_cv=0.74, ticket_touched=1.3)
    cfg = twin.with_ticket_law("partition").config(128, 256)
    assert (cfg.ticket_law, cfg.ticket_gap_cv, cfg.ticket_touched) == ("partition", 0.0, 1.0)
    assert twin.with_ticket_law("survival").config(128, 256).ticket_gap_cv == 0.74
    text = (Path(__file__).resolve().parents[1] / "specs/hardware/h200-x1-calibrated.toml").read_text()
    bad = tmp_path / "bad.toml"
    assert text.count('ticket_law = "survival"') == 1 and text.count("ticket_gap_cv = 0.74") == 1
    bad.write_text(text.replace('ticket_law = "survival"', 'ticket_law = "partition"', 1))
    with pytest.raises(SpecError, match="refine the 'survival' ticket law only"):
        load_hardware(str(bad))


def test_the_gap_law_twin_is_the_profile_with_the_two_refinements():
    """h200-x1-calibrated-gaps (registered plan 58's twin) is the profile before plan 58's adoption but for its name
    and, on the ticket-scheduled config, ticket_gap_cv 0.74 (the median over gaps.csv's pairs and row-order cases) and
    ticket_touched 1.3; by plan 58's rule the profile took both, so it is h200-x1-calibrated before registered plan
    67's adoption on an H200 (2026-12-06, X1_BEFORE_REUSE: the twin file was made before it) but for its name."""
    import pandas as pd  # noqa: PLC0415

    twin = load_hardware("h200-x1-calibrated-gaps")
    assert [(c.ticket_gap_cv, c.ticket_touched) for c in twin.kernel_configs if c.ticket_spread > 0] == [(0.74, 1.3)]
    back = dataclasses.replace(twin, name=X1.name, kernel_configs=tuple(
        dataclasses.replace(c, ticket_gap_cv=0.0, ticket_touched=1.0) for c in twin.kernel_configs))
    assert back == X1_BEFORE_58 != X1
    assert dataclasses.replace(twin, name=X1.name) == X1_BEFORE_REUSE
    g = pd.read_csv(Path(__file__).resolve().parents[1] / "bench/results/posthoc-order-mainloop/gaps.csv")
    assert round(float(g[g["order"].isin(["intragpu-g2", "intragpu-row"])]["cv"].median()), 2) == 0.74


def test_the_survival_law_needs_a_curve_in_the_profile():
    bare = dataclasses.replace(X1, l2_survival_taken=(), l2_survival_share=())
    with pytest.raises(ValueError, match="no L2 survival curve"):
        bare.with_ticket_law("survival")
    assert X1.with_ticket_law("survival").config(128, 256).ticket_law == "survival"


def test_the_profile_has_the_survival_law_and_its_earlier_twins_are_the_profile_before_under_each_law():
    """The profile's ticket-scheduled config has the survival law and the factor measured under it (since registered
    plan 53; the partition law from plan 49); h200-x1-calibrated-partition (plan 49's twin) is the profile as it was
    before plan 53 and h200-x1-calibrated-threshold (plan 50's) is ``with_ticket_law("threshold")`` of that, each but
    for the name."""
    part = load_hardware("h200-x1-calibrated-partition")
    thr = X1_BEFORE_53.with_ticket_law("threshold")
    assert [(c.ticket_law, c.ticket_mainloop_factor) for c in X1.kernel_configs if c.ticket_spread > 0] == \
        [("survival", 1.019)]
    assert [c.ticket_law for c in thr.kernel_configs] == ["threshold"] * len(X1.kernel_configs)
    assert dataclasses.replace(part, name=X1.name) == X1_BEFORE_CURVE
    assert dataclasses.replace(load_hardware("h200-x1-calibrated-threshold"), name=X1.name) == \
        dataclasses.replace(thr, l2_survival_taken=(), l2_survival_share=())
    assert thr.with_ticket_law("partition") == X1_BEFORE_53
    with pytest.raises(ValueError, match="ticket law"):
        X1.with_ticket_law("lru")

    def total(hw, group):
        st = Strategy("ctapipe", gpus=1, chain_group=group)
        return build_plans(st, chain_wl(m=5120), hw, 1, "c")[0].kernels()[0].tile_times.sum()

    # plan 9's pairs at M = 5120 lost their sharing long before the threshold's spread allowed: the law charges them
    assert total(X1_BEFORE_53, 2) > 1.02 * total(thr, 2)
    assert total(thr, 8) <= total(X1, 8) < 1.02 * total(thr, 8)  # groups of 8: their sharers consecutive
    bad = dataclasses.replace(part, kernel_configs=(dataclasses.replace(part.kernel_configs[0], ticket_law="lru"),
                                                    *part.kernel_configs[1:]))
    with pytest.raises(SpecError, match="ticket_law"):
        from ctasim.spec import validate_hardware  # noqa: PLC0415

        validate_hardware(bad, "test")


def test_ticket_spread_makes_row_order_lose_its_weight_sharing_and_leaves_grouped_orders_alone():
    """Under the threshold law (the profile's until registered plan 49) groups of 8 keep every sharer."""
    def total(group, spread):
        hw = X1.with_ticket_law("threshold").with_tickets(ticket_spread=spread)
        st = Strategy("ctapipe", gpus=1, chain_group=group)
        return build_plans(st, chain_wl(m=14336), hw, 1, "c")[0].kernels()[0].tile_times.sum()

    assert total(1, 0.0189) > 1.2 * total(1, 0.0)  # row order: W sharers 32 tickets apart
    assert total(2, 0.0189) > 1.03 * total(2, 0.0)  # pairs: the two pairs of a window 64 apart
    assert total(8, 0.0189) == total(8, 0.0)  # groups of 8: sharers of W consecutive, of A 8 apart
    static = build_plans(Strategy("ctapipe", gpus=1, tile_source="static", chain_group=1), chain_wl(m=14336), X1, 1,
                         "c")[0].kernels()[0]
    cfg = X1.config(128, 256)
    assert np.array_equal(static.tile_times, costs.order_tile_times(
        Layer(m=14336, k=8192, n=8192), X1, 2, static.order, static.slots,
        drift=cfg.cta_drift, cluster_m=1, layers=2))  # the static design: drift, no ticket spread


def test_the_profiles_ticket_spread_is_the_committed_derivation():
    mod = load_bench("ticket_spread")
    assert X1.config(128, 256).ticket_spread == mod.ticket_spread(mod.measure())
    from ctasim.calibration import span_rate

    assert span_rate(np.full(10, 0.5)) == pytest.approx(0.0, abs=1e-12)  # no growth, no spread rate
    assert span_rate(np.arange(10) * 0.02) == pytest.approx(0.02)


def test_lockstep_also_takes_the_ticket_spread_away():
    hw = dataclasses.replace(X1, kernel_configs=tuple(dataclasses.replace(c, cta_drift=0.0) for c in X1.kernel_configs))
    lock = without_drift(hw)
    assert lock is not None and all(c.ticket_spread == 0 and c.cta_drift == 0 for c in lock.kernel_configs)
    none = dataclasses.replace(hw, kernel_configs=tuple(dataclasses.replace(c, ticket_spread=0.0)
                                                        for c in hw.kernel_configs))
    assert without_drift(none) is None


@pytest.mark.parametrize("name, law", [("h200-x1-calibrated-mechanism", "survival"),
                                       ("h200-x1-calibrated-threshold-rate", "threshold")])
def test_plan_51s_twins_are_the_profile_under_their_law_with_the_measured_mainloop_factor(name, law):
    """Registered plan 51's twins: h200-x1-calibrated before plan 58's adoption (X1_BEFORE_58) but for the name, the
    128x256 config's ticket law and the tickets design's mainloop factor (1.008: the rule of
    bench/predictions/reg51-chain-order-h6656/README.md applied to the committed microbenchmark,
    bench/plan51_judge.py's mainloop_factor)."""
    twin = load_hardware(name)
    cfg = twin.config(128, 256)
    assert (cfg.ticket_law, cfg.ticket_mainloop_factor) == (law, 1.008)
    want = dataclasses.replace(X1_BEFORE_58.with_ticket_law(law, mainloop_factor=1.008), name=name)
    assert dataclasses.replace(twin, kernel_configs=tuple(
        dataclasses.replace(c, source=w.source) for c, w in zip(twin.kernel_configs, want.kernel_configs))) == want


@pytest.mark.parametrize("name, law", [("h200-x1-calibrated-survival-own", "survival"),
                                       ("h200-x1-calibrated-threshold-own", "threshold")])
def test_plan_53s_twins_are_the_profile_under_their_law_with_the_factor_measured_under_it(name, law):
    """Registered plan 53's twins: h200-x1-calibrated before plan 58's adoption (X1_BEFORE_58) but for the name, the
    128x256 config's ticket law and the tickets mainloop factor plan 51's rule gives under that law (1.019:
    bench/posthoc_law_factor.py). The survival twin is that profile but for its name: the dated records' profile
    (posthoc_order_mainloop.as_plan_53)."""
    twin = load_hardware(name)
    assert (twin.config(128, 256).ticket_law, twin.config(128, 256).ticket_mainloop_factor) == (law, 1.019)
    want = dataclasses.replace(X1_BEFORE_58.with_ticket_law(law, mainloop_factor=1.019), name=name)
    assert dataclasses.replace(twin, kernel_configs=tuple(
        dataclasses.replace(c, source=w.source) for c, w in zip(twin.kernel_configs, want.kernel_configs))) == want
    if law == "survival":
        pom = load_bench("posthoc_order_mainloop")
        assert dataclasses.replace(pom.as_plan_53(X1), name=name) == want == dataclasses.replace(X1_BEFORE_58, name=name)


def test_the_factor_measured_under_each_law_is_plan_51s_rule_with_that_laws_predictions(bench_module):
    """bench/posthoc_law_factor.py: under "survival" (and "threshold", which prices the one-layer cases alike) plan 51's
    microbenchmark gives 1.019, its cases within a point; under "partition" (plan 51's registration) 1.008."""
    plf = bench_module("posthoc_law_factor")
    run = plf.RATE_RUNS[0][1]
    rc = {law: plf.rate_cases(run, law) for law in ("partition", "survival")}
    assert plf.law_factor(rc["partition"]) == 1.008 and plf.law_factor(rc["survival"]) == 1.019
    assert rc["survival"]["factor"].round(4).tolist() == [1.0176, 1.0278, 1.0165, 1.0214]
    assert (rc["survival"]["predicted"] < rc["partition"]["predicted"]).all()
    # the law as plan 58's adoption refined it gives the same factor: plan 53's principle holds it (the profile as it
    # was then: a figure made before registered plan 67's adoption on an H200, 2026-12-06)
    refined = plf.rate_cases(run, "survival", hardware=X1_BEFORE_REUSE)
    assert plf.law_factor(refined) == 1.019 and X1.config(128, 256).ticket_gap_cv > 0
    assert refined["factor"].round(4).tolist() == [1.0176, 1.0278, 1.0161, 1.0214]
    # and so does the profile now, its reuse across waves priced by the survival curve too
    now = plf.rate_cases(run, "survival", hardware=X1)
    assert plf.law_factor(now) == 1.019 and now["factor"].round(4).tolist() == [1.0176, 1.0282, 1.0161, 1.0213]


def test_plan_51s_factor_is_its_rule_on_the_committed_microbenchmark(bench_module):
    pj = bench_module("plan51_judge")
    from pathlib import Path  # noqa: PLC0415

    rc = pj.rate_cases(Path(__file__).resolve().parents[1] / "bench/results/hw/2026-12-04-registered51-1gpu")
    assert len(rc) == 4 and pj.mainloop_factor(rc) == 1.008
    assert rc["factor"].round(4).tolist() == [1.0064, 1.0231, 0.9842, 1.0092]


@pytest.mark.parametrize("name, form, constants", [("h200-x1-calibrated-wave", "wave", (6.64, 0.19)),
                                                    ("h200-x1-calibrated-carried", "carried", (6.73, 0.2))])
def test_the_other_forms_profiles_are_h200_x1_calibrated_but_for_the_drift_form_and_its_l2_constants(name, form,
                                                                                                   constants):
    """h200-x1-calibrated-wave (plan 8's form, registered plan 20's second model) and -carried (plan 20's model)
    differ from the profile as they hold it (X1_BEFORE_CURVE) only where the form does: their forms' fits
    (tests/test_calibration.py)."""
    other = load_hardware(name)
    assert dataclasses.replace(other, name=X1.name, l2_hbm_exposed=X1.l2_hbm_exposed,
                               kernel_configs=X1_BEFORE_53.kernel_configs) == X1_BEFORE_CURVE
    for a, b in zip(X1_BEFORE_53.kernel_configs, other.kernel_configs, strict=True):
        if a.key() == "128x256":
            assert (a.drift_form, b.drift_form) == ("interleaved", form)
            assert (b.l2_sm_tflops, other.l2_hbm_exposed) == constants
            b = dataclasses.replace(b, drift_form=a.drift_form, l2_sm_tflops=a.l2_sm_tflops, source=a.source)
        assert a == b


@pytest.mark.parametrize("plan20,earlier", [("reg20-llama2-13b-1gpu", "reg8-llama2-13b-1gpu"),
                                            ("reg20-yi-34b-1gpu", "reg8-yi-34b-1gpu"),
                                            ("reg20-falcon-40b-1gpu", "reg8-falcon-40b-1gpu"),
                                            ("reg20-qwen2.5-32b-1gpu", "reg7-qwen2.5-32b-1gpu"),
                                            ("reg20-reference", "reg8-reference")])
def test_registered_plan_20_runs_the_blocks_of_plans_7_and_8_at_longer_m(plan20, earlier):
    from ctasim.cases import load_experiment

    new, old = load_experiment(plan20), load_experiment(earlier)
    assert new.workload.layers == old.workload.layers and new.hardware.name == "h200-x1-calibrated"
    assert [s.kind for s in new.strategies] == ["sequential"] and new.gpus == 1
    ms, before = dict(new.sweep)["m"], dict(old.sweep)["m"]
    if plan20 == "reg20-reference":  # the machine's speed on the calibration GEMM: plan 8's cases again
        assert ms == before
    else:
        assert min(ms) >= 24576 and not set(ms) & set(before)  # never measured at these M


def test_order_drift_reads_the_order_traces_and_leaves_a_calibrations_ticket_traces_out(tmp_path):
    """A ``ctahw calibrate --probe-out`` folder holds the order traces and the chain kernel's ticket and pairs traces;
    bench/order_drift.py's drift.csv has a row for each order trace only."""
    import shutil
    from pathlib import Path

    import pandas as pd

    root = Path(__file__).resolve().parent.parent
    mod = load_bench("order_drift")
    src = root / "bench/results/hw/2026-12-02-order-traces/tiles-8192x8192-along_m-swizzle8.csv.gz"
    shutil.copy(src, tmp_path / src.name)
    ticket = root / "bench/results/hw/2026-12-02-ticket-traces/probes/tiles-8192x8192x2-tickets.csv.gz"
    shutil.copy(ticket, tmp_path / ticket.name)
    shutil.copy(ticket, tmp_path / "tiles-8192x8192x2-tickets-g2.csv.gz")
    assert mod.main([str(tmp_path)]) == 0
    assert pd.read_csv(tmp_path / "drift.csv")["case"].tolist() == ["8192x8192-along_m-swizzle8"]
