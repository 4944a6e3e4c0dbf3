"""The L2-to-SM read-rate probe's CPU side (ctahw.l2rate): the cases, the bytes each one counts at the L2 and in
shared memory, the summary, the profile's rate and which side the multicast cases put the limit on."""

from __future__ import annotations

import dataclasses

import pytest

from ctahw import l2rate
from ctahw.l2rate import CASES, Case


def test_the_cases_are_named_once_and_each_one_runs_on_an_h100():
    assert len({c.name for c in CASES + l2rate.ROW_CASES}) == len(CASES) + len(l2rate.ROW_CASES)
    for c in CASES + l2rate.ROW_CASES:
        l2rate.check_case(c)
    by = {c.name: c for c in CASES}
    # the GEMM stages: A 16 KiB + W 32 KiB; W multicast at 2x1, A at 1x2
    assert (by["1x1"].own_bytes, by["1x1"].shared_bytes) == (48 * 1024, 0)
    assert (by["2x1"].own_bytes, by["2x1"].shared_bytes, by["2x1"].cluster) == (16 * 1024, 32 * 1024, 2)
    assert (by["1x2"].own_bytes, by["1x2"].shared_bytes, by["1x2"].cluster) == (32 * 1024, 16 * 1024, 2)


@pytest.mark.parametrize("change, words", [
    (dict(cluster=3), "cluster must be 1 or 2"),
    (dict(own_bytes=8), "own_bytes must be a multiple of 16"),
    (dict(cluster=2, shared_bytes=16), "shared_bytes must be a multiple of 32"),
    (dict(own_bytes=0, shared_bytes=0), "a stage of 0 bytes"),
    (dict(own_bytes=32 << 20), "larger than the"),
    (dict(share=0), "share must be >= 1"),
    (dict(own_bytes=64 * 1024), "exceed"),
    (dict(groups=2), "a W part needs groups >= 1"),
    (dict(w_bytes=16384), "a W part needs groups >= 1"),
    (dict(w_bytes=96 * 1024, groups=2), "a W part needs groups >= 1"),
    (dict(w_bytes=8, groups=2), "a W part needs groups >= 1"),
])
def test_a_case_the_kernel_cannot_run_is_refused_by_name(change, words):
    bad = dataclasses.replace(CASES[0], name="bad", **change)
    with pytest.raises(ValueError, match=words) as e:
        l2rate.check_case(bad)
    assert "bad" in str(e.value)
    with pytest.raises(ValueError, match="stages must be in 1..8"):
        l2rate.check_case(CASES[0], stages=9)


def test_a_multicast_costs_the_l2_its_bytes_once():
    c = Case("x", 2, 16 * 1024, 32 * 1024)
    assert l2rate.delivered_bytes(c, 132, 10) == 132 * 10 * 48 * 1024
    assert l2rate.l2_bytes(c, 132, 10) == 132 * 10 * 32 * 1024  # the shared 32 KiB once a pair
    one = Case("y", 1, 16 * 1024, 32 * 1024)  # no cluster: every byte read by its CTA
    assert l2rate.l2_bytes(one, 132, 10) == l2rate.delivered_bytes(one, 132, 10)


def _rows(rates: dict[str, tuple[float, float]], reps: int = 3) -> list[dict]:
    """Launch rows with each case's delivered and L2 rates (GB/s) as given, over a window of 1 ms, the reps' windows
    100, 101, ... % of it."""
    rows = []
    for rep in range(reps):
        for name, (delivered, l2) in rates.items():
            w = int(1_000_000 * (1 + rep / 100))
            rows.append(dict(case=name, rep=rep, cluster=2 if name.startswith("2") else 1, own_bytes=1, shared_bytes=0,
                             share=1, window_ns=w, delivered_bytes=int(delivered * 1_000_000), blocks=132, sms=132,
                             l2_bytes=int(l2 * 1_000_000), start_spread_ns=500, mismatched_words=0))
    return rows


def test_the_summary_is_each_cases_median_rate_and_the_profile_reads_the_1x1_stage():
    t = l2rate.summary(_rows({"1x1": (9000, 9000), "2-all": (18000, 9000), "2-none": (9000, 9000)}))
    assert [r["case"] for r in t] == ["1x1", "2-all", "2-none"]
    one = t[0]
    assert one["launches"] == 3 and one["l2_gbps"] == pytest.approx(9000 / 1.01, rel=1e-6)  # the middle window
    assert one["l2_gbps_max"] == pytest.approx(9000, rel=1e-6) and one["l2_gbps_min"] == pytest.approx(9000 / 1.02)
    assert t[1]["delivered_gbps"] == pytest.approx(18000 / 1.01, rel=1e-6)
    assert l2rate.read_rate(t) == pytest.approx(9000 / 1.01, rel=1e-6)
    with pytest.raises(ValueError, match="no case 'nope'"):
        l2rate.read_rate(t, "nope")


