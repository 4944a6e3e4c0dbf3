"""ctasim.calibration: the L2 fit and the drift estimate, against the committed measurements and synthetic oracles."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from ctasim import calibration as C
from ctasim.spec import load_hardware

ROOT = Path(__file__).resolve().parent.parent
PROBE = ROOT / "bench/results/hw/2026-12-01-gemm-shapes/gemm_shapes.csv"
TRACES = ROOT / "bench/results/hw/2026-12-02-order-traces"
X1 = load_hardware("h200-x1-calibrated")
CFG = X1.config(128, 256)


@pytest.fixture(scope="module")
def probe() -> pd.DataFrame:
    return pd.read_csv(PROBE)


@pytest.fixture(scope="module")
def traces() -> dict[str, pd.DataFrame]:
    return {p.name: pd.read_csv(p) for p in sorted(TRACES.glob("tiles-*.csv.gz"))}


def profile_fit(table: pd.DataFrame, drift: float = CFG.cta_drift, drift_form: str = CFG.drift_form) -> C.GridFit:
    """The fit at h200-x1-calibrated's measured inputs."""
    return C.fit_l2_constants(table, l2_bytes=X1.l2_bytes, hbm_gbps=X1.hbm_gbps, tile_fixed_ns=CFG.tile_fixed_ns,
                              drift=drift, cluster_m=CFG.cluster_m, sm_count=X1.sm_count, drift_form=drift_form)


def test_the_committed_probe_fits_to_the_profiles_l2_constants(probe):
    fit = profile_fit(probe)
    assert CFG.drift_form == "interleaved"
    assert (fit.rate, fit.exposed) == (CFG.l2_sm_tflops, X1.l2_hbm_exposed) == (6.72, 0.19)
    assert fit.runs == 72 and fit.edges == () and fit.l2_efficiency == 1.0
    assert fit.mean_abs_error == pytest.approx(0.0049, abs=1e-4)  # bench/l2_drift_model.py's table: 0.49%
    carried = profile_fit(probe, drift_form="carried")  # registered plan 20's form, h200-x1-calibrated-carried's fit
    assert (carried.rate, carried.exposed) == (6.73, 0.2)
    assert carried.mean_abs_error == pytest.approx(0.0069, abs=1e-4)
    wave = profile_fit(probe, drift_form="wave")  # registered plan 8's form fits its own constants
    assert (wave.rate, wave.exposed) == (6.64, 0.19)
    assert wave.mean_abs_error == pytest.approx(0.0058, abs=1e-4)
    lockstep = profile_fit(probe, drift=0.0)  # the drift moves the fit's error, not (here) its constants
    assert lockstep.mean_abs_error > fit.mean_abs_error + 0.001


def test_times_attributed_to_the_wrong_tile_orders_fit_other_constants(probe):
    """Shuffle the order column within each calibration shape: the same times, the wrong orders."""
    rng = np.random.default_rng(7)
    bad = probe.copy()
    for _, idx in bad[(bad.backend == "cutlass") & (bad.n == 8192) & (bad.k == 8192)].groupby("m").groups.items():
        bad.loc[idx, "order"] = rng.permutation(bad.loc[idx, "order"].to_numpy())
    fit, right = profile_fit(bad), profile_fit(probe)
    assert (fit.rate, fit.exposed) != (right.rate, right.exposed)
    assert fit.mean_abs_error > 2 * right.mean_abs_error


def test_the_grid_fit_recovers_known_constants_and_scores_as_the_model_predicts(probe):
    runs = C.tile_order_table(probe)
    cal = runs[runs.cal].reset_index(drop=True)
    tr = C.run_traffic(cal, X1.l2_bytes, drift=0.005)
    truth = C.predict_ns(cal.k.values, tr, 6.53, X1.hbm_gbps, 0.125, 1000.0)
    fit = C.grid_fit(cal.k.values, truth, {1.0: tr}, 1000.0, hbm_gbps=[X1.hbm_gbps])
    assert (fit.rate, fit.exposed, fit.mean_abs_error) == (6.53, 0.125, pytest.approx(0.0, abs=1e-12))
    # the vectorised grid scores a point as ctasim.l2.gemm_ns times each run
    measured = truth * (1 + 0.01 * np.sin(np.arange(len(truth))))
    fit = C.grid_fit(cal.k.values, measured, {1.0: tr}, 1000.0, hbm_gbps=[X1.hbm_gbps])
    at = C.predict_ns(cal.k.values, tr, fit.rate, X1.hbm_gbps, fit.exposed, 1000.0)
    assert fit.mean_abs_error == pytest.approx(np.abs(at / measured - 1).mean(), rel=1e-12)
    # a constant outside its grid lands on the edge, and the fit says so
    edge = C.grid_fit(cal.k.values, truth, {1.0: tr}, 1000.0, hbm_gbps=[X1.hbm_gbps], rate=[6.3, 6.4, 6.5])
    assert edge.rate == 6.5 and edge.edges == ("rate",)


