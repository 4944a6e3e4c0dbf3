"""ctahw.calibrate: fits against synthetic measurements, and the profile file read back by ctasim."""

from __future__ import annotations

import math
import tomllib

from pathlib import Path

import pytest

from ctahw import calibrate as cal
from ctasim.spec import SPECS_DIR, load_hardware


def _gemm_ms(m, n, k, sm_tflops, fixed_ns, sms=132, tm=128, tn=256):
    rounds = math.ceil(math.ceil(m / tm) * math.ceil(n / tn) / sms)
    return rounds * (fixed_ns + 2 * tm * tn * k / (sm_tflops * 1e3)) / 1e6


def test_fit_tile_rate_recovers_the_model():
    samples = [(16384, 8192, k, _gemm_ms(16384, 8192, k, 5.9, 2500.0)) for k in (2048, 4096, 8192)]
    fit = cal.fit_tile_rate(samples, 128, 256, 132)
    assert fit["sm_tflops"] == pytest.approx(5.9, rel=1e-9)
    assert fit["tile_fixed_ns"] == pytest.approx(2500.0, rel=1e-9)
    assert fit["max_abs_residual_ns"] < 1e-6


def test_fit_tile_rate_rounds_are_persistent_waves():
    # 4096 tiles on 132 SMs: 32 rounds (31.03 -> 32), the figure of specs/hardware/h200-x2.toml
    fit = cal.fit_tile_rate([(16384, 8192, 8192, 2.90)], 128, 256, 132)
    assert fit["tile_fixed_ns"] == 0.0
    assert fit["sm_tflops"] == pytest.approx(2 * 128 * 256 * 8192 / (2.90e6 / 32 * 1e3), rel=1e-9)
    assert fit["sm_tflops"] == pytest.approx(5.924, abs=2e-3)


def test_fit_tile_rate_negative_intercept_falls_back():
    samples = [(16384, 8192, 2048, 0.60), (16384, 8192, 8192, 2.90)]  # intercept < 0
    fit = cal.fit_tile_rate(samples, 128, 256, 132)
    assert fit["tile_fixed_ns"] == 0.0 and "intercept" in fit["note"]


def test_fit_allreduce_recovers_bus_bandwidth_and_latency():
    sizes = [1 << p for p in range(20, 29)]
    algbw, a_ms = 274.0, 0.02  # GB/s, ms
    ms = [a_ms + s / (algbw * 1e6) for s in sizes]
    fit = cal.fit_allreduce(sizes, ms, 2)
    assert fit["allreduce_bus_gbps"] == pytest.approx(274.0 * 2 * 1 / 2)
    assert fit["allreduce_latency_ns"] == pytest.approx(a_ms * 1e6 / 2)
    with pytest.raises(ValueError):
        cal.fit_allreduce(sizes, ms, 1)


def test_epilogue_overlap():
    d = 16384 * 8192 * 2
    store_ms = d / (370.0 * 1e6)
    assert cal.epilogue_overlap(2.93, 2.93, d, 370.0) == 1.0
    assert cal.epilogue_overlap(2.93, 2.93 + store_ms, d, 370.0) == pytest.approx(0.0)
    assert cal.epilogue_overlap(2.93, 2.93 + store_ms / 4, d, 370.0) == pytest.approx(0.75)
    assert cal.epilogue_overlap(2.93, 2.93 + 10 * store_ms, d, 370.0) == 0.0


def test_pingpong_stats_recovers_offset():
    offset, one_way = -4700, 650
    init, resp = [], []
    t = 10_000
    for i in range(100):
        extra = 0 if i % 10 == 0 else 300 * (i % 7)  # queueing on the way back makes some rounds asymmetric
        init += [t, t + 2 * one_way + extra]
        resp.append(t + one_way + offset)
        t += 5000
    st = cal.pingpong_stats(init, resp)
    assert st["rtt_min_ns"] == 2 * one_way
    assert st["offset_ns"] == pytest.approx(offset)
    with pytest.raises(ValueError):
        cal.pingpong_stats([1, 2, 3], [1, 2])


def test_fit_sm_remote_store_inverts_a_monotone_slowdown(tmp_path):
    hw = load_hardware("h200-x2")

    def slowdown(h):  # a stand-in model: 1 + 10 / rate, so ratio 1.1 <=> 100 GB/s
        assert h.epilogue_store_overlap == 0.0
        return 1.0 + 10.0 / h.sm_remote_store_gbps

    rate, note = cal.fit_sm_remote_store(hw, 1.1, slowdown)
    assert rate == pytest.approx(100.0, rel=1e-6) and "vs measured 1.1000" in note
    assert 'link_sharing "fcfs", 128x256 tile_cv 0, kernel_fixed_ns 0' in note  # what the rate depends on
    fair = load_hardware("h200-x2-calibrated")
    assert 'link_sharing "fair", 128x256 tile_cv 0.0075' in cal.fit_sm_remote_store(fair, 1.1, slowdown)[1]
    rate, note = cal.fit_sm_remote_store(hw, 1.0001, slowdown)
    assert rate == 1e4 and "clipped" in note
    rate, note = cal.fit_sm_remote_store(hw, 50.0, slowdown)
    assert rate == 0.5 and "clipped" in note


def test_timer_tick():
    assert cal.timer_tick_ns([0, 0, 32, 32, 64, 96, 96]) == 32
    with pytest.raises(ValueError):
        cal.timer_tick_ns([5, 5, 5])


def test_base_comments_skip_hash_in_strings_and_kernel_configs():
    text = '[hardware]\nname = "a#b"  # the name\nx = 1\ny = 2.0 # why\n[[hardware.kernel_config]]\ntile_m = 1 # no\n'
    assert cal.base_comments(text) == {"name": "the name", "y": "why"}


FAKE_RESULT = {
    "gpu_name": "NVIDIA H200", "gpus": 2, "sm_count": 132, "hbm_gbps": 3800.0, "hbm_copy_ms": 0.56,
    "link_gbps": 371.0, "copy_engine_gbps": 395.0, "copy_engine_gbps_1to0": 394.0,
    "pingpong_store": {"rtt_min_ns": 1120, "rtt_median_ns": 1300.0, "offset_ns": -4700.0, "offset_spread_ns": 40.0},
    "pingpong_atomic": {"rtt_min_ns": 1300, "rtt_median_ns": 1500.0, "offset_ns": -4690.0, "offset_spread_ns": 40.0},
    "link_latency_ns": 650.0, "remote_atomic_ns": 750.0, "atomic_return_peer_ns": 1400.0, "clock_offset_ns": -4700.0,
    "store_only_ns": 20.0, "store_fence_ns": 1200.0, "fence_sys_ns": 1180.0, "event_wait_ns": 3500.0,
    "allreduce_bus_gbps": 270.0, "allreduce_latency_ns": 9000.0, "intercept_ms": 0.018,
    "remote_d_local_ms": 2.9, "remote_d_remote_ms": 3.3, "epilogue_overlap_simple": 0.45,
    "globaltimer_tick_ns": 32, "globaltimer_on_host_clock": False, "launch_roundtrip_ns": 12000,
    "kernel_gap_ns": 1100, "cutlass_kernel": "cutlass=4.2.0 tile=128x256x64",
    "tile_fit_128x256": {"sm_tflops": 6.01, "tile_fixed_ns": 1234.5, "note": "fit over K = [2048, 4096, 8192]",
                         "points": [{"k": 8192, "round_ns": 90000.0}], "max_abs_residual_ns": 12.0},
}
PROV = {"date": "2026-11-29", "machine": "2 x NVIDIA H200, driver 580, CUDA 13.0", "commit": "abc123"}