def test_the_summary_refuses_a_launch_whose_stages_differed_or_took_no_time():
    rows = _rows({"1x1": (9000, 9000)})
    rows[1]["mismatched_words"] = 3
    with pytest.raises(ValueError, match="3 mismatched words"):
        l2rate.summary(rows)
    rows = _rows({"1x1": (9000, 9000)})
    rows[2]["window_ns"] = 0
    with pytest.raises(ValueError, match="a window of 0 ns"):
        l2rate.summary(rows)
    rows = _rows({"1x1": (9000, 9000)})
    rows[0]["sms"] = 66
    with pytest.raises(ValueError, match="132 CTAs ran on 66 SMs"):
        l2rate.summary(rows)
    rows = _rows({"1x1": (9000, 9000)})
    rows[0]["start_spread_ns"] = 50_001  # over 5% of its 1 ms window
    with pytest.raises(ValueError, match="not all resident at once"):
        l2rate.summary(rows)
    rows[0]["start_spread_ns"] = 50_000
    assert l2rate.summary(rows)[0]["launches"] == 3
    with pytest.raises(ValueError, match="no rows"):
        l2rate.summary([])


@pytest.mark.parametrize("all_shared, bound", [
    ((18000, 9000), "l2"),  # the L2 sends its rate; twice that lands: the law ctasim.costs.l2_sm_reads counts
    ((9000, 4500), "sm"),  # what lands is capped: a multicast saves nothing
    ((13500, 6750), "neither"),
])
def test_which_side_the_multicast_cases_put_the_limit_on(all_shared, bound):
    t = l2rate.summary(_rows({"2-all": all_shared, "2-none": (9000, 9000)}))
    assert l2rate.where_bound(t) == bound
    with pytest.raises(ValueError, match="no case '2-none'"):
        l2rate.where_bound(t[:1])


def test_a_row_case_is_the_row_order_first_wave():
    """CTA b of a row-order first wave with n tiles a row runs tile (b // n, b % n): its A part keyed by the row
    (``share`` n), its W part (32 KiB of the 48) by the column (``groups`` n); every byte read from the L2."""
    c = l2rate.row_case(22)
    assert (c.name, c.cluster, c.own_bytes, c.shared_bytes, c.share, c.w_bytes, c.groups) == (
        "row-n22", 1, 48 * 1024, 0, 22, 32 * 1024, 22)
    assert l2rate.l2_bytes(c, 132, 10) == l2rate.delivered_bytes(c, 132, 10)
    assert [x.groups for x in l2rate.ROW_CASES] == list(l2rate.ROW_NS)


@pytest.mark.parametrize("call", ["2026-12-07-registered91-1gpu", "2026-12-07-l2-rate-rows-1gpu",
                                  "2026-12-07-l2-tile-1gpu", "2026-12-07-l2-tile-more-1gpu",
                                  "2026-12-07-l2-tile-phase-1gpu", "2026-12-07-l2-tile-cold-1gpu"])
