"""Comparison of measured and simulated traces, and the validation gates on the committed 2xH200 results.

Per-CTA figures are checked on simulated traces with a known perturbation (no per-CTA hardware traces
exist yet); makespan gates run the committed measured baselines through the committed profile.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from ctasim.compare import compare, gates, spearman
from ctasim.engine import simulate
from ctasim.spec import Layer, Strategy, Workload, load_hardware
from ctasim.strategies import build_plans
from ctasim import validate as V
from tests.helpers import chain, tiny_hw

RUN2 = Path(__file__).resolve().parent.parent / "bench" / "results" / "hw" / "2026-11-29-run2"


def _ctapipe(hw=None, wl=None):
    hw = hw or tiny_hw()
    plan = build_plans(Strategy("ctapipe"), wl or chain(2, m=1024, n=256), hw, 2, "t")[0]
    return plan, simulate(plan, hw)


# ------------------------------------------------------------------------ per-CTA figures, known perturbations
def test_a_trace_compared_with_itself_has_no_error():
    plan, tr = _ctapipe()
    c = compare(tr, tr.copy(), plan)
    assert c.makespan_error == 0 and c.matched == len(tr.tiles) and c.unmatched == 0
    assert c.start_median_ns == 0 and c.end_p95_ns == 0 and c.dequeue_spearman == pytest.approx(1.0)
    assert (c.busy["meas"] == c.busy["sim"]).all() and (c.first_tile_delay["error_ns"] == 0).all()


def test_a_late_consumer_gpu_shows_as_start_error_first_tile_delay_and_busy():
    plan, sim = _ctapipe()
    meas = sim.copy()
    late = meas.tiles["gpu"] == 1
    for col in ("t_start", "t_acquire", "t_ready", "t_compute_end", "t_store_end", "t_signal"):
        meas.tiles.loc[late, col] += 700.0
    c = compare(meas, sim, plan)
    err = c.start_err_ns
    gpu1 = (sim.tiles.sort_values(["kernel", "tile_m", "tile_n"])["gpu"] == 1).to_numpy()
    assert np.allclose(err[gpu1], -700.0) and np.allclose(err[~gpu1], 0.0)
    assert c.first_tile_delay.loc[0, "error_ns"] == pytest.approx(-700.0)
    assert c.start_p95_ns == pytest.approx(700.0)
    assert c.start_median_ns == pytest.approx(np.median(np.abs(err)))
    assert c.makespan_meas_ns == pytest.approx(sim.makespan_ns + 700.0)


def test_dequeue_order_reversed_gives_rank_correlation_minus_one():
    plan, sim = _ctapipe()
    meas = sim.copy()
    cons = meas.tiles.index[meas.tiles["slot"] >= 0]
    t = meas.tiles.loc[cons, "t_acquire"].to_numpy()
    meas.tiles.loc[cons, "t_acquire"] = t.max() + t.min() - t  # last popped first
    c = compare(meas, sim, plan)
    assert c.dequeue_spearman == pytest.approx(-1.0)
    assert not gates(c)["dequeue_spearman_min"][0]


def test_alignment_removes_a_clock_origin_and_dropped_stamps_are_counted():
    plan, sim = _ctapipe()
    meas = sim.copy()
    for col in ("t_start", "t_acquire", "t_ready", "t_compute_end", "t_store_end", "t_signal"):
        meas.tiles[col] += 1e9  # another clock's origin
    meas.tiles = meas.tiles.iloc[3:]
    c = compare(meas, sim, plan)
    assert c.start_p95_ns == pytest.approx(0.0, abs=1e-6) and c.unmatched == 3
    assert compare(meas, sim, plan, align="none").start_median_ns == pytest.approx(1e9)


def test_spearman():
    assert spearman([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert spearman([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    assert spearman([1, 2, 3], [5, 5, 5]) == 1.0


# Per-CTA gates on a CTA-pipelined 2xH200 plan.  "Measured" = the committed profile with 1% tile jitter (the
# spread of tile times in a real run); a wrong profile simulated against it must fail.  Doubling poll_ns
# (200 -> 400 ns) moves each wait by 100 ns, 0.1% of a tile: below what these gates (or hardware noise)
# resolve, so it is not one of the wrong profiles here.
PER_CTA_BOUNDS = {"makespan_abs_error": 0.03, "start_median_frac": 0.02, "end_median_frac": 0.02}


def _h200_ctapipe(hw, m=1024):
    layer = Layer(m, 8192, 8192, 128, 256)
    plan = build_plans(Strategy("ctapipe"), Workload("w", "bf16", (layer, layer)), hw, 2, "t")[0]
    return plan


def test_per_cta_gates_pass_the_right_profile_and_fail_wrong_ones():
    hw = load_hardware("h200-x2-calibrated")
    meas = simulate(_h200_ctapipe(hw), hw, seed=3, jitter=0.01)
    right = _h200_ctapipe(hw)
    assert all(ok for ok, _, _ in gates(compare(meas, simulate(right, hw), right), PER_CTA_BOUNDS).values())
    cfg = hw.kernel_configs
    wrong = {
        "half link bandwidth": dataclasses.replace(hw, link_gbps=hw.link_gbps / 2),
        "half sm_tflops": dataclasses.replace(hw, kernel_configs=tuple(dataclasses.replace(c, sm_tflops=c.sm_tflops / 2) for c in cfg)),
    }
    for name, bad in wrong.items():
        plan = _h200_ctapipe(bad)
        g = gates(compare(meas, simulate(plan, bad), plan), PER_CTA_BOUNDS)
        assert not all(ok for ok, _, _ in g.values()), f"{name} passed the per-CTA gates: {g}"


# ------------------------------------------------------------------------ makespan gates on measured baselines
# Bounds on the held-out M values (1024, 4096, 16384) of run 2, CUTLASS backend.  The target is a MAPE
# of 3% and a worst case of 6%; gemm, sequential and TP are held to 3%.  Micro-batching is held to 4% and the
# worst case to 10%: what the model reaches now (3.2%, -8.9% at M=1024 c=2, docs/validation.md) plus the
# run-to-run spread (run 1 vs run 2, up to ~1% on the same case), so that a regression fails; they are not
# the targets, which are not met for micro-batching.
MAPE_BOUND_PCT = {"gemm": 3.0, "sequential": 3.0, "tp": 3.0, "microbatch": 4.0, "all": 3.0}
WORST_BOUND_PCT = 10.0


@pytest.fixture(scope="module")
def measured():
    hw = load_hardware("h200-x2-calibrated")
    cases = V.load_cases(RUN2)
    fields, harness, _ = V.fit(cases, hw)
    return hw, cases, fields, harness


def _gate_failures(df) -> list[str]:
    s = V.summary(df).set_index("strategy")
    bad = [f"{k}: MAPE {s.loc[k, 'mape_pct']:.2f}% > {b}%" for k, b in MAPE_BOUND_PCT.items() if s.loc[k, "mape_pct"] > b]
    if abs(s.loc["all", "worst_pct"]) > WORST_BOUND_PCT:
        bad.append(f"worst {s.loc['all', 'worst_pct']:.2f}% ({s.loc['all', 'worst_case']})")
    return bad


def test_committed_profile_holds_the_fit_of_the_committed_measurements(measured):
    hw, cases, fields, _ = measured
    assert hw.max_clock_boost == pytest.approx(fields["max_clock_boost"], abs=1e-3)
    assert hw.config(128, 256).kernel_fixed_ns == pytest.approx(fields["kernel_fixed_ns"], abs=0.1)


def test_fit_uses_only_the_fitting_m_values(measured):
    hw, cases, fields, harness = measured
    changed = [dataclasses.replace(c, median_ms=c.median_ms * 3, compute_ms=c.compute_ms * 3, idle_ms=c.idle_ms * 3,
                                   copy_ms=c.copy_ms * 3) if c.m not in V.FIT_MS else c for c in cases]
    assert V.fit(changed, hw)[:2] == (fields, harness)


def test_measured_baselines_pass_the_makespan_gates(measured):
    hw, cases, _, harness = measured
    df = V.validate(cases, hw, harness)
    assert set(df.loc[df["role"] == "held_out", "m"]) == {1024, 4096, 16384}
    assert _gate_failures(df) == []
    agree = V.choice_agreement(df)
    held = agree[agree["role"] == "held_out"]
    assert held["best_chunks_agree"].all() and held["ranking_agrees"].all()


@pytest.mark.parametrize("name", ["half sm_tflops", "half copy-engine bandwidth", "half all-reduce bandwidth",
                                  "sm_tflops -5%"])
def test_a_wrong_profile_fails_the_makespan_gates(measured, name):
    hw, cases, _, harness = measured
    cfg = hw.kernel_configs
    scale = lambda f: dataclasses.replace(hw, kernel_configs=tuple(dataclasses.replace(c, sm_tflops=c.sm_tflops * f) for c in cfg))
    bad = {
        "half sm_tflops": scale(0.5),
        "sm_tflops -5%": scale(0.95),
        "half copy-engine bandwidth": dataclasses.replace(hw, copy_engine_gbps=hw.copy_engine_gbps / 2),
        "half all-reduce bandwidth": dataclasses.replace(hw, allreduce_bus_gbps=hw.allreduce_bus_gbps / 2),
    }[name]
    assert _gate_failures(V.validate(cases, bad, harness)) != []