def test_written_profile_loads_in_ctasim_with_measured_and_copied_fields(tmp_path):
    out = tmp_path / "h200-x2-calibrated.toml"
    text = cal.write_profile(FAKE_RESULT, "h200-x2", out, "h200-x2-calibrated", PROV)
    hw = load_hardware(out)
    base = load_hardware("h200-x2")
    assert hw.name == "h200-x2-calibrated" and hw.measured and hw.date == "2026-11-29"
    assert (hw.link_gbps, hw.copy_engine_gbps, hw.hbm_gbps) == (371.0, 395.0, 3800.0)
    assert hw.link_latency_ns == 650.0 and hw.fence_sys_ns == 1180.0
    # remote-D cost fitted with ctasim's engine: the written profile reproduces the measured slowdown
    assert hw.epilogue_store_overlap == 0.0 and hw.sm_remote_store_gbps != base.sm_remote_store_gbps
    assert cal.remote_d_slowdown(hw) == pytest.approx(3.3 / 2.9, rel=2e-3)
    assert hw.kernel_gap_ns == 1100.0 and isinstance(hw.kernel_gap_ns, float)
    c = hw.config(128, 256)
    assert (c.sm_tflops, c.tile_fixed_ns) == (6.01, 1234.5) and c.source.startswith("measured by ctahw calibrate")
    # not measured: copied, with the base's reason
    assert hw.poll_ns == base.poll_ns and hw.topology == base.topology and hw.launch_ns == base.launch_ns
    assert hw.config(128, 128) == base.config(128, 128)
    lines = {l.split("=")[0].strip(): l for l in text.splitlines() if "=" in l and not l.startswith("#")}
    assert "# copied from h200-x2 (kernel design value" in lines["poll_ns"]
    assert "# measured:" in lines["link_gbps"]
    assert "copied" in lines["launch_ns"]
    assert "globaltimer offset -4700 ns" in text and "abc123" in text
    tomllib.loads(text)  # plain TOML


def test_launch_is_measured_when_globaltimer_is_on_the_host_clock(tmp_path):
    res = dict(FAKE_RESULT, globaltimer_on_host_clock=True, launch_host_to_stamp_ns=4200)
    out = tmp_path / "p.toml"
    cal.write_profile(res, "h200-x2", out, "p", PROV)
    assert load_hardware(out).launch_ns == 4200.0


CLOCK_RESULT = {"clock_onset_ns": 5.6e7, "clock_sustained_slowdown": 1.17,
                "clock_curve_ns": (0.0, 3e7, 1.5e8), "clock_curve_factor": (1.0, 1.08, 1.17),
                "clock_rounds": [{"onset_ms": 30.0, "used": True}, {"onset_ms": 80.0, "used": True}],
                "activation_epilogue_ns_per_element": 0.11,
                "activation_per_m": [{"m": 4096, "per_tile_ns": 3970.0}, {"m": 16384, "per_tile_ns": 3420.0}],
                "norm_stats_epilogue_ns_per_element": 0.059, "norm_fold_epilogue_ns_per_element": 0.045,
                "fold_per_m": [{"m": 4096, "stats_ns_per_tile": 1600.0, "fold_ns_per_tile": 1440.0}],
                "epilogue_pass_gbps": 3900.0, "rowwise_gbps": 4150.0,
                "silu_epilogue_factor": 1.19, "relu_epilogue_factor": 0.0, "relu_input_tile_factor": 0.946,
                "relu_input_per_m": [{"m": 4096, "factor": 0.945}, {"m": 16384, "factor": 0.947}],
                "pass_rows": [{"kind": "epilogue", "op": "swiglu", "rows": 16384, "n": 28672, "gbps": 3900.0},
                              {"kind": "rowwise", "op": "rmsnorm", "rows": 16384, "n": 8192, "gbps": 4150.0}]}


def test_a_calibrated_profile_carries_the_folds_measured_costs_with_their_source(tmp_path):
    out = tmp_path / "p.toml"
    cal.write_profile(dict(FAKE_RESULT, **NO_FIT, **CLOCK_RESULT), "h200-x2", out, "p", PROV)
    hw = load_hardware(out)
    assert (hw.norm_stats_epilogue_ns_per_element, hw.norm_fold_epilogue_ns_per_element) == (0.059, 0.045)
    text = out.read_text()
    line = next(l for l in text.splitlines() if l.startswith("norm_fold_epilogue_ns_per_element"))
    assert "# measured:" in line and "lnfold_gelu vs gelu" in line and "M=4096 1600 / 1440 ns per tile" in line
    cal.write_profile(dict(FAKE_RESULT, **NO_FIT), "h200-x2-calibrated", out, "p", PROV)  # not measured: the base's value stays
    assert load_hardware(out).norm_fold_epilogue_ns_per_element == pytest.approx(load_hardware(
        "h200-x2-calibrated").norm_fold_epilogue_ns_per_element, rel=1e-3)  # written to 4 decimals


def test_measured_fields_cover_every_field_calibrate_claims():
    got = cal.measured_fields(dict(FAKE_RESULT, globaltimer_on_host_clock=True, launch_host_to_stamp_ns=1,
                                   sm_remote_store_gbps=7.0, sm_remote_store_note="fit", **CLOCK_RESULT,
                                   **MEMORY_RESULT))
    assert set(got) == set(cal.MEASURED_FIELDS)
    (vals, _, notes), = cal.measured_configs(dict(FAKE_RESULT, **MEMORY_RESULT, ticket_spread=0.019,
                                                  ticket_runs=[{"spread_per_window": 0.019}],
                                                  **RATE_RESULT)).values()
    assert set(vals) - {"source"} == set(cal.CONFIG_FIELDS) and set(notes) == set(cal.CONFIG_FIELDS[2:])


MEMORY_RESULT = {"l2_bytes": 62914560, "l2_sm_tflops": 6.72, "l2_hbm_exposed": 0.19, "l2_fit_error": 0.0049,
                 "l2_fit_runs": 72, "cta_drift": 0.0078, "drift_form": "interleaved", "cluster_m": 2, "tile_order_reps": 3,
                 "tile_order_runs": [{"m": m, "n": 8192, "k": 8192, "backend": "cutlass", "order": f"along_m/swizzle{s}"}
                                     for m in (2048, 32768) for s in (1, 8)],
                 "order_drift": [{"case": "a", "start_sd_per_round": 0.0061},
                                 {"case": "b", "start_sd_per_round": 0.009}], "local_signal_ns": 912.0,
                 "l2_survival_taken": (0.0, 0.5, 0.75, 1.0), "l2_survival_share": (1.0, 0.91, 0.026, 0.0),
                 "l2_survival_cut_cycles": 510.5, "l2_survival_reps": 5}
"""What :func:`ctahw.calibrate.memory_hierarchy` adds to a measurement (h200-x1-calibrated's values)."""


def test_the_l2_survival_curve_goes_into_the_profile_with_its_source(tmp_path):
    """The committed probe's rows give h200-x1-calibrated's curve through l2_survival_fields, and a calibration
    with a curve writes it into the profile, loadable, with how it was measured; one without keeps the base's."""
    import pandas as pd

    rows = pd.read_csv(Path(__file__).resolve().parents[2] /
                       "bench/results/hw/2026-12-04-l2-survival-1gpu/target-2mib/l2-survival.csv").to_dict("records")
    got = cal.l2_survival_fields(rows)
    x1 = load_hardware("h200-x1-calibrated")
    assert (got["l2_survival_taken"], got["l2_survival_share"]) == (x1.l2_survival_taken, x1.l2_survival_share)
    assert got["l2_survival_cut_cycles"] == 510.5 and got["l2_survival_reps"] == 9
    fitted = dict(FAKE_RESULT, sm_remote_store_gbps=7.0, sm_remote_store_note="fit")
    text = cal.write_profile(dict(fitted, **MEMORY_RESULT), "h200-x2", tmp_path / "p.toml", "p", PROV)
    hw = load_hardware(tmp_path / "p.toml")
    assert hw.l2_survival_share == (1.0, 0.91, 0.026, 0.0) and hw.with_ticket_law("survival")
    line = next(l for l in text.splitlines() if l.startswith("l2_survival_share"))
    assert "measured" in line and "510 cycles" in line
    no_curve = {k: v for k, v in MEMORY_RESULT.items() if not k.startswith("l2_survival")}
    text = cal.write_profile(dict(fitted, **no_curve, l2_survival_note="hot and cold latencies overlap"), "h200-x2",
                             tmp_path / "q.toml", "q", PROV)
    assert load_hardware(tmp_path / "q.toml").l2_survival_taken == load_hardware("h200-x2").l2_survival_taken
    assert "# l2 survival not measured: hot and cold latencies overlap" in text
    # the survival law comes with h200-x1-calibrated's refinements (plan 58's adoption), from a base without them
    cfg, x1cfg = hw.config(128, 256), x1.config(128, 256)
    assert (cfg.ticket_law, cfg.ticket_gap_cv, cfg.ticket_touched) == ("survival", x1cfg.ticket_gap_cv,
                                                                       x1cfg.ticket_touched)
    assert x1cfg.ticket_gap_cv > 0 and load_hardware("h200-x2").config(128, 256).ticket_gap_cv == 0
    text = (tmp_path / "p.toml").read_text()
    line = next(l for l in text.splitlines() if l.startswith("ticket_touched"))
    assert "# copied from h200-x1-calibrated" in line and "plan 58" in line
    q = load_hardware(tmp_path / "q.toml").config(128, 256)  # no curve: the base's law, unrefined
    assert (q.ticket_gap_cv, q.ticket_touched) == (0.0, 1.0)


