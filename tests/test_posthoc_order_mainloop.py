"""bench/posthoc_order_mainloop.py: the order penalties over groups of 8, measured and modelled (no GPU)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.helpers import load_bench

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def pom():
    return load_bench("posthoc_order_mainloop")


def test_late_median_takes_the_second_half_by_acquire_time(pom):
    # four tiles listed out of acquire order: the two acquired last took 10 and 30 us
    tiles = pd.DataFrame({"t_acquire": [3000.0, 0.0, 2000.0, 1000.0],
                          "t_end": [3000.0 + 10e3, 0.0 + 99e3, 2000.0 + 30e3, 1000.0 + 99e3]})
    assert pom.late_median(tiles, "t_end") == pytest.approx(20.0)


def test_penalties_are_over_the_same_cases_groups_of_8(pom):
    d = pd.DataFrame({"case": ["m=1", "m=1", "m=2", "m=2", "m=3"],
                      "order": ["intragpu", "intragpu-g2", "intragpu", "intragpu-g2", "intragpu-g2"],
                      "late_us": [80.0, 90.0, 100.0, 105.0, 1.0], "makespan_ms": [1.0, 1.1, 2.0, 2.5, 1.0]})
    ref = pd.Series({"m=1": 100.0, "m=2": 50.0})  # the measured reference's late mainloop, by case
    p = pom.penalties(d, ref).set_index("case")
    assert list(p.index) == ["m=1", "m=2"]  # the reference rows and the case without one dropped
    assert p.loc["m=1", "mainloop_pct"] == pytest.approx(10.0)  # (90 - 80) / 100
    assert p.loc["m=2", "mainloop_pct"] == pytest.approx(10.0)  # (105 - 100) / 50
    assert p.loc["m=1", "makespan_pct"] == pytest.approx(10.0)
    assert p.loc["m=2", "makespan_pct"] == pytest.approx(25.0)


def test_one_committed_run_is_reproduced(pom):
    """The pipeline end to end on one bundle (plan 53 at H = 8704): the committed rows come back."""
    bundle = [p for p in pom.bundles() if "registered53" in str(p) and p.parent.name == "reg53-chain-law-h8704"]
    assert len(bundle) == 1
    got = pom.cases(bundle)
    committed = pd.read_csv(pom.ROOT / "bench/results/posthoc-order-mainloop/cases.csv")
    want = committed[(committed["run"] == got["run"].iloc[0]) & (committed["experiment"] == "reg53-chain-law-h8704")]
    assert len(got) == len(want) == 16  # 4 cases x 2 orders x 2 predictors
    cols = ["late_us_meas", "late_us_model", "mainloop_pct_meas", "mainloop_pct_model", "makespan_pct_meas",
            "makespan_pct_model"]
    key = ["case", "order", "predictor"]
    g, w = got.sort_values(key).reset_index(drop=True), want.sort_values(key).reset_index(drop=True)
    assert (g[key] == w[key]).all().all()
    np.testing.assert_allclose(g[cols].to_numpy(), w[cols].to_numpy(), atol=1e-3)
    assert set(got["machine"]) == {"GPU-2882b583"}


def test_the_committed_summary_is_the_committed_cases_summary(pom):
    res = pom.ROOT / "bench/results/posthoc-order-mainloop"
    c = pd.read_csv(res / "cases.csv")
    s = pd.read_csv(res / "summary.csv")
    pd.testing.assert_frame_equal(pom.summary(c), s, check_dtype=False, atol=0.006)
    # what docs/validation.md reads off it: pairs priced fast on the makespan by both laws, the mainloop's error
    # following the makespan's case by case
    pairs = s[s["order"] == "intragpu-g2"].set_index("predictor")
    assert (pairs["makespan_err"] < -1.0).all() and (pairs["mainloop_err"] < -1.0).all()
    assert (s["err_corr"][s["order"] != "intragpu-g16"] >= 0.8).all()


def test_the_committed_by_h_table_is_the_committed_cases_by_h(pom):
    res = pom.ROOT / "bench/results/posthoc-order-mainloop"
    got = pom.by_h(pd.read_csv(res / "cases.csv"))
    pd.testing.assert_frame_equal(got, pd.read_csv(res / "by-h.csv"), check_dtype=False, atol=0.006)
    # what docs/validation.md reads off it: under the adopted law the pairs' tiles are missed most where a layer's
    # weights are about the L2's size, within 1.6 points at H >= 10240, their makespan fast at every H
    pairs = got[(got["order"] == "intragpu-g2") & got["predictor"].str.startswith("adopted")].set_index("h")
    assert pairs.loc[5120, "mainloop_err"] < -3 and pairs.loc[8192, "mainloop_err"] < -3
    assert (pairs.loc[10240:, "mainloop_err"].abs() <= 1.6).all() and (pairs["makespan_err"] < 0).all()


def test_the_summary_sees_a_wrong_penalty(pom):
    """Deliberately broken: one order's predicted penalties shifted by 2 points move its mean error by 2."""
    c = pd.read_csv(pom.ROOT / "bench/results/posthoc-order-mainloop/cases.csv")
    broken = c.copy()
    g4 = broken["order"] == "intragpu-g4"
    broken.loc[g4, "mainloop_err"] += 2.0
    a, b = pom.summary(c).set_index(["order", "predictor"]), pom.summary(broken).set_index(["order", "predictor"])
    moved = (b["mainloop_err"] - a["mainloop_err"]).round(2)
    assert set(moved[moved != 0].index.get_level_values(0)) == {"intragpu-g4"}
    assert np.allclose(moved.xs("intragpu-g4", level=0), 2.0)


