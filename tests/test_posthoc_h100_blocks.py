"""bench/posthoc_h100_blocks.py: the variants change only the fields they name, the committed table's model rows are
plan 74's registered predictions, and the summary is the cases' errors (no GPU)."""

from __future__ import annotations

import dataclasses
import math

import pandas as pd
import pytest

from tests.helpers import load_bench


@pytest.fixture(scope="module")
def ph():
    return load_bench("posthoc_h100_blocks")


def test_each_variant_changes_only_its_fields(ph):
    v = ph.variants()
    assert tuple(v) == ph.VARIANTS
    base = v["model"]

    def changed(hw):
        return {f.name for f in dataclasses.fields(hw) if getattr(hw, f.name) != getattr(base, f.name)}

    assert changed(v["clock off"]) == set(ph.CLOCK) and math.isinf(v["clock off"].clock_onset_ns)
    assert changed(v["own69 clock"]) <= set(ph.CLOCK) and v["own69 clock"].clock_sustained_slowdown == 1.1341
    assert changed(v["exposed at H200 rate"]) == {"l2_hbm_exposed_gbps"}
    assert changed(v["both"]) == set(ph.CLOCK) | {"l2_hbm_exposed_gbps"}
    tile = {f.name for f in dataclasses.fields(base)
            if getattr(v["exposed, tile law"], f.name) != getattr(v["exposed at H200 rate"], f.name)}
    assert tile == {"name", "source", "kernel_configs"}
    assert {c.drift_k_ref for c in v["exposed, tile law"].kernel_configs} == {0.0}


def test_the_committed_model_rows_are_plan_74s_registered_predictions(ph):
    c = pd.read_csv(ph.ROOT / "bench/results/posthoc-h100-blocks/cases.csv")
    reg = pd.read_csv(ph.p74.REGISTERED / "predicted.csv").query("source == 'model'")
    j = c[c["variant"] == "model"].merge(reg, on=["experiment", "case", "strategy"], suffixes=("", "_reg"))
    assert len(j) == 2 * len(reg) == 40 and c["call"].nunique() == 2
    assert (j["predicted_ms"] - j["predicted_ms_reg"]).abs().max() < 1e-3


def test_the_summary_is_the_cases_errors(ph):
    c = pd.DataFrame(dict(call="x", experiment=["a", "b", "c"], variant="v", part=["blocks", "blocks", "chains"],
                          error_pct=[2.0, -4.0, 1.0]))
    s = ph.summary(c).set_index("part")
    assert s.loc["blocks", "mape_pct"] == 3.0 and s.loc["blocks", "mean_pct"] == -1.0
    assert s.loc["blocks", "worst_pct"] == -4.0 and s.loc["all", "cases"] == 3
    assert s.loc["all", "mape_pct"] == pytest.approx(7 / 3)


def test_the_committed_summary_is_what_the_committed_cases_give(ph):
    d = ph.ROOT / "bench/results/posthoc-h100-blocks"
    pd.testing.assert_frame_equal(ph.summary(pd.read_csv(d / "cases.csv")).reset_index(drop=True),
                                  pd.read_csv(d / "summary.csv"), check_exact=False, atol=2e-4)


def test_the_orders_table_reads_the_h100_calls_the_reuse_law_table_reads(ph):
    """``orders.csv`` prices every case of the earlier H100 calls (as posthoc_reuse_law's committed H100 table reads
    them, through its default call) under both variants, and its classes add up to the whole."""
    o = pd.read_csv(ph.ROOT / "bench/results/posthoc-h100-blocks/orders.csv")
    reuse = pd.read_csv(ph.ROOT / "bench/results/posthoc-reuse-law-h100/cases.csv").query("law == 'survival'")
    for variant, d in o.groupby("variant"):
        assert d.set_index("class").at["all", "cases"] == len(reuse) == d[d["class"] != "all"]["cases"].sum()
    assert set(o["variant"]) == {"model", "exposed at H200 rate"}