def test_a_measured_gap_spread_is_named_but_the_pooled_one_is_written(tmp_path):
    """A measurement with the gap traces (pairs of row-blocks) writes h200-x1-calibrated's pooled ticket_gap_cv, its
    note naming the traces' own reading and range (registered plan 62: the probe no nearer the machine's own spread
    than the pooled value); ticket_touched stays copied; without the curve the base's law is kept whatever the gaps
    say (they refine the survival law only)."""
    fitted = dict(FAKE_RESULT, sm_remote_store_gbps=7.0, sm_remote_store_note="fit")
    gaps = {"ticket_gap_cv": 0.91234, "gap_runs": [{"m": 8192, "gap_cv": 0.88}, {"m": 16384, "gap_cv": 0.94468},
                                                    {"m": 4096, "gap_cv": None}]}
    text = cal.write_profile(dict(fitted, **MEMORY_RESULT, **gaps), "h200-x2", tmp_path / "p.toml", "p", PROV)
    cfg = load_hardware(tmp_path / "p.toml").config(128, 256)
    x1cfg = load_hardware("h200-x1-calibrated").config(128, 256)
    assert x1cfg.ticket_gap_cv != 0.9123
    assert (cfg.ticket_law, cfg.ticket_gap_cv, cfg.ticket_touched) == ("survival", x1cfg.ticket_gap_cv,
                                                                       x1cfg.ticket_touched)
    line = next(l for l in text.splitlines() if l.startswith("ticket_gap_cv"))
    assert "# copied from h200-x1-calibrated" in line and "not this machine's gap traces' 0.9123" in line
    assert "median over 2 per-tile traces" in line and "0.8800-0.9447" in line and "plan 62" in line
    line = next(l for l in text.splitlines() if l.startswith("ticket_touched"))
    assert "# copied from h200-x1-calibrated" in line
    no_curve = {k: v for k, v in MEMORY_RESULT.items() if not k.startswith("l2_survival")}
    cal.write_profile(dict(fitted, **no_curve, **gaps, l2_survival_note="overlap"), "h200-x2", tmp_path / "q.toml", "q",
                      PROV)
    q = load_hardware(tmp_path / "q.toml").config(128, 256)
    assert (q.ticket_law, q.ticket_gap_cv, q.ticket_touched) == (load_hardware("h200-x2").config(128, 256).ticket_law,
                                                                 0.0, 1.0)


RATE_RESULT = {"ticket_mainloop_factor": 1.019, "ticket_rate_law": "survival",
               "ticket_rate_cases": [{"experiment": "reg51-chain-rate-h8192", "case": "m=8192", "factor": 1.0278}]}
"""What :func:`ctahw.calibrate.ticket_rate_fields` adds to a measurement."""
RATE_RUN = Path(__file__).resolve().parents[2] / "bench/results/hw/2026-12-04-registered51-1gpu"
"""Registered plan 51's call 1: the microbenchmark's committed measurement (what ticket_rate returns as rows)."""


def _rate_runs(drop: int | None = None) -> list[dict]:
    import pandas as pd

    from ctasim import results
    from ctasim.ticket_rate import RATE_EXPERIMENTS

    rows = pd.concat([results.read(RATE_RUN / e / "results.csv") for e in RATE_EXPERIMENTS], ignore_index=True)
    return rows.drop(index=drop).to_dict("records") if drop is not None else rows.to_dict("records")


def test_the_tickets_mainloop_factor_is_priced_by_the_profile_being_written_under_its_own_law(tmp_path):
    """A calibration with the microbenchmark's rows writes the factor plan 51's rule gives with the written profile's own
    predictions at factor 1 (ctasim.ticket_rate), with its cases; under the base's survival law on plan 51's committed
    run it is above 1 (the survival law prices the one-layer chain faster than the partition law, which gave 1.008);
    a missing case or a failed row leaves the base's factor and the header says why."""
    from ctasim import ticket_rate
    import pandas as pd

    # fitted under the base's reuse law, as a calibration against it fits (ctahw.calibrate.measure): the survival law
    # since registered plan 67's adoption on an H200 (2026-12-06)
    fitted = dict(FAKE_RESULT, **NO_FIT, **MEMORY_RESULT, l2_reuse_law="survival")
    out = tmp_path / "p.toml"
    text = cal.write_profile(dict(fitted, ticket_rate_runs=_rate_runs()), "h200-x1-calibrated", out, "p", PROV)
    hw = load_hardware(out)
    cfg = hw.config(128, 256)
    want = ticket_rate.mainloop_factor(ticket_rate.rate_cases(hw, pd.DataFrame(_rate_runs())))
    assert cfg.ticket_mainloop_factor == want and 1.0 < want < 1.04 and cfg.ticket_law == "survival"
    assert hw.l2_reuse_law == "survival"
    line = next(l for l in text.splitlines() if l.startswith("ticket_mainloop_factor"))
    assert "# measured:" in line and "under its ticket law 'survival' at factor 1" in line
    assert "reg51-chain-rate-h12288, reg51-chain-rate-h8192" in line and line.count(" / ") == 3
    said = []
    text = cal.write_profile(dict(fitted, ticket_rate_runs=_rate_runs(drop=0)), "h200-x1-calibrated", out, "p", PROV,
                             log=said.append)
    assert load_hardware(out).config(128, 256).ticket_mainloop_factor == 1.019  # the base's
    assert "ticket_mainloop_factor copied: ValueError: reg51-chain-rate-h8192 m=8192" in text and len(said) == 1
    text = cal.write_profile(dict(fitted, ticket_rate_note="reg51-chain-rate-h8192 m=8192 intragpu: failed (timeout)"),
                             "h200-x1-calibrated", out, "p", PROV)
    assert "# ticket rate not measured: reg51-chain-rate-h8192 m=8192 intragpu: failed (timeout)" in text


def test_a_measured_local_signal_replaces_the_bases_estimate(tmp_path):
    res = dict(FAKE_RESULT, **NO_FIT, local_signal_ns=912.0, ticket_runs=[
        {"m": 8192, "h": 8192, "layers": 2, "local_signal_ns": 900.0},
        {"m": 16384, "h": 8192, "layers": 4, "local_signal_ns": 924.0}])
    cal.write_profile(res, "h200-x2-calibrated", tmp_path / "p.toml", "p", PROV)
    assert load_hardware(tmp_path / "p.toml").local_signal_ns == 912.0
    line = next(l for l in (tmp_path / "p.toml").read_text().splitlines() if l.startswith("local_signal_ns"))
    assert "# measured:" in line and "8192x8192x2 900, 16384x8192x4 924 ns" in line
    cal.write_profile(dict(FAKE_RESULT, **NO_FIT), "h200-x2-calibrated", tmp_path / "q.toml", "q", PROV)  # not measured: the estimate
    assert load_hardware(tmp_path / "q.toml").local_signal_ns == 650.0


