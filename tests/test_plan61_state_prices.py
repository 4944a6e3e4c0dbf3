"""bench/plan61_state_prices.py: registered plan 61's registration, its claims on made-up runs (each state priced
near or far), and its judge on plan 58's committed run (post-hoc) and on a run it must refuse (no GPU)."""

from __future__ import annotations

import pandas as pd
import pytest

from tests.helpers import assert_registration_reproduced, load_bench


@pytest.fixture(scope="module")
def p61():
    return load_bench("plan61_state_prices")


@pytest.fixture(scope="module")
def registered(p61):
    return pd.read_csv(p61.REGISTERED / "predicted.csv")


def test_the_registration_is_the_profile_and_the_threshold_laws_states(p61, registered):
    assert len(registered) == 2 * 3 + 2 * 2  # row order at every case of the four experiments
    assert_registration_reproduced(p61.register(), registered, ("experiment", "case"),
                                   ("profile_pct", "hold_pct", "thrash_pct", "half_pct"))
    # where a layer's weights fit the L2 the two states are one; at H = 8960 they part by 8-32 points
    r = registered.set_index(["experiment", "case"])
    fits = r.loc["reg59-adopted-h5632"]
    assert (fits["hold_pct"] == fits["thrash_pct"]).all()
    wide = r.loc["reg59-adopted-h8960"]
    assert ((wide["thrash_pct"] - wide["hold_pct"]) > 7).all()


def _run(registered, states):
    """Made-up cases: each (experiment, case) measured at ``states[(experiment, case)] = (state, penalty)``, else
    uniform at the profile's penalty."""
    rows = []
    for _, r in registered.iterrows():
        state, pen = states.get((r["experiment"], r["case"]), ("uniform", r["profile_pct"]))
        rows.append(dict(experiment=r["experiment"], case=r["case"], machine="GPU-x", state=state,
                         makespan_pct_meas=pen))
    m = pd.DataFrame(rows).merge(registered, on=["experiment", "case"])
    m["state_price_pct"] = [r[p] if (p := {"24 fast": "thrash_pct", "54 slow": "half_pct"}.get(r["state"])) else None
                            for _, r in m.iterrows()]
    m["state_price_pct"] = m["state_price_pct"].astype(float)
    m["profile_err"] = m["profile_pct"] - m["makespan_pct_meas"]
    m["state_price_err"] = m["state_price_pct"] - m["makespan_pct_meas"]
    return m


H = "reg59-adopted-h8960"


def test_states_at_their_prices_meet_every_claim_and_at_the_profiles_miss_them(p61, registered):
    r = registered.set_index(["experiment", "case"])
    near = {(H, "m=10240"): ("54 slow", r.loc[(H, "m=10240"), "half_pct"] + 1.0),
            (H, "m=14336"): ("24 fast", r.loc[(H, "m=14336"), "thrash_pct"] - 1.0)}
    cl = p61.claims(_run(registered, near), "test").set_index("claim")
    assert cl["met"].all() and cl["judged"].all(), cl
    assert cl.loc["c", "value"] == "2 of 2"
    far = {(H, "m=10240"): ("54 slow", r.loc[(H, "m=10240"), "profile_pct"]),
           (H, "m=14336"): ("24 fast", r.loc[(H, "m=14336"), "profile_pct"])}
    cl = p61.claims(_run(registered, far), "test").set_index("claim")
    assert not cl[["met"]].any().item() and cl["judged"].all(), cl  # the profile exact: no price beats it
    assert cl.loc["c", "value"] == "1 of 2"  # thrash is 4 points over the profile at M = 14336, the half 12 under
    none = p61.claims(_run(registered, {}), "test").set_index("claim")
    assert not none["judged"].any() and not none["met"].any()


def test_the_cases_price_each_run_by_its_state(p61, registered):
    planted = {(H, "m=6144"): "24 fast", (H, "m=10240"): "54 slow", (H, "m=14336"): "60 slow"}
    meas = pd.DataFrame([dict(experiment=e, case=c, order=o, late_us=100.0,
                              makespan_ms={"intragpu": 1.0, "intragpu-row": 1.2}.get(o, 1.1), machine="GPU-x",
                              state=planted.get((e, c), "uniform") if o == "intragpu-row" else "uniform")
                         for e, c in registered[["experiment", "case"]].itertuples(index=False)
                         for o in ("intragpu", "intragpu-g4", "intragpu-row")])
    c = p61.cases(registered, meas).set_index(["experiment", "case"])
    assert len(c) == len(registered) and c["makespan_pct_meas"].round(6).eq(20.0).all()
    for key, price in (((H, "m=6144"), "thrash_pct"), ((H, "m=10240"), "half_pct"), ((H, "m=14336"), "half_pct")):
        row = c.loc[key]
        assert row["state_price_pct"] == row[price]
        assert row["state_price_err"] == pytest.approx(row[price] - 20)
    assert c.drop(index=list(planted))["state_price_pct"].isna().all()


def test_the_judge_reads_plan_58s_traced_run_and_refuses_a_missing_bundle(p61, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(p61.p60, "EXPERIMENTS", ("reg58-gap-law-h7424", "reg58-gap-law-h8448"))
    out = tmp_path / "out"
    assert p61.main(["--judge", str(p61.ROOT / "bench/results/hw/2026-12-05-registered58-1gpu"), "--out",
                     str(out)]) == 0
    c = pd.read_csv(out / "cases.csv")
    assert len(c) == 4 and c["state"].tolist() == ["uniform", "uniform", "uniform", "60 slow"]
    cl = pd.read_csv(out / "claims.csv").set_index("claim")
    assert cl["provenance"].str.startswith("post-hoc").all()
    assert not cl.loc["a", "judged"] and cl.loc[["b", "c"], "judged"].all()
    capsys.readouterr()
    assert p61.main(["--judge", str(tmp_path / "empty"), "--out", str(tmp_path / "o2")]) == 2
    err = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert len(err) == 1 and "ctapipe_traces.trace.npz" in err[0]
    assert not (tmp_path / "o2").exists()