def test_the_committed_probe_runs_summarize_as_committed(call):
    """The two committed H100 runs (registered plan 91's call; the row-order cases after it): each launch row's
    medians give the committed summary, and the JSON's rate and side are the summary's."""
    import json
    from pathlib import Path

    import pandas as pd

    d = Path(__file__).resolve().parents[2] / "bench/results/hw-h100" / call / "l2rate"
    rows = pd.read_csv(d / "l2-rate.csv").to_dict("records")
    table = l2rate.summary(rows)
    committed = pd.read_csv(d / "l2-rate-summary.csv")
    assert list(committed["case"]) == [r["case"] for r in table]
    assert committed["l2_gbps"].tolist() == pytest.approx([r["l2_gbps"] for r in table], rel=1e-9)
    assert committed["delivered_gbps"].tolist() == pytest.approx([r["delivered_gbps"] for r in table], rel=1e-9)
    j = json.loads((d / "l2-rate.json").read_text())
    assert j["l2_sm_read_gbps"] == pytest.approx(l2rate.read_rate(table)) and j["bound"] == l2rate.where_bound(table)
    assert j["bound"] == "neither" and 4600 < j["l2_sm_read_gbps"] < 4750  # docs/validation.md, plan 91
    if j.get("row_l2_gbps"):
        assert sorted(map(int, j["row_l2_gbps"])) == sorted(l2rate.ROW_NS)
        assert max(j["row_l2_gbps"].values()) < 5000  # under half what the GEMM's first wave draws at n = 14
    if j.get("tile_l2_gbps"):  # docs/hardware.md: 12.7-12.8 TB/s up to 12 tiles a row, 8.2-8.9 from 14
        tile = {int(n): v for n, v in j["tile_l2_gbps"].items()}
        assert sorted(tile) == list(l2rate.TILE_NS)
        assert all(12_600 < v < 12_800 for n, v in tile.items() if n <= 12)
        assert all(8_200 < v < 8_900 for n, v in tile.items() if n >= 14)
    more = j.get("tile_more_l2_gbps")
    if more:  # docs/validation.md, plan 92: the high rate needs both shared; the GEMM's own K softens the step
        assert all(7_200 < more[f"tile-n{n}-k256-w-shared"] < 8_250 for n in (8, 12, 14, 22))
        assert all(8_500 < more[f"tile-n{n}-k256-a-shared"] < 8_900 for n in (8, 12, 14, 22))
        assert [round(more[f"tile-n{n}-k{256 * n}"], -2) for n in (12, 13)] == [10_200, 9_200]
        assert all(8_100 < more[f"tile-n{n}-k{256 * n}"] < 8_400 for n in (14, 15, 16, 18))
    phase = j.get("tile_phase_l2_gbps")
    if phase:  # docs/validation.md, plan 92: CTAs a k-step apart draw 3-27% less than in step
        drop = [1 - phase[f"tile-n{n}-k{256 * n}-phase1"] / phase[f"tile-n{n}-k{256 * n}-phase0"]
                for n in (12, 14, 15, 18, 22, 31, 42)]
        assert 0.025 < min(drop) and max(drop) < 0.275
    cold = j.get("tile_cold_us")
    if cold:  # docs/hardware.md: the 1x1 first wave's loads alone from a cold L2, one pass over the GEMM's K
        want = {14: 36.6, 18: 49.7, 22: 62.4, 25: 74.0, 27: 77.7, 31: 89.8, 35: 110.2, 37: 121.5, 42: 173.2}
        assert {int(n): round(v, 1) for n, v in cold.items()} == want
        rows = pd.read_csv(d / "l2-rate.csv")
        assert (rows[rows.case.str.endswith("-cold")].iters == rows[rows.case.str.endswith("-cold")].groups * 4).all()


@pytest.mark.parametrize("kw, words", [
    (dict(reps=0), "reps and iters must be >= 1"),
    (dict(cases=()), "no tile cases"),
    (dict(cases=(l2rate.TileCase("x", 14, 14, 96),)), "tile case x: k_elems must be a positive multiple of 64"),
    (dict(cases=(l2rate.TileCase("y", 0, 14),)), "tile case y: a_div and w_mod must be >= 1"),
    (dict(cases=(l2rate.TileCase("z", 14, 14, 512, -1),)), "k_phase >= 0"),
])
def test_the_tile_probe_refuses_what_its_kernel_cannot_run_before_any_gpu_work(kw, words):
    with pytest.raises(ValueError, match=words):
        l2rate.measure_tiles(**kw)


def test_the_tile_cases_are_the_row_order_waves_and_their_splits():
    """The default cases: n tiles a row at K = 512, W at most 17 MiB (in L2); the more cases: at K = 256 each wave
    beside W alone shared (every CTA its own A) and A alone shared (every CTA its own W), and the GEMM's own K."""
    names = [c.name for c in l2rate.TILE_CASES + l2rate.TILE_MORE_CASES + l2rate.TILE_PHASE_CASES
             + l2rate.TILE_COLD_CASES]
    assert all(c.cold and c.k_elems == 256 * c.w_mod == 256 * c.a_div for c in l2rate.TILE_COLD_CASES)
    assert len(set(names)) == len(names)
    assert [(c.a_div, c.w_mod, c.k_elems) for c in l2rate.TILE_CASES] == [(n, n, 512) for n in l2rate.TILE_NS]
    assert max(c.bytes(132) for c in l2rate.TILE_CASES) <= 17 << 20
    more = {c.name: c for c in l2rate.TILE_MORE_CASES}
    assert (more["tile-n14-k256-w-shared"].a_div, more["tile-n14-k256-w-shared"].w_mod) == (1, 14)
    assert (more["tile-n14-k256-a-shared"].a_div, more["tile-n14-k256-a-shared"].w_mod) == (14, 132)
    assert more["tile-n15-k3840"].bytes(132) == (9 * 128 + 15 * 256) * 3840 * 2
