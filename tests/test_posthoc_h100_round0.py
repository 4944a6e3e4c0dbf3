"""bench/posthoc_h100_round0.py: the per-tile features of made-up runs whose answers are known by construction (ticket
ranks, panel sharers, footprints, the tables over them), and the committed tables are what the committed traces give
(no GPU)."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest

from tests.helpers import load_bench

K = 64
"""The made-up runs' K: an A panel 128 x 64 x 2 = 16 KiB, a W panel 32 KiB."""
A_BYTES, W_BYTES = 128 * K * 2, 256 * K * 2


@pytest.fixture(scope="module")
def ph():
    return load_bench("posthoc_h100_round0")


def _run() -> pd.DataFrame:
    """A made-up row-order run: 1 layer of 2 row-blocks x 4 column panels on 4 SMs (one CTA each), T = 1000 ns.
    Round 0: row 0's tiles (tickets 0-3) on SMs 0-3, starting at 0, 10, 20, 30 ns, each 1000 ns but SM 1's 1200.
    Round 1: row 1's tiles, each 1000 ns, taken by the CTAs in the order they free (SMs 0, 2, 3, 1)."""
    rows = []
    end = {}
    for sm in range(4):
        acq = 10 * sm
        ml = 1200 if sm == 1 else 1000
        rows.append(dict(layer=0, cta=sm, sm=sm, tile_m=0, tile_n=sm, t_acquire=acq, t_mainloop_end=acq + ml))
        end[sm] = acq + ml
    for col, sm in enumerate(sorted(end, key=end.get)):
        acq = end[sm] + 10
        rows.append(dict(layer=0, cta=sm, sm=sm, tile_m=1, tile_n=col, t_acquire=acq, t_mainloop_end=acq + 1000))
    return pd.DataFrame(rows)


@pytest.fixture(scope="module")
def feats(ph):
    f = ph.tile_features(_run(), 1, K, 1000.0, frozenset({2, 3}))
    return f.set_index(["round", "sm"]).sort_index()


def test_order_rank_is_the_position_in_the_chain_kernels_ticket_order(ph):
    t = pd.DataFrame([dict(layer=l, tile_m=m, tile_n=n) for l in range(2) for m in range(4) for n in range(3)])
    pairs = ph.order_rank(t, 2).reshape(2, 4, 3)
    # pairs of row-blocks column by column: (0,0) (1,0) (0,1) (1,1) (0,2) (1,2), then rows 2-3; layer 1 after layer 0
    assert pairs[0, :2].tolist() == [[0, 2, 4], [1, 3, 5]]
    assert pairs[0, 3, 2] == 11 and pairs[1, 0, 0] == 12
    rows = ph.order_rank(t, 1).reshape(2, 4, 3)
    assert rows[0].ravel().tolist() == list(range(12)) and rows[1, 0, 0] == 12


def test_sharers_are_taken_over_the_key_among_concurrent_tiles(ph):
    """Tiles 0-2 share key 5, tile 3 (the earliest) has key 7; tile 0 does not run with tile 2; tiles 1 and 2 start
    together, 2 holding the earlier ticket."""
    acq = np.array([100.0, 50.0, 50.0, 10.0])
    key = np.array([5, 5, 5, 7])
    tie = np.array([3, 2, 1, 0])
    side = np.array([0.0, 1.0, 1.0, 0.0])
    conc = np.ones((4, 4), dtype=bool)
    conc[0, 2] = conc[2, 0] = False
    s = ph.sharers(acq, key, tie, side, conc)
    assert s["first"].tolist() == [0, 0, 1, 1]
    assert s["sharers"].tolist() == [1, 2, 1, 0]
    assert s["lag_ns"].tolist() == [50.0, 0.0, 0.0, 0.0]
    assert s["other"].tolist() == [1, 1, 0, 0]
    assert np.isnan(ph.sharers(acq, key, tie, np.full(4, np.nan), conc)["other"]).all()
    # only the first rows are the tiles asked about; the other columns are tiles they may run with
    part = ph.sharers(acq, key, tie, side, conc[:2])
    assert part["first"].tolist() == [0, 0] and part["sharers"].tolist() == [1, 2]


