"""bench/plan87_exposed_rate.py: registered plan 87's registration (the H200's exposed rate on h100-x8-mechanism at the
lockstep level, the producers alone at M = 32768), its judge on made-up calls whose producers run at a named
predictor's times (plan 86's test helpers, at this plan's M), and calls it must refuse (no GPU)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from tests.helpers import load_bench
from tests.test_plan85_grouped_kept import _assert_doc_table, _doc_section, _judge, _rejudged
from tests.test_plan86_x8_exposed import _call


@pytest.fixture(scope="module")
def p87():
    return load_bench("plan87_exposed_rate")


@pytest.fixture(scope="module")
def registered(p87):
    return pd.read_csv(p87.REGISTERED / "predicted.csv")


def test_the_registration_is_what_the_model_gives_at_m_32768(p87, registered):
    """Every H, producer and predictor at M = 32768, each wave, as plan 86's profiles give it: twice plan 86's waves,
    and where the spread does not enter the same full-wave means as at M = 16384."""
    import plan83_alone_edge as p83
    from percta_predict import full_waves

    assert set(registered.m) == {32768} and sorted(set(registered.h)) == list(p87.HS)
    assert set(registered.predictor) == set(p87.PREDICTORS) and set(registered.variant) == set(p87.VARIANTS)
    hw, spread = p87.predictors()["twin"]
    mine = registered[(registered.h == 10240) & (registered.variant == p87.GROUPED[1])
                      & (registered.predictor == "twin")]
    assert np.allclose(mine.sort_values("wave").us, p83.wave_times(10240, p87.GROUPED[1], hw, spread, 32768), atol=1e-3)
    assert registered.groupby("h").wave.max().to_dict() == {h: -(-p87.tiles(h, 32768) // 132) - 1 for h in p87.HS}
    p86 = pd.read_csv(load_bench("plan86_x8_exposed").REGISTERED / "predicted.csv")
    for v in p87.GROUPED:
        a = registered[(registered.h == 13312) & (registered.variant == v) & (registered.predictor == "twin_lockstep")]
        b = p86[(p86.h == 13312) & (p86.variant == v) & (p86.predictor == "twin_lockstep")]
        assert full_waves(a, p87.tiles(13312, 32768)).us.mean() == pytest.approx(
            full_waves(b, p87.tiles(13312)).us.mean(), abs=0.1)


@pytest.fixture(scope="module")
def as_twin_lockstep(p87, registered, tmp_path_factory):
    """A call whose producers run at the twin's lockstep level (every wave), judged once."""
    tmp = tmp_path_factory.mktemp("p87")
    run = _call(p87, registered, tmp / "run", times={v: "twin_lockstep" for v in p87.VARIANTS})
    return _judge(p87, run, tmp)


def test_a_call_at_the_twins_lockstep_level_meets_every_claim_and_adopts(p87, as_twin_lockstep):
    c, cl = as_twin_lockstep
    assert cl.met.all() and cl.loc["adopt", "value"] == "yes", cl
    assert cl.loc["a", "value"].startswith("0.00% against ") and cl.loc["e", "value"].startswith("+0.00% against +")
    assert set(c.h) == set(p87.HS) and (c.waves > 50).all()  # M = 32768's waves


def test_a_call_at_the_profiles_lockstep_level_adopts_nothing(p87, registered, tmp_path):
    """Every producer at h100-x8-mechanism's lockstep level (waves 0-1 too): the twin's lockstep level is then the one
    off, so (a), (b) and (d) are missed and nothing is adopted."""
    run = _call(p87, registered, tmp_path / "run", times={v: "lockstep" for v in p87.VARIANTS},
                early={v: "lockstep" for v in p87.VARIANTS})
    _, cl = _judge(p87, run, tmp_path)
    assert cl.loc[["a", "b", "d"], "met"].tolist() == [False, False, False] and cl.loc["adopt", "value"] == "no"


def test_the_spread_claim_reads_groups_of_4_at_the_lowest_h(p87, as_twin_lockstep):
    c = as_twin_lockstep[0].copy()
    at = (c.variant == p87.GROUPED[0]) & (c.h == p87.HS[0])
    c.loc[at & (c.predictor == "twin"), "mean_err_pct"] = 0.5
    c.loc[at & (c.predictor == "twin_lockstep"), "mean_err_pct"] = -0.6
    assert not p87.claims(c, "post-hoc").set_index("claim").loc["e", "met"]
    other = (c.variant == p87.GROUPED[1]) & (c.h == p87.HS[0]) & (c.predictor == "twin_lockstep")
    c.loc[at & (c.predictor == "twin_lockstep"), "mean_err_pct"] = -0.4
    c.loc[other, "mean_err_pct"] = 9.0
    assert p87.claims(c, "post-hoc").set_index("claim").loc["e", "met"]


@pytest.mark.parametrize("claim, column, rows, value, met", [
    ("a", "mean_err_pct", ("twin_lockstep", "grouped"), 1.0, True),
    ("b", "mean_err_pct", ("twin_lockstep", "grouped"), 2.0, True),
    ("b", "mean_err_pct", ("twin_lockstep", "grouped"), -2.01, False),
    ("d", "early_err_pct", ("twin_lockstep", "pairs"), 1.0, True),
])
def test_each_claim_turns_at_its_edge(p87, as_twin_lockstep, claim, column, rows, value, met):
    """(a) and (d) against lockstep set at 2.0 / -2.0 (half of it is the bound); (b) at 2%."""
    c = as_twin_lockstep[0].copy()
    name, kind = rows
    pick = list(p87.GROUPED) if kind == "grouped" else [p87.PAIRS, *p87.GROUPED]
    c.loc[c.variant.isin(pick) & (c.predictor == "lockstep"), ["mean_err_pct", "early_err_pct"]] = 2.0
    c.loc[c.variant.isin(pick) & (c.predictor == name), column] = value
    assert p87.claims(c, "post-hoc").set_index("claim").loc[claim, "met"] == met
    c.loc[c.variant.isin(pick) & (c.predictor == name), column] = value * 1.01 + 0.01 if claim != "b" else value
    if claim in "ad":
        assert not p87.claims(c, "post-hoc").set_index("claim").loc[claim, "met"]