def test_the_committed_traces_drift_as_the_profile_and_their_table_say(traces):
    assert len(traces) == 9
    assert C.cta_drift(traces.values()) == pytest.approx(CFG.cta_drift, abs=5e-5)
    table = pd.read_csv(TRACES / "drift.csv").set_index("case")
    for name, tiles in traces.items():
        d = C.trace_drift(tiles, name)
        row = table.loc[name.removeprefix("tiles-").removesuffix(".csv.gz")]
        assert d["rounds"] == row.rounds
        assert round(d["start_sd_per_round"], 4) == row.start_sd_per_round
        assert round(d["mainloop_start_ns"] / 1e3, 4) == row.mainloop_start_us


def synthetic_trace(speeds: np.ndarray, rounds: int, tile_ns: float = 80_000.0) -> pd.DataFrame:
    """CTA c runs ``rounds`` tiles back to back, each ``tile_ns * speeds[c]`` long, all starting at 0."""
    c, r = np.meshgrid(np.arange(len(speeds)), np.arange(rounds), indexing="ij")
    start = r * tile_ns * speeds[c]
    return pd.DataFrame({"cta": c.ravel(), "t_acquire": start.ravel(),
                         "t_mainloop_end": (start + tile_ns * speeds[c]).ravel()})


def test_the_drift_is_the_spread_of_the_ctas_speeds_and_zero_in_lockstep():
    # start of round r: r * T * s_c, so the within-round sd grows by T * sd(s) a round: sd(s) tile times of T
    speeds = 1.0 + np.linspace(-0.02, 0.02, 132)  # median 1: the start mainloop is T
    d = C.trace_drift(synthetic_trace(speeds, 20))
    assert d["start_sd_per_round"] == pytest.approx(np.std(speeds, ddof=1), rel=1e-9)
    assert d["rounds"] == 20 and d["mainloop_start_ns"] == pytest.approx(80_000.0)
    assert C.trace_drift(synthetic_trace(np.ones(132), 20))["start_sd_per_round"] == pytest.approx(0.0, abs=1e-12)
    assert C.cta_drift([synthetic_trace(speeds * f, 10) for f in (1.0, 1.0)]) == pytest.approx(np.std(speeds, ddof=1))


def test_a_committed_trace_made_lockstep_has_no_drift(traces):
    tiles = next(iter(traces.values())).sort_values("t_acquire").copy()
    rnd = tiles.groupby("cta").t_acquire.rank(method="first").to_numpy()
    tiles["t_acquire"] = rnd * 90_000.0  # every CTA starts each round together
    tiles["t_mainloop_end"] = tiles.t_acquire + 85_000.0
    assert C.trace_drift(tiles)["start_sd_per_round"] == pytest.approx(0.0, abs=1e-12)


@pytest.mark.parametrize("change,words", [
    (lambda d: d.drop(columns="order"), "no column order"),
    (lambda d: d.assign(order="diagonal/swizzle2"), "'diagonal/swizzle2' is not raster/swizzleS"),
    (lambda d: d.assign(median_ms=0.0), "not a positive number"),
    (lambda d: d.assign(backend="cublas"), "no cutlass runs"),
    (lambda d: d[d.n != 8192], "no CUTLASS runs at the calibration split"),
    (lambda d: d[d.order == "along_m/swizzle8"], "has 1 tile order"),
])
def test_a_bad_probe_table_is_one_line(probe, change, words):
    with pytest.raises(ValueError, match="probe.csv") as e:
        C.fit_l2_constants(change(probe), l2_bytes=1.0, hbm_gbps=1.0, tile_fixed_ns=0.0, drift=0.0,
                           where="probe.csv")
    assert words in str(e.value) and "\n" not in str(e.value)


def test_a_trace_too_short_or_without_its_columns_is_refused():
    with pytest.raises(ValueError, match="t3: 3 round"):
        C.trace_drift(synthetic_trace(np.ones(4), 3), "t3")
    with pytest.raises(ValueError, match="no column t_mainloop_end"):
        C.trace_drift(synthetic_trace(np.ones(4), 8).drop(columns="t_mainloop_end"))
    with pytest.raises(ValueError, match="no per-tile traces"):
        C.cta_drift([])