def test_distinct_counts_the_keys_each_row_selects(ph):
    mask = np.array([[True, True, False, True], [False, False, False, True], [False] * 4])
    assert ph.distinct(mask, np.array([3, 3, 9, 4])).tolist() == [2, 1, 0]


def test_tile_features_of_a_made_up_run(feats):
    r0 = feats.loc[0]
    assert r0["tile_n"].tolist() == [0, 1, 2, 3]
    assert r0["ratio"].tolist() == pytest.approx([1.0, 1.2, 1.0, 1.0])
    assert r0["a_first"].tolist() == [1, 0, 0, 0] and r0["a_sharers"].tolist() == [3, 3, 3, 3]
    assert r0["a_lag_ns"].tolist() == [0, 10, 20, 30]
    assert r0["a_lag_tiles"].tolist() == pytest.approx([0, .01, .02, .03])
    # every round-0 tile has its own W panel: row 1's tiles start after the window, so none shares it
    assert r0["w_first"].tolist() == [1, 1, 1, 1] and r0["w_sharers"].tolist() == [0, 0, 0, 0]
    assert r0["small_set"].tolist() == [0, 0, 1, 1] and r0["half"].tolist() == [0, 0, 0, 0]
    assert r0["a_other_set"].tolist() == [2, 2, 2, 2] and r0["a_other_half"].tolist() == [0, 0, 0, 0]
    assert r0["tpc_same_a"].tolist() == [1, 1, 1, 1] and r0["tpc_same_w"].tolist() == [0, 0, 0, 0]
    assert r0["rank"].tolist() == [0, 1, 2, 3] and r0["acq_tiles"].tolist() == pytest.approx([0, .01, .02, .03])
    mib = 2 ** 20
    assert r0["fp_start_mib"].tolist() == pytest.approx([(A_BYTES + n * W_BYTES) / mib for n in (1, 2, 3, 4)])
    assert r0["fp_window_mib"].tolist() == pytest.approx([(A_BYTES + 4 * W_BYTES) / mib] * 4)


def test_tile_features_of_round_1_see_the_tiles_still_running(feats):
    r1 = feats.loc[1]
    # SM 0 takes ticket 4 (1,0) at 1010; SM 1's round-0 tile still runs until 1210, on row 0: not an A sharer
    assert r1.loc[0, ["tile_m", "tile_n"]].tolist() == [1, 0]
    assert r1.loc[0, "a_first"] == 1 and r1.loc[0, "a_sharers"] == 3 and r1.loc[0, "w_sharers"] == 0
    # SM 1 starts last (1220, ticket 7): the first row-1 tile started 210 ns before; its round-0 tile ended at 1210
    assert r1.loc[1, "tile_n"] == 3 and r1.loc[1, "a_lag_ns"] == 210 and r1.loc[1, "rank"] == 3
    assert r1.loc[1, "fp_start_mib"] == pytest.approx((A_BYTES + 4 * W_BYTES) / 2**20)
    # at SM 0's start (1010) the round-0 tiles of SMs 1-3 (row 0, columns 1-3) still run: two A panels, four W
    assert r1.loc[0, "fp_start_mib"] == pytest.approx((2 * A_BYTES + 4 * W_BYTES) / 2**20)
    assert r1["ratio"].tolist() == pytest.approx([1.0] * 4)
    assert r1["acq_tiles"].tolist() == pytest.approx([0, 0.21, 0.02, 0.03])  # after the round's first start


def test_tile_features_count_later_rounds_tiles_that_start_within_the_window(ph):
    """Round 0 alone, with a window of 1.5 tile times: each round-0 tile's W panel is taken again by a round-1 tile
    (1010-1220 ns) inside it."""
    f = ph.tile_features(_run(), 1, K, 1000.0, rounds=1, window=1.5).sort_values("sm")
    assert f["round"].tolist() == [0] * 4
    assert f["w_sharers"].tolist() == [1, 1, 1, 1] and f["w_first"].tolist() == [1, 1, 1, 1]
    assert f["a_sharers"].tolist() == [3, 3, 3, 3]
    assert f["fp_window_mib"].tolist() == pytest.approx([(2 * A_BYTES + 4 * W_BYTES) / 2**20] * 4)


