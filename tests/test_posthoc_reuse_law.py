"""bench/posthoc_reuse_law.py: the committed tables are what the committed one-H200 (and one-H100) runs give under
both reuse laws (the summary from the cases; every case priced by both; the experiments read are the one-GPU ones)
(no GPU; the predictions themselves take ~90 s and are not redone here)."""

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
    found = pr.measurements(through=pr.THROUGH["H200"])
    assert {str(f.relative_to(pr.HW)) for f, _ in found} == set(cases["call"]) and len(set(cases["experiment"])) >= 90
    assert "reg-h4096" in set(cases["experiment"])  # a 2-GPU spec's sequential rows, timed on one H200
    assert "2026-12-04-plan49-row-repeats/rep1" in set(cases["call"])  # a run folder not named by its experiment
    assert not any("shared" in e for _, e in found)  # the rings sharing one H200 (plans 40-42)


def test_a_call_on_another_gpu_or_a_shared_device_is_left_out(pr, tmp_path):
    """Made-up calls: an H100's and an H200's of a one-GPU spec; a ring sharing one H200 (plan 40's spec)."""
    res = pr.ROOT / "bench/results/hw/2026-12-04-registered49-1gpu/reg49-chain-order-h5120/results.csv"
    env = (pr.ROOT / "bench/results/hw/2026-12-05-registered59-1gpu/env.txt").read_text()
    for call, gpu, exp in (("h100", "NVIDIA H100 80GB HBM3", "reg49-chain-order-h5120"),
                           ("h200", "NVIDIA H200", "reg49-chain-order-h5120"),
                           ("shared", "NVIDIA H200", "reg40-ring-shared-l3")):
        (tmp_path / call / exp).mkdir(parents=True)
        (tmp_path / call / "env.txt").write_text(env.replace("NVIDIA H200", gpu))
        r = pd.read_csv(res).assign(experiment=exp)
        r.to_csv(tmp_path / call / exp / "results.csv", index=False)
    found = pr.measurements(tmp_path)
    assert [(f.parent.name, e) for f, e in found] == [("h200", "reg49-chain-order-h5120")]


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


@pytest.fixture(scope="module")
def committed_h100(pr):
    d = pr.OUT["H100"]
    return pd.read_csv(d / "cases.csv"), pd.read_csv(d / "summary.csv"), pd.read_csv(d / "decisions.csv")


def test_the_h100_tables_are_what_their_cases_give_and_read_every_h100_call(pr, committed_h100):
    cases, summary, decisions = committed_h100
    pd.testing.assert_frame_equal(pr.summary(cases).reset_index(drop=True), summary, check_exact=False, atol=2e-4)
    pd.testing.assert_frame_equal(pr.decisions(cases).reset_index(drop=True), decisions, check_exact=False, atol=0.05,
                                  check_dtype=False)
    assert (cases.groupby(["call", "experiment", "case", "strategy"])["law"].nunique() == 2).all()
    root = pr.GPUS["H100"][0]
    found = pr.measurements(root, "H100", pr.THROUGH["H100"])
    assert {str(f.relative_to(root)) for f, _ in found} == set(cases["call"])
    # a later call (registered plan 74's) is read only past the committed tables' last call
    later = {str(f.relative_to(root)) for f, _ in pr.measurements(root, "H100")} - set(cases["call"])
    assert later and all(c.split("/")[0] > pr.THROUGH["H100"] for c in later)
    assert "2026-12-06-registered74-1gpu/reg18-chain-gelu" in later
    calls = {c.split("/")[0] for c in cases["call"]}
    assert {"2026-12-05-registered64-1gpu", "2026-12-05-registered67-68-1gpu-run2"} <= calls
    assert not {str(f) for f, _ in pr.measurements(pr.HW, "H100")}  # no H100 call among the H200s' folder


def test_the_h100_laws_are_the_profile_as_registered_and_as_adopted(pr):
    lru, survival = (pr.profile(pr.GPUS["H100"][2][law]) for law in ("lru", "survival"))
    assert (lru.l2_reuse_law, survival.l2_reuse_law) == ("lru", "survival")
    assert lru.name == survival.name == "h100-x1-datasheet"


def test_the_survival_law_is_nearer_where_the_laws_part(committed):
    """What docs/validation.md quotes (post-hoc): nearer over every case and, by most, where the two part."""
    _, s = committed
    t = s.pivot_table(index=["subset", "class"], columns="law", values="mape_pct")
    assert t.loc[("all", "all"), "survival"] < t.loc[("all", "all"), "lru"]
    assert t.loc[("parted", "all"), "survival"] < t.loc[("parted", "all"), "lru"] - 1.0


