"""Intra-GPU CTA-pipelining (``Strategy(kind="ctapipe", gpus=1)``): the chain kernel's plan, engine, invariants,
naive rules, and the CPU side of ctahw.chain (descriptor, trace parsing)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from ctasim.engine import SimulationError, simulate
from ctasim.invariants import check_trace, find_violations
from ctasim.plan import chain_order, with_order
from ctasim.spec import Strategy, SpecError, load_hardware, load_workload, strategy_from_dict
from ctasim.strategies import ctapipe
from tests.helpers import chain_stamps

HW = load_hardware("h200-x2-calibrated")


def _wl(m: int = 1024, layers: int = 2, h: int = 8192):
    wl = load_workload("chain2-16384")
    layer = dataclasses.replace(wl.layers[0], m=m, k=h, n=h)
    return dataclasses.replace(wl, layers=(layer,) * layers)


def _plan(m: int = 1024, layers: int = 2):
    return ctapipe.build_chain(Strategy(kind="ctapipe", gpus=1), _wl(m, layers), HW, f"m={m}")


def test_chain_order_is_a_topological_permutation():
    o = chain_order(3, 24, 32)
    per = 24 * 32
    assert sorted(o.tolist()) == list(range(3 * per))
    layer = o // per
    assert (np.diff(layer) >= 0).all()  # every tile of layer l before any of layer l + 1
    first = o[:16] % per  # groups of 8 row-blocks, column by column
    assert (first // 32).tolist() == list(range(8)) * 2 and (first % 32).tolist() == [0] * 8 + [1] * 8


def test_chain_order_falls_back_for_row_counts_without_an_even_group():
    assert chain_order(1, 3, 4).tolist() == list(range(12))
    o = chain_order(1, 6, 2)  # group 6
    assert (o[:6] // 2).tolist() == list(range(6))


def test_chain_plan_runs_and_fills_the_last_partial_wave():
    plan = _plan(3072)
    k = plan.kernels()[0]
    assert (k.source, k.chain_layers, k.tiles) == ("chain", 2, 2 * 24 * 32)
    tr = simulate(plan, HW)
    check_trace(tr, plan)
    t = tr.tiles
    l0_end = t[t.layer == 0].t_compute_end.max()
    # 768 tiles of layer 0 on 132 SMs: 5.8 waves; layer 1's tiles start before layer 0's last tile ends
    assert t[t.layer == 1].t_acquire.min() < l0_end
    # and none starts before its row-block of layer 0 signalled (the invariant, checked independently here)
    done = t[t.layer == 0].groupby("tile_m").t_signal.max()
    l1 = t[t.layer == 1]
    assert (l1.t_acquire.to_numpy() >= done.loc[l1.tile_m].to_numpy()).all()


def test_chain_kernel_beats_sequential_only_by_the_filled_wave():
    from ctasim.strategies import sequential

    wl = _wl(3072)
    seq = simulate(sequential.build(Strategy(kind="sequential"), wl, HW, 1, "s")[0], HW).makespan_ns
    ch = simulate(_plan(3072), HW).makespan_ns
    assert ch < seq  # one fewer launch, the partial wave filled
    assert ch > 0.95 * seq  # but every FLOP still runs on the one GPU


def test_an_order_that_is_not_topological_deadlocks():
    plan = _plan(1024)
    k = plan.kernels()[0]
    per = k.tiles_m * k.tiles_n
    bad = np.concatenate([np.arange(per, 2 * per), np.arange(per)])  # layer 1 first: 256 waiting tickets > 132 CTAs
    with pytest.raises(SimulationError, match="deadlock"):
        simulate(with_order(plan, k.id, bad), HW)


def test_invariants_catch_a_chain_tile_that_started_early():
    plan = _plan(1024)
    tr = simulate(plan, HW)
    assert not find_violations(tr, plan)
    t = tr.tiles
    i = t.index[t.layer == 1][0]
    t.loc[i, ["t_start", "t_ready", "t_acquire"]] = 0.0
    assert any(v.check == "deps_visible" for v in find_violations(tr, plan))


def test_invariants_catch_a_chain_tile_run_twice():
    plan = _plan(1024)
    tr = simulate(plan, HW)
    t = tr.tiles
    j = t.index[(t.layer == 1)][0]
    t.loc[j, "layer"] = 0  # a layer-1 row reported as layer 0: one tile twice, one never
    assert any(v.check == "exactly_once" for v in find_violations(tr, plan))


def test_strategy_gpus_is_validated():
    with pytest.raises(SpecError, match="only a ctapipe"):
        strategy_from_dict({"kind": "sequential", "gpus": 1}, "x", "s.")
    with pytest.raises(SpecError, match="must be >= 0"):
        strategy_from_dict({"kind": "ctapipe", "gpus": -1}, "x", "s.")
    with pytest.raises(SpecError, match="chain kernel"):
        strategy_from_dict({"kind": "ctapipe", "gpus": 1, "variant": "cutlass_ctapipe_w21g4"}, "x", "s.")


def test_chain_check_reasons():
    s = Strategy(kind="ctapipe", gpus=1)
    assert ctapipe.check(s, _wl(), HW, 1) is None
    mlp = load_workload("mlp-block")
    assert "square shape" in ctapipe.check(s, mlp, HW, 1)
    wl = _wl(layers=4)
    assert ctapipe.check(Strategy(kind="ctapipe", gpus=2), wl, HW, 2) is None  # a ring (tests/test_ring.py)
    assert "at most one GPU per layer" in ctapipe.check(Strategy(kind="ctapipe", gpus=5), wl, HW, 5)
    assert ctapipe.gpus_needed(s, wl, 0) == 1 and ctapipe.gpus_needed(Strategy(kind="ctapipe"), wl, 0) == 4


def test_naive_predictors_of_the_chain_kernel():
    from ctasim.cases import Case
    from ctasim.predict import Naive, Waves

    wl = _wl(3072)
    case = Case(label="m=3072", workload=wl, gpus=1)
    s, seq = Strategy(kind="ctapipe", gpus=1), Strategy(kind="sequential")
    n = Naive(a_ms=0.004, tflops=800.0, source="test")
    assert n.predict_ms(s, case, HW, {}) == pytest.approx(n.predict_ms(seq, case, HW, {}))
    w = Waves()
    # 2 x 768 tiles: sequential pays 2 x ceil(768/132) = 12 waves, one kernel ceil(1536/132) = 12 waves and one
    # fixed time less
    cfg = HW.config(128, 256)
    assert w.predict_ms(seq, case, HW, {}) - w.predict_ms(s, case, HW, {}) == pytest.approx(cfg.kernel_fixed_ns / 1e6)


# ---------------------------------------------------------------------------------------------- ctahw.chain (CPU)

def test_descriptor_fields_come_from_the_kernel_sources():
    from ctahw import runner
    from ctahw.chain import DESC_FIELDS, SOURCE
    from ctahw.runner import check_desc_names, desc_fields_from_source

    text = SOURCE.read_text()
    assert DESC_FIELDS == desc_fields_from_source(text, "CTAHW_CHAIN_FIELDS")
    assert DESC_FIELDS[:2] == ("order", "num_tiles") and "counters" in DESC_FIELDS
    renamed = text.replace("X(counters, unsigned*)", "X(row_counters, unsigned*)")
    got = desc_fields_from_source(renamed, "CTAHW_CHAIN_FIELDS")
    assert "row_counters" in got and "counters" not in got
    with pytest.raises(ValueError, match="no CTAHW_CHAIN_FIELDS"):
        desc_fields_from_source("int x;", "CTAHW_CHAIN_FIELDS")
    # the ctapipe kernels' descriptor: ctapipe.cuh's list, 27 fields, in the order descriptor() writes them
    header = (SOURCE.parent / "ctapipe.cuh").read_text()
    assert runner.DESC_FIELDS == desc_fields_from_source(header, "CTAPIPE_DESC_FIELDS")
    assert len(runner.DESC_FIELDS) == 27 and runner.DESC_FIELDS[0] == "mode" and runner.DESC_FIELDS[-1] == "in_consumer_dep"
    swapped = header.replace("X(in_head, unsigned*, nullptr)", "X(in_headx, unsigned*, nullptr)")
    assert desc_fields_from_source(swapped, "CTAPIPE_DESC_FIELDS")[5] == "in_headx"
    check_desc_names(b"order,num_tiles,", ("order", "num_tiles"), "chain")
    with pytest.raises(RuntimeError, match="differ"):
        check_desc_names(b"num_tiles,order,", ("order", "num_tiles"), "chain")


def test_chain_descriptor_layout():
    from ctahw.chain import DESC_FIELDS, chain_descriptor

    k = _plan(1024).kernels()[0]
    d = chain_descriptor(k, {"order": 77, "ticket": 88}, grid=132, epoch=3, timeout_ns=5, stall_row=2)
    v = dict(zip(DESC_FIELDS, d.tolist()))
    assert v == {**v, "order": 77, "ticket": 88, "num_tiles": 512, "tiles_m": 8, "tiles_n": 32, "layers": 2,
                 "grid": 132, "protocol": 1, "epoch": 3, "timeout_ns": 5, "stall_row": 2, "counters": 0}
    with pytest.raises(ValueError, match="not descriptor fields"):
        chain_descriptor(k, {"slots": 1}, grid=132, epoch=1, timeout_ns=5)
    with pytest.raises(ValueError, match="grid"):
        chain_descriptor(k, {}, grid=0, epoch=1, timeout_ns=5)


def test_measured_chain_trace_is_parsed_and_checked():
    from ctahw.chain import parse_chain_trace

    plan = _plan(1024)
    k = plan.kernels()[0]
    sim = simulate(plan, HW)
    stamps = chain_stamps(sim, k)
    tr = parse_chain_trace(plan, stamps, {"run": 0})
    assert len(tr.tiles) == k.tiles and tr.meta["run"] == 0
    check_trace(tr, plan, tol_ns=32.0)
    # a layer-1 tile whose wait returned (and MMA began) before its row-block of layer 0 signalled is a violation
    per = k.tiles_m * k.tiles_n
    stamps[per, 1] = stamps[per, 7] = stamps[:, 0].min()
    assert any(v.check == "deps_visible" for v in find_violations(parse_chain_trace(plan, stamps), plan, 32.0))


def test_static_design_runs_cta_by_cta():
    s = Strategy(kind="ctapipe", gpus=1, tile_source="static")
    plan = ctapipe.build_chain(s, _wl(3072), HW, "m=3072")
    k = plan.kernels()[0]
    assert k.chain_static and plan.params["tile_source"] == "static"
    tr = simulate(plan, HW)
    check_trace(tr, plan)
    t = tr.tiles.sort_values("slot")  # the slot column holds the order index
    assert (t["cta"].to_numpy() == t["slot"].to_numpy() % 132).all()  # CTA w runs entries w, w + 132, ...
    tickets = simulate(_plan(3072), HW).tiles.sort_values("slot")
    assert not (tickets["cta"].to_numpy() == tickets["slot"].to_numpy() % 132).all()


def test_column_pairs_of_a_2x1_cluster_order():
    from ctahw.chain import check_pairs

    check_pairs(chain_order(2, 8, 4), 8, 4)  # groups of 8 row-blocks, column by column: pairs share a column
    with pytest.raises(ValueError, match="not one layer's column pair"):
        check_pairs(np.arange(2 * 8 * 4), 8, 4)  # row order: a pair shares a row-block, not a column
    with pytest.raises(ValueError, match="even number"):
        check_pairs(np.arange(5), 5, 1)


def test_chain_design_follows_the_tile_source():
    from ctahw.experiment import chain_design

    assert chain_design(Strategy(kind="ctapipe", gpus=1), 24) == "tickets"
    assert chain_design(Strategy(kind="ctapipe", gpus=1, tile_source="static"), 24) == "static2x1"
    assert chain_design(Strategy(kind="ctapipe", gpus=1, tile_source="static"), 5) == "static"
    # row order (chain_group 1) pairs no row-blocks: no 2x1 clusters
    assert chain_design(Strategy(kind="ctapipe", gpus=1, tile_source="static", chain_group=1), 24) == "static"


def test_one_gpu_ctapipe_is_judged_as_its_own_kind():
    import pandas as pd

    from ctasim import accuracy

    root = "bench/results/hw/2026-12-01-chain-1gpu/registered/reg3-intragpu/results.csv"
    from pathlib import Path

    top = Path(__file__).resolve().parent.parent
    pred = pd.read_csv(top / "bench/predictions/reg3-intragpu/predictions.csv")
    meas = pd.read_csv(top / root)
    kinds = set(accuracy.summary(accuracy.judge(pred, meas))["kind"])
    assert accuracy.ONE_GPU_CTAPIPE in kinds and "ctapipe" not in kinds  # advise's multi-GPU trust reads "ctapipe"