def _ticket_trace(windows: int, rate: float, slots: int = 8, tile: float = 100.0) -> pd.DataFrame:
    """A ticket grid whose window w's starts span rate * w tile times (saturating at 1), mainloops of ``tile`` ns."""
    rows = []
    for w in range(windows):
        span = min(1.0, rate * w) * tile
        for i in range(slots):
            t = w * tile + span * i / (slots - 1)
            rows.append({"t_acquire": t, "t_mainloop_end": t + tile})
    return pd.DataFrame(rows).sample(frac=1.0, random_state=0)  # any row order


def test_the_ticket_spread_is_the_median_growth_of_the_window_span():
    from ctasim.calibration import span_rate, ticket_spread, window_spans

    spans = window_spans(_ticket_trace(12, 0.05), 8)
    assert spans == pytest.approx(np.minimum(1.0, 0.05 * np.arange(12)), abs=1e-9)
    assert span_rate(spans) == pytest.approx(0.05)
    got, rates = ticket_spread([_ticket_trace(12, 0.02), _ticket_trace(12, 0.03), _ticket_trace(12, 0.1),
                                _ticket_trace(4, 0.02)], 8)
    assert got == pytest.approx(0.03) and rates[-1] is None  # 4 windows: too few to fit, left out of the median
    assert span_rate(window_spans(_ticket_trace(30, 0.2), 8)) == pytest.approx(0.2)  # saturated windows left out
    with pytest.raises(ValueError, match="enough windows"):
        ticket_spread([_ticket_trace(4, 0.02)], 8)
    with pytest.raises(ValueError, match="no column t_mainloop_end"):
        window_spans(pd.DataFrame({"t_acquire": [0.0]}), 8)


def test_the_committed_ticket_traces_give_their_spread():
    """bench/results/hw/2026-12-02-ticket-traces: the calibration probe's traces and the spread its table holds."""
    from ctasim.calibration import ticket_spread

    d = Path(__file__).resolve().parent.parent / "bench/results/hw/2026-12-02-ticket-traces/probes"
    table = pd.read_csv(d / "tickets.csv")
    traces = [pd.read_csv(d / f"tiles-{m}x{h}x{l}-tickets.csv.gz") for m, l, h in
              zip(table["m"], table["layers"], table["h"])]
    value, rates = ticket_spread(traces, 132)
    assert rates == pytest.approx(table["spread_per_window"].tolist(), abs=1e-9)
    assert round(value, 4) == 0.0197


def _paired_trace(gaps_us: list[float], slots: int = 20) -> pd.DataFrame:
    """A ticket trace of 3 windows of ``slots`` tickets and a 100 us mainloop, every tile its own W panel but one panel
    read at ticket ``slots`` and every 5 tickets after it, the i-th of those ``gaps_us[i]`` us after the one before
    (the tickets between spaced evenly; 1 us apart elsewhere)."""
    n = 3 * slots
    step = np.ones(n - 1)
    for i, g in enumerate(gaps_us):
        step[slots + 5 * i:slots + 5 * (i + 1)] = g / 5
    t_acq = np.concatenate([[0.0], np.cumsum(step)]) * 1e3
    tile_n = np.arange(n) + 1000
    tile_n[[slots + 5 * i for i in range(len(gaps_us) + 1)]] = 7
    return pd.DataFrame({"t_acquire": t_acq, "t_mainloop_end": t_acq + 100e3, "layer": 0, "tile_n": tile_n})


def test_the_gap_spread_is_the_median_of_each_traces_coefficient_of_variation():
    """Each later sharer's gap over its reach (5 tickets of 20, spread 1 at window 1: 0.25 tile times), and the
    coefficient of variation of those per trace; the median over traces; a trace without two sharers left out."""
    r = C.sharer_gaps(_paired_trace([2.0, 4.0, 6.0]), spread=1.0, slots=20)
    np.testing.assert_allclose(r, np.array([2.0, 4.0, 6.0]) / 100 / 0.25)  # reach 5 / 20 x min(1, 1 x 1)
    np.testing.assert_allclose(C.sharer_gaps(_paired_trace([2.0]), spread=0.5, slots=20), [2.0 / 100 / 0.125])
    cv = float(np.std([2, 4, 6]) / np.mean([2, 4, 6]))
    got, per = C.gap_cv([_paired_trace([2.0, 4.0, 6.0]), _paired_trace([4.0, 4.0, 4.0]), _paired_trace([1.0, 5.0]),
                         _paired_trace([3.0])], 1.0, 20)
    assert per[0] == pytest.approx(cv) and per[1] == pytest.approx(0.0) and per[3] is None
    assert per[2] == pytest.approx(np.std([1, 5]) / 3) and got == pytest.approx(cv)  # median of cv, 0 and 0.667
    with pytest.raises(ValueError, match="two later sharers"):
        C.gap_cv([_paired_trace([3.0])], 1.0, 20)
    with pytest.raises(ValueError, match="without column layer"):  # the traces written before 2026-12-05
        C.gap_cv([_paired_trace([3.0, 4.0]).drop(columns="layer")], 1.0, 20)
    with pytest.raises(ValueError, match="2 traces but 1 grid sizes"):
        C.gap_cv([_paired_trace([3.0])] * 2, 1.0, [20])