def test_tile_features_in_pairs_of_row_blocks(ph):
    """Pairs order on 2 x 2 tiles, one round on 4 SMs in ticket order: a TPC's two SMs (0-1, 2-3) share a W panel and
    not an A panel, and the first of each pair leads its W panel."""
    t = pd.DataFrame([dict(layer=0, cta=sm, sm=sm, tile_m=sm % 2, tile_n=sm // 2, t_acquire=10 * sm,
                           t_mainloop_end=10 * sm + 1000) for sm in range(4)])
    f = ph.tile_features(t, 2, K, 1000.0).set_index("sm").sort_index()
    assert f["rank"].tolist() == [0, 1, 2, 3]
    assert f["tpc_same_w"].tolist() == [1, 1, 1, 1] and f["tpc_same_a"].tolist() == [0, 0, 0, 0]
    assert f["w_first"].tolist() == [1, 0, 1, 0] and f["w_sharers"].tolist() == [1, 1, 1, 1]
    assert f["w_lag_ns"].tolist() == [0, 10, 0, 10] and f["a_lag_ns"].tolist() == [0, 0, 20, 20]
    assert f["a_first"].tolist() == [1, 1, 0, 0]
    assert f["small_set"].isna().all() and f["a_other_set"].isna().all()


def _table(ph, feats) -> pd.DataFrame:
    f = feats.reset_index()
    keys = dict(gpu="H100", run="r", machine="m", experiment="e", case="m=1")
    return pd.concat([f.assign(order="intragpu", **keys),
                      f.assign(order="intragpu-row", **keys, ratio=f["ratio"] * 1.1,
                               mainloop_ns=f["mainloop_ns"] * 1.1)], ignore_index=True)


def test_cases_and_by_experiment_of_a_made_up_run(ph, feats):
    c = ph.cases(_table(ph, feats), {"e": K}).set_index(["order", "span"])
    g8 = c.loc[("intragpu", "0")]
    assert (g8["tiles"], g8["a_panels"], g8["w_panels"]) == (4, 1, 4)
    assert g8["round_mib"] == pytest.approx((A_BYTES + 4 * W_BYTES) / 2**20)
    assert g8["slow_share"] == pytest.approx(0.25) and g8["ratio"] == pytest.approx(1.0)
    assert g8["ratio_small"] == pytest.approx(1.0) and g8["ratio_rest"] == pytest.approx(1.1)
    # round 0 over the same SM's round 1: 1, 1.2, 1, 1 -> 1; the SMs' ranks agree only partly
    assert g8["r0_over_r1"] == pytest.approx(1.0) and np.isnan(c.loc[("intragpu", "1-3"), "r0_over_r1"])
    row = c.loc[("intragpu-row", "0")]
    assert row["ratio"] == pytest.approx(1.1) and row["slow_share"] == pytest.approx(1.0)
    b = ph.by_experiment(c.reset_index()).set_index("order")
    assert b.loc["intragpu-row", "mib_over_reference"] == pytest.approx(1.0)
    assert b.loc["intragpu-row", "round0_ratio_small"] == pytest.approx(1.1)


def test_auc_and_spearman(ph):
    assert ph.auc([1, 2, 3, 4], [False, False, True, True]) == 1.0
    assert ph.auc([4, 3, 2, 1], [False, False, True, True]) == 0.0
    assert ph.auc([1, 1, 1, 2], [False, True, False, True]) == pytest.approx(0.75)
    assert np.isnan(ph.auc([1, 2], [True, True])) and np.isnan(ph.auc([3, 3, 3], [True, False, True]))
    assert ph.spearman(pd.Series([1, 5, 9, 20]), pd.Series([0.1, 0.2, 0.3, 0.4])) == pytest.approx(1.0)
    assert ph.spearman(pd.Series([1, 2, 3, np.nan]), pd.Series([3, 2, 1, 100])) == pytest.approx(-1.0)
    assert np.isnan(ph.spearman(pd.Series([1, 1, 1]), pd.Series([1, 2, 3])))