def test_sharer_gaps_are_measured_time_over_the_models_reach(pom):
    """Made-up tiles, one W panel read at tickets 140, 150 and 160 of window 1 (and by ticket 10, window 0, left
    out), the others read once; each 1 us apart per ticket, a 100 us mainloop. Reach at window 1: 10 / 132 * spread."""
    n = 264
    t_acq = np.arange(n) * 1e3  # ticket p acquires at p us
    tile_n = np.arange(n) + 1000  # every tile its own panel ...
    tile_n[[10, 140, 150, 160]] = 7  # ... but these four
    tiles = pd.DataFrame({"t_acquire": t_acq, "t_mainloop_end": t_acq + 100e3, "layer": 0, "tile_n": tile_n})
    r = pom.sharer_gaps(tiles, spread=0.5)
    reach = 10 / 132 * 0.5  # tile times
    measured = 10e3 / 100e3  # 10 us over a 100 us mainloop
    np.testing.assert_allclose(r, [measured / reach] * 2)
    # nearer than MIN_GAP tickets: not counted
    tile_n[[150, 160]] = [5000, 5001]
    tile_n[[141]] = 7
    r2 = pom.sharer_gaps(tiles.assign(tile_n=tile_n), spread=0.5)
    assert len(r2) == 0  # 140 -> 141 is one ticket apart


def test_smoothed_is_the_profiles_gap_spread_after_any_other_change(pom):
    from ctasim import l2
    from ctasim.spec import load_hardware

    hw = pom.as_plan_53(load_hardware("h200-x1-calibrated"))
    cfg = pom.smoothed(0.5)(hw, "intragpu-row").config(128, 256)
    assert (cfg.ticket_gap_cv, cfg.ticket_touched) == (0.5, 1.0) and hw.config(128, 256).ticket_gap_cv == 0.0
    seen = []

    def then(h, order):
        seen.append(order)
        return h.with_tickets(ticket_spread=0.03)

    cfg = pom.smoothed(0.25, then=then)(hw, "intragpu-g2").config(128, 256)
    assert seen == ["intragpu-g2"] and (cfg.ticket_spread, cfg.ticket_gap_cv) == (0.03, 0.25)
    # what the spread does to the law: a sharp edge averaged over the distance
    step = ([0.0, 0.499, 0.501, 2.0], [1.0, 1.0, 0.0, 0.0])  # all kept below half the L2, nothing above
    at = l2.gap_survival(np.array([0.05, 0.5, 5.0]), step, gap_cv=0.5)
    assert at[0] == pytest.approx(1.0, abs=1e-4) and at[2] == pytest.approx(0.0, abs=1e-4) and 0.3 < at[1] < 0.7
    with pytest.raises(ValueError):
        pom.smoothed(0.0)


def test_the_smooth_cv_option_refuses_bad_values_in_one_line(pom, tmp_path, capsys):
    with pytest.raises(SystemExit) as e:
        pom.main(["--smooth-cv", "0,1", "--out", str(tmp_path / "o")])
    assert e.value.code == 2
    err = [l for l in capsys.readouterr().err.splitlines() if l.strip()]
    assert len(err) == 1 and "--smooth-cv" in err[0]
    assert not (tmp_path / "o").exists()