def test_the_clock_regime_and_activation_cost_go_into_the_profile_when_measured(tmp_path):
    fitted = dict(FAKE_RESULT, sm_remote_store_gbps=7.0, sm_remote_store_note="fit")  # skip the engine's fit
    text = cal.write_profile(dict(fitted, **CLOCK_RESULT), "h200-x2", tmp_path / "p.toml", "p", PROV)
    hw = load_hardware(tmp_path / "p.toml")
    assert (hw.clock_onset_ns, hw.clock_sustained_slowdown, hw.activation_epilogue_ns_per_element) == (5.6e7, 1.17, 0.11)
    assert (hw.clock_curve_ns, hw.clock_curve_factor) == ((0.0, 3e7, 1.5e8), (1.0, 1.08, 1.17))
    assert "30-80 ms" in text and "3.97 us/tile" in text and "ctahw.calibrate.clock_curve" in text
    cal.write_profile(fitted, "h200-x2", tmp_path / "q.toml", "q", PROV)
    assert load_hardware(tmp_path / "q.toml").clock_onset_ns == load_hardware("h200-x2").clock_onset_ns  # copied


def test_committed_calibrated_profile_loads_if_present():
    p = SPECS_DIR / "hardware" / "h200-x2-calibrated.toml"
    if not p.exists():
        pytest.skip("no calibrated profile committed yet (written by `ctahw calibrate` on the GPU machine)")
    hw = load_hardware(p)
    assert hw.measured and hw.gpus == 2 and hw.config(128, 256).source.startswith("measured")


def test_remote_store_fit_without_the_engine_keeps_the_copied_fields_and_says_why(tmp_path, monkeypatch):
    def no_engine(hw, ratio):
        raise ModuleNotFoundError("No module named 'simpy'")

    monkeypatch.setattr(cal, "fit_sm_remote_store", no_engine)
    said = []
    out = tmp_path / "p.toml"
    text = cal.write_profile(FAKE_RESULT, "h200-x2", out, "p", PROV, log=said.append)
    base = load_hardware("h200-x2")
    hw = load_hardware(out)
    assert hw.sm_remote_store_gbps == base.sm_remote_store_gbps
    assert "copied: fit failed (ModuleNotFoundError: No module named 'simpy')" in text
    assert len(said) == 1 and "simpy" in said[0]


def test_remote_store_fit_failing_otherwise_is_not_hidden(tmp_path, monkeypatch):
    def broken(hw, ratio):
        raise ZeroDivisionError("a bug in the fit")

    monkeypatch.setattr(cal, "fit_sm_remote_store", broken)
    out = tmp_path / "p.toml"
    with pytest.raises(ZeroDivisionError, match="a bug"):
        cal.write_profile(FAKE_RESULT, "h200-x2", out, "p", PROV, log=lambda s: None)
    assert not out.exists()


CLOCK_RUN = Path(__file__).resolve().parents[2] / "bench" / "results" / "hw" / "2026-12-01-clock-regime"


def test_the_profiles_clock_regime_and_activation_cost_are_the_committed_measurements():
    """h200-x2-calibrated's clock_onset_ns, clock_sustained_slowdown and activation_epilogue_ns_per_element are what
    ctahw.calibrate derives from bench/results/hw/2026-12-01-clock-regime (no hand-kept copy)."""
    import pandas as pd

    from ctasim.spec import load_hardware

    hw = load_hardware("h200-x2-calibrated")
    fields, rounds = cal.clock_regime(pd.read_csv(CLOCK_RUN / "trajectory.csv").to_dict("records"))
    assert hw.clock_onset_ns == pytest.approx(fields["clock_onset_ns"], rel=1e-6)
    assert hw.clock_sustained_slowdown == pytest.approx(fields["clock_sustained_slowdown"], rel=1e-5)
    assert sum(r["used"] for r in rounds) == 6 and all(r["sustained_slowdown"] > 1.1 for r in rounds)
    curve, _ = cal.clock_curve(pd.read_csv(CLOCK_RUN / "trajectory.csv").to_dict("records"))
    for name in ("h200-x2-calibrated", "h200-x2-mechanism"):
        h = load_hardware(name)
        assert h.clock_curve_ns == pytest.approx(curve["clock_curve_ns"])
        assert h.clock_curve_factor == pytest.approx(curve["clock_curve_factor"], abs=1e-4)
    act, per_m = cal.activation_epilogue_cost(pd.read_csv(CLOCK_RUN / "breakdown-rested.csv").to_dict("records"))
    assert hw.activation_epilogue_ns_per_element == pytest.approx(act, rel=1e-5)
    assert [r["m"] for r in per_m] == [4096, 16384]


NO_FIT = {"sm_remote_store_gbps": 7.0, "sm_remote_store_note": "fit"}
"""A result that skips write_profile's remote-store fit (the engine's bisection: seconds)."""

FOLD_RUN = Path(__file__).resolve().parents[2] / "bench" / "results" / "hw" / "2026-12-02-fold-1gpu" / "run7"


@pytest.mark.parametrize("profile", ["h200-x2-calibrated", "h200-x2-mechanism"])
def test_the_profiles_layernorm_fold_costs_are_the_committed_measurement(profile):
    """The fold's two epilogue costs in the 2-GPU profiles are what ctahw.calibrate derives from the committed fold
    probe (no hand-kept copy)."""
    import pandas as pd

    from ctasim.spec import load_hardware

    hw = load_hardware(profile)
    stats, fold, per_m = cal.norm_fold_epilogue_cost(pd.read_csv(FOLD_RUN / "fold.csv").to_dict("records"))
    assert hw.norm_stats_epilogue_ns_per_element == pytest.approx(stats, rel=1e-5)
    assert hw.norm_fold_epilogue_ns_per_element == pytest.approx(fold, rel=1e-5)
    assert [r["m"] for r in per_m] == [4096, 16384]


def test_norm_fold_epilogue_cost_takes_each_sides_difference_per_element_and_needs_both_pairs():
    rows = [dict(m=1024, variant="fold", l0_epilogue_ns=5000.0, l1_epilogue_ns=8000.0),
            dict(m=1024, variant="no_layernorm", l0_epilogue_ns=3000.0, l1_epilogue_ns=7000.0),
            dict(m=1024, variant="layernorm_kernel", l0_epilogue_ns="", l1_epilogue_ns=""),
            dict(m=2048, variant="fold", l0_epilogue_ns=6000.0, l1_epilogue_ns=9000.0)]  # no pair at 2048: unused
    stats, fold, per_m = cal.norm_fold_epilogue_cost(rows, tile_elems=1000)
    assert (stats, fold) == (pytest.approx(2.0), pytest.approx(1.0)) and [r["m"] for r in per_m] == [1024]
    with pytest.raises(ValueError, match="no M"):
        cal.norm_fold_epilogue_cost(rows[2:])


def _trajectory(onset_ms: float, slow: float, rounds=2, dur=1.0, n=100):
    rows = []
    for rd in range(rounds):
        t = 0.0
        for i in range(n):
            d = dur * (1.3 if i == 0 else slow if t >= onset_ms else 1.0)
            rows.append(dict(kernel="square-4096", round=rd, i=i, t_start_ms=t, dur_ms=d))
            t += d
    return rows


def test_clock_regime_finds_a_known_onset_and_slowdown_and_refuses_a_run_that_never_slows():
    fields, rounds = cal.clock_regime(_trajectory(40.0, 1.2))
    assert fields["clock_onset_ns"] == pytest.approx(40e6, abs=1.3e6)  # within one launch (+ launch 0's extra)
    assert fields["clock_sustained_slowdown"] == pytest.approx(1.2)
    with pytest.raises(ValueError, match="never reached the power cap"):
        cal.clock_regime(_trajectory(1e9, 1.2))
    with pytest.raises(ValueError, match="no round of"):
        cal.clock_regime(_trajectory(40.0, 1.2), kernels=("square-16384",))


