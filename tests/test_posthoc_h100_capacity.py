"""bench/posthoc_h100_capacity.py: the committed tables are what the committed H100 calls and plans 64's and 65's
registrations give (the unscaled rows are the registered predictions), and what docs/validation.md quotes from them
(no GPU; one scale and experiment re-predicted here, the rest checked through the registrations)."""

from __future__ import annotations

import pandas as pd
import pytest

from tests.helpers import load_bench


@pytest.fixture(scope="module")
def pc():
    return load_bench("posthoc_h100_capacity")


@pytest.fixture(scope="module")
def committed(pc):
    d = pc.ROOT / "bench/results/posthoc-h100-capacity"
    return pd.read_csv(d / "cases.csv"), pd.read_csv(d / "summary.csv")


def test_the_unscaled_rows_are_both_plans_registered_predictions_over_six_calls(pc, committed):
    cases, _ = committed
    assert cases["call"].nunique() == 6 and set(cases["scale"]) == set(pc.SCALES)
    reg = pd.concat([pd.read_csv(pc.p64.REGISTERED / "predicted.csv"),
                     pd.read_csv(pc.p65.REGISTERED / "predicted.csv")]).query("source == 'model'")
    reg = reg.drop_duplicates(["experiment", "case", "strategy"])
    own = cases[cases["scale"] == 1.0].merge(reg, on=["experiment", "case", "strategy"])
    assert len(own) == len(cases[cases["scale"] == 1.0]) == 3 * 37 + 3 * 27
    assert (own["predicted_ms_x"] - own["predicted_ms_y"]).abs().max() < 1e-4


def test_a_scaled_prediction_is_what_the_scaled_profile_gives(pc, committed):
    cases, _ = committed
    got = pc.predicted(scales=(0.7,), experiments=("reg49-chain-order-h5120",))
    mine = cases[(cases["scale"] == 0.7) & (cases["experiment"] == "reg49-chain-order-h5120")]
    m = mine.drop_duplicates(["case", "strategy"]).merge(got, on=["experiment", "case", "strategy"])
    assert len(m) == 10 and (m["predicted_ms_x"] - m["predicted_ms_y"]).abs().max() < 1e-4
    # the scale moves row order at M = 16384 (the capacity is read), not the sequential GEMMs' first wave alone
    row = m[(m["case"] == "m=16384") & (m["strategy"] == "intragpu-row")]["predicted_ms_y"].iloc[0]
    unscaled = cases[(cases["scale"] == 1.0) & (cases["experiment"] == "reg49-chain-order-h5120")
                     & (cases["case"] == "m=16384") & (cases["strategy"] == "intragpu-row")]["predicted_ms"].iloc[0]
    assert row > unscaled * 1.02


def test_the_summary_is_what_the_cases_give(pc, committed):
    cases, summary = committed
    pd.testing.assert_frame_equal(pc.ph.summary(cases).reset_index(drop=True), summary, check_exact=False, atol=2e-4)


def test_no_one_capacity_prices_both_ends(committed):
    """docs/validation.md: at every scale row order at H = 5120, M = 8192 and H = 6912, M = 4096 stays more than 10%
    fast (the median over the calls), and at 0.6 a large-M row order case goes more than 15% slow."""
    cases, _ = committed
    row = cases[cases["class"] == "row order"]
    med = row.groupby(["scale", "experiment", "case"])["error_pct"].median()
    for scale in set(cases["scale"]):
        assert med[(scale, "reg49-chain-order-h5120", "m=8192")] < -10
        assert med[(scale, "reg56-chain-gradual-h6912", "m=4096")] < -10
    assert med.xs(0.6, level="scale").max() > 15
