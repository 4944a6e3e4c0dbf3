"""bench/posthoc_h100_x8_exposed.py: the committed H100 producer-alone calls under h100-x8-mechanism and its twin with
plan 76's exposed rate (post-hoc), and the figures docs/validation.md quotes from it."""

from __future__ import annotations

import dataclasses

import pytest

from tests.helpers import load_bench


@pytest.fixture(scope="module")
def ph():
    return load_bench("posthoc_h100_x8_exposed")


@pytest.fixture(scope="module")
def cases(ph):
    return ph.cases()


def test_the_committed_tables_are_what_the_script_gives(ph, cases, tmp_path):
    assert ph.main(["--out", str(tmp_path)]) == 0
    for name in ("cases.csv", "summary.csv"):
        assert (tmp_path / name).read_text() == (ph.OUT / name).read_text(), name


def test_the_twin_is_the_profile_with_plan_76s_exposed_rate(ph):
    """The twin is the profile as it was before registered plan 87's adoption (what this post-hoc table prices) with
    plan 76's exposed rate; the adopted profile is the twin."""
    from ctasim.profiles import before_h100_x8_exposed
    from ctasim.spec import load_hardware

    a, b = before_h100_x8_exposed(ph.PROFILE), load_hardware(ph.TWIN)
    assert dataclasses.replace(b, name=a.name, source=a.source, l2_hbm_exposed_gbps=0.0) == a
    now = load_hardware(ph.PROFILE)
    assert dataclasses.replace(b, name=now.name, source=now.source) == now
    assert b.l2_hbm_exposed_gbps == load_hardware("h100-x1-datasheet").l2_hbm_exposed_gbps


def test_the_docs_figures(ph, cases):
    """What plan 85's post-hoc paragraph says: the grouped producers 3.67% -> 0.74% (flat 1.46%); the first two waves
    of the pairs and grouped within -0.2 to +1.7% under the twin, +2.3 to +4.9% under lockstep; where the first two
    waves say the profile's rate instead (row order on both units, plan 83's pairs)."""
    s = ph.summary(cases).set_index(["call", "kind", "predictor"]).sort_index()
    g = s.loc[("plan 85", "grouped")]
    assert (round(g.loc["profile", "mean_abs_err_pct"], 2), round(g.loc["twin", "mean_abs_err_pct"], 2),
            round(g.loc["flat", "mean_abs_err_pct"], 2)) == (3.67, 0.74, 1.46)
    early = cases[(cases.call == "plan 85") & (cases.kind != "row")]
    assert (round(early.early_twin_lockstep_err_pct.min(), 1), round(early.early_twin_lockstep_err_pct.max(), 1)) == (
        -0.2, 1.7)
    assert (round(early.early_lockstep_err_pct.min(), 1), round(early.early_lockstep_err_pct.max(), 1)) == (2.3, 4.9)
    first = {(call, kind): (round(s.loc[(call, kind, "twin_lockstep"), "early_mean_abs_err_pct"], 2),
                            round(s.loc[(call, kind, "lockstep"), "early_mean_abs_err_pct"], 2))
             for call, kind in (("plan 85", "row"), ("plan 83", "row"), ("plan 83", "pairs"))}
    assert first == {("plan 85", "row"): (13.41, 9.82), ("plan 83", "row"): (9.25, 5.77),
                     ("plan 83", "pairs"): (2.08, 1.73)}


def test_a_slower_exposed_rate_moves_the_twin(ph, monkeypatch):
    """The twin's figures come from its profile: charged at the datasheet rate again it is the profile."""
    import ctasim.spec as spec

    real = spec.load_hardware

    def at_hbm(name):
        hw = real(name)
        return dataclasses.replace(hw, l2_hbm_exposed_gbps=0.0) if name == ph.TWIN else hw

    monkeypatch.setattr(spec, "load_hardware", at_hbm)
    c = ph.cases()
    assert (c.twin_err_pct - c.profile_err_pct).abs().max() < 1e-9