def test_clock_curve_is_the_mean_over_rounds_of_the_launch_in_progress():
    """Two rounds stepping to 1.2 at 40 and at 80 ms: a knot holds the rounds' mean factor over its 5 ms interval
    (the engine applies it to a tile starting anywhere in it); launch 0 (1.3x, the clock waking) counts as rested; the
    horizon knot holds the mean beyond it; repeated factors are dropped; too short a run, a round without launch 0 at
    0 ms, and no round of the kernels are refused."""
    rows = [dict(r, round=0) for r in _trajectory(40.0, 1.2, rounds=1, n=200)]
    rows += [dict(r, round=1) for r in _trajectory(80.0, 1.2, rounds=1, n=200)]
    fields, knots = cal.clock_curve(rows, step_ms=5.0, horizon_ms=150.0)
    got = dict(zip((t / 1e6 for t in fields["clock_curve_ns"]), fields["clock_curve_factor"]))
    # launch 0 takes 1.3 ms, so the launches run 1.3 ms out of step with the knots: a round's first slow launch starts
    # at 40.3 ms, so the interval [40, 45) is slow for 4.7 of its 5 ms in that round and not at all in the other
    assert got == {0.0: 1.0, 40.0: pytest.approx(1 + 0.2 * 0.94 / 2), 45.0: pytest.approx(1.1),
                   80.0: pytest.approx(1.1 + 0.2 * 0.94 / 2), 85.0: pytest.approx(1.2)}  # 150: 1.2 again, dropped
    assert knots[0]["rounds"] == 2
    with pytest.raises(ValueError, match="horizon"):
        cal.clock_curve(_trajectory(40.0, 1.2, n=100), horizon_ms=150.0)
    with pytest.raises(ValueError, match="no round of"):
        cal.clock_curve(rows, kernels=("square-16384",))
    with pytest.raises(ValueError, match="no launch 0"):
        cal.clock_curve([r for r in rows if r["i"] > 0])


def test_clock_fields_go_together_and_a_missing_curve_never_borrows_another_machines(tmp_path):
    """A step measured without its curve writes an empty curve (the base's curve would override the measured step) and
    says why in the header; a curve without its step is dropped, so that the base's step and curve are copied
    together."""
    step_only = {k: v for k, v in CLOCK_RESULT.items() if not k.startswith("clock_curve")}
    res = dict(FAKE_RESULT, **NO_FIT, **step_only, clock_curve_note="the shortest round ends at 140.0 ms")
    res = cal.clock_fields_together(res)
    text = cal.write_profile(res, "h200-x2-calibrated", tmp_path / "p.toml", "p", PROV)
    hw = load_hardware(tmp_path / "p.toml")
    assert hw.clock_curve_ns == () and hw.clock_onset_ns == 5.6e7
    assert "clock curve not measured: the shortest round ends at 140.0 ms" in text
    curve_only = {k: v for k, v in CLOCK_RESULT.items() if k not in ("clock_onset_ns", "clock_sustained_slowdown")}
    res = dict(FAKE_RESULT, **NO_FIT, **curve_only)
    res = cal.clock_fields_together(res)
    cal.write_profile(res, "h200-x2-calibrated", tmp_path / "q.toml", "q", PROV)
    base, q = load_hardware("h200-x2-calibrated"), load_hardware(tmp_path / "q.toml")
    assert q.clock_curve_factor == pytest.approx(base.clock_curve_factor, abs=1e-4)
    assert q.clock_onset_ns == pytest.approx(base.clock_onset_ns)


def test_the_1gpu_profiles_clock_curve_is_the_committed_calibrations():
    """h200-x1-calibrated (and its drift-form twins) hold the clock curve that ctahw.calibrate.clock_curve derives
    from the trajectory in bench/results/hw/2026-12-01-calibrate-1gpu/calibration.json (no hand-kept copy)."""
    import json

    from ctasim.spec import load_hardware

    path = Path(__file__).resolve().parents[2] / "bench/results/hw/2026-12-01-calibrate-1gpu/calibration.json"
    curve, _ = cal.clock_curve(json.loads(path.read_text())["measured"]["clock_trajectory"])
    for name in ("h200-x1-calibrated", "h200-x1-calibrated-carried", "h200-x1-calibrated-wave"):
        hw = load_hardware(name)
        assert hw.clock_curve_ns == pytest.approx(curve["clock_curve_ns"])
        assert hw.clock_curve_factor == pytest.approx(curve["clock_curve_factor"], abs=1e-4)


# ---------------------------------------------------------------------------------------- the memory hierarchy

PROBE = Path(__file__).resolve().parents[2] / "bench" / "results" / "hw" / "2026-12-01-gemm-shapes" / "gemm_shapes.csv"
KERNEL = ("cutlass=4.2.0 kernel=sm90_tma_ws_cooperative_persistent dtype=bf16 layout=TN tile=128x256x64 cluster=2x1x1 "
          "stages=4 threads=384 smem_bytes=214016")


def committed_measurement(**kw) -> dict:
    """A measure() result holding the committed tile-order probe and the day's calibration figures."""
    import pandas as pd

    res = dict(FAKE_RESULT, sm_count=132, l2_bytes=62914560, hbm_gbps=4257.36634, cutlass_kernel=KERNEL,
               tile_fit_128x256=dict(FAKE_RESULT["tile_fit_128x256"], tile_fixed_ns=1222.46),
               tile_order_runs=pd.read_csv(PROBE).to_dict("records"), cta_drift=0.0078299)
    return dict(res, **kw)


def test_the_kernels_cluster_comes_from_its_description():
    assert cal.kernel_cluster(KERNEL) == (2, 1)
    with pytest.raises(ValueError, match="no cluster=MxNxK"):
        cal.kernel_cluster("cutlass=4.2.0 tile=128x256x64")


def test_the_memory_hierarchy_of_the_committed_probe_is_h200_x1_calibrated():
    """From the committed tile-order probe and the day's calibration figures, memory_hierarchy gives the profile's
    constants: the fit runs at the profile's rounded hbm_gbps, tile_fixed_ns and cta_drift."""
    x1 = load_hardware("h200-x1-calibrated")
    got = cal.memory_hierarchy(committed_measurement())
    cfg = x1.config(128, 256)
    assert (got["l2_sm_tflops"], got["l2_hbm_exposed"], got["cta_drift"], got["drift_form"], got["cluster_m"]) == (
        cfg.l2_sm_tflops, x1.l2_hbm_exposed, cfg.cta_drift, cfg.drift_form, cfg.cluster_m)
    wave = cal.memory_hierarchy(committed_measurement(drift_form="wave"))  # registered plan 8's form, its constants
    assert (wave["l2_sm_tflops"], wave["l2_hbm_exposed"], wave["drift_form"]) == (6.64, 0.19, "wave")
    assert got["l2_fit_runs"] == 72 and got["l2_fit_error"] < 0.01


def test_the_l2_constants_are_fitted_under_the_base_profiles_reuse_law():
    """Under the survival law the fit reads the curve measured in the calibration, else the base's. On this probe
    (N = K = 8192) the laws give the same constants, so the fit's error tells which traffic it priced."""
    import pandas as pd

    from ctasim.calibration import fit_l2_constants

    def fit(law, curve):
        f = fit_l2_constants(pd.DataFrame(committed_measurement()["tile_order_runs"]), l2_bytes=62914560.0,
                             hbm_gbps=4257.3663, tile_fixed_ns=1222.5, drift=0.0078, drift_form="interleaved",
                             reuse_law=law, survival=curve, where="tile-order probe")
        return f.rate, f.exposed, f.mean_abs_error

    def got(res):
        m = cal.memory_hierarchy(res)
        return m["l2_sm_tflops"], m["l2_hbm_exposed"], m["l2_fit_error"]

    early = ((0.0, 0.05, 0.1), (1.0, 1.0, 0.0))  # every line gone past a tenth of the L2
    x1 = load_hardware("h200-x1-calibrated")
    h200 = (x1.l2_survival_taken, x1.l2_survival_share)
    base = committed_measurement(l2_reuse_law="survival", l2_survival_base=[list(early[0]), list(early[1])])
    assert got(committed_measurement()) == fit("lru", ((), ()))
    assert got(base) == fit("survival", early) != fit("lru", ((), ()))
    measured = dict(base, l2_survival_taken=h200[0], l2_survival_share=h200[1])  # the curve measured here wins
    assert got(measured) == fit("survival", h200) != fit("survival", early)
    assert cal.fit_curve(committed_measurement()) == ((), ())


