"""bench/posthoc_row_order_l2.py: the committed tables are what the committed calls give, and say what
docs/validation.md quotes (no GPU)."""

from __future__ import annotations

import pandas as pd
import pytest

from tests.helpers import load_bench


@pytest.fixture(scope="module")
def pr():
    return load_bench("posthoc_row_order_l2")


def test_the_committed_tables_are_what_the_calls_give(pr):
    d = pr.ROOT / "bench/results/posthoc-row-order-l2"
    runs = pr.runs()
    pd.testing.assert_frame_equal(runs, pd.read_csv(d / "runs.csv"), check_exact=False, atol=5e-5,
                                  check_dtype=False)
    pd.testing.assert_frame_equal(pr.table(runs), pd.read_csv(d / "table.csv"), check_exact=False, atol=5e-5,
                                  check_dtype=False)


def test_at_the_same_weights_over_l2_the_h100_loses_several_times_the_h200s_penalty(pr):
    t = pr.table(pr.runs()).set_index(["kind", "h", "m"])
    assert t.loc[("H100", 8448, 16384), "weights_over_l2"] == pytest.approx(8448 ** 2 * 2 / (50 * 2 ** 20))
    # weights 2.7 times the L2: H = 8448 on an H100, H = 9216 on an H200
    assert t.loc[("H100", 8448, 16384), "median_pct"] == pytest.approx(81.66, abs=0.01)
    assert t.loc[("H200", 9216, 16384), "median_pct"] == pytest.approx(20.64, abs=0.01)
    for m in (8192, 16384):
        assert t.loc[("H100", 8448, m), "median_pct"] > 2.5 * t.loc[("H200", 9216, m), "median_pct"]
        assert t.loc[("H100", 7424, m), "median_pct"] > 2.5 * t.loc[("H200", 7936, m), "median_pct"]


def test_calls_after_the_committed_tables_are_read_only_without_the_cut(pr):
    """The committed tables read the calls up to THROUGH; registered plan 75's later H100 call (H = 6656, every order)
    comes in only without the cut."""
    every = pr.runs(through=None)
    later = set(every["call"]) - set(pr.runs()["call"])
    assert "2026-12-06-registered75-1gpu" in later
    assert all(c > min(pr.THROUGH.values()) for c in later)
