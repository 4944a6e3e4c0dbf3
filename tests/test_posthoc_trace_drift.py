"""bench/posthoc_trace_drift.py: every rested trace call is read, the committed tables are what the script writes,
and the figures docs/validation.md quotes (registered plan 46's reading) hold (no GPU)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]
COMMITTED = ROOT / "bench" / "results" / "posthoc-trace-drift"


@pytest.fixture(scope="module")
def ptd(bench_module):
    return bench_module("posthoc_trace_drift")


def test_the_committed_tables_are_what_the_script_writes_and_the_docs_quote(ptd):
    folders = [str(f.relative_to(ptd.HW)) for f in ptd.probe_folders()]
    assert "2026-12-04-registered46-1gpu-run2/probe" in folders and not any("unrested" in f for f in folders)
    c = ptd.cases()
    pd.testing.assert_frame_equal(c.round(4), pd.read_csv(COMMITTED / "cases.csv"), check_dtype=False)
    s = ptd.summary(c).set_index("predictor")
    pd.testing.assert_frame_equal(s.round(4).reset_index(), pd.read_csv(COMMITTED / "summary.csv"), check_dtype=False)
    assert (s["cases"].iloc[0], s["folders"].iloc[0]) == (82, 15)  # 2026-12-04's two quick calibrations the last
    assert [round(s.loc[p, "sd_pct"], 2) for p in ("interleaved", "interleaved_own", "carried", "carried_own")] == \
        [2.52, 2.44, 2.08, 2.01]


def test_a_trace_priced_with_its_own_drift_moves_with_that_drift(ptd, monkeypatch):
    """The ``*_own`` columns price each trace at its measured drift: a trace read with twice its drift gets a slower
    (larger) own-drift time on a high-reuse order, the profile-drift column unchanged."""
    from ctasim import calibration

    one = [ptd.HW / "2026-12-04-registered46-1gpu" / "probe"]  # one call's six traces: enough, and fast
    monkeypatch.setattr(ptd, "probe_folders", lambda: one)
    base = ptd.cases()
    real = calibration.trace_drift

    def doubled(tiles, where="trace"):
        d = real(tiles, where)
        return {**d, "start_sd_per_round": 2 * d["start_sd_per_round"]}

    monkeypatch.setattr(calibration, "trace_drift", doubled)
    more = ptd.cases()
    high = base["order"].str.endswith("swizzle8")
    assert (more.loc[high, "interleaved_own_pct"] > base.loc[high, "interleaved_own_pct"]).all()
    pd.testing.assert_series_equal(more["interleaved_pct"], base["interleaved_pct"])