@pytest.mark.parametrize("change,words", [
    (dict(l2_reuse_law="fifo"), "l2_reuse_law 'fifo': not one of lru, survival"),
    (dict(l2_reuse_law="survival"), "the survival reuse law needs an L2 survival curve: none measured and none"),
    (dict(cta_drift=None), "no cta_drift"),
    (dict(l2_bytes=0), "an L2 of 0 bytes"),
    (dict(tile_order_runs=[]), "tile-order probe: no column"),
    (dict(hbm_gbps=40000.0), "grid's edge (l2_hbm_exposed 0.5 in 0-0.5): not a fit"),
])
def test_a_memory_hierarchy_that_cannot_be_fitted_says_why(change, words):
    with pytest.raises(ValueError) as e:
        cal.memory_hierarchy(committed_measurement(**change))
    assert words in str(e.value)


def test_the_memory_hierarchy_goes_into_the_profile_with_a_source_each(tmp_path):
    from ctasim.costs import memory_model

    fitted = dict(FAKE_RESULT, sm_remote_store_gbps=7.0, sm_remote_store_note="fit")  # skip the engine's fit
    text = cal.write_profile(dict(fitted, **MEMORY_RESULT), "h200-x2", tmp_path / "p.toml", "p", PROV)
    hw, x1 = load_hardware(tmp_path / "p.toml"), load_hardware("h200-x1-calibrated")
    cfg, ref = hw.config(128, 256), x1.config(128, 256)
    assert (hw.l2_bytes, hw.l2_hbm_exposed) == (x1.l2_bytes, x1.l2_hbm_exposed)
    assert (cfg.l2_sm_tflops, cfg.cta_drift, cfg.drift_form, cfg.cluster_m, cfg.tile_cv) == (
        ref.l2_sm_tflops, ref.cta_drift, ref.drift_form, ref.cluster_m, ref.tile_cv)
    assert memory_model(hw, cfg) and not memory_model(hw, hw.config(128, 128))
    block = text.split("[[hardware.kernel_config]]")  # [hardware], 128x256, 128x128
    lines = {l.split("=")[0].strip(): l for part in block[:2] for l in part.splitlines()
             if "=" in l and not l.startswith("#")}
    assert "# measured: cudaDeviceProp.l2CacheSize" in lines["l2_bytes"]
    assert "# fitted: ctasim.calibration.fit_l2_constants" in lines["l2_hbm_exposed"]
    assert "M = 2048-32768, 2 tile orders: 72 runs, medians of 3 rested runs), mean |error| 0.49%" in lines["l2_hbm_exposed"]
    assert "# fitted: ctasim.calibration.fit_l2_constants" in lines["l2_sm_tflops"]
    assert "# measured: median over 2 per-tile traces" in lines["cta_drift"] and "0.0061-0.0090" in lines["cta_drift"]
    assert "# measured: the kernel's cluster shape" in lines["cluster_m"]
    assert "# 0: the L2 model's constants were fitted without" in lines["tile_cv"]
    assert "# chosen: the form the L2 constants were fitted with" in lines["drift_form"]
    assert cfg.drift_form == "interleaved"
    # a measurement fitted with plan 8's form writes that form, not the default
    wave = cal.write_profile(dict(fitted, **dict(MEMORY_RESULT, drift_form="wave")), "h200-x2", tmp_path / "w.toml",
                             "w", PROV)
    assert load_hardware(tmp_path / "w.toml").config(128, 256).drift_form == "wave" and 'drift_form = "wave"' in wave
    assert ("Memory hierarchy: l2_hbm_exposed and the 128x256 l2_sm_tflops fitted under the 'lru' reuse law (mean "
            "|error| 0.49%") in text


def test_a_fit_under_another_law_than_the_bases_is_not_written(tmp_path):
    fitted = dict(FAKE_RESULT, sm_remote_store_gbps=7.0, sm_remote_store_note="fit")
    with pytest.raises(ValueError) as e:
        cal.write_profile(dict(fitted, **MEMORY_RESULT, l2_reuse_law="survival"), "h200-x2", tmp_path / "p.toml", "p",
                          PROV)
    assert "fitted under l2_reuse_law 'survival', but h200-x2" in str(e.value) and "has 'lru'" in str(e.value)
    assert not (tmp_path / "p.toml").exists()
    # against a base of the same law it is written, the law copied and named in the header
    text = cal.write_profile(dict(fitted, **MEMORY_RESULT, l2_reuse_law="survival"), "h100-x1-datasheet",
                             tmp_path / "h.toml", "h", PROV)
    assert load_hardware(tmp_path / "h.toml").l2_reuse_law == "survival" and "'survival' reuse law" in text
    assert load_hardware(tmp_path / "h.toml").calibrated_from == "h100-x1-datasheet"  # the base, for advise's lineage
    # the exposed share fitted at the profile's own HBM rate is charged at it, not at the base's (plan 76's) rate
    assert load_hardware("h100-x1-datasheet").l2_hbm_exposed_gbps > 0
    assert load_hardware(tmp_path / "h.toml").l2_hbm_exposed_gbps == 0.0
    assert "l2_hbm_exposed_gbps = 0.0  # set: 0 = hbm_gbps" in (tmp_path / "h.toml").read_text()
    # without the memory hierarchy the base's exposed share and its rate stay copied together
    copied = cal.write_profile(dict(fitted, l2_reuse_law="survival"), "h100-x1-datasheet", tmp_path / "c.toml", "c",
                               PROV)
    assert "l2_hbm_exposed_gbps = 4257.3663  # copied from h100-x1-datasheet" in copied


def test_a_fit_without_its_law_named_is_the_lrus_and_refused_against_a_survival_base(tmp_path):
    """A measurement that names no l2_reuse_law (calibration.json written before 2026-12-05) was fitted under the
    LRU: written against h200-x2 (the LRU), refused against h100-x1-datasheet (the survival law)."""
    fitted = dict(FAKE_RESULT, sm_remote_store_gbps=7.0, sm_remote_store_note="fit", **MEMORY_RESULT)
    assert "l2_reuse_law" not in fitted
    cal.write_profile(fitted, "h200-x2", tmp_path / "p.toml", "p", PROV)
    with pytest.raises(ValueError, match="fitted under l2_reuse_law 'lru', but h100-x1-datasheet"):
        cal.write_profile(fitted, "h100-x1-datasheet", tmp_path / "h.toml", "h", PROV)


def test_without_the_memory_hierarchy_its_fields_stay_copied_and_the_header_says_why(tmp_path):
    fitted = dict(FAKE_RESULT, sm_remote_store_gbps=7.0, sm_remote_store_note="fit",
                  memory_note="the L2 fit lands on its grid's edge")
    text = cal.write_profile(fitted, "h200-x2", tmp_path / "p.toml", "p", PROV)
    hw, base = load_hardware(tmp_path / "p.toml"), load_hardware("h200-x2")
    assert hw.l2_bytes == base.l2_bytes == 0.0 and hw.config(128, 256).l2_sm_tflops == 0.0
    assert "# Memory hierarchy copied from h200-x2: the L2 fit lands on its grid's edge" in text


