"""bench/posthoc_cta_paces.py: the chain kernel's ticket spread against its CTAs' paces on the committed traced runs;
the committed tables are what the script computes (one H100 call's runs read again here, the summary from the
committed rows) and the readings docs/validation.md quotes hold (no GPU)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]
COMMITTED = ROOT / "bench" / "results" / "posthoc-cta-paces"
PLAN75 = ROOT / "bench/results/hw-h100/2026-12-06-registered75-1gpu/reg51-chain-order-h6656/ctapipe_traces.trace.npz"


@pytest.fixture(scope="module")
def pcp(bench_module):
    return bench_module("posthoc_cta_paces")


def test_the_committed_paces_are_what_the_traces_give(pcp):
    committed = pd.read_csv(COMMITTED / "paces.csv")
    got = pcp.paces([("H100", PLAN75)])
    want = committed[committed.run == got.run.iloc[0]]
    assert len(got) == len(want) == 12  # 3 M x groups of 8, 4, pairs and row order
    key = ["case", "order"]
    got, want = (d.sort_values(key).reset_index(drop=True) for d in (got, want))
    assert got[key].equals(want[key])
    for col in ("span_rate", "pace_range", "lead24", "penalty", "span_wo_quick24", "span_wo_slow24"):
        assert got[col].to_numpy(float) == pytest.approx(want[col].to_numpy(float), rel=1e-4, abs=1e-6), col
    # the calls read are those up to THROUGH: 77 bundles (27 on H100s), 762 traced runs (265 on H100s); later calls
    # (plan 76's) are not in the committed tables
    found = pcp.bundles()
    assert len(found) == 77 and sum(kind == "H100" for kind, _ in found) == 27
    assert len(committed) == 762 and (committed.gpu == "H100").sum() == 265
    assert not committed.run.str.contains("registered76").any()
    h200 = pcp.paces([found[0]])  # an H200 bundle read again too
    assert set(h200.gpu) == {"H200"}
    for r in h200.itertuples(index=False):
        row = committed[(committed.run == r.run) & (committed.experiment == r.experiment) & (committed.case == r.case)
                        & (committed.order == r.order)]
        assert len(row) == 1 and row.pace_range.iloc[0] == pytest.approx(r.pace_range, rel=1e-4, abs=1e-6)
    pd.testing.assert_frame_equal(pcp.by_order(committed), pd.read_csv(COMMITTED / "by-order.csv"), check_dtype=False,
                                  atol=2e-4)  # from the rows as committed (6 digits)


def test_the_readings_the_docs_quote_hold():
    d = pd.read_csv(COMMITTED / "paces.csv").dropna(subset=["span_rate"])
    s = pd.read_csv(COMMITTED / "by-order.csv").set_index(["gpu", "order"])
    # the span a window grows by is the CTAs' pace range: within 15% at the median over every run of both kinds
    assert abs(np.median(d.span_rate / d.pace_range) - 1) < 0.15 and d.span_rate.corr(d.pace_range) > 0.6
    # an H100's pairs keep paces twice as far apart as an H200's at a like penalty, and their spread does not follow
    # the penalty within the order (an H200's does)
    h100, h200 = s.loc[("H100", "intragpu-g2")], s.loc[("H200", "intragpu-g2")]
    assert h100.pace_range > 1.8 * h200.pace_range and abs(h100.penalty - h200.penalty) < 0.03
    assert abs(h100.corr_span_penalty) < 0.2 < h200.corr_span_penalty
    # both tails: leaving out the 24 quickest or the 24 slowest SMs takes the H100 pairs' span under half
    assert max(h100.span_wo_quick24, h100.span_wo_slow24) < 0.5 * h100.span_rate
