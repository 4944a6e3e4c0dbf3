"""bench/posthoc_h100_tickets.py: the committed tables are what the committed traces, probes and H100 calls give, and
what docs/validation.md and the twin's derivation (ctasim.profiles) take from them (no GPU)."""

from __future__ import annotations

import pandas as pd
import pytest

from tests.helpers import load_bench


@pytest.fixture(scope="module")
def pt():
    return load_bench("posthoc_h100_tickets")


@pytest.fixture(scope="module")
def committed(pt):
    d = pt.ROOT / "bench/results/posthoc-h100-tickets"
    return {n: pd.read_csv(d / f"{n}.csv") for n in ("gaps", "probes", "whatif", "whatif-summary")}


def test_the_probe_table_is_the_probes_and_the_twin_takes_the_h100s_median(pt, committed):
    from ctasim.profiles import H100_TICKET_GAP_CV

    got = pt.probes()
    pd.testing.assert_frame_equal(got, committed["probes"], check_exact=False, atol=5e-5)
    h100 = got[got["gpu"] == "H100"]["ticket_gap_cv"]
    assert len(h100) == 2 and H100_TICKET_GAP_CV == pytest.approx(h100.median(), abs=5e-4)
    assert (got[got["gpu"] == "H200"]["ticket_gap_cv"] < 0.7).all() and (h100 > 1.2).all()


def test_the_gap_table_is_the_traces(pt, committed):
    got = pt.gaps()
    pd.testing.assert_frame_equal(got.reset_index(drop=True), committed["gaps"], check_exact=False, atol=5e-5,
                                  check_dtype=False)


def test_the_h100s_sharers_come_later_than_the_h200s_in_the_orders_that_lose_reuse(committed):
    """What the registration of plan 66 says: the median later sharer comes 1.3-1.8 reaches after the one before on
    the H100s in pairs and row order (the median over runs), under one on the H200s; and the tickets' spread."""
    p50 = committed["gaps"].groupby(["gpu", "order"])["p50"].median()
    for order in ("intragpu-g2", "intragpu-row"):
        assert p50[("H100", order)] > 1.25 and p50[("H200", order)] < 1.0
    # the tickets spread 3-5 times as fast on the H100s in those orders, as fast in groups of 8 (docs/validation.md)
    spread = committed["gaps"].groupby(["gpu", "order"])["spread"].median()
    for order in ("intragpu-g2", "intragpu-row"):
        assert 3 < spread[("H100", order)] / spread[("H200", order)] < 5
    assert 0.8 < spread[("H100", "intragpu")] / spread[("H200", "intragpu")] < 1.2


def test_the_summary_is_what_the_cases_give_and_the_twin_is_nearest_over_the_calls(pt, committed):
    c, s = committed["whatif"], committed["whatif-summary"]
    pd.testing.assert_frame_equal(pt.ph.summary(c).reset_index(drop=True), s, check_exact=False, atol=2e-4)
    assert set(c["profile"]) == {"h100-x1-datasheet", *pt.WHATIFS, pt.PER_ORDER} and c["call"].nunique() == 6
    assert c.groupby("profile").size().nunique() == 1  # every what-if prices every case
    allc = s[s["class"] == "all"].pivot_table(index="call", columns="profile", values="mape_pct")
    # the factor 2 was chosen on these calls: the lowest mean MAPE of the grid, below the datasheet's on every call
    assert allc.mean().idxmin() == "h100-x1-datasheet-tickets"
    assert (allc["h100-x1-datasheet-tickets"] < allc["h100-x1-datasheet"]).all()


def test_the_datasheet_rows_are_the_registered_predictions(pt, committed):
    c = committed["whatif"]
    reg = pd.concat([pd.read_csv(pt.pc.p64.REGISTERED / "predicted.csv"),
                     pd.read_csv(pt.pc.p65.REGISTERED / "predicted.csv")]).query("source == 'model'")
    own = c[c["profile"] == "h100-x1-datasheet"].merge(reg.drop_duplicates(["experiment", "case", "strategy"]),
                                                         on=["experiment", "case", "strategy"])
    assert len(own) == 3 * 37 + 3 * 27 and (own["predicted_ms_x"] - own["predicted_ms_y"]).abs().max() < 1e-4


def test_each_orders_own_traced_spread_prices_the_pairs_and_overprices_row_order(committed):
    """docs/validation.md: with each order's own spread from the H100 traces the pairs' MAPE falls below 2% on
    every call (the datasheet profile's above 3%), and row order is priced slow where a layer's weights pass 1.3
    times the L2 (H >= 6912): the law's reach for row order is not the traced span."""
    s, c = committed["whatif-summary"], committed["whatif"]
    pairs = s[s["class"] == "pairs"].pivot_table(index="call", columns="profile", values="mape_pct")
    assert (pairs["gap cv, each order's traced spread"] < 2).all() and (pairs["h100-x1-datasheet"] > 3).all()
    row = c[(c["profile"] == "gap cv, each order's traced spread") & (c["class"] == "row order")]
    big = row[row["experiment"].str.extract(r"h(\d+)$", expand=False).astype(int) >= 6912]
    assert (big.groupby(["experiment", "case"])["error_pct"].median() > 5).all()


def test_the_mainloop_table_is_the_traces_under_the_datasheet_profile(pt, committed):
    """One run recomputed (all of them take a minute): the committed rows of its first bundle, under the datasheet
    profile as registered (plan64_h100_datasheet.as_registered)."""
    ml = pd.read_csv(pt.ROOT / "bench/results/posthoc-h100-tickets/mainloop.csv")
    b = pt.gap_bundles()["H100"][0]
    got = pt.bundle_mainloop(b, pt.ph.p64.as_registered("h100-x1-datasheet"))
    assert set(got["run"]) == {"bench/results/hw-h100/" + b.parent.parent.name}
    mine = ml[(ml["run"] == got["run"].iloc[0]) & (ml["experiment"] == b.parent.name)]
    j = mine.merge(got, on=["case", "order"], suffixes=("", "_got"))
    assert len(j) == len(got) > 0
    for col in ("mainloop_pct_meas", "mainloop_pct_model", "makespan_pct_meas", "makespan_pct_model"):
        assert (j[col] - j[col + "_got"]).abs().max() < 1e-3


def test_the_model_keeps_or_thrashes_row_order_and_the_h100_runs_between(pt):
    """docs/validation.md: per (H, M) (the median over runs), the model's row-order mainloop penalty is either under
    10% (reuse kept) or over 55% (thrashed), and the H100s' lies between 10 and 55% at 10 of the 14."""
    ml = pd.read_csv(pt.ROOT / "bench/results/posthoc-h100-tickets/mainloop.csv")
    row = ml[ml["order"] == "intragpu-row"].groupby(["h", "case"])[["mainloop_pct_meas", "mainloop_pct_model"]]
    med = row.median()
    assert len(med) == 14
    model = med["mainloop_pct_model"]
    assert ((model < 10) | (model > 55)).all()
    assert ((med["mainloop_pct_meas"] > 10) & (med["mainloop_pct_meas"] < 55)).sum() == 10