def test_a_call_at_m_16384_is_refused_in_one_line(p87, registered, tmp_path, capsys):
    run = _call(p87, registered, tmp_path / "run", times={v: "twin_lockstep" for v in p87.VARIANTS})
    (run / "OUT_H7168" / "percta-tiles-32768-cutlass_ctapipe_w21.csv.gz").rename(
        run / "OUT_H7168" / "percta-tiles-16384-cutlass_ctapipe_w21.csv.gz")
    assert p87.main(["--judge", str(run), "--out", str(tmp_path / "j")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("plan87_exposed_rate: no ")
    assert "percta-tiles-32768-cutlass_ctapipe_w21.csv.gz (plan 87's" in err
    assert "\n" not in err and not (tmp_path / "j").exists()


def _claims(p87, c):
    return p87.claims(c, "post-hoc").set_index("claim")


def test_claim_d_counts_the_pairs(p87, as_twin_lockstep):
    """The pairs' early error alone pushed past half lockstep's: (d) missed (a (d) over the grouped producers only
    would still be met)."""
    c = as_twin_lockstep[0].copy()
    early = c.variant.isin([p87.PAIRS, *p87.GROUPED])
    c.loc[early & (c.predictor == "lockstep"), "early_err_pct"] = 2.0
    c.loc[(c.variant == p87.PAIRS) & (c.predictor == "twin_lockstep"), "early_err_pct"] = 4.0
    assert not _claims(p87, c).loc["d", "met"]


def test_the_adoption_reads_a_b_and_d_only(p87, as_twin_lockstep):
    """(b) alone missed: no adoption; (c) alone missed: adopted."""
    c = as_twin_lockstep[0].copy()
    one = (c.variant == p87.GROUPED[0]) & (c.h == p87.HS[1]) & (c.predictor == "twin_lockstep")
    b = c.copy()
    b.loc[one, "mean_err_pct"] = -2.01  # the others at 0: (a) still met against lockstep's ~3%
    cl = _claims(p87, b)
    assert cl.met.drop(["b", "adopt"]).all() and not cl.loc["b", "met"] and cl.loc["adopt", "value"] == "no"
    cc = c.copy()
    cc.loc[cc.variant.isin(p87.GROUPED) & (cc.predictor == "flat"), "mean_err_pct"] = 0.0
    cl = _claims(p87, cc)
    assert not cl.loc["c", "met"] and cl.loc["adopt", "value"] == "yes"


@pytest.mark.parametrize("flat, met", [(0.51, True), (0.5, False)])
def test_claim_c_is_strictly_under_the_flat_predictors_error(p87, as_twin_lockstep, flat, met):
    c = as_twin_lockstep[0].copy()
    g = c.variant.isin(p87.GROUPED)
    c.loc[g & (c.predictor == "twin_lockstep"), "mean_err_pct"] = 0.5
    c.loc[g & (c.predictor == "flat"), "mean_err_pct"] = -flat
    c.loc[g & (c.predictor == "lockstep"), "mean_err_pct"] = 9.0  # (c) is judged against flat, not lockstep
    assert _claims(p87, c).loc["c", "met"] == met


def test_claim_e_needs_the_lockstep_level_strictly_nearer(p87, as_twin_lockstep):
    c = as_twin_lockstep[0].copy()
    at = (c.variant == p87.GROUPED[0]) & (c.h == p87.HS[0])
    c.loc[at & (c.predictor == "twin"), "mean_err_pct"] = 0.7
    c.loc[at & (c.predictor == "twin_lockstep"), "mean_err_pct"] = -0.7
    assert not _claims(p87, c).loc["e", "met"]


def test_the_committed_h100_call_judges_as_committed_and_docs_quote_it(p87, tmp_path):
    """The call (bench/results/hw-h100/2026-12-07-registered87-1gpu, GPU-f4563d06) judged again gives the committed
    tables: every claim met, adopted, registered; docs/validation.md's plan 87 table is its cases.csv and its claims'
    figures are quoted; the profile took the rate (``ctasim.profiles``)."""
    from ctasim.spec import load_hardware

    c, cl = _rejudged(p87, "2026-12-07-registered87-1gpu", "validation-registered87", tmp_path)
    assert cl.met.all() and cl.loc["adopt", "value"] == "yes"
    assert cl.provenance.str.startswith("registered: predictions added in d6b3b2eb").all()
    assert load_hardware("h100-x8-mechanism").l2_hbm_exposed_gbps == load_hardware(p87.p86.TWIN).l2_hbm_exposed_gbps
    doc = _doc_section(p87, 87)
    _assert_doc_table(doc, c, p87.VARIANTS, ("flat", "lockstep", "twin_lockstep", "twin"))
    flat = " ".join(doc.split())
    for claim in "acd":
        a, b = cl.loc[claim, "value"].split(" against ")
        assert f"{a} against {b.rstrip('%')}" in flat or (a in flat and b in flat), claim
    pairs = c[c.variant == p87.PAIRS].groupby("predictor").mean_err_pct.apply(lambda x: x.abs().mean())
    assert f"(mean |error| {pairs['twin_lockstep']:.2f}% against lockstep's {pairs['lockstep']:.2f}%)" in flat
