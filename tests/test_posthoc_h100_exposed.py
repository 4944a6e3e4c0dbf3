"""bench/posthoc_h100_exposed.py: the committed tables are what the committed H100 calls and plan 64's registration
give (the datasheet profile's rows are the registered ones), and the latency twin differs only where the exposed HBM
share is charged (no GPU; the predictions themselves are checked by the registration's own test)."""

from __future__ import annotations

import pandas as pd
import pytest

from tests.helpers import load_bench


@pytest.fixture(scope="module")
def ph():
    return load_bench("posthoc_h100_exposed")


@pytest.fixture(scope="module")
def committed(ph):
    d = ph.ROOT / "bench/results/posthoc-h100-exposed"
    return pd.read_csv(d / "cases.csv"), pd.read_csv(d / "summary.csv")


def test_the_datasheet_rows_are_plan_64s_registered_predictions_and_every_call_is_read(ph, committed):
    cases, _ = committed
    assert sorted(set(cases["call"])) == [c.name for c in ph.calls()] and len(ph.calls()) >= 3
    reg = pd.read_csv(ph.p64.REGISTERED / "predicted.csv").query("source == 'model'")
    own = cases[cases["profile"] == "h100-x1-datasheet"].merge(reg, on=["experiment", "case", "strategy"])
    assert len(own) == 37 * len(ph.calls())
    assert (own["predicted_ms_x"] - own["predicted_ms_y"]).abs().max() < 1e-4


def test_the_summary_is_what_the_cases_give(ph, committed):
    cases, summary = committed
    pd.testing.assert_frame_equal(ph.summary(cases).reset_index(drop=True), summary, check_exact=False, atol=5e-5)


def test_the_twin_mends_the_sequential_gemms_and_prices_the_pairs_faster(committed):
    """What docs/validation.md quotes: on every call the twin's sequential MAPE is below 1% and the datasheet's above
    2.5%, and the twin's pairs are further off (it prices them faster: the ticket law's own underprice shows)."""
    _, s = committed
    t = s.pivot_table(index=["call", "class"], columns="profile", values="mape_pct")
    seq, pairs = t.xs("sequential", level="class"), t.xs("pairs", level="class")
    assert (seq["h100-x1-datasheet-latency"] < 1.0).all() and (seq["h100-x1-datasheet"] > 2.5).all()
    assert (pairs["h100-x1-datasheet-latency"] > pairs["h100-x1-datasheet"] + 2).all()