def test_the_committed_pairs_traces_give_the_gap_spread_the_post_hoc_table_holds():
    """gap_cv over one committed run's pairs' traces (registered plan 52's) is the median of the coefficients
    bench/results/posthoc-order-mainloop/gaps.csv holds for them, at the profile's ticket spread."""
    from ctasim.trace import load_traces

    run = "2026-12-04-registered52-1gpu"
    table = pd.read_csv(ROOT / "bench/results/posthoc-order-mainloop/gaps.csv")
    want = table[(table["run"] == run) & (table["order"] == "intragpu-g2")]
    traces, seen = [], set()
    for bundle in sorted((ROOT / "bench/results/hw" / run).glob("reg*-chain-*/ctapipe_traces.trace.npz")):
        for tr in load_traces(bundle).values():
            key = (bundle.parent.name, tr.meta["case"], tr.meta["strategy"])
            if tr.meta["strategy"] == "intragpu-g2" and key not in seen:
                seen.add(key)
                traces.append(tr.tiles)
    assert len(traces) == len(want) == 8
    got, per = C.gap_cv(traces, CFG.ticket_spread, 132)
    assert sorted(round(c, 4) for c in per) == pytest.approx(sorted(want["cv"]), abs=1e-4)
    assert got == pytest.approx(want["cv"].median(), abs=1e-4)


def test_the_local_signal_is_the_median_of_each_traces_median_step():
    def trace(steps):
        return pd.DataFrame({"t_compute_end": np.arange(len(steps)) * 1000.0,
                             "t_signal": np.arange(len(steps)) * 1000.0 + np.asarray(steps, dtype=float)})

    got, per = C.local_signal([trace([800, 900, 5000]), trace([700, 1000, 1100]), trace([950])])
    assert per == [900.0, 1000.0, 950.0] and got == 950.0
    no_signal = pd.DataFrame({"t_compute_end": [1.0]})  # a plain GEMM's trace has no signal: left out
    assert C.local_signal([no_signal, trace([600])]) == (600.0, [None, 600.0])  # one value per trace, in order
    with pytest.raises(ValueError, match="t_signal"):
        C.local_signal([no_signal])


def _paced_trace(paces: list[float], tiles: int, tile: float = 100.0) -> pd.DataFrame:
    """A ticket grid whose CTA i starts a tile every ``paces[i]`` tile times, mainloops of ``tile`` ns."""
    rows = [{"cta": i, "t_acquire": w * c * tile, "t_mainloop_end": w * c * tile + tile}
            for i, c in enumerate(paces) for w in range(tiles)]
    return pd.DataFrame(rows).sample(frac=1.0, random_state=1)


def test_ctas_that_keep_their_paces_spread_a_window_by_their_range():
    from ctasim.calibration import cta_cycles, cta_pace_range, span_rate, window_spans

    paces = [1.00, 1.01, 1.02, 1.03, 1.04, 1.05, 1.05, 1.06]
    tr = _paced_trace(paces, 12)
    assert cta_cycles(tr).to_numpy() == pytest.approx(paces)
    assert cta_pace_range(tr) == pytest.approx(0.06)
    assert span_rate(window_spans(tr, len(paces))) == pytest.approx(0.06)  # the identity the range stands for
    # one CTA 10% slower widens the range and the span alike; equal paces spread nothing
    slow = _paced_trace(paces[:-1] + [1.10], 12)
    assert cta_pace_range(slow) == pytest.approx(0.10) == span_rate(window_spans(slow, 8))
    assert cta_pace_range(_paced_trace([1.0] * 8, 12)) == pytest.approx(0.0, abs=1e-12)
    with pytest.raises(ValueError, match="no column cta"):
        cta_pace_range(tr.drop(columns="cta"))
    with pytest.raises(ValueError, match="fewer than two CTAs"):
        cta_pace_range(_paced_trace([1.0], 12))
