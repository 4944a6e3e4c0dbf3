"""bench/plan60_sm_groups.py: registered plan 60's registration, its claims on made-up runs (SM groups planted or
broken), and its judge on plan 58's committed run (post-hoc) and on a run it must refuse (no GPU)."""

from __future__ import annotations

import pandas as pd
import pytest

from tests.helpers import assert_registration_reproduced, load_bench

SMALL = [*range(32, 44), *range(78, 88), 126, 127]
"""A 24-fast set of the committed traces (posthoc-sm-groups/sets.csv: seven machines)."""
HALF = [x for x in range(132) if x not in SMALL][:54]
"""A made-up 54-slow set, whole TPCs, disjoint from SMALL."""


@pytest.fixture(scope="module")
def p60():
    return load_bench("plan60_sm_groups")


@pytest.fixture(scope="module")
def registered(p60):
    return pd.read_csv(p60.REGISTERED / "predicted.csv")


def test_the_registration_is_the_profiles_figures(p60, registered):
    assert len(registered) == 2 * 3 * 4 + 2 * 2 * 4  # plan 59: 2 x 3 M x 4 orders; plan 58: 2 x 2 M x 4 orders
    assert_registration_reproduced(p60.register(), registered, ("experiment", "case", "order"),
                                   ("late_us", "makespan_ms"))


def _run(registered, planted=(), machine="GPU-00000000"):
    """A measurement whose figures are the registration's, every run uniform, but ``planted``: (experiment, case,
    order, state, slow SMs, makespan factor) -- that run split into the given slow SMs and its makespan scaled."""
    m = registered.assign(machine=machine, state="uniform", clear=False, n_fast=132, n_slow=0, step=1.0,
                          fast_pct=0.0, slow_pct=0.0, mean_pct=0.0, fast_sms="")
    for exp, case, order, state, slow, factor in planted:
        at = (m["experiment"] == exp) & (m["case"] == case) & (m["order"] == order)
        assert at.sum() == 1
        fast = [x for x in range(132) if x not in slow]
        m.loc[at, ["state", "clear", "n_fast", "n_slow", "step", "fast_sms"]] = [
            state, True, len(fast), len(slow), 12.0, " ".join(map(str, fast))]
        m.loc[at, "makespan_ms"] *= factor
    return m


def _claims(p60, registered, planted=(), **kw):
    return p60.claims(p60.cases(registered, _run(registered, planted, **kw)), "test").set_index("claim")


H8960 = "reg59-adopted-h8960"
REST = [x for x in range(132) if x not in SMALL]


def test_no_split_anywhere_meets_a_and_d_and_judges_nothing_else(p60, registered):
    cl = _claims(p60, registered)
    assert cl.loc[["a", "d"], "met"].all() and cl.loc[["a", "d"], "judged"].all()
    assert not cl.loc["b", "met"]  # it asks for at least one split
    assert not cl.loc[["c", "e", "f"], "judged"].any() and not cl.loc[["c", "e", "f"], "met"].any()


def test_the_groups_as_read_post_hoc_meet_every_claim(p60, registered):
    # one half slow at M = 10240 with row order's makespan penalty under the model's; every SM slow at 14336 as priced
    planted = [(H8960, "m=10240", "intragpu-row", "54 slow", HALF, 0.9),
               (H8960, "m=14336", "intragpu-row", "24 fast", REST, 1.0),
               ("reg58-gap-law-h8448", "m=16384", "intragpu-row", "24 fast", REST, 1.0)]
    cl = _claims(p60, registered, planted)
    assert cl["met"].all() and cl["judged"].all(), cl
    assert cl.loc["b", "value"] == "3 of 10 split: 24 fast, 24 fast, 54 slow"
    assert cl.loc["e", "value"] == "1 of 1"


BASE = [(H8960, "m=14336", "intragpu-row", "24 fast", REST, 1.0)]
"""Every run below adds its change to one all-lost row-order run, priced as measured."""
APART = [*range(44, 78), *range(88, 94)]
"""40 SMs in whole TPCs that share none with SMALL."""