def test_the_remote_store_fit_runs_without_the_memory_hierarchy(tmp_path, monkeypatch):
    seen = []

    def fit(hw, ratio):
        seen.append(hw.l2_bytes)
        return 7.0, "fit"

    monkeypatch.setattr(cal, "fit_sm_remote_store", fit)
    cal.write_profile(dict(FAKE_RESULT, **MEMORY_RESULT), "h200-x2", tmp_path / "p.toml", "p", PROV)
    assert seen == [0.0] and load_hardware(tmp_path / "p.toml").l2_bytes == 62914560.0


def test_the_ticket_spread_goes_into_the_profile_with_its_traces(tmp_path):
    fitted = dict(FAKE_RESULT, sm_remote_store_gbps=7.0, sm_remote_store_note="fit")
    runs = [{"m": 16384, "layers": 2, "spread_per_window": 0.017}, {"m": 8192, "layers": 2, "spread_per_window": 0.021},
            {"m": 4096, "layers": 2, "spread_per_window": None}]
    text = cal.write_profile(dict(fitted, **MEMORY_RESULT, ticket_spread=0.01904, ticket_runs=runs), "h200-x2",
                             tmp_path / "p.toml", "p", PROV)
    cfg = load_hardware(tmp_path / "p.toml").config(128, 256)
    assert cfg.ticket_spread == 0.019
    line = next(l for l in text.splitlines() if l.startswith("ticket_spread") and "0.019" in l)
    assert "median over 2 per-tile traces of the chain kernel's tickets design (0.0170-0.0210" in line
    # memory_hierarchy passes the measured spread on, rounded as the profile holds it; without it, nothing
    got = cal.memory_hierarchy(committed_measurement(ticket_spread=0.018851))
    assert got["ticket_spread"] == 0.0189
    assert "ticket_spread" not in cal.memory_hierarchy(committed_measurement())
    # an older measurement without ticket traces keeps the base profile's value
    cal.write_profile(dict(fitted, **MEMORY_RESULT), "h200-x2", tmp_path / "q.toml", "q", PROV)
    assert load_hardware(tmp_path / "q.toml").config(128, 256).ticket_spread == 0.0


def test_pass_bytes_count_what_ctasim_prices():
    from ctasim import costs
    from ctasim.spec import Layer

    hw = load_hardware("h200-x2")
    # swiglu: reads the GEMM's n columns, writes n / 2; residual: reads y and the residual, writes one
    for op, n, out_n in (("swiglu", 28672, 14336), ("residual", 8192, 8192), ("gelu", 28672, 28672)):
        layer = Layer(m=4096, n=n, k=1024, tile_m=128, tile_n=256, epilogue=(op,), epilogue_fused=False)
        assert layer.out_n == out_n
        assert cal.pass_bytes(op, 4096, n) / hw.hbm_gbps == pytest.approx(costs.epilogue_pass_ns(layer, 2, hw))
    assert cal.pass_bytes("rmsnorm", 4096, 8192) / hw.hbm_gbps == pytest.approx(costs.rowwise_ns(4096, 8192, 2, hw))
    with pytest.raises(ValueError, match="unknown memory pass"):
        cal.pass_bytes("softmax", 1, 2)


def test_pass_rates_are_each_kinds_median_rate():
    rows = [{"kind": "epilogue", "op": "swiglu", "rows": 1000, "n": 2000, "median_ms": 1.0},   # 6e6 B -> 6 GB/s
            {"kind": "epilogue", "op": "gelu", "rows": 1000, "n": 2000, "median_ms": 4.0},     # 8e6 B -> 2 GB/s
            {"kind": "epilogue", "op": "residual", "rows": 1000, "n": 1000, "median_ms": 1.2},  # 6e6 B -> 5 GB/s
            {"kind": "rowwise", "op": "rmsnorm", "rows": 1000, "n": 1000, "median_ms": 0.5},   # 4e6 B -> 8 GB/s
            {"kind": "rowwise", "op": "layernorm", "rows": 1000, "n": 1000, "median_ms": 1.0},  # 4e6 B -> 4 GB/s
            {"kind": "rowwise", "op": "rmsnorm", "rows": 1000, "n": 1125, "median_ms": 1.0}]    # 4.5e6 B -> 4.5
    fields, per = cal.pass_rates(rows)
    # the median, not the mean (13 / 3 and 5.5): one odd pass does not drag the field
    assert fields == {"epilogue_pass_gbps": pytest.approx(5.0), "rowwise_gbps": pytest.approx(4.5)}
    assert [round(r["gbps"], 6) for r in per] == [6.0, 2.0, 5.0, 8.0, 4.0, 4.5]
    with pytest.raises(ValueError, match="no rowwise item"):
        cal.pass_rates(rows[:3])
    with pytest.raises(ValueError, match="not positive"):
        cal.pass_rates([dict(rows[0], median_ms=0.0)] + rows[1:])


def test_a_calibrated_profile_prices_the_passes_at_their_measured_rates(tmp_path):
    from ctasim import costs

    out = tmp_path / "p.toml"
    cal.write_profile(dict(FAKE_RESULT, **NO_FIT, **CLOCK_RESULT), "h200-x2", out, "p", PROV)
    hw = load_hardware(out)
    assert (hw.epilogue_pass_gbps, hw.rowwise_gbps) == (3900.0, 4150.0)
    assert costs.rowwise_ns(4096, 8192, 2, hw) == pytest.approx(2 * 4096 * 8192 * 2 / 4150.0)
    line = next(l for l in out.read_text().splitlines() if l.startswith("rowwise_gbps"))
    assert "# measured:" in line and "rmsnorm 16384x8192 4150" in line
    cal.write_profile(dict(FAKE_RESULT, **NO_FIT), "h200-x2", out, "p", PROV)  # not measured: the base's (none)
    hw = load_hardware(out)
    assert (hw.epilogue_pass_gbps, hw.rowwise_gbps) == (0.0, 0.0)
    assert costs.rowwise_ns(4096, 8192, 2, hw) == pytest.approx(2 * 4096 * 8192 * 2 / hw.hbm_gbps)


def test_the_relu_input_factor_is_the_median_over_the_committed_probes_ratios():
    """The committed ReLU-input probe (bench/results/hw/2026-12-03-padded-orders-relu-input, four shapes x two M): each
    ratio of the plain GEMM on a ReLU'd A over random A, and the profile's relu_input_tile_factor their median."""
    import csv
    import statistics

    folder = Path(__file__).resolve().parents[2] / "bench/results/hw/2026-12-03-padded-orders-relu-input"
    per_shape = []
    for path in sorted(folder.glob("act-*.csv")):
        f, per = cal.relu_input_factor(list(csv.DictReader(open(path))))
        assert len(per) == 2 and 0.93 < f < 0.95
        per_shape += [r["factor"] for r in per]
    assert len(per_shape) == 8
    assert load_hardware("h200-x1-calibrated").relu_input_tile_factor == round(statistics.median(per_shape), 3)
    rows = list(csv.DictReader(open(folder / "act-mlp-down.csv")))
    swapped = [dict(r, item={"gemm1_plain": "gemm1_relu_input", "gemm1_relu_input": "gemm1_plain"}[r["item"]])
               for r in rows]
    assert cal.relu_input_factor(swapped)[0] > 1.05  # the ratio's direction is read, not assumed
    with pytest.raises(ValueError, match="relu_input"):
        cal.relu_input_factor([r for r in rows if r["item"] == "gemm1_plain"])


