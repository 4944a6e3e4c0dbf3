"""A ring placement (``Strategy(kind="ctapipe", gpus=G)``, 1 < G < layers): layer l on GPU l mod G, one persistent
chain kernel per GPU, remote stores and signals between them; plan, engine, invariants, naive rules."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from ctasim.cases import Case
from ctasim.engine import SimulationError, simulate
from ctasim.invariants import check_trace, find_violations
from ctasim.plan import with_order
from ctasim.predict import Naive, Waves
from ctasim.spec import Layer, Strategy, Workload, load_hardware, load_workload
from ctasim.strategies import build_plans, ctapipe

HW = load_hardware("h200-x2-calibrated")


def _wl(m: int = 2048, layers: int = 4, h: int = 8192) -> Workload:
    return Workload("ring", "bf16", (Layer(m, h, h, 128, 256),) * layers)


def _ring(m: int = 2048, layers: int = 4, gpus: int = 2, hw=HW):
    return build_plans(Strategy("ctapipe", gpus=gpus), _wl(m, layers), hw, gpus, f"m={m}")[0]


def test_layers_go_round_robin_and_the_trace_passes_the_invariants():
    plan = _ring()
    tr = simulate(plan, HW)
    check_trace(tr, plan)
    t = tr.tiles
    assert sorted(t.groupby("gpu")["layer"].unique().map(sorted).tolist()) == [[0, 2], [1, 3]]
    assert len(t) == 4 * 16 * 32
    # it pipelines: faster than the chain kernel on one GPU, and no faster than half of it
    one = simulate(build_plans(Strategy("ctapipe", gpus=1), _wl(), HW, 1, "m")[0], HW)
    assert 0.5 * one.makespan_ns < tr.makespan_ns < 0.75 * one.makespan_ns


def test_a_remote_tile_stores_then_signals_and_the_next_layer_waits_for_it():
    plan = _ring()
    k0 = next(k for k in plan.kernels() if k.gpu == 0)
    assert k0.chain_remote == (True, True) and k0.chain_stride == 2
    k1 = next(k for k in plan.kernels() if k.gpu == 1)
    assert k1.chain_remote == (True, True)  # layer 3, the last, stores into GPU 0 as the kernel does
    store = 128 * 256 * 2 / HW.sm_remote_store_gbps + HW.link_latency_ns
    assert k0.chain_store_ns == pytest.approx(store)
    tr = simulate(plan, HW)
    t = tr.tiles
    l0 = t[t.layer == 0]
    assert np.allclose(l0.t_store_end - l0.t_compute_end, store)
    assert k0.chain_remote_signal_ns == HW.fence_sys_ns + HW.remote_atomic_ns  # the default config sets no signal_ns
    assert np.allclose(l0.t_signal - l0.t_store_end, HW.fence_sys_ns + HW.remote_atomic_ns)
    last = t[t.layer == 3]
    assert np.allclose(last.t_signal - last.t_compute_end, store + HW.fence_sys_ns + HW.remote_atomic_ns)
    ready = l0.groupby("tile_m")["t_signal"].max()
    l1 = t[t.layer == 1]
    assert (l1.t_acquire.to_numpy() >= ready.loc[l1.tile_m].to_numpy() + 0.5 * HW.poll_ns - 1e-6).all()


def test_a_remote_tile_holds_its_cta_the_configs_signal_hold_past_the_store():
    hold = 5000.0
    hw = dataclasses.replace(HW, kernel_configs=tuple(
        dataclasses.replace(c, signal_hold_ns=hold) if (c.key() == "128x256") else c for c in HW.kernel_configs))
    plan = _ring(m=1024, hw=hw)
    assert {k.chain_remote_hold_ns for k in plan.kernels()} == {hold}
    t = simulate(plan, hw).tiles
    for (gpu, cta), g in t.groupby(["gpu", "cta"]):
        g = g.sort_values("t_start")
        prev, nxt = g.iloc[:-1], g.iloc[1:]
        free = prev["t_store_end"].to_numpy() + hold  # every layer stores into the next GPU (the last one too)
        assert (nxt["t_start"].to_numpy() >= free - 1e-6).all()
        assert np.allclose(nxt["t_start"].to_numpy(), free)  # ... and takes its next ticket right then


def test_an_order_that_is_not_topological_deadlocks_across_the_gpus():
    plan = _ring(m=1024)
    k1 = next(k for k in plan.kernels() if k.gpu == 1)
    per = k1.tiles_m * k1.tiles_n
    bad = np.concatenate([np.arange(per, 2 * per), np.arange(per)])  # layer 3 before layer 1 on GPU 1
    with pytest.raises(SimulationError, match="deadlock"):
        simulate(with_order(plan, k1.id, bad), HW)


def test_invariants_catch_a_ring_tile_that_started_before_the_other_gpus_row_block():
    plan = _ring(m=1024)
    tr = simulate(plan, HW)
    assert not find_violations(tr, plan)
    t = tr.tiles
    i = t.index[t.layer == 1][0]  # GPU 1, waiting on GPU 0's layer 0
    t.loc[i, ["t_start", "t_ready", "t_acquire"]] = 0.0
    v = find_violations(tr, plan)
    assert any(x.check == "deps_visible" and "gpu1" in x.message for x in v)


def test_the_ring_refuses_what_it_does_not_model():
    wl = _wl()
    assert "at most one GPU per layer" in ctapipe.check(Strategy("ctapipe", gpus=5), wl, HW, 5)
    assert "tickets only" in ctapipe.check(Strategy("ctapipe", gpus=2, tile_source="static"), wl, HW, 2)
    assert "variant" in ctapipe.check(Strategy("ctapipe", gpus=2, variant="cutlass_ctapipe_c21"), wl, HW, 2)
    odd = Workload("odd", "bf16", (Layer(2048, 8192, 28672, 128, 256), Layer(2048, 28672, 8192, 128, 256),
                                   Layer(2048, 8192, 8192, 128, 256)))
    assert "ring placement" in ctapipe.check(Strategy("ctapipe", gpus=2), odd, HW, 2)
    assert ctapipe.check(Strategy("ctapipe", gpus=2), wl, HW, 2) is None


def test_the_memory_hierarchy_times_each_gpus_layers_in_its_order():
    hw = load_hardware("h200-x2-mechanism")
    plan = _ring(m=8192, hw=hw)
    assert plan.params.get("memory") == "l2"
    from ctasim import costs

    layer = _wl(m=8192).layers[0]
    for k in plan.kernels():
        assert len(k.tile_times) == k.tiles and sorted(k.order.tolist()) == list(range(k.tiles))
        own = costs.order_tile_times(layer, hw, 2, k.order, k.slots, drift=0.0, layers=k.chain_layers,
                                     ticket_spread=hw.config(128, 256).ticket_spread)
        assert np.allclose(k.tile_times, own)
        # ... which is not what the layers' tiles in id order give: the order matters
        ids = costs.order_tile_times(layer, hw, 2, np.arange(k.tiles), k.slots, drift=0.0, layers=k.chain_layers,
                                     ticket_spread=hw.config(128, 256).ticket_spread)
        assert not np.allclose(k.tile_times, ids)
    check_trace(simulate(plan, hw), plan)


def test_the_naive_predictors_take_the_busiest_gpu():
    wl = _wl(m=4096, layers=3)
    case = Case("m=4096", wl, 2)
    s = Strategy("ctapipe", gpus=2)
    naive = Naive(a_ms=0.01, tflops=600.0, source="test")
    full = naive.gemm_ms(4096, 8192, 8192)
    # GPU 0 runs layers 0 and 2, GPU 1 layer 1: two layers plus one row-block of the third
    assert naive.predict_ms(s, case, HW, {}) == pytest.approx(2 * full + full / 32)
    w = Waves()
    cfg = HW.config(128, 256)
    tile = Waves().wave_ms(wl.layers[0], HW, 2)
    waves = -(-2 * 32 * 32 // 132)
    assert w.predict_ms(s, case, HW, {}) == pytest.approx(cfg.kernel_fixed_ns / 1e6 + waves * tile + tile)


def test_ctahw_runs_a_ring_case_on_enough_gpus():
    from ctahw.experiment import reason_for

    assert reason_for(Strategy("ctapipe", gpus=2), Case("m=2048", _wl(), 2), 2) is None  # the chain kernel per GPU
    why = reason_for(Strategy("ctapipe", gpus=2), Case("m=2048", _wl(), 2), 1)
    assert why and "needs 2 GPUs" in why


# -- the LayerNorm fold between two one-layer ring kernels (a block boundary: mlp-boundary)


def _boundary(m: int = 4096):
    wl = load_workload("mlp-boundary")
    return dataclasses.replace(wl, layers=tuple(dataclasses.replace(l, m=m) for l in wl.layers))


def test_a_ring_folds_a_layernorm_between_its_layers_into_the_next_ones_epilogue():
    wl = _boundary()
    assert ctapipe.norm_folds(wl, 2) == (0,)
    assert ctapipe.ring_ops(wl, 2) == {0: "residual_stats", 1: "lnfold_gelu"}
    assert ctapipe.check(Strategy("ctapipe", gpus=2, placement="ring"), wl, HW, 2) is None
    plan = build_plans(Strategy("ctapipe", gpus=2, placement="ring"), wl, HW, 2, "m=4096")[0]
    assert plan.params["norm_fold"] == "0"
    assert not [op for op in plan.ops if type(op).__name__ == "MemoryPass"]  # no LayerNorm pass
    check_trace(simulate(plan, HW), plan)


@pytest.mark.parametrize("profile", ["h200-x2-calibrated", "h200-x2-mechanism"])
def test_the_fold_costs_its_measured_epilogue_time_on_each_side(profile):
    from ctasim import costs

    hw = load_hardware(profile)
    wl = _boundary()
    s = Strategy("ctapipe", gpus=2, placement="ring")
    free = dataclasses.replace(hw, norm_stats_epilogue_ns_per_element=0.0, norm_fold_epilogue_ns_per_element=0.0)
    with_cost = {k.gpu: k for k in build_plans(s, wl, hw, 2, "m")[0].kernels()}
    without = {k.gpu: k for k in build_plans(s, wl, free, 2, "m")[0].kernels()}
    tile = 128 * 256
    shift = {0: tile * hw.norm_stats_epilogue_ns_per_element, 1: tile * hw.norm_fold_epilogue_ns_per_element}
    for g in (0, 1):
        assert with_cost[g].tile_ns - without[g].tile_ns == pytest.approx(shift[g])
        assert len(with_cost[g].tile_times) == len(without[g].tile_times)  # the memory hierarchy's, where it has one
        assert np.allclose(with_cost[g].tile_times - without[g].tile_times, shift[g])
    assert bool(len(with_cost[0].tile_times)) == (profile == "h200-x2-mechanism")
    assert costs.norm_fold_ns(wl.layers[0], hw, "stats") == pytest.approx(tile * 0.059082)
    with pytest.raises(ValueError, match="side"):
        costs.norm_fold_ns(wl.layers[0], hw, "both")
    slow = simulate(build_plans(s, wl, hw, 2, "m")[0], hw).makespan_ns
    fast = simulate(build_plans(s, wl, free, 2, "m")[0], free).makespan_ns
    assert slow > fast


def test_the_ring_refuses_a_row_wise_op_it_cannot_fold():
    wl = _boundary()
    for change, what in [(dict(rowwise="rmsnorm"), "rmsnorm"), (dict(epilogue=()), "no op")]:
        bad = dataclasses.replace(wl, layers=(dataclasses.replace(wl.layers[0], **change), wl.layers[1]))
        assert ctapipe.norm_folds(bad, 2) == ()
        why = ctapipe.check(Strategy("ctapipe", gpus=2, placement="ring"), bad, HW, 2)
        assert why and "folded" in why and what in why
    both = dataclasses.replace(wl, layers=(wl.layers[0], wl.layers[1], dataclasses.replace(
        wl.layers[0], k=28672, epilogue=("residual",), residual_source="input", rowwise="")))
    assert "one operand" in ctapipe.check(Strategy("ctapipe", gpus=3, placement="ring"), both, HW, 3)
    relu = dataclasses.replace(wl, layers=(wl.layers[0], dataclasses.replace(wl.layers[1], epilogue=("relu",))))
    assert ctapipe.norm_folds(relu, 2) == () and "layer 1: relu" in ctapipe.check(
        Strategy("ctapipe", gpus=2, placement="ring"), relu, HW, 2)


def test_ctahw_plans_the_fold_and_the_sequential_pass_of_a_block_boundary():
    from ctahw.experiment import reason_for

    wl = _boundary()
    case = Case("m=4096", wl, 2)
    assert reason_for(Strategy("ctapipe", gpus=2, placement="ring"), case, 2) is None
    assert reason_for(Strategy("sequential"), case, 1) is None
    why = reason_for(Strategy("ctapipe", name="w21g4", variant="cutlass_ctapipe_w21g4"), case, 2)
    assert why and "residual stream" in why


def test_the_naive_predictors_run_no_layernorm_pass_where_the_ring_folds_it():
    from ctasim import costs

    wl = _boundary()
    case = Case("m=4096", wl, 2)
    s = Strategy("ctapipe", gpus=2, placement="ring")
    unfolded = dataclasses.replace(wl, layers=(dataclasses.replace(wl.layers[0], rowwise=""), wl.layers[1]))
    naive = Naive(a_ms=0.01, tflops=600.0, source="test")
    assert naive.predict_ms(s, case, HW, {}) == pytest.approx(naive.predict_ms(s, Case("m", unfolded, 2), HW, {}))
    seq = Strategy("sequential")  # the sequential block does run the pass
    ln = costs.rowwise_ns(4096, 8192, 2, HW) / 1e6
    assert naive.predict_ms(seq, case, HW, {}) == pytest.approx(naive.predict_ms(seq, Case("m", unfolded, 2), HW, {}) + ln)
    w = Waves()
    slots = HW.sm_count * HW.config(128, 256).cta_slots_per_sm
    fold = (-(-wl.layers[0].tiles // slots) * costs.norm_fold_ns(wl.layers[0], HW, "stats")
            + costs.norm_fold_ns(wl.layers[1], HW, "fold")) / 1e6
    assert w.predict_ms(s, case, HW, {}) == pytest.approx(w.predict_ms(s, Case("m", unfolded, 2), HW, {}) + fold)


# -- placement = "ring" with gpus = 0: one GPU per layer of each case (the Fig. 4 sweep of registered plan 38)


def test_a_ring_of_one_gpu_per_layer_follows_the_case_layer_count():
    hw = load_hardware("h200-x8-mechanism")
    s = Strategy("ctapipe", placement="ring")
    for layers in (2, 3, 5):
        wl = _wl(m=2048, layers=layers)
        assert ctapipe.is_ring(s, wl) and ctapipe.ring_gpus(s, wl) == layers
        assert ctapipe.check(s, wl, hw, layers) is None
        (plan,) = build_plans(s, wl, hw, layers, "m=2048")
        assert plan.gpus == layers and plan.params["gpus"] == layers
        # layer l on GPU l: each GPU's kernel runs one layer's tiles, the same plan as gpus = L named outright
        assert [k.chain_layers for k in plan.kernels()] == [1] * layers and [k.gpu for k in plan.kernels()] == list(range(layers))
        named = build_plans(Strategy("ctapipe", gpus=layers, placement="ring"), wl, hw, layers, "m=2048")[0]
        assert simulate(plan, hw).makespan_ns == simulate(named, hw).makespan_ns
    one = _wl(m=2048, layers=1)
    assert "2 GPUs or more" in ctapipe.check(s, one, hw, 1)
    # a chain group where no chain kernel runs (the 2-GPU kernels, one layer per GPU) is refused, not ignored
    two = _wl(m=2048, layers=2)
    assert "chain_group applies to the chain kernel" in ctapipe.check(Strategy("ctapipe", gpus=2, chain_group=4), two,
                                                                      hw, 2)
    assert ctapipe.check(Strategy("ctapipe", gpus=2, chain_group=4), _wl(m=2048, layers=4), hw, 2) is None  # a ring


def test_ctahw_and_the_naive_predictors_place_the_layer_count_ring():
    from ctahw.experiment import reason_for

    s = Strategy("ctapipe", placement="ring")
    wl = _wl(m=4096, layers=3)
    case = Case("layers=3", wl, 3)
    assert reason_for(s, case, 3) is None
    assert "needs 3 GPUs" in reason_for(s, case, 2)
    naive = Naive(a_ms=0.01, tflops=600.0, source="test")
    full = naive.gemm_ms(4096, 8192, 8192)
    # one layer per GPU: GPU 0's layer plus one row-block of each other layer
    assert naive.predict_ms(s, case, HW, {}) == pytest.approx(full + 2 * full / 32)