def _made_up_cases(n_cases: int = 3, tiles: int = 20, few_slow: bool = False) -> pd.DataFrame:
    """Round-0 tiles of made-up cases: ``f`` 0..19, the ratio 1.001 + f / 100 (slow from f = 5 on), ``f2`` f + 100
    times the case's number, ``g`` constant, ``h`` -f from SM 3 on and NaN before; SMs 0-9 in the small set.
    ``few_slow``: one case more whose ratio is 1.001 + f / 1000 but its last 3 tiles' 1.2 (too few slow tiles for an
    AUC)."""
    rows = []
    for c in range(n_cases + few_slow):
        for i in range(tiles):
            ratio = 1.001 + i / 100 if c < n_cases else (1.2 if i >= tiles - 3 else 1.001 + i / 1000)
            rows.append(dict(gpu="H100", run=f"r{c}", machine="m", experiment="e", case="m=1", order="intragpu-row",
                             round=0, sm=i, ratio=ratio, f=float(i), f2=float(i + 100 * c), g=1.0,
                             h=np.nan if i < 3 else -float(i), small_set=float(i < 10)))
    return pd.DataFrame(rows)


def test_separation_finds_the_feature_that_orders_the_tiles(ph):
    s = ph.separation(_made_up_cases(few_slow=True), features=("f", "g", "h")).set_index(["sms", "feature"])
    assert s.loc[("all", "f"), ["rho_cases", "rho_median", "auc_cases", "auc_median"]].tolist() == [4, 1.0, 3, 1.0]
    slow, fast = [*range(5, 20)] * 3 + [17, 18, 19], [*range(5)] * 3 + [*range(17)]
    assert s.loc[("all", "f"), "slow_median"] == np.median(slow)
    assert s.loc[("all", "f"), "fast_median"] == np.median(fast)
    assert s.loc[("all", "g"), "rho_cases"] == 0 and np.isnan(s.loc[("all", "g"), "auc_median"])
    # a feature with NaN is ranked over its tiles alone: h = -f from SM 3 on
    assert s.loc[("all", "h"), "rho_median"] == pytest.approx(-1.0) and s.loc[("all", "h"), "auc_median"] == 0.0
    # the rest (SMs 10-19) are all slow: no AUC, the Spearman stays
    assert s.loc[("rest", "f"), "auc_cases"] == 0 and s.loc[("rest", "f"), "rho_median"] == pytest.approx(1.0)


def test_bins_are_levels_or_quartiles_within_each_case(ph):
    t = _made_up_cases()
    b = ph.bins(t, features=("f2", "small_set")).set_index(["feature", "level"])
    assert b.loc[("f2", "q1"), "tiles"] == 15 and b.loc[("f2", "q4"), "ratio"] == pytest.approx(1.171)
    assert b.loc[("f2", "q1"), "ratio"] == pytest.approx(1.021)
    assert b.loc[("f2", "q1"), "slow_share"] == pytest.approx(0.0) and b.loc[("f2", "q2"), "slow_share"] == 1.0
    assert b.loc[("small_set", "1"), "ratio"] == pytest.approx(1.046)
    assert b.loc[("small_set", "0"), "slow_share"] == 1.0


