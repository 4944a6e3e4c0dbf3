"""Comparison of measured and simulated traces, and the validation gates on the committed 2xH200 results.

Per-CTA figures are checked on simulated traces with a known perturbation (no per-CTA hardware traces
exist yet); makespan gates run the committed measured baselines through the committed profile; measured
CTA-pipelined traces (tile tables under bench/results/validation) are gated per CTA.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from ctasim.validation.traces import compare, gates, spearman
from ctasim.engine import simulate
from ctasim.plan import Kernel, Transfer
from ctasim.spec import Layer, Strategy, Workload, load_hardware
from tests.helpers import load_bench
from ctasim.strategies import build_plans
from ctasim.validation import baselines as V
from ctasim.validation import pipeline as P
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


def test_a_waiting_consumer_is_a_consumer_and_its_order_is_judged_apart_from_the_dequeue_order():
    # tile_source="static": the consumer walks a fixed order and waits on counters (slot -1, no push events).
    hw = tiny_hw()
    plan = build_plans(Strategy("ctapipe", tile_source="static"), chain(2, m=1024, n=256), hw, 2, "t")[0]
    sim = simulate(plan, hw)
    cons = sim.tiles.index[sim.tiles["layer"] == 1]
    assert (sim.tiles.loc[cons, "slot"] == -1).all() and not (sim.events["kind"] == "push").any()
    meas = sim.copy()
    t = meas.tiles.loc[cons, "t_acquire"].to_numpy()
    meas.tiles.loc[cons, "t_acquire"] = t.max() + t.min() - t  # tiles start in the reverse order
    for p in (plan, None):  # from the plan's inbound pipe, or from the traces (t_ready != t_start)
        c = compare(meas, sim, p)
        assert c.dequeue[["layer", "source"]].values.tolist() == [[1, "wait"]]
        assert c.start_order_spearman == pytest.approx(-1.0)
        row = c.summary()
        # no work-queue: no dequeue order to agree on, reported as NaN rather than a perfect 1
        assert np.isnan(row["dequeue_spearman"]) and row["consumer_source"] == "wait"
        assert row["start_order_spearman"] == pytest.approx(-1.0)
    # a queue consumer keeps its dequeue figure, and it is its start-order figure too
    qplan, qsim = _ctapipe()
    q = compare(qsim, qsim.copy(), qplan)
    assert q.dequeue["source"].tolist() == ["queue"] and q.summary()["dequeue_spearman"] == pytest.approx(1.0)
    assert q.start_order_spearman == pytest.approx(1.0)


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
# resolve, so it is not one of the wrong profiles here.  Dequeue rank correlation >= 0.7, not the 0.9 of
# compare.gates: under link_sharing = "fair" the first wave's stores end together, so at M=1024 the order in
# which the consumer's counters complete follows the tile-time noise (stand-in seeds 3-7: 0.71-0.83; the measured
# M=1024 traces: 0.75-0.80); fcfs served the stores in a fixed order (1.0).
PER_CTA_BOUNDS = {"makespan_abs_error": 0.03, "start_median_frac": 0.02, "end_median_frac": 0.02,
                  "dequeue_spearman_min": 0.7}


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
# Bounds on the held-out M values (1024, 4096, 16384) of run 2, CUTLASS backend: the targets, a MAPE of
# 3% per strategy and overall and a worst case of 6% (today: micro-batching 0.99%, worst -4.80% at M=1024 c=2,
# all 1.11%; docs/validation.md).  Micro-batching was held to 4% / 10% before the harness modelled the waits on
# peer copies (Harness.wait_ns, hop_ns: 3.23%, -9.65%).
MAPE_BOUND_PCT = {"gemm": 3.0, "sequential": 3.0, "tp": 3.0, "microbatch": 3.0, "all": 3.0}
WORST_BOUND_PCT = 6.0


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


def _mb_plan(hw, harness, chunks=4, m=2048):
    case = V.MeasuredCase("microbatch", "cutlass", m, 8192, chunks, 1.0, 0.5, 0.1, 0.4)
    return V.harness_plan(case, hw, harness)


def test_harness_waits_delay_only_the_kernels_that_wait_on_a_peer_copy(measured):
    hw, _, _, harness = measured
    base = dataclasses.replace(harness, wait_ns=0.0, hop_ns=0.0)
    p0, p1 = _mb_plan(hw, base), _mb_plan(hw, dataclasses.replace(base, wait_ns=1000.0, hop_ns=5000.0))
    copies = {op.id for op in p0.ops if isinstance(op, Transfer)}
    waiting = 0
    for a, b in zip(p0.ops, p1.ops):
        assert a.id == b.id and a.start_ns == b.start_ns
        waits_on_copy = isinstance(a, Kernel) and any(d in copies for d, _ in a.deps)
        waiting += waits_on_copy
        for (d, x), (d2, y) in zip(a.deps, b.deps):
            assert d == d2
            want = (5000.0 if d in copies else 1000.0) if waits_on_copy else 0.0
            assert y - x == pytest.approx(want), (a, d)
    assert waiting == 4  # every second-GPU kernel of the 4 chunks; none on GPU 0, no copy
    # a plan without peer copies (TP) is untouched
    tp = V.MeasuredCase("tp", "cutlass", 2048, 8192, 0, 1.0, 0.5, 0.0, 0.4)
    t0 = V.harness_plan(tp, hw, base)
    t1 = V.harness_plan(tp, hw, dataclasses.replace(base, wait_ns=1000.0, hop_ns=5000.0))
    assert [op.deps for op in t0.ops] == [op.deps for op in t1.ops]


def test_fit_of_the_waits_recovers_them_from_simulated_runs(measured):
    """Runs simulated with known wait_ns / hop_ns on a machine whose GEMM tiles are 4% slower than the profile says
    (kernel event times from that simulation) are fitted back to those values: the fit puts the kernels at their
    measured time instead of absorbing their error into the waits."""
    hw, _, _, harness = measured
    truth = dataclasses.replace(harness, wait_ns=2500.0, hop_ns=11000.0)
    slow = dataclasses.replace(hw, kernel_configs=tuple(
        dataclasses.replace(c, sm_tflops=c.sm_tflops / 1.04) if not c.kernel else c for c in hw.kernel_configs))
    cases = []
    for m, c in ((2048, 1), (2048, 4), (2048, 16), (8192, 2), (8192, 8)):
        probe = V.MeasuredCase("microbatch", "cutlass", m, 8192, c, 1.0, 1.0, 0.0, 0.0)
        k = V._kernel_rows([probe], slow, truth).iloc[0]
        case = dataclasses.replace(probe, compute_ms=k["sim_ns"] * c / 1e6)
        cases.append(dataclasses.replace(case, median_ms=V.predict_ns(case, slow, truth) / 1e6))
    got, evidence = V._fit_waits(cases, hw, dataclasses.replace(harness, wait_ns=0.0, hop_ns=0.0))
    assert got.wait_ns == pytest.approx(2500.0, abs=50.0)
    assert got.hop_ns == pytest.approx(11000.0, abs=100.0)
    assert "median" in evidence


def test_fitted_harness_waits_agree_with_the_probe(measured):
    """The waits fitted on the GEMM runs against the direct measurement of bench/hw/copy_wait_probe.py (same harness,
    sleep kernels, 8 MiB copies: bench/results/hw/2026-11-29-copy-wait)."""
    import json

    root = Path(__file__).resolve().parent.parent
    mod = load_bench("hw/copy_wait_report")
    hw, _, _, harness = measured
    probe = mod.analyse(json.loads((root / "bench/results/hw/2026-11-29-copy-wait/copy_wait_k60_8mib.json").read_text()), hw)
    assert probe["wait_ns"] == pytest.approx(harness.wait_ns, abs=1500.0)
    assert probe["hop_ns_line"] == pytest.approx(harness.hop_ns, abs=1500.0)
    assert probe["hop_ns_c1"] == pytest.approx(harness.hop_ns, abs=1500.0)
    assert probe["gap_ns"] == pytest.approx(harness.gap_ns, abs=200.0)
    assert probe["run_ns"] == pytest.approx(harness.run_ns, abs=200.0)


def test_measured_baselines_pass_the_makespan_gates(measured):
    hw, cases, _, harness = measured
    df = V.validate(cases, hw, harness)
    assert set(df.loc[df["role"] == "held_out", "m"]) == {1024, 4096, 16384}
    assert _gate_failures(df) == []
    agree = V.choice_agreement(df)
    held = agree[agree["role"] == "held_out"]
    assert held["best_chunks_agree"].all() and held["ranking_agrees"].all()


@pytest.mark.parametrize("name", ["half sm_tflops", "half copy-engine bandwidth", "half all-reduce bandwidth",
                                  "sm_tflops -5%", "no wait on peer copies", "double event_wait_ns"])
def test_a_wrong_profile_fails_the_makespan_gates(measured, name):
    hw, cases, _, harness = measured
    if name == "no wait on peer copies":
        harness = dataclasses.replace(harness, wait_ns=0.0, hop_ns=0.0)
    cfg = hw.kernel_configs
    scale = lambda f: dataclasses.replace(hw, kernel_configs=tuple(dataclasses.replace(c, sm_tflops=c.sm_tflops * f) for c in cfg))
    bad = {
        "half sm_tflops": scale(0.5),
        "sm_tflops -5%": scale(0.95),
        "half copy-engine bandwidth": dataclasses.replace(hw, copy_engine_gbps=hw.copy_engine_gbps / 2),
        "half all-reduce bandwidth": dataclasses.replace(hw, allreduce_bus_gbps=hw.allreduce_bus_gbps / 2),
        "no wait on peer copies": hw,
        "double event_wait_ns": dataclasses.replace(hw, event_wait_ns=2 * hw.event_wait_ns),
    }[name]
    assert _gate_failures(V.validate(cases, bad, harness)) != []


# ------------------------------------------------------------------------ CTA-pipelining: measured per-CTA traces
# Two measured 2xH200 traces (held-out M), committed as tile tables by `ctasim validate`, simulated
# with the committed profile (its fitted ctapipe-1x1/1x2/2x1 configs; fitted on M = 2048, 8192 only).
# Absolute bounds = held-out figures plus a margin so that a regression fails; they are NOT the targets
# (median start error <= 2% of the makespan is not met at M=1024: 2.7%; docs/validation.md).  M=4096's median
# start error bound is today's 1.14% plus 0.4 points: under link_sharing = "fair" the per-SM store rate shows
# mainly there (half sm_remote_store_gbps: 1.74%, makespan +1.10 points).  A profile that is wrong in the direction of the measurement (the model under-predicts
# M=4096 by 4.6%; half link bandwidth, -5% tile rate) moves the figures *towards* it and would pass absolute
# bounds; `BIAS_BAND` pins the signed makespan error to +-1% around today's value (the simulation is
# deterministic for its seed, 0; any change of model or profile that moves it must update this with its
# reason: the fitted KernelConfig.tile_cv moved M=1024 from -3.6% to +1.0% and M=4096 from -5.5% to -4.6%;
# link_sharing = "fair" with the refitted sm_remote_store_gbps and signal_hold_ns moved them to -0.2% and +1.0%;
# the ctapipe configs refitted with the M=32768 traces of 2026-11-29-ctapipe-range and -trace3 to +0.9% and +2.2%;
# the fitted signal_ns (store end to counter update under load, 3.5-4.3 us) to +1.7% and +2.4%; a config of its own
# for c21's consumer (ctapipe-1x2-c21) moved M=4096 to +1.3%).  Doubling poll_ns (200 -> 400 ns) moves the makespan by < 0.05%: nothing here resolves it.
from ctasim.validation import ctapipe as VC  # noqa: E402

VALIDATION = Path(__file__).resolve().parent.parent / "bench" / "results" / "validation"
HW_RUNS = Path(__file__).resolve().parent.parent / "bench" / "results" / "hw"
# (m, variant): (max |makespan error|, max median start error / makespan, min dequeue rank correlation,
#                signed makespan error today)
CTAPIPE_GATES = {
    (1024, "cutlass_ctapipe"): (0.05, 0.055, 0.75, +0.0172),
    (4096, "cutlass_ctapipe_c21"): (0.065, 0.0154, 0.98, +0.0126),
}
BIAS_BAND = 0.01


def _ctapipe_failures(hw) -> list[str]:
    bad = []
    for (m, v), (mk, st, sp, today) in CTAPIPE_GATES.items():
        mt = VC.load_tiles(VALIDATION / f"ctapipe-tiles-m{m}-{v}.csv.gz", m, v)
        plan, sim = VC.simulate_for(mt, hw)
        c = compare(mt.trace, sim, plan)
        g = gates(c, {"makespan_abs_error": mk, "start_median_frac": st, "end_median_frac": 1.0,
                      "dequeue_spearman_min": sp})
        bad += [f"M={m} {v} {k}: {val:.4f} vs {b}" for k, (ok, val, b) in g.items() if not ok]
        if abs(c.makespan_error - today) > BIAS_BAND:
            bad.append(f"M={m} {v} makespan error {c.makespan_error:+.4f} left {today:+.4f} +- {BIAS_BAND}")
    return bad


def test_measured_ctapipe_traces_pass_the_per_cta_gates_with_the_committed_profile():
    hw = load_hardware("h200-x2-calibrated")
    assert _ctapipe_failures(hw) == []


def _with_variants(hw, **kw):
    return dataclasses.replace(hw, kernel_configs=tuple(
        dataclasses.replace(c, **{k: v(c) for k, v in kw.items()}) if c.kernel else c for c in hw.kernel_configs))


@pytest.mark.parametrize("name", ["half link bandwidth", "tile rate +5%", "tile rate -5%", "no wave slowdown",
                                  "no CTA turnover or epilogue", "half remote-store rate",
                                  "double fence and atomic (signal and push)",
                                  "default kernel config for every layer", "no tile-time variation",
                                  "double tile-time variation"])
def test_a_wrong_profile_fails_the_measured_ctapipe_gates(name):
    hw = load_hardware("h200-x2-calibrated")
    base = hw.config(128, 256)
    bad = {
        "half link bandwidth": dataclasses.replace(hw, link_gbps=hw.link_gbps / 2),
        "tile rate +5%": _with_variants(hw, sm_tflops=lambda c: c.sm_tflops * 1.05),
        "tile rate -5%": _with_variants(hw, sm_tflops=lambda c: c.sm_tflops * 0.95),
        "no wave slowdown": _with_variants(hw, wave_slowdown=lambda c: 0.0),
        "no CTA turnover or epilogue": _with_variants(hw, cta_launch_ns=lambda c: 0.0, tile_fixed_ns=lambda c: 0.0),
        "half remote-store rate": dataclasses.replace(hw, sm_remote_store_gbps=hw.sm_remote_store_gbps / 2),
        "double fence and atomic (signal and push)": _with_variants(
            dataclasses.replace(hw, fence_sys_ns=2 * hw.fence_sys_ns, remote_atomic_ns=2 * hw.remote_atomic_ns),
            signal_ns=lambda c: 2 * c.signal_ns),
        "default kernel config for every layer": _with_variants(
            hw, sm_tflops=lambda c: base.sm_tflops, tile_fixed_ns=lambda c: base.tile_fixed_ns,
            wave_slowdown=lambda c: 0.0, cta_launch_ns=lambda c: 0.0, signal_hold_ns=lambda c: 0.0, signal_ns=lambda c: 0.0,
            tile_cv=lambda c: 0.0),
        "no tile-time variation": _with_variants(hw, tile_cv=lambda c: 0.0),
        "double tile-time variation": _with_variants(hw, tile_cv=lambda c: 2 * c.tile_cv),
    }[name]
    assert _ctapipe_failures(bad) != []


@pytest.fixture(scope="module")
def ctapipe_traces():
    pytest.importorskip("ctahw.pipelined")
    hw_dir = HW_RUNS
    return [t for r in (P.CTAPIPE_RUN, *P.CTAPIPE_FIT_ALSO) for t in VC.load_folder(hw_dir / r)]


def test_ctapipe_fit_keeps_traces_of_one_case_from_two_runs_apart(ctapipe_traces):
    """The same (variant, M) traced in two runs is two cases: a fit on a trace and its copy under another run name
    equals the fit on the trace alone (merged, their per-SM turnovers would interleave two timelines)."""
    hw = load_hardware("h200-x2-calibrated")
    one = [t for t in ctapipe_traces if t.m == 2048 and t.variant == "cutlass_ctapipe"]
    assert len(one) == 1
    twin = dataclasses.replace(one[0], run="another-run")
    assert VC.fit(one + [twin], hw, fit_ms=(2048,))[0] == VC.fit(one, hw, fit_ms=(2048,))[0]


def test_committed_profile_holds_the_ctapipe_fit_of_the_committed_traces(ctapipe_traces):
    hw = load_hardware("h200-x2-calibrated")
    fields, _ = VC.fit(ctapipe_traces, hw)
    assert set(fields) == {"ctapipe-1x1", "ctapipe-1x2", "ctapipe-1x2-c21", "ctapipe-2x1"}
    for kernel, f in fields.items():
        cfg = hw.config(128, 256, kernel=kernel)
        for k, v in f.items():
            assert getattr(cfg, k) == pytest.approx(v, rel=1e-4, abs=0.05), (kernel, k)


def test_ctapipe_fit_uses_only_the_fitting_m_values(ctapipe_traces):
    hw = load_hardware("h200-x2-calibrated")
    train = [t for t in ctapipe_traces if t.m in VC.FIT_MS]
    assert len(train) < len(ctapipe_traces)
    assert VC.fit(ctapipe_traces, hw)[0] == VC.fit(train, hw)[0]
    held = [t for t in ctapipe_traces if t.m not in VC.FIT_MS]
    assert VC.fit(held, hw, fit_ms=(1024, 4096, 16384))[0] != VC.fit(train, hw)[0]


def test_wave_slowdown_and_signal_hold_in_the_engine():
    """The closed form and the event path agree with a wave slowdown; the slowdown and the signal hold lengthen
    the kernels they belong to by what the model says."""
    # the clock curve off (its factor 1.0006 from 5 ms of busy time would move the formula below); the step's onset
    # (56 ms) lies past this 12 ms kernel
    hw = dataclasses.replace(load_hardware("h200-x2-calibrated"), clock_curve_ns=(), clock_curve_factor=())
    slow = _with_variants(hw, wave_slowdown=lambda c: 0.5, wave_slowdown_waves=lambda c: 1.0)
    layer = Layer(132 * 128 * 3, 8192, 8192, 128, 256)  # 12672 tiles: 96 full waves of 132 CTAs
    wl = Workload("one", "bf16", (layer,))
    st = Strategy("sequential")
    plan = build_plans(st, wl, hw, 1, "t")[0]
    k = plan.kernels()[0]
    k.persistent, k.wave_slowdown, k.wave_slowdown_waves = False, 0.5, 2.0
    k.tile_cv = 0.0  # the default config's measured tile-time variation off: the formula below is for equal tiles
    fast, ev = simulate(plan, hw, closed_form=True), simulate(plan, hw, closed_form=False)
    assert np.allclose(np.sort(fast.tiles["t_compute_end"]), np.sort(ev.tiles["t_compute_end"]))
    w = np.arange(k.tiles) // k.slots
    assert fast.makespan_ns == pytest.approx(k.fixed_ns + k.start_ns + k.tile_ns * (1 + 0.5 * np.minimum(1, np.unique(w) / 2)).sum(), rel=1e-9)
    mt = VC.load_tiles(VALIDATION / "ctapipe-tiles-m1024-cutlass_ctapipe.csv.gz", 1024, "cutlass_ctapipe")
    a = VC.simulate_for(mt, hw)[1]
    b = VC.simulate_for(mt, _with_variants(hw, signal_hold_ns=lambda c: 10_000.0))[1]
    prod = lambda t: t.tiles[t.tiles["layer"] == 0]["t_acquire"].max()
    assert prod(b) - prod(a) == pytest.approx(10_000.0 - hw.config(128, 256, kernel="ctapipe-1x1").signal_hold_ns, rel=1e-6)
    assert slow.config(128, 256, kernel="ctapipe-1x1").wave_factor(np.array([0, 1, 5])).tolist() == [1.0, 1.5, 1.5]


def _synthetic_waves(cvs_by_wave, slots=132, base=90_000.0, seed=0):
    """A one-layer static trace whose wave w (tiles in t_acquire order, ``slots`` a wave) has mainloops of exactly
    the given coefficient of variation (std / mean, ddof 0); waves arrive in shuffled CTA order."""
    rng = np.random.default_rng(seed)
    rows, t0 = [], 0.0
    for w, cv in enumerate(cvs_by_wave):
        z = rng.standard_normal(slots)
        z = (z - z.mean()) / z.std()
        main = base * (1.0 + cv * z)
        for j in range(slots):
            acq = t0 + j  # acquire order inside the wave = j
            rows.append({"kernel": 0, "layer": 0, "gpu": 0, "cta": w * slots + j, "sm": j, "tile_m": w, "tile_n": j,
                         "slot": -1, "t_start": acq, "t_acquire": acq, "t_ready": acq, "t_mainloop_end": acq + main[j],
                         "t_compute_end": acq + main[j] + 2000.0, "t_store_end": acq + main[j] + 6000.0,
                         "t_signal": acq + main[j] + 6500.0})
        t0 += 2.0 * base
    t = pd.DataFrame(rows).sample(frac=1.0, random_state=1).reset_index(drop=True)
    t.insert(0, "source", "hw")
    from ctasim.trace import EVENT_COLUMNS, OP_COLUMNS, Trace

    tr = Trace(t, pd.DataFrame(columns=list(EVENT_COLUMNS)), pd.DataFrame(columns=list(OP_COLUMNS)), {"source": "hw"})
    return VC.MeasuredTrace(2048, "cutlass_ctapipe", tr, np.arange(len(t)), "synthetic")


def test_ctapipe_fit_of_tile_cv_on_a_synthetic_trace():
    """tile_cv = median over full waves >= 1 of the within-wave mainloop CV; wave 0 and the partial last wave
    (here: 5 tiles of CV 0.3) are left out."""
    hw = load_hardware("h200-x2-calibrated")
    mt = _synthetic_waves([0.2, 0.01, 0.02, 0.06, 0.03, 0.05])
    t = mt.trace.tiles
    extra = t.iloc[:5].copy()
    extra["t_acquire"] = extra["t_start"] = extra["t_ready"] = 1e9 + np.arange(5)
    extra["t_mainloop_end"] = extra["t_acquire"] + 90_000.0 * (1 + 0.3 * np.array([-2, -1, 0, 1, 2]) / np.sqrt(2))
    extra["t_compute_end"] = extra["t_mainloop_end"] + 2000.0
    mt.trace.tiles = pd.concat([t, extra], ignore_index=True)
    fields, ev = VC.fit([mt], hw)
    assert fields["ctapipe-1x1"]["tile_cv"] == pytest.approx(0.03, abs=1e-4)  # median of 0.01, 0.02, 0.06, 0.03, 0.05 (mean 0.034)
    assert "5 full waves" in ev.loc[ev["field"] == "tile_cv", "fitted to"].iloc[0]


# ------------------------------------------------------------------------ whole independent ctapipe runs
# 2026-11-29-ctapipe-rerun3: 12 traces (M = 1024 ... 8192, 1x1 / 1x2 / 2x1 + 1x2), each the median of three traced runs;
# 2026-11-29-ctapipe-clean: 9 traces (M = 1024, 4096, 16384), taken after every model choice. Nothing fitted on either.
# The three targets are the bounds: MAPE <= 3%, worst <= 6%, median per-CTA start error <= 2% of the makespan
# (today rerun3 1.79%, +3.58%, 1.71%; clean 1.58%, -2.53%, 1.64%; seed 0).
HW_RESULTS = Path(__file__).resolve().parent.parent / "bench" / "results" / "hw"
RERUN3 = HW_RESULTS / "2026-11-29-ctapipe-rerun3"
INDEPENDENT_RUNS = {"2026-11-29-ctapipe-rerun3": 12, "2026-11-29-ctapipe-clean": 9}


def _independent_run_failures(hw, run: Path = RERUN3) -> list[str]:
    pytest.importorskip("ctahw.pipelined")
    df, _ = VC.judge(VC.load_folder(run), hw, fit_ms=())
    s = VC.summary(df).set_index("m").loc["all"]
    bad = [f"{int(df['stalled'].sum())} traces marked stalled (left out of the summary)"] if df["stalled"].any() else []
    if s["makespan_mape_pct"] > 3.0:
        bad.append(f"MAPE {s['makespan_mape_pct']:.2f}% > 3%")
    if abs(s["worst_pct"]) > 6.0:
        bad.append(f"worst {s['worst_pct']:+.2f}%")
    if s["start_median_pct_max"] > 2.0:
        bad.append(f"median start error {s['start_median_pct_max']:.2f}% > 2%")
    return bad


@pytest.mark.parametrize("run", sorted(INDEPENDENT_RUNS))
def test_an_independent_ctapipe_run_meets_the_targets(run):
    pytest.importorskip("ctahw.pipelined")
    assert len(VC.load_folder(HW_RESULTS / run)) == INDEPENDENT_RUNS[run]
    assert _independent_run_failures(load_hardware("h200-x2-calibrated"), HW_RESULTS / run) == []


@pytest.mark.parametrize("name", ["tile rate -5%", "no wave slowdown", "half link bandwidth"])
def test_a_wrong_profile_fails_on_the_independent_ctapipe_run(name):
    hw = load_hardware("h200-x2-calibrated")
    bad = {
        "tile rate -5%": _with_variants(hw, sm_tflops=lambda c: c.sm_tflops * 0.95),
        "no wave slowdown": _with_variants(hw, wave_slowdown=lambda c: 0.0),
        "half link bandwidth": dataclasses.replace(hw, link_gbps=hw.link_gbps / 2),
    }[name]
    assert _independent_run_failures(bad) != []


def test_signal_ns_sets_the_store_to_counter_step_in_the_engine():
    """KernelConfig.signal_ns replaces the unloaded fence + atomic between a producer tile's store arrival and its
    counter update, for every producer tile, and moves the consumer's first tile by the difference."""
    hw = tiny_hw()
    plan, base = _ctapipe(hw)
    hw_s = dataclasses.replace(hw, kernel_configs=tuple(dataclasses.replace(c, signal_ns=5000.0) for c in hw.kernel_configs))
    plan_s, slow = _ctapipe(hw_s)
    for tr, want in ((base, hw.fence_sys_ns + hw.remote_atomic_ns), (slow, 5000.0)):
        p = tr.tiles[tr.tiles["layer"] == 0]
        assert np.allclose(p["t_signal"] - p["t_store_end"], want)
    first = lambda tr: tr.tiles.loc[tr.tiles["layer"] == 1, "t_acquire"].min()
    assert first(slow) - first(base) == pytest.approx(5000.0 - hw.fence_sys_ns - hw.remote_atomic_ns)


def test_a_consumer_only_config_takes_its_kernels_turnover(ctapipe_traces):
    """ctapipe-1x2-c21 (c21's consumer: a queue grid, no static turnover to measure) takes ctapipe-1x2's
    cta_launch_ns; without ctapipe-1x2 at the fitting M values the fit says so instead of fitting 0."""
    hw = load_hardware("h200-x2-calibrated")
    fields, ev = VC.fit(ctapipe_traces, hw)
    assert fields["ctapipe-1x2-c21"]["cta_launch_ns"] == fields["ctapipe-1x2"]["cta_launch_ns"] > 500
    assert "ctapipe-1x2's" in ev[(ev["kernel"] == "ctapipe-1x2-c21") & (ev["field"] == "cta_launch_ns")]["fitted to"].iloc[0]
    with pytest.raises(ValueError, match="ctapipe-1x2-c21 takes its cta_launch_ns from ctapipe-1x2"):
        VC.fit([t for t in ctapipe_traces if t.variant == "cutlass_ctapipe_c21"], hw)