def test_the_decisions_are_what_the_cases_give(pr, committed):
    cases, _ = committed
    got = pr.decisions(cases)
    want = pd.read_csv(pr.ROOT / "bench/results/posthoc-reuse-law/decisions.csv")
    # cases.csv holds the times to 4 decimals of a ms (0.05% of the shortest runs): the regrets agree to 0.05 points
    pd.testing.assert_frame_equal(got.reset_index(drop=True), want, check_exact=False, atol=0.05, check_dtype=False)


def test_a_decision_follows_the_laws_fastest_and_costs_what_it_measured():
    pr = load_bench("posthoc_reuse_law")
    rows = [dict(call="c", experiment="e", case="m=1", strategy=s, law=law, measured_ms=meas, predicted_ms=pred)
            for law, preds in (("lru", (1.0, 1.1)), ("survival", (1.2, 1.1)))
            for s, meas, pred in zip(("sequential", "intragpu"), (1.00, 1.05), preds)]
    rows.append(dict(call="c", experiment="e", case="m=2", strategy="sequential", law="lru", measured_ms=1.0,
                     predicted_ms=1.0))  # one strategy: no decision
    d = pr.decisions(pd.DataFrame(rows)).set_index("law")
    assert len(d) == 2 and d.at["lru", "pick"] == "sequential" and d.at["lru", "right"]
    assert d.at["survival", "pick"] == "intragpu" and not d.at["survival", "right"]
    assert d.at["survival", "regret_pct"] == pytest.approx(5.0)


@pytest.mark.parametrize("gpu", ["H200", "H100"])
def test_row_order_over_groups_is_what_the_cases_give(pr, gpu):
    d = pr.OUT[gpu]
    got = pr.row_over_groups(pd.read_csv(d / "cases.csv"))
    pd.testing.assert_frame_equal(got, pd.read_csv(d / "row-over-groups.csv"), check_exact=False, atol=2e-4)


def test_row_order_over_groups_takes_each_strategys_median_over_the_calls(pr):
    rows = [dict(call=c, experiment="e", case="m=1", strategy=s, law=law, measured_ms=meas, predicted_ms=pred)
            for law, pred_row in (("lru", 1.0), ("survival", 1.1))
            for c, g8, row in (("a", 1.0, 1.2), ("b", 1.0, 1.9), ("c", 1.0, 1.25))
            for s, meas, pred in (("intragpu", g8, 1.0), ("intragpu-row", row, pred_row))]
    rows.append(dict(call="a", experiment="e", case="m=2", strategy="intragpu", law="lru", measured_ms=1.0,
                     predicted_ms=1.0))  # no row order there: no ratio
    got = pr.row_over_groups(pd.DataFrame(rows))
    assert list(got.columns) == ["experiment", "case", "measured", "predicted_lru", "predicted_survival"]
    assert len(got) == 1 and got.iloc[0]["measured"] == pytest.approx(1.25)  # the median, not the mean (1.45)
    assert (got.iloc[0]["predicted_lru"], got.iloc[0]["predicted_survival"]) == pytest.approx((1.0, 1.1))


def test_row_states_price_each_pair_under_the_threshold_laws_two_states(pr, monkeypatch):
    import posthoc_sm_groups as psg

    seen = []

    def prices(e, c, hw):
        seen.append((e, c, hw.name))
        return {"hold_pct": 1.0, "thrash_pct": 30.0, "half_pct": 15.5}

    monkeypatch.setattr(psg, "state_prices", prices)
    r = pd.DataFrame([dict(experiment="e", case="m=1", measured=1.2, predicted_lru=1.0, predicted_survival=1.0)])
    got = pr.row_states(r, "H100")
    assert seen == [("e", "m=1", "h100-x1-datasheet")]
    assert got.iloc[0]["threshold_hold"] == pytest.approx(1.01)
    assert got.iloc[0]["threshold_thrash"] == pytest.approx(1.3)
    assert pr.row_states(r, "H200") is not None and seen[-1][2] == "h200-x1-calibrated"


@pytest.mark.parametrize("gpu", ["H200", "H100"])
def test_the_committed_row_states_are_the_row_over_groups_with_one_pair_repriced(pr, gpu):
    d = pr.OUT[gpu]
    s, r = pd.read_csv(d / "row-states.csv"), pd.read_csv(d / "row-over-groups.csv")
    pd.testing.assert_frame_equal(s[list(r.columns)], r)
    first = pr.row_states(r.head(1), gpu)
    assert first.iloc[0]["threshold_hold"] == pytest.approx(s.iloc[0]["threshold_hold"], abs=2e-4)
    assert first.iloc[0]["threshold_thrash"] == pytest.approx(s.iloc[0]["threshold_thrash"], abs=2e-4)
