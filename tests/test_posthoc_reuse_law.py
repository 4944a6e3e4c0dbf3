"""bench/posthoc_reuse_law.py: the committed tables are what the committed one-H200 runs give under both reuse laws
(the summary from the cases; every case priced by both; the experiments read are the one-GPU ones) (no GPU; the
predictions themselves take ~90 s and are not redone here)."""

from __future__ import annotations

import pandas as pd
import pytest

from tests.helpers import load_bench


@pytest.fixture(scope="module")
def pr():
    return load_bench("posthoc_reuse_law")


@pytest.fixture(scope="module")
def committed(pr):
    d = pr.ROOT / "bench/results/posthoc-reuse-law"
    return pd.read_csv(d / "cases.csv"), pd.read_csv(d / "summary.csv")


def test_the_summary_is_what_the_cases_give(pr, committed):
    cases, summary = committed
    pd.testing.assert_frame_equal(pr.summary(cases).reset_index(drop=True), summary, check_exact=False, atol=2e-4)


def test_every_case_is_priced_by_both_laws_and_every_one_gpu_measurement_is_read(pr, committed):
    cases, _ = committed
    n = cases.groupby(["call", "experiment", "case", "strategy"])["law"].nunique()
    assert (n == 2).all() and set(cases["law"]) == set(pr.LAWS)
    found = pr.measurements()
    assert set(cases["experiment"]) <= set(found) and len(set(cases["experiment"])) >= 70
    assert not any(e.startswith("reg38") or "ring" in e for e in found)  # multi-GPU and shared-device runs left out


def test_the_parted_subset_is_the_cases_the_laws_price_apart(pr, committed):
    """A made-up pair of laws one point apart on one case and equal elsewhere: only that case is 'parted'."""
    rows = []
    for i, gap in enumerate((0.0, 1.0, 0.2)):
        for law, err in (("lru", 1.0), ("survival", 1.0 + gap)):
            rows.append(dict(call="c", experiment="e", case=f"m={i}", strategy="sequential", **{"class": "sequential"},
                             law=law, measured_ms=1.0, predicted_ms=1.0 + err / 100, error_pct=err))
    s = pr.summary(pd.DataFrame(rows)).set_index(["subset", "class", "law"])
    assert s.at[("parted", "all", "survival"), "cases"] == 1
    assert s.at[("parted", "all", "survival"), "mape_pct"] == pytest.approx(2.0)
    assert s.at[("all", "all", "lru"), "cases"] == 3


def test_the_survival_law_is_nearer_where_the_laws_part(committed):
    """What docs/validation.md quotes (post-hoc): nearer over every case and, by most, where the two part."""
    _, s = committed
    t = s.pivot_table(index=["subset", "class"], columns="law", values="mape_pct")
    assert t.loc[("all", "all"), "survival"] < t.loc[("all", "all"), "lru"]
    assert t.loc[("parted", "all"), "survival"] < t.loc[("parted", "all"), "lru"] - 1.0