def test_the_activation_factors_are_each_ops_cost_over_the_gelus():
    """The committed probe (bench/results/hw/2026-12-02-activation-costs): silu 1.19 times the gelu's cost, relu
    none (its -0.0001 ns clipped at 0); the profile carries them."""
    import csv

    rows = list(csv.DictReader(open(Path(__file__).resolve().parents[2] / "bench/results/hw/2026-12-02-activation-costs/activation.csv")))
    f = cal.activation_factors(rows)
    assert f["silu_epilogue_factor"] == pytest.approx(0.1490 / 0.1250, rel=2e-3) and f["relu_epilogue_factor"] == 0.0
    hw = load_hardware("h200-x1-calibrated")
    assert (hw.silu_epilogue_factor, hw.relu_epilogue_factor) == (round(f["silu_epilogue_factor"], 4), 0.0)
    slow = [dict(r, per_op_ms=float(r["per_op_ms"]) * (1.01 if r["item"] == "gemm1_relu" else 1.0)) for r in rows]
    assert cal.activation_factors(slow)["relu_epilogue_factor"] > 0.1  # a relu that costs is measured, not clipped
    flat = [dict(r, per_op_ms=r["per_op_ms"] if r["item"] != "gemm1_gelu" else
                 next(q["per_op_ms"] for q in rows if q["m"] == r["m"] and q["item"] == "gemm1_plain")) for r in rows]
    with pytest.raises(ValueError, match="gelu's cost"):
        cal.activation_factors(flat)


def test_the_tickets_microbenchmark_keeps_its_rows_or_says_which_case_failed(tmp_path, monkeypatch):
    """ctahw.calibrate.ticket_rate with ctahw run's executor stood in for by plan 51's committed rows: every row kept
    (the results columns, plain floats) and ticket-rate.csv written; a failed row leaves a note naming its case."""
    import pandas as pd

    from ctahw import experiment
    from ctasim import results

    rows = pd.DataFrame(_rate_runs())
    monkeypatch.setattr(experiment, "run", lambda exp, cfg, log: rows[rows["experiment"] == exp.name])
    got = cal.ticket_rate(log=lambda s: None, quick=True, probe_out=tmp_path)
    assert len(got["ticket_rate_runs"]) == 8 and list(got["ticket_rate_runs"][0]) == list(results.COLUMNS)
    assert type(got["ticket_rate_runs"][0]["makespan_ms"]) is float
    assert len(pd.read_csv(tmp_path / "ticket-rate.csv")) == 8
    bad = rows.copy()
    bad.loc[3, ["status", "reason"]] = ["failed", "timeout"]
    monkeypatch.setattr(experiment, "run", lambda exp, cfg, log: bad[bad["experiment"] == exp.name])
    got = cal.ticket_rate(log=lambda s: None, quick=True)
    assert got == {"ticket_rate_note": f"{bad.loc[3, 'experiment']} {bad.loc[3, 'case']} {bad.loc[3, 'strategy']}: "
                                       "failed (timeout)"}


def test_measure_memory_takes_the_gap_spread_from_its_pairs_traces(tmp_path, monkeypatch):
    """ctahw.calibrate.measure_memory with the device probes standing in (a committed run's order and chain-kernel
    traces, cut to the columns the probes keep; the L2 probe failing): the ticket spread from the groups of 8, the gap
    spread from the pairs at that spread, both into the result and the probe files -- the path a calibration takes on
    a GPU, which no other CPU test runs."""
    import pandas as pd

    from ctahw import l2probe
    from ctahw import tile_orders as T
    from ctasim.calibration import gap_cv, ticket_spread
    from ctasim.trace import load_traces

    root = Path(__file__).resolve().parents[2] / "bench/results/hw"
    orders = {p.name[6:-7]: pd.read_csv(p) for p in sorted((root / "2026-12-02-order-traces").glob("tiles-*.csv.gz"))}
    whole = {}
    bundle = root / "2026-12-04-registered52-1gpu/reg52-chain-faster-h7680/ctapipe_traces.trace.npz"
    for tr in load_traces(bundle).values():
        whole.setdefault(tr.meta["strategy"], tr.tiles)
    seen = []

    def tickets(shapes=T.TICKET_SHAPES, chain_group=0, **_):
        seen.append((tuple(shapes), chain_group))
        tiles = T.trace_columns(whole["intragpu-g2" if chain_group == T.GAP_GROUP else "intragpu"])
        return ([{"m": m, "layers": l, "h": h, "chain_group": chain_group, "grid": 132} for m, l, h in shapes],
                {T.ticket_trace_name(m, l, h, chain_group): tiles for m, l, h in shapes})

    def no_curve(**_):
        raise ValueError("hot and cold latencies overlap")

    monkeypatch.setattr(T, "time_orders", lambda *a, **k: [{"m": 2048, "order": "along_m/swizzle8"}])
    monkeypatch.setattr(T, "trace_orders", lambda **k: ([{"case": n} for n in orders], orders))
    monkeypatch.setattr(T, "trace_tickets", tickets)
    monkeypatch.setattr(l2probe, "measure", no_curve)
    from ctahw import l2rate

    tiles = pd.read_csv(root.parent / "hw-h100/2026-12-07-l2-tile-1gpu/l2rate/l2-rate.csv")
    tiles = tiles[tiles.case.str.startswith("tile-n")].to_dict("records")  # the committed run's launches
    reps = []
    monkeypatch.setattr(l2rate, "measure_tiles", lambda reps_=None, **k: reps.append(k.get("reps")) or tiles)
    res = cal.measure_memory(log=lambda s: None, quick=True, probe_out=tmp_path)
    assert reps == [3] and res["l2_tile_rates"][12] == pytest.approx(12773.8, abs=0.1)
    assert res["l2_tile_rates"][14] == pytest.approx(8818.2, abs=0.1) and len(res["l2_tile_rates"]) == 12
    assert len(pd.read_csv(tmp_path / "l2-tile.csv")) == len(tiles)
    assert seen == [(T.TICKET_SHAPES[-2:], 0), (T.GAP_SHAPES[-1:], T.GAP_GROUP)]
    spread, _ = ticket_spread([whole["intragpu"]] * 2, 132)
    want, _ = gap_cv([whole["intragpu-g2"]], spread, 132)
    assert res["ticket_spread"] == pytest.approx(spread) and res["ticket_gap_cv"] == pytest.approx(want)
    assert [r["gap_cv"] for r in res["gap_runs"]] == pytest.approx([want]) and res["gap_runs"][0]["chain_group"] == 2
    assert pd.read_csv(tmp_path / "ticket-gaps.csv")["gap_cv"].tolist() == pytest.approx([want])
    assert (tmp_path / "tiles-16384x8192x2-tickets-g2.csv.gz").is_file() and "l2_survival_note" in res


def test_a_failing_l2_to_sm_probe_leaves_a_note_and_the_profile_says_it(monkeypatch):
    """ctahw.calibrate.l2_tile_rates: a probe error (a mismatched stage, a timeout) is one note, nothing else; the
    rates measured go into the profile's header as measured and not written into a field."""
    from ctahw import l2rate
    from ctahw.probes import ProbeError

    def broken(**_):
        raise ProbeError("l2 tile probe, tile-n14 on GPU 0: 3 CTAs' last stages do not sum to their source boxes")

    monkeypatch.setattr(l2rate, "measure_tiles", broken)
    note = cal.l2_tile_rates(quick=True)
    assert note == {"l2_tile_note": "l2 tile probe, tile-n14 on GPU 0: 3 CTAs' last stages do not sum to their "
                                    "source boxes"}


def test_the_l2_to_sm_rates_go_into_the_header_and_no_field(tmp_path):
    fitted = dict(FAKE_RESULT, sm_remote_store_gbps=7.0, sm_remote_store_note="fit")
    text = cal.write_profile(dict(fitted, l2_tile_rates={12: 12773.8, 8: 12776.2, 14: 8818.2}), "h200-x2",
                             tmp_path / "p.toml", "p", PROV)
    flat = " ".join(line.lstrip("# ") for line in text.splitlines())
    assert ("Measured, not written into a field: the L2-to-SM rate of the GEMM's own tensor copies by tiles a row of "
            "a row-order first wave (ctahw.l2rate.measure_tiles; GB/s) 8: 12776, 12: 12774, 14: 8818") in flat
    assert load_hardware(tmp_path / "p.toml").l2_sm_read_gbps == 0.0
    text = cal.write_profile(dict(fitted, l2_tile_note="a wait timed out"), "h200-x2", tmp_path / "q.toml", "q", PROV)
    assert "# l2 tile not measured: a wait timed out" in text