def test_the_committed_traffic_table_is_what_the_script_computes(pom):
    t = pom.traffic()
    committed = pd.read_csv(pom.ROOT / "bench/results/posthoc-order-mainloop/traffic.csv")
    pd.testing.assert_frame_equal(t, committed, check_dtype=False)
    # what docs/validation.md reads off it: the survival law charges groups of 8 no re-reads within a window, the
    # partition law some; groups of 4 miss the same W panels across waves under both
    k = t.set_index(["order", "law"])
    assert k.loc[("intragpu", "survival"), "ticket_mib"] == 0 < k.loc[("intragpu", "partition"), "ticket_mib"]
    assert k.loc[("intragpu-g4", "survival"), "w_mib"] == k.loc[("intragpu-g4", "partition"), "w_mib"]
    assert k.loc[("intragpu-g4", "survival"), "w_mib"] > 1.5 * k.loc[("intragpu", "survival"), "w_mib"]


def test_the_two_level_model_and_the_gradual_hardware_the_docs_quote():
    """docs/validation.md's reading of the committed cases by H and M: the model flips between reuse kept and lost as M
    grows, the measured penalty grows gradually, and at H >= 12288 both sit at the lost level."""
    c = pd.read_csv(ROOT / "bench" / "results" / "posthoc-order-mainloop" / "cases.csv")
    c = c[c["predictor"] == "adopted (survival, 1.019)"].copy()
    c["h"] = c["experiment"].str.extract(r"h(\d+)")[0].fillna("8192").astype(int)
    c["m"] = c["case"].str.extract(r"m=(\d+)")[0].astype(int)
    t = c.groupby(["order", "h", "m"])[["mainloop_pct_meas", "mainloop_pct_model"]].mean().round(1)
    pairs, row = t.loc[("intragpu-g2", 7168)], t.loc[("intragpu-row", 8192)]
    assert pairs["mainloop_pct_meas"].tolist() == [3.9, 7.2, 9.3] and pairs["mainloop_pct_model"].tolist() == [2.2, 1.8, 9.7]
    assert row["mainloop_pct_meas"].tolist() == [25.5, 23.1, 30.6, 46.0]
    assert row["mainloop_pct_model"].tolist() == [3.0, 55.2, 56.6, 56.2]
    big = c[c["h"] >= 12288].groupby("order")[["mainloop_pct_meas", "mainloop_pct_model"]].agg(["min", "max"]).round(1)
    assert big.loc["intragpu-g2"].tolist() == [8.6, 14.2, 10.0, 10.4]
    assert big.loc["intragpu-row"].tolist() == [50.5, 62.6, 52.7, 55.7]
    doc = (ROOT / "docs" / "validation.md").read_text()
    for quoted in ("measured 3.9, 7.2, 9.3 points, modelled 2.2, 1.8, 9.7", "measured 25.5, 23.1, 30.6, 46.0, modelled 3.0, 55.2, 56.6, 56.2",
                   "pairs 8.6-14.2 measured against 10.0-10.4", "row order 50.5-62.6 against 52.7-55.7"):
        assert " ".join(quoted.split()) in " ".join(doc.split()), quoted


@pytest.mark.parametrize("script, table", [("posthoc_order_mainloop", "posthoc-order-mainloop/cases.csv"),
                                           ("posthoc_gap_law", "posthoc-gap-law/cases.csv"),
                                           ("posthoc_gap_machine", "posthoc-gap-machine/gaps.csv"),
                                           ("posthoc_sm_groups", "posthoc-sm-groups/splits.csv")])
def test_a_dated_post_hoc_table_reads_the_runs_it_was_made_from(script, table):
    """The dated post-hoc tables read every traced run committed by their date (``AS_OF``), not the ones committed
    since (plan 68's H200 call, 2026-12-06): the runs their default selection reads are the committed table's runs,
    and ``--as-of all`` reads more. Only the selection is checked here (the tables take minutes to rebuild)."""
    mod = load_bench(script)
    pom = load_bench("posthoc_order_mainloop")
    exps = getattr(mod, "EXPERIMENTS", pom.EXPERIMENTS)
    got = {pom.run_label(p) for p in pom.selected(exps, "*", mod.AS_OF)}
    committed = set(pd.read_csv(ROOT / "bench/results" / table)["run"].astype(str))
    assert got == committed
    later = {pom.run_label(p) for p in pom.selected(exps, "*", None)} - got
    assert later and all(pom.run_date(p) > mod.AS_OF for p in pom.selected(exps) if pom.run_label(p) in later)
    with pytest.raises(ValueError, match="not a date"):
        pom.selected(exps, "*", "yesterday")
