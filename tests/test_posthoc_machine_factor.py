"""bench/posthoc_machine_factor.py: the committed tables (bench/results/posthoc-machine-factor) are what it computes.

The whole script takes ~30 s on the 2-core machine (165 cases under three profiles), so this recomputes every call's
machine factor s (refs.csv: ~1 s) and one call's cases under R0, R1 and R2 (8-run2: its long case is past the clock
curve's rise, where R1 and R2 part), rebuilds summary.csv and drift.csv from the committed cases, and checks the two
curve transforms by hand."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pandas as pd
import pytest

from ctasim.cases import load_experiment

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "bench" / "results" / "posthoc-machine-factor"


@pytest.fixture(scope="module")
def mod(bench_module):
    return bench_module("posthoc_machine_factor")


def _committed_cases():
    d = pd.read_csv(OUT / "cases.csv", keep_default_na=False, na_values=[""], dtype={"call": str, "variant": str})
    return d.assign(variant=d.variant.fillna(""))  # as ctasim.results.read gives it


def test_r1_scales_the_curve_and_r2_fades_s_to_the_sustained_level(mod):
    hw = dataclasses.replace(load_experiment("reg28-reference").hardware,
                             clock_curve_ns=(0.0, 5e6, 10e6), clock_curve_factor=(1.0, 1.05, 1.10))
    assert mod.machine_hw(hw, "R0", 0.98) is hw
    r1, r2 = mod.machine_hw(hw, "R1", 0.98), mod.machine_hw(hw, "R2", 0.98)
    assert r1.clock_curve_factor == pytest.approx((0.98, 1.029, 1.078), abs=1e-12)
    assert r2.clock_curve_factor == pytest.approx((0.98, 1.04, 1.10), abs=1e-12)  # s at rest, S = 1.10 at the end
    assert r1.clock_curve_ns == r2.clock_curve_ns == hw.clock_curve_ns
    with pytest.raises(ValueError):
        mod.machine_hw(hw, "R3", 0.98)


def test_the_committed_refs_are_every_calls_machine_factor(mod):
    model = mod.Model()
    calls = mod.calls()
    got = pd.DataFrame([mod.machine_factor(model, c) for c in calls]).set_index("call").round(5)
    committed = pd.read_csv(OUT / "refs.csv", dtype={"call": str}).set_index("call")
    assert len(calls) == 19
    pd.testing.assert_frame_equal(got, committed)


def test_one_calls_committed_cases_are_what_the_script_computes(mod):
    model = mod.Model()
    call = next(c for c in mod.calls() if c["call"] == "8-run2")
    ref = mod.machine_factor(model, call)
    refs = pd.DataFrame([ref]).set_index("call")
    got = mod.errors(mod.call_cases(model, call, ref), refs).round(5)
    got["band"] = got.band.astype(str)
    c = _committed_cases()
    c = c[c.call == "8-run2"].reset_index(drop=True)
    assert len(c) == 8 and (c.band == "long").sum() == 1
    assert abs(c.R1_err - c.R2_err).max() > 0.05  # the long case tells the two forms apart
    pd.testing.assert_frame_equal(got, c, check_dtype=False)


def test_the_committed_summary_and_drift_are_those_of_the_committed_cases(mod):
    d = _committed_cases()
    d["band"] = pd.Categorical(d.band, categories=list(mod.BAND_LABELS))
    refs = pd.read_csv(OUT / "refs.csv", dtype={"call": str}).set_index("call")
    s = mod.summary(d)
    s["band"] = s.band.astype(str)
    committed = pd.read_csv(OUT / "summary.csv", dtype={"call": str})
    pd.testing.assert_frame_equal(s.reset_index(drop=True), committed, check_dtype=False, atol=2e-3, rtol=0)
    dr = mod.drift(d, refs)
    pd.testing.assert_frame_equal(dr, pd.read_csv(OUT / "drift.csv", dtype={"call": str}), check_dtype=False,
                                  atol=2e-4, rtol=0)
    # the headline (README): all 285 cases' MAPE under R0, R1, R2; the 24 long ones'
    a = committed.set_index(["call", "band"])
    assert tuple(a.loc[("ALL", "all"), ["n", "R0_mape", "R1_mape", "R2_mape"]]) == (285, 2.386, 2.017, 2.026)
    assert tuple(a.loc[("ALL", "long"), ["n", "R0_mape", "R1_mape", "R2_mape"]]) == (24, 1.605, 1.765, 1.875)
