"""bench/posthoc_sm_groups.py: the split of the SMs' late mainloop finds made-up groups and no group where there is
none, the committed tables are what the script computes (one run here), and they say what docs/validation.md quotes."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from tests.helpers import load_bench

RUN = "2026-12-04-registered50-1gpu"


@pytest.fixture(scope="module")
def psg():
    return load_bench("posthoc_sm_groups")


@pytest.fixture(scope="module")
def committed(psg):
    return {n: pd.read_csv(psg.OUT / f"{n}.csv", keep_default_na=False)
            for n in ("splits", "sets", "row-states", "by-state", "summary", "pairs-2gpu", "lost-share",
              "layer-splits")}


def _penalties(groups: dict[float, list[int]], jitter: float = 0.5, seed: int = 0) -> pd.Series:
    rng = np.random.default_rng(seed)
    return pd.Series({sm: level + rng.uniform(-jitter, jitter) for level, sms in groups.items() for sm in sms})


def test_the_split_finds_a_fast_or_slow_group_and_none_in_a_uniform_run(psg):
    small = [*range(32, 44), *range(78, 88), 126, 127]
    rest = [x for x in range(132) if x not in small]
    s = psg.split(_penalties({38.0: small, 52.0: rest}))
    assert (s["state"], s["n_fast"], s["n_slow"], s["clear"]) == ("24 fast", 24, 108, True)
    assert s["fast_sms"].split() == [str(x) for x in sorted(small)]
    assert s["fast_pct"] == pytest.approx(38.0, abs=0.5) and s["slow_pct"] == pytest.approx(52.0, abs=0.5)
    slow = rest[:54]
    s = psg.split(_penalties({10.0: [x for x in range(132) if x not in slow], 35.0: slow}))
    assert (s["state"], s["n_fast"], s["n_slow"]) == ("54 slow", 78, 54)
    u = psg.split(_penalties({20.0: list(range(132))}, jitter=2.0))
    assert (u["state"], u["clear"], u["fast_sms"]) == ("uniform", False, "")
    assert u["step"] < psg.CLEAR_POINTS
    with pytest.raises(ValueError, match="two SMs"):
        psg.split(pd.Series({0: 1.0, 1: np.nan}))
    # an SM without a penalty does not hide the step between the others
    s = psg.split(pd.Series({0: 1.0, 1: np.nan, 2: 20.0, 3: 21.0}))
    assert (s["state"], s["sms"], s["step"]) == ("1 fast", 3, 19.0)


def test_the_late_mainloop_is_each_sms_median_over_the_second_half_of_the_run(psg):
    # 8 tiles on 2 SMs; the first four taken (by t_acquire) are left out whatever their times
    t = pd.DataFrame({"sm": [0, 1, 0, 1, 0, 1, 0, 1], "t_acquire": [0, 1, 2, 3, 10, 11, 12, 13],
                      "t_mainloop_end": [9e9, 9e9, 9e9, 9e9, 10 + 2000, 11 + 5000, 12 + 4000, 13 + 7000]})
    got = psg.sm_late(t.sample(frac=1, random_state=1))
    assert got.to_dict() == {0: pytest.approx(3.0), 1: pytest.approx(6.0)}


def test_the_layer_splits_read_each_layers_tiles_alone(psg, tmp_path, monkeypatch):
    """Two layers on 132 SMs: the first runs alike, the second's SMs 0-23 run 20% faster than the rest (after its first
    half, which the late mainloop leaves out): only the second layer splits, 24 fast."""
    rows = []
    for layer in (0, 1):
        for i in range(132 * 8):
            sm, late = i % 132, i >= 132 * 4
            us = 100.0 if layer == 0 or not late else (80.0 if sm < 24 else 100.0)
            t0 = layer * 10**9 + i * 1000
            rows.append(dict(layer=layer, sm=sm, t_acquire=t0, t_mainloop_end=t0 + us * 1000))
    tiles = pd.DataFrame(rows)

    class Trace:
        def __init__(self, t):
            self.tiles = t

    ref = tiles[tiles["layer"] == 0].assign(t_mainloop_end=lambda d: d["t_acquire"] + 100_000)
    fake = {("m=1", "intragpu"): Trace(ref), ("m=1", "intragpu-row"): Trace(tiles)}
    monkeypatch.setattr(psg.pom, "first_runs", lambda bundle: iter(fake.items()))
    got = psg.layer_splits(tmp_path / "run" / "exp" / "b.npz").set_index("layer")
    assert got.loc[0, "state"] == "uniform" and got.loc[1, "state"] == "24 fast"
    assert got.loc[1, "fast_pct"] == pytest.approx(-20.0) and got.loc[0, "mean_pct"] == pytest.approx(0.0)
    fake.pop(("m=1", "intragpu"))  # no groups of 8 beside it: nothing to read
    assert psg.layer_splits(tmp_path / "run" / "exp" / "b.npz").empty


def test_a_machines_sets_are_its_slow_groups_complement_and_whole_tpcs(psg):
    fast54 = " ".join(str(x) for x in range(54, 132))  # a 54-slow split: SMs 0-53 slow
    s = pd.DataFrame([dict(machine="GPU-a", run="r1", case="m=1", clear=True, state="54 slow", fast_sms=fast54),
                      dict(machine="GPU-a", run="r2", case="m=2", clear=True, state="54 slow", fast_sms=fast54),
                      dict(machine="GPU-a", run="r1", case="m=3", clear=False, state="uniform", fast_sms=""),
                      dict(machine="GPU-a", run="r1", case="m=4", clear=True, state="24 fast",
                           fast_sms=" ".join(str(x) for x in range(54, 78)))])
    t = psg.sets(s).set_index("state")
    assert t.loc["54 slow", "set"] == " ".join(str(x) for x in range(54))
    assert (t.loc["54 slow", "cases"], t.loc["54 slow", "runs"], t.loc["54 slow", "sets_of_machine_state"]) == (2, 2, 1)
    assert t["tpc_pairs"].all()
    assert not psg._in_pairs("0 1 2")
    assert psg.disjoint(t.reset_index())["shared"].tolist() == [0]
    overlap = t.reset_index().assign(set=lambda d: d["set"].where(d["state"] != "24 fast", "0 1 54 55"))
    assert psg.disjoint(overlap)["shared"].tolist() == [2]


def test_the_state_prices_are_the_threshold_laws_two_states_and_their_mean(psg, committed):
    r = committed["row-states"]
    row = r[(r["experiment"] == "reg49-chain-order-h9216") & (r["case"] == "m=8192")].iloc[0]
    # the committed table's prices: a record made before plan 67's adoption on an H200 (2026-12-06), its profile then
    got = psg.state_prices("reg49-chain-order-h9216", "m=8192", psg.dated_profile("reg49-chain-order-h9216"))
    assert got == {k: pytest.approx(row[k], abs=1e-3) for k in ("hold_pct", "thrash_pct", "half_pct")}
    assert got["hold_pct"] < got["half_pct"] < got["thrash_pct"]  # at H = 9216 the two states part
    assert got["half_pct"] == pytest.approx((got["hold_pct"] + got["thrash_pct"]) / 2)
    assert (r["hold_pct"] <= r["thrash_pct"] + 1e-6).all()


def test_the_share_lost_is_where_the_measured_penalty_sits_between_the_two_states(psg, tmp_path):
    r = pd.DataFrame([dict(run=run, machine="GPU-x", case=f"m={i}", state="uniform", hold_pct=2.0, thrash_pct=thr,
                           makespan_pct_meas=meas) for run, i, thr, meas in (
        ("a", 1, 12.0, 7.0), ("a", 2, 22.0, 22.0), ("a", 3, 5.0, 5.0),  # the third: the states part by 3, left out
        ("b", 1, 12.0, 2.0), ("c", 1, 12.0, 12.0))])
    pd.DataFrame(dict(run=["a", "b", "c"], cv_median=[0.7, 0.9, 0.6])).to_csv(tmp_path / "m.csv", index=False)
    per, rho = psg.lost_share(r, tmp_path / "m.csv")
    per = per.set_index("run")
    assert per.loc["a", ["cases", "share"]].tolist() == [2, 0.75] and per.loc["b", "share"] == 0.0
    assert rho < 0  # the widest spread kept the most
    assert per.index.tolist() == ["c", "a", "b"]  # by gap spread


def test_one_runs_splits_are_the_committed_ones(psg, committed, tmp_path):
    assert psg.main(["--runs", RUN, "--out", str(tmp_path)]) == 0
    got = pd.read_csv(tmp_path / "splits.csv", keep_default_na=False)
    want = committed["splits"][committed["splits"]["run"] == RUN].reset_index(drop=True)
    assert len(got) == len(want) == 3 * 3 * 4  # plan 50's call: three experiments of 3 M x 4 orders
    pd.testing.assert_frame_equal(got, want)
    assert not (tmp_path / "pairs-2gpu.csv").exists()  # the 2xH200 traces only with every run
    for name, key in (("row-states", ["run", "experiment", "case"]), ("lost-share", ["run"]),
                      ("layer-splits", ["run", "experiment", "case", "layer"])):
        across = ["runs", "states", "makespan_range"]  # row-states' figures over every run of a shape
        got = pd.read_csv(tmp_path / f"{name}.csv", keep_default_na=False).drop(columns=across, errors="ignore")
        want = committed[name][committed[name]["run"] == RUN].drop(columns=across, errors="ignore")
        want = want.sort_values(key).reset_index(drop=True)
        assert len(got) == len(want) > 0
        pd.testing.assert_frame_equal(got.sort_values(key).reset_index(drop=True), want, check_dtype=False)
    assert psg.main(["--runs", "no-such-run", "--out", str(tmp_path / "x")]) == 2
    assert not (tmp_path / "x").exists()
    # a run that traced no row order: empty row tables, not an error
    assert psg.main(["--runs", "2026-12-04-registered52-1gpu", "--out", str(tmp_path / "y")]) == 0
    assert pd.read_csv(tmp_path / "y" / "row-states.csv").empty


def test_a_bundle_is_read_on_its_own_and_the_h100_shows_a_24_fast_set(psg, capsys, tmp_path):
    """``--bundle``: the committed H100 run (exploratory, bench/results/hw-h100) splits in row order only, 24 fast at
    every M, one set in whole TPCs; a path that is no bundle is refused in one line."""
    b = psg.ROOT / "bench/results/hw-h100/2026-12-05-row-groups-gaps/row/reg59-adopted-h8960/ctapipe_traces.trace.npz"
    s = psg.bundle_splits(b)
    clear = s[s["clear"]]
    assert set(clear["order"]) == {"intragpu-row"} and clear["state"].tolist() == ["24 fast"] * 3
    assert clear["fast_sms"].nunique() == 1 and psg._in_pairs(clear["fast_sms"].iloc[0])
    assert (s["machine"] == "GPU-291847ac").all()
    capsys.readouterr()
    assert psg.main(["--bundle", str(b)]) == 0
    assert capsys.readouterr().out.count("intragpu-row 24 fast: 6 7 32 33") == 3
    assert psg.main(["--bundle", str(tmp_path / "none.npz"), "--out", str(tmp_path / "o")]) == 2
    err = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert len(err) == 1 and "not a chain-kernel trace bundle" in err[0] and not (tmp_path / "o").exists()


def test_the_committed_tables_say_what_the_docs_quote(psg, committed):
    sm = committed["summary"].set_index("order")
    assert (sm["clear"].drop("intragpu-row") == 0).all()  # only row order splits
    assert sm.loc["intragpu-row", ["runs", "clear", "24 fast", "54 slow", "60 slow"]].tolist() == [109, 42, 28, 12, 1]
    t = committed["sets"]
    assert (t["sets_of_machine_state"] == 1).all() and t["tpc_pairs"].all()  # one set per machine and state
    assert t["machine"].nunique() == 13  # of the 17 machines traced (plan 59's shows no split)
    assert psg.disjoint(t)["shared"].eq(0).all() and len(psg.disjoint(t)) == 5
    per = {st: (g["machine"].nunique(), g["set"].nunique()) for st, g in t.groupby("state")}
    assert per == {"18 fast": (1, 1), "24 fast": (10, 4), "54 slow": (6, 3), "60 slow": (1, 1)}
    b = committed["by-state"].set_index("state")
    assert b.loc["54 slow", ["runs", "makespan_err", "mainloop_err"]].tolist() == [12, 5.78, 22.64]
    assert b.loc["24 fast", ["runs", "makespan_err"]].tolist() == [28, -3.57]
    # given the state, the threshold law's price of it is the nearer: every SM lost -> thrash, one half -> half
    assert b.loc["24 fast", ["makespan_abs_err", "thrash_abs_err"]].tolist() == [4.09, 3.34]
    assert b.loc["54 slow", ["makespan_abs_err", "half_abs_err"]].tolist() == [8.37, 3.94]
    r = committed["row-states"]
    shapes = r[r["runs"] > 1].groupby(["experiment", "case"])["makespan_range"].first()
    assert (len(shapes), int((shapes > 6).sum())) == (34, 16)
    same = r[(r["machine"] == "GPU-669af4b9") & (r["experiment"] == "reg56-chain-gradual-h7936")
             & (r["case"] == "m=12288")]
    assert sorted(same["state"]) == ["24 fast", "54 slow"]  # one machine, one shape, two runs, two states
    lay = committed["layer-splits"].assign(clear=lambda d: d["state"] != "uniform").groupby("layer")
    assert lay["clear"].sum().tolist()[:2] == [15, 40] and lay["case"].size().tolist()[:2] == [109, 109]
    ls = committed["lost-share"]
    low = ls[ls["share"] < 0.6]  # the runs that kept the most: three of the four widest spreads, each half-lost once
    assert len(ls) == 16 and len(low) == 3 and low["states"].str.contains("54 slow").all()
    assert set(low["cv_median"]) <= set(ls["cv_median"].nlargest(4))
    assert round(psg.lost_share(committed["row-states"])[1], 2) == -0.56
    two = committed["pairs-2gpu"]
    c = two[two["clear"]]
    assert (c[(c["gpu"] == 1) & (c["m"] >= 8192)]["state"].isin(["24 fast", "12 fast"])).all()
    assert len(c[c["state"] == "54 slow"]) == 1
