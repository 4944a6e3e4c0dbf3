"""bench/posthoc_order_onset.py: where in a run the chain kernel's orders lose their reuse, measured and modelled; the
committed rows are what the script computes (one run's bundle again here), the summary is what the rows give, and the
figures docs/validation.md quotes hold (no GPU)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]
COMMITTED = ROOT / "bench" / "results" / "posthoc-order-onset"
H7168 = ROOT / "bench/results/hw/2026-12-04-registered49-1gpu/reg49-chain-order-h7168/ctapipe_traces.trace.npz"


@pytest.fixture(scope="module")
def poo(bench_module):
    return bench_module("posthoc_order_onset")


def test_onset_is_the_first_held_wave_at_half_the_level_after_the_cold_waves(poo):
    e = np.array([0.20, 0.0, 0.0, 0.06, 0.0, 0.06, 0.07, 0.08, 0.10, 0.10, 0.10, 0.10])
    level, at = poo.onset(e)
    assert level == pytest.approx(0.10) and at == 5.0  # wave 0 (cold) and wave 3 (alone) do not count
    assert np.isnan(poo.onset(np.full(8, 0.01))[1])  # under 2%: nothing to time
    assert np.isnan(poo.onset(np.array([0.0, 0.0, 0.0, 0.1, 0.0, 0.1, 0.0, 0.1]))[1])  # never held three waves


def test_one_bundle_is_what_the_script_computes_and_the_summary_the_rows_give(poo):
    committed = pd.read_csv(COMMITTED / "onset.csv")
    got = pd.DataFrame(poo.run_rows(H7168))
    want = committed[(committed.run == got.run.iloc[0]) & (committed.experiment == got.experiment.iloc[0])]
    key = ["case", "order"]
    got, want = (d.sort_values(key).reset_index(drop=True) for d in (got, want))
    assert len(got) == len(want) == 9
    pd.testing.assert_frame_equal(got[key + ["waves"]], want[key + ["waves"]], check_dtype=False)
    for col in ("level_meas", "onset_meas", "level_model", "onset_model"):
        np.testing.assert_allclose(got[col].to_numpy(float), want[col].to_numpy(float), atol=1e-4)
    s = pd.read_csv(COMMITTED / "summary.csv")
    pd.testing.assert_frame_equal(poo.summary(committed), s, check_dtype=False)


def test_the_docs_quote_the_summary():
    s = pd.read_csv(COMMITTED / "summary.csv").set_index("order")
    doc = " ".join((ROOT / "docs" / "validation.md").read_text().split())
    p, r = s.loc["intragpu-g2"], s.loc["intragpu-row"]
    for quoted in (f"{int(p.model_keeps)} of {int(p.cases)} pair cases",
                   f"{p.kept_level_meas_median:.1f}% (median; {p.kept_level_meas_min:.1f}-{p.kept_level_meas_max:.1f}%)",
                   f"{int(r.model_keeps)} of {int(r.cases)} row-order cases",
                   f"{r.kept_level_meas_median:.1f}% ({r.kept_level_meas_min:.1f}-{r.kept_level_meas_max:.1f}%)",
                   f"{r.lost_level_meas_median:.1f}% measured against {r.lost_level_model_median:.1f}%"):
        assert quoted in doc, quoted