def test_groupings_give_eta2_of_each_grouping_beside_a_random_ones(ph):
    t = _made_up_cases(n_cases=2)
    t["ratio"] = 1.0 + 0.1 * (1 - t["small_set"]) + 0.001 * (t["sm"] % 2)
    g = ph.groupings(t).set_index(["sms", "grouping"])
    assert g.loc[("all", "small set"), "eta2"] == pytest.approx(ph.eta2(t["ratio"][:20], t["small_set"][:20]))
    assert g.loc[("all", "small set"), "eta2"] > 0.99 and g.loc[("all", "small set"), "random"] == pytest.approx(1 / 19)
    assert g.loc[("all", "tpc (sm // 2)"), "random"] == pytest.approx(9 / 19)
    assert g.loc[("all", "tpc (sm // 2)"), "eta2"] == pytest.approx(ph.eta2(t["ratio"][:20], t["sm"][:20] // 2))
    assert g.loc[("rest", "sm // 16"), "eta2"] == pytest.approx(ph.eta2(t["ratio"][10:20], t["sm"][10:20] // 16))
    assert ("all", "half (sm // 66)") not in g.index  # one group: no eta^2
    assert g.loc[("all", "small set"), "cases"] == 2


def test_machine_sets_take_each_machines_most_frequent_clear_fast_set_of_row_order(ph, monkeypatch):
    splits = {"a": [("intragpu-row", True, "24 fast", "1 2"), ("intragpu-row", True, "24 fast", "1 2"),
                    ("intragpu-row", True, "24 fast", "3 4"), ("intragpu-row", True, "54 slow", "9"),
                    ("intragpu-g2", True, "24 fast", "5 6")],
              "b": [("intragpu-row", False, "uniform", ""), ("intragpu", True, "24 fast", "7 8")]}

    def fake(bundle, runs):
        return pd.DataFrame([dict(machine=runs, order=o, clear=c, state=s, fast_sms=f) for o, c, s, f in splits[runs]])

    monkeypatch.setattr(ph.psg, "bundle_splits", fake)
    assert ph.machine_sets({"x": "a", "y": "b"}) == {"a": frozenset({1, 2})}


def _csv(d: pd.DataFrame) -> pd.DataFrame:
    return pd.read_csv(io.StringIO(d.to_csv(index=False, float_format="%.4f")))


def test_the_committed_cases_of_one_run_are_what_its_traces_give(ph):
    """One H100 run and experiment (its machine's small set from its machine's two bundles)."""
    paths = [p for p in ph.phr.bundles()["H100"] if ph.pom.machine(p) == "GPU-465a596d"]
    read = {p: dict(ph.pom.first_runs(p)) for p in paths}
    sets = ph.machine_sets(read)
    p = next(p for p in paths if p.parent.name == "reg49-chain-order-h5120")
    f = ph.runs_tiles(read[p], ph.experiment_k(p.parent.name), sets["GPU-465a596d"])
    f = f.assign(gpu="H100", run=str(p.parent.parent.relative_to(ph.phr.GPUS["H100"])), machine="GPU-465a596d",
                 experiment=p.parent.name)
    got = _csv(ph.cases(f))
    c = pd.read_csv(ph.OUT / "cases.csv")
    want = c[(c["run"] == got["run"][0]) & (c["experiment"] == p.parent.name)].reset_index(drop=True)
    assert len(want) == 16
    pd.testing.assert_frame_equal(got.sort_values(ph.KEYS + ["span"], ignore_index=True),
                                  want.sort_values(ph.KEYS + ["span"], ignore_index=True), check_exact=False, atol=2e-4)


def test_round_panels_count_the_first_rounds_distinct_panels(ph):
    # 20 column panels: row order's 132 tickets are rows 0-5 whole and 12 tiles of row 6; groups of 8 run 8 rows down
    # each column, 16 columns whole and 4 tiles of the 17th
    assert ph.round_panels(64, 20, 1) == (7, 20)
    assert ph.round_panels(64, 20, 8) == (8, 17)
    assert ph.round_panels(64, 20, 2) == (8, 20)  # pairs: 3 pairs of rows whole (120 tiles), 12 tiles of the 4th
    assert ph.round_panels(4, 3, 1, slots=5) == (2, 3)


def test_round0_ratios_take_layer_0s_round_0_over_groups_of_8s(ph):
    from types import SimpleNamespace

    def run(ml_first: float, ml_later: float) -> SimpleNamespace:
        # 2 CTAs, a layer-0 tile each in round 0 (mainloop ml_first), then a layer-1 tile each (ml_later)
        rows = [dict(layer=layer, cta=c, sm=c, tile_m=0, tile_n=c, t_acquire=layer * 5000 + c,
                     t_mainloop_end=layer * 5000 + c + (ml_later if layer else ml_first))
                for layer in (0, 1) for c in (0, 1)]
        return SimpleNamespace(tiles=pd.DataFrame(rows))

    r = ph.round0_ratios({("m=1", "intragpu"): run(1000, 3000), ("m=1", "intragpu-row"): run(1200, 9000),
                          ("m=2", "intragpu-row"): run(1000, 1000)}).set_index(["case", "order"])
    assert list(r.index) == [("m=1", "intragpu"), ("m=1", "intragpu-row")]  # m=2 has no groups of 8
    assert r.loc[("m=1", "intragpu-row"), "ratio"] == pytest.approx(1.2)
    assert (r.loc[("m=1", "intragpu"), "tiles_m"], r.loc[("m=1", "intragpu"), "tiles_n"]) == (1, 2)


def test_by_shape_gives_each_experiments_round0_ratio_beside_its_weights_over_the_l2(ph):
    levels = (("intragpu", (1.0, 1.0)), ("intragpu-row", (1.02, 1.20)))
    c = pd.DataFrame([dict(gpu="H100", experiment="e", order=o, case=f"m={i}", ratio=r, tiles_m=64, tiles_n=20)
                      for o, rs in levels for i, r in enumerate(rs)])
    b = ph.by_shape(c, l2_mib={"H100": 25.0}, shape_of={"e": (5120, 1024)}).set_index("order")
    row = b.loc["intragpu-row"]
    assert (row["cases"], row["low"], row["high"]) == (2, 1.02, 1.2) and row["round0_ratio"] == pytest.approx(1.11)
    assert row["weights_mib"] == pytest.approx(10.0) and row["weights_over_l2"] == pytest.approx(0.4)
    mib = (7 * 128 + 20 * 256) * 1024 * 2 / 2**20
    assert row["round_mib"] == pytest.approx(mib) and row["round_over_l2"] == pytest.approx(mib / 25)
    assert row["round_over_reference"] == pytest.approx((7 * 128 + 20 * 256) / (8 * 128 + 17 * 256))
    assert b.loc["intragpu", "round_over_reference"] == pytest.approx(1.0)


def test_the_committed_by_shape_row_of_one_experiment_is_what_its_traces_give(ph):
    got = ph.by_shape(ph.shape_cases(("reg68-chain-reuse-h4608",), ("H100",)))
    want = pd.read_csv(ph.OUT / "by-shape.csv")
    want = want[(want["gpu"] == "H100") & (want["experiment"] == "reg68-chain-reuse-h4608")].reset_index(drop=True)
    assert len(want) == 4 and want["cases"].eq(6).all()  # three H100 calls (plans 67-68 twice, plan 69)
    pd.testing.assert_frame_equal(_csv(got), want, check_exact=False, atol=2e-4)


@pytest.mark.bench
def test_the_committed_tables_are_what_the_committed_traces_give(ph):
    """Every table recomputed (~15 s on 2 cores: a benchmark-profile test, ``pytest -m bench``; the one-run test above
    holds cases.csv in the default run)."""
    got = ph.tables(ph.all_tiles())
    got["by-shape.csv"] = ph.by_shape(ph.shape_cases())
    for name, d in got.items():
        pd.testing.assert_frame_equal(_csv(d), pd.read_csv(ph.OUT / name), check_exact=False, atol=2e-4, obj=name)


def test_the_committed_tables_say_what_the_readme_quotes(ph):
    r = pd.read_csv(ph.OUT / "rounds.csv").set_index(["gpu", "order"])
    row = r.loc[("H100", "intragpu-row")]
    assert row["round0_ratio_rest"] > 1.1 > 1.05 > row["round0_ratio_small"]
    assert abs(r.loc[("H200", "intragpu-row"), "round0_ratio_small"]
               - r.loc[("H200", "intragpu-row"), "round0_ratio_rest"]) < 0.01
    assert 0.98 < r.loc[("H100", "intragpu"), "r0_over_r1_median"] < 1.0
    g = pd.read_csv(ph.OUT / "groupings.csv").set_index(["gpu", "order", "span", "sms", "grouping"])
    assert g.loc[("H100", "intragpu-row", "0", "all", "small set"), "eta2"] > 0.6
    assert g.loc[("H200", "intragpu-row", "0", "all", "small set"), "eta2"] < 0.02
    s = pd.read_csv(ph.OUT / "separation.csv")
    rest = s[(s["gpu"] == "H100") & (s["order"] == "intragpu-row") & (s["span"] == "0") & (s["sms"] == "rest")]
    assert rest["rho_median"].abs().max() < 0.25
