"""bench/posthoc_gap_machine.py: the committed post-hoc tables (is the sharers' gap spread the machine's?) are what the
script computes (one run here; every run takes ~2 minutes), the analysis of variance is right on made-up groups, and
the summary says what docs/validation.md quotes."""

from __future__ import annotations

import pandas as pd
import pytest

from tests.helpers import load_bench

RUN = "2026-12-04-registered52-1gpu"


@pytest.fixture(scope="module")
def pgm():
    return load_bench("posthoc_gap_machine")


@pytest.fixture(scope="module")
def committed(pgm):
    d = pgm.ROOT / "bench/results/posthoc-gap-machine"
    return {n: pd.read_csv(d / f"{n}.csv") for n in ("cases", "gaps", "summary", "machines", "spread", "by-run",
                                                    "correlations", "response")}


def test_one_runs_tables_are_the_committed_ones(pgm, committed, tmp_path):
    assert pgm.main(["--runs", RUN, "--out", str(tmp_path)]) == 0
    got = pd.read_csv(tmp_path / "cases.csv")
    want = committed["cases"][committed["cases"]["run"] == RUN].reset_index(drop=True)
    assert len(got) == len(want) == 8 * 2 * len(pgm.PREDICTORS)  # 2 experiments x 4 M x (groups of 4, pairs), each
    pd.testing.assert_frame_equal(got, want)
    gaps = pd.read_csv(tmp_path / "gaps.csv")
    pd.testing.assert_frame_equal(gaps, committed["gaps"][committed["gaps"]["run"] == RUN].reset_index(drop=True))
    # each case was priced with the median of the run's OTHER cases' coefficients, never its own
    g = gaps[gaps["order"].isin(pgm.GAP_ORDERS["pairs"])]
    assert len(g) == 8
    for (e, case), c in got[got["predictor"] == "own, pairs"].groupby(["experiment", "case"]):
        others = g[~((g["experiment"] == e) & (g["case"] == case))]
        assert len(others) == 7 and c["gap_cv"].iloc[0] == pytest.approx(others["cv"].median(), abs=1e-4)
    assert set(got[got["predictor"] == pgm.PROFILE]["gap_cv"]) == {0.74}
    assert not (tmp_path / "spread.csv").exists()  # one run: no analysis of variance


def test_the_per_run_tables_are_the_committed_gaps(pgm, committed):
    m = pgm.machines(committed["gaps"])
    pd.testing.assert_frame_equal(m, committed["machines"], atol=2e-4, check_exact=False)
    pd.testing.assert_frame_equal(pgm.spread(committed["gaps"]), committed["spread"], atol=2e-3, rtol=1e-3,
                                  check_exact=False)


def test_the_per_run_errors_and_their_correlations_are_the_committed_cases(pgm, committed):
    br = pgm.by_run(committed["cases"], committed["machines"])
    pd.testing.assert_frame_equal(br, committed["by-run"])
    pd.testing.assert_frame_equal(pgm.correlations(br), committed["correlations"])
    pd.testing.assert_frame_equal(pgm.response(committed["cases"]), committed["response"])
    co = committed["correlations"].set_index("order")
    # the profile's row-order error rises with the run's gap cv; the pairs' does not
    assert (co.loc["intragpu-row", "rho_mainloop"], co.loc["intragpu-row", "rho_makespan"]) == (0.5824, 0.5647)
    assert abs(co.loc["intragpu-g2", "rho_makespan"]) < 0.1
    r = committed["response"].set_index(["order", "predictor", "penalty"])
    row = [r.loc[("intragpu-row", p, k), "slope"] for p in ("own, pairs", "own, pairs and row")
           for k in ("mainloop", "makespan")]
    assert [round(x, 2) for x in row] == [0.7, 1.48, 1.56, 1.56]


def test_the_response_is_one_where_the_own_value_moves_the_model_as_far_as_the_machines_differ(pgm):
    """Made-up runs: the measured penalty sits from the profile's exactly twice as far as the own value moves the
    model -> slope 2, correlation 1; a predictor that does not move the model is left with no slope."""
    rows = []
    for run, moved in (("a", 1.0), ("b", -2.0), ("c", 0.5)):
        for label, model in ((pgm.PROFILE, 10.0), ("own, pairs", 10.0 + moved), ("own, pairs and row", 10.0)):
            rows.append(dict(run=run, order="intragpu-row", predictor=label, mainloop_pct_model=model,
                             mainloop_pct_meas=10.0 + 2 * moved, makespan_pct_model=model,
                             makespan_pct_meas=10.0 - moved))
    got = pgm.response(pd.DataFrame(rows)).set_index(["predictor", "penalty"])
    assert got.loc[("own, pairs", "mainloop"), "slope"] == pytest.approx(2.0)
    assert got.loc[("own, pairs", "mainloop"), "corr"] == pytest.approx(1.0)
    assert got.loc[("own, pairs", "makespan"), "slope"] == pytest.approx(-1.0)
    assert got.loc[("own, pairs and row", "mainloop"), ["slope", "corr"]].isna().all()


def test_the_analysis_of_variance_tells_groups_that_differ_from_groups_that_do_not(pgm):
    same = pgm.anova(pd.Series([1.0, 2.0, 3.0, 1.0, 2.0, 3.0]), pd.Series(list("aaabbb")))
    assert same["f"] == pytest.approx(0.0) and same["within_ms"] == pytest.approx(1.0)
    apart = pgm.anova(pd.Series([1.0, 2.0, 3.0, 11.0, 12.0, 13.0]), pd.Series(list("aaabbb")))
    # between: 3 x (5^2 + 5^2) / 1 = 150; within: 4 / 4 = 1
    assert (apart["between_ms"], apart["within_ms"], apart["f"]) == pytest.approx((150.0, 1.0, 150.0))
    with pytest.raises(ValueError, match="2 or more groups"):
        pgm.anova(pd.Series([1.0, 2.0]), pd.Series(["a", "a"]))


def test_the_summary_is_the_committed_cases_and_says_what_the_docs_quote(pgm, committed):
    s = pgm.pom.summary(committed["cases"])
    pd.testing.assert_frame_equal(s, committed["summary"])
    a = s.set_index(["order", "predictor"])
    profile, own, pairs = pgm.PROFILE, "own, pairs and row", "own, pairs"
    # row order: makespan penalty mean |error| 5.15 under the profile's 0.74, 4.91 / 5.04 with the run's own
    assert [a.loc[("intragpu-row", p), "makespan_abs_err"] for p in (profile, own, pairs)] == [5.15, 4.91, 5.04]
    assert [a.loc[("intragpu-row", p), "mainloop_abs_err"] for p in (profile, own, pairs)] == [9.94, 9.42, 9.65]
    # pairs: no better (makespan 1.65 against 1.68 / 1.67)
    assert [a.loc[("intragpu-g2", p), "makespan_abs_err"] for p in (profile, own, pairs)] == [1.65, 1.68, 1.67]
    sp = committed["spread"].set_index("orders")
    assert sp.loc["pairs", "f"] > 10 and sp.loc["pairs", "groups"] == 18
    ma = committed["machines"].set_index("run")["cv_median"]
    assert ma["2026-12-05-registered56-1gpu"] == pytest.approx(ma["2026-12-05-registered56-1gpu-run2"], abs=0.002)


def test_no_matching_run_is_one_line(pgm, tmp_path, capsys):
    assert pgm.main(["--runs", "nothing-*", "--out", str(tmp_path / "o")]) == 2
    assert "no traced chain-kernel run matches" in capsys.readouterr().err and not (tmp_path / "o").exists()