@pytest.mark.parametrize("change, missed", [
    ([(H8960, "m=6144", "intragpu", "38 slow", list(range(88, 126)), 1.0)], {"a"}),  # groups of 8 splits
    ([(H8960, "m=6144", "intragpu-row", "40 slow", APART, 0.9)], {"b"}),  # a size never seen
    ([(H8960, "m=6144", "intragpu-row", "54 slow", [*APART, *range(94, 108)], 0.9),
      (H8960, "m=10240", "intragpu-row", "54 slow", HALF, 0.9)], {"c"}),  # two 54s on one machine
    ([(H8960, "m=6144", "intragpu-row", "54 slow", [*range(45, 78), *range(88, 109)], 0.9)], {"c"}),  # half TPCs
    ([(H8960, "m=6144", "intragpu-row", "54 slow", list(range(32, 86)), 0.9)], {"c"}),  # the 54 holds SMs of the 24
    ([("reg59-adopted-h5632", "m=6144", "intragpu-row", "54 slow", HALF, 0.9)], {"d"}),  # splits where W fits
    ([(H8960, "m=10240", "intragpu-row", "54 slow", HALF, 1.3)], {"e"}),  # the half-lost run priced under
    ([(H8960, "m=6144", "intragpu-row", "24 slow", APART[:24], 0.9)], {"b"}),  # the sizes seen, the sides not
])
def test_each_broken_reading_misses_its_claim(p60, registered, change, missed):
    cl = _claims(p60, registered, BASE + change)
    judged = cl[cl["judged"]]
    assert set(judged.index[~judged["met"]]) == missed, cl


def test_f_compares_how_far_off_not_which_way(p60, registered):
    """The all-lost run priced 20% under its measured makespan (the profile far off), the half-lost one 2% over (near):
    (e) is met, (f) is not -- a signed mean would have met it."""
    planted = [(H8960, "m=14336", "intragpu-row", "24 fast", REST, 1.25),
               (H8960, "m=10240", "intragpu-row", "54 slow", HALF, 0.98)]
    cl = _claims(p60, registered, planted)
    assert cl.loc["e", "met"] and cl.loc["f", "judged"] and not cl.loc["f", "met"], cl


def test_one_split_judges_c_on_whole_tpcs_alone(p60, registered):
    cl = _claims(p60, registered, [(H8960, "m=14336", "intragpu-row", "24 fast", REST, 1.0)])
    assert cl.loc["c", "judged"] and cl.loc["c", "met"]
    assert cl.loc["c", "value"] == "1 clear splits, 1 sets: whole TPCs True"
    broken = [x for x in range(132) if x not in SMALL[1:]]  # SM 32 without SM 33
    cl = _claims(p60, registered, [(H8960, "m=14336", "intragpu-row", "23 fast", broken, 1.0)])
    assert cl.loc["c", "judged"] and not cl.loc["c", "met"] and not cl.loc["b", "met"]


def test_a_machine_already_read_must_show_its_committed_sets(p60, registered):
    """GPU-c2e8a148 (plan 50's first machine) showed SMALL as its 24 fast: another 24 there misses (c)."""
    ok = [(H8960, "m=14336", "intragpu-row", "24 fast", REST, 1.0)]
    assert _claims(p60, registered, ok, machine="GPU-c2e8a148").loc["c", "met"]
    other = [x for x in range(132) if x not in range(24)]
    cl = _claims(p60, registered, [(H8960, "m=14336", "intragpu-row", "24 fast", other, 1.0)], machine="GPU-c2e8a148")
    assert cl.loc["c", "judged"] and not cl.loc["c", "met"]


def test_the_judge_reads_plan_58s_traced_run_and_refuses_a_missing_bundle(p60, tmp_path, monkeypatch, capsys):
    """Plan 58's committed run holds two of the four experiments (measured before this plan: post-hoc)."""
    monkeypatch.setattr(p60, "EXPERIMENTS", ("reg58-gap-law-h7424", "reg58-gap-law-h8448"))
    run = p60.ROOT / "bench/results/hw/2026-12-05-registered58-1gpu"
    out = tmp_path / "out"
    assert p60.main(["--judge", str(run), "--out", str(out)]) == 0
    c = pd.read_csv(out / "cases.csv", keep_default_na=False)
    assert len(c) == 16 and c["machine"].eq("GPU-1047cac3").all()
    assert c[c["clear"]][["case", "order", "state"]].values.tolist() == [["m=16384", "intragpu-row", "60 slow"]]
    cl = pd.read_csv(out / "claims.csv").set_index("claim")
    assert cl["provenance"].str.startswith("post-hoc").all()
    assert cl.loc[["a", "b", "c", "e"], "met"].all() and not cl.loc[["d", "f"], "judged"].any()
    capsys.readouterr()
    assert p60.main(["--judge", str(tmp_path / "empty"), "--out", str(tmp_path / "o2")]) == 2
    err = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert len(err) == 1 and "ctapipe_traces.trace.npz" in err[0] and "plan 59's call" in err[0]
    assert not (tmp_path / "o2").exists()
