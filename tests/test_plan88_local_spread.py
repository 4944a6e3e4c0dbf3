"""bench/plan88_local_spread.py: registered plan 88's registration (the producers alone at the one-GPU tickets' spread
against the ctapipe family's, on an H100 or an H200), its judge on made-up calls whose producers run at a named
predictor's times and spread at a chosen rate, and calls it must refuse (no GPU); bench/posthoc_local_spread.py's
committed tables."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from tests.helpers import GZ_FAST, kept_made_up_call, load_bench
from tests.test_plan83_alone_edge import ENV
from tests.test_plan85_grouped_kept import _assert_doc_table, _doc_section, _judge, _rejudged


@pytest.fixture(scope="module")
def p88():
    return load_bench("plan88_local_spread")


@pytest.fixture(scope="module")
def registered(p88):
    return pd.read_csv(p88.REGISTERED / "predicted.csv")


def test_the_registration_is_what_the_two_spreads_give(p88, registered):
    """Both GPUs, every H, producer and predictor, each wave; ``local`` is the profile at the 128x256 config's spread
    (0.0189), ``profile`` at the ctapipe family's (0.1292): row order at H = 6656 kept at the one and lost at the other
    on the H100, groups of 8 the same under both."""
    import plan83_alone_edge as p83
    from ctasim.spec import load_hardware
    from percta_predict import full_waves

    assert set(registered.gpu) == {"H100", "H200"} and sorted(set(registered.h)) == list(p88.HS)
    assert set(registered.predictor) == set(p88.PREDICTORS) and set(registered.variant) == set(p88.VARIANTS)
    from ctasim.profiles import before_h100_x8_exposed

    for gpu, profile in p88.GPUS.items():
        hw = before_h100_x8_exposed(profile)  # as registered (plan 87's adoption came after)
        assert hw.config(128, 256) == load_hardware(profile).config(128, 256)
        mine = registered[registered.gpu == gpu].groupby("predictor").spread.first()
        assert mine["local"] == hw.config(128, 256).ticket_spread == 0.0189
        assert mine["profile"] == hw.config(128, 256, kernel="ctapipe").ticket_spread == 0.1292
        x = registered[(registered.gpu == gpu) & (registered.h == 7680) & (registered.variant == p88.PAIRS)
                       & (registered.predictor == "local")]
        assert np.allclose(x.sort_values("wave").us, p83.wave_times(7680, p88.PAIRS, hw, 0.0189), atol=1e-3)

    def mean(h, v, name, gpu="H100"):
        x = registered[(registered.gpu == gpu) & (registered.h == h) & (registered.variant == v)
                       & (registered.predictor == name)]
        return full_waves(x, p88.tiles(h, p88.M)).us.mean()

    assert mean(6656, p88.ROW, "local") == pytest.approx(mean(6656, p88.ROW, "lockstep"))
    assert mean(6656, p88.ROW, "profile") > 1.9 * mean(6656, p88.ROW, "lockstep")
    for h in p88.HS:
        assert mean(h, p88.GROUPED[1], "local") == pytest.approx(mean(h, p88.GROUPED[1], "profile"))


@kept_made_up_call
def _call(p88, registered, run, gpu="H100", times=None, rate=0.0189, default="local"):
    """A made-up call of a producer-alone plan (``p88``: plan 88's module or a later one's with its M, HS, VARIANTS,
    RUNS and tiles) on ``gpu``: every tile of (H, variant) runs the registered per-wave time of ``times[v]`` (a
    predictor's name; default ``default``), the last partial wave 3x (left out); the start times of wave w's 132 tiles
    spread over ``rate`` * w median mainloops (``rate`` a number, or a dict by variant)."""
    run.mkdir(parents=True, exist_ok=True)
    (run / "env.txt").write_text("index, name, uuid, serial, driver_version, clocks.current.sm [MHz]\n"
                                 + ENV[gpu] + "\n")
    for h in p88.HS:
        (run / f"OUT_H{h}").mkdir()
        runs = []
        for v in p88.VARIANTS:
            mine = registered[(registered.gpu == gpu) & (registered.h == h) & (registered.variant == v)]
            name = (times or {}).get(v, default)
            us = mine[mine.predictor == name].sort_values("wave")["us"].to_numpy()
            n = p88.tiles(h, p88.M)
            cta = np.arange(n)
            wave = cta // 132
            t = us[wave] * np.where(wave < n // 132, 1, 3)
            main = float(np.median(t[wave < n // 132])) * 1e3 - 1000  # the median mainloop (ns)
            r = rate.get(v, 0.0189) if isinstance(rate, dict) else rate
            start = wave * 10_000_000 + ((cta % 132) / 131 * r * wave * main).astype(np.int64)
            end = start + (t * 1e3).astype(np.int64)
            pd.DataFrame({"cta": cta, "sm": cta % 132, "t_start": start - 500, "t_acquire": start,
                          "t_mainloop_end": end - 1000, "t_compute_end": end}).to_csv(
                run / f"OUT_H{h}" / f"percta-tiles-{p88.M}-{v}.csv.gz", index=False, compression=GZ_FAST)
            runs.append(pd.DataFrame({"m": p88.M, "variant": v, "run": np.arange(p88.RUNS), "plain_ms": 5.0,
                                      "mainloop_early_ns": 100_000.0, "mainloop_late_ns": 101_000.0}))
        pd.concat(runs).to_csv(run / f"OUT_H{h}" / "percta-runs.csv", index=False)
        pd.DataFrame({"m": p88.M, "variant": list(p88.VARIANTS), "slots": 132}).to_csv(
            run / f"OUT_H{h}" / "percta.csv", index=False)
    return run


@pytest.fixture(scope="module")
def as_local(p88, registered, tmp_path_factory):
    """A call on an H100 that runs as ``local`` says and spreads at 0.0189 a wave, judged once."""
    tmp = tmp_path_factory.mktemp("p88")
    return _judge(p88, _call(p88, registered, tmp / "run"), tmp)


def test_a_call_that_runs_as_local_says_meets_every_claim_and_adopts(p88, as_local):
    c, cl = as_local
    assert cl.met.all() and cl.loc["adopt", "value"] == "yes", cl
    assert np.allclose(c[c.predictor == "local"].mean_err_pct, 0, atol=0.01)
    assert cl.loc["a", "value"].startswith("0.00% against ") and cl.loc["b", "value"].startswith("0.00% against ")
    assert cl.loc["d", "value"].endswith("against 0.0189 (the family's 0.1292; 12 of 12 runs fitted)")
    assert float(cl.loc["d", "value"].split()[1].rstrip(",")) == pytest.approx(0.0189, rel=0.05)
    assert cl.loc["e", "value"] == "6656: kept / kept, 7680: between / between, 8448: lost / lost, 15360: lost / lost"


def test_a_call_that_runs_as_the_profile_says_adopts_nothing(p88, registered, tmp_path):
    """Every producer at the family's spread's times, spreading at its rate: (a), (b) and (d) missed."""
    run = _call(p88, registered, tmp_path / "run", times={v: "profile" for v in p88.VARIANTS}, rate=0.1292)
    _, cl = _judge(p88, run, tmp_path)
    assert cl.loc[["a", "b", "d"], "met"].tolist() == [False, False, False] and cl.loc["adopt", "value"] == "no"
    assert not cl.loc["e", "met"]  # row order lost at 6656 where local keeps it


def test_an_h200_call_is_judged_on_its_own_profiles_rows(p88, registered, tmp_path):
    run = _call(p88, registered, tmp_path / "run", gpu="H200")
    c, cl = _judge(p88, run, tmp_path)
    assert set(c.gpu) == {"H200"} and cl.loc["adopt", "value"] == "yes"
    # the H200's local row order: kept at 6656 and 7680, between at 8448, lost at 15360
    assert cl.loc["e", "value"] == "6656: kept / kept, 7680: kept / kept, 8448: between / between, 15360: lost / lost"


def test_the_spread_claim_reads_the_call_not_the_model(p88, registered, tmp_path):
    """The same times, the start times of the pairs and grouped producers spread at the family's rate: (d) missed
    alone, and with it the adoption."""
    non_row = {v: 0.1292 for v in p88.VARIANTS if v != p88.ROW}
    c, cl = _judge(p88, _call(p88, registered, tmp_path / "a", rate=non_row), tmp_path / "a")
    assert cl.met.drop(["d", "adopt"]).all() and not cl.loc["d", "met"] and cl.loc["adopt", "value"] == "no"
    assert c[c.variant != p88.ROW].span_rate.between(0.12, 0.14).all()  # read off the made-up traces


@pytest.mark.parametrize("rates, met", [
    ({"w21g4": 0.0189 * 1.4, "w21g8": 0.0189 * 1.4}, True),
    ({"w21g4": 0.0189 * 1.6, "w21g8": 0.0189 * 1.6}, False),
    ({"w21g4": 0.0189 / 1.6, "w21g8": 0.0189 / 1.6}, False),
    ({"": 0.2}, True),  # row order's own spread is not in (d)
    ({"w21": 0.05}, False),  # the pairs at 2.6x: missed, though the twelve pooled sit at 0.0189
    ({"w21": 0.003}, True),  # the pairs spreading least (as plans 85 and 86's did): met
    ({"w21g4": 0.013, "w21g8": 0.04, "": 0.2}, True),  # the grouped median 0.0265, with row order's 0.04
    ({"w21g8": np.nan}, False),  # groups of 8 with no rate fitted
])
def test_claim_d_reads_the_grouped_and_the_pairs_apart(p88, as_local, rates, met):
    c = as_local[0].copy()
    for v, r in rates.items():
        c.loc[c.variant == ("cutlass_ctapipe_" + v if v else "cutlass_ctapipe"), "span_rate"] = r
    cl = _claims(p88, c)
    assert cl.loc["d", "met"] == met, cl.loc["d", "value"]
    if "w21g8" in rates and np.isnan(rates["w21g8"]):
        assert "8 of 12 runs fitted" in cl.loc["d", "value"]


def test_a_grid_that_saturates_at_once_has_no_rate(p88, registered, tmp_path):
    _, cl = _judge(p88, _call(p88, registered, tmp_path / "run", rate={p88.GROUPED[1]: 1.0}), tmp_path)
    assert not cl.loc["d", "met"] and "8 of 12 runs fitted" in cl.loc["d", "value"]


def _claims(p88, c):
    return p88.claims(c, "post-hoc").set_index("claim")


@pytest.mark.parametrize("variant, claim", [("cutlass_ctapipe_w21", "a"), ("cutlass_ctapipe", "b")])
def test_claims_a_and_b_turn_at_half_the_profiles_error(p88, as_local, variant, claim):
    c = as_local[0].copy()
    rows = c.variant == variant
    c.loc[rows & (c.predictor == "profile"), "mean_err_pct"] = -8.0
    c.loc[rows & (c.predictor == "local"), "mean_err_pct"] = 4.0
    assert _claims(p88, c).loc[claim, "met"]
    c.loc[rows & (c.predictor == "local"), "mean_err_pct"] = 4.01
    cl = _claims(p88, c)
    assert not cl.loc[claim, "met"] and cl.loc["adopt", "value"] == "no"
    other = "b" if claim == "a" else "a"
    assert cl.loc[other, "met"]  # each reads its own producer


@pytest.mark.parametrize("name", ["flat", "lockstep", "profile"])
def test_claim_c_needs_local_under_each_other_predictor(p88, as_local, name):
    c = as_local[0].copy()
    c.loc[c.predictor == "local", "mean_err_pct"] = 1.0
    for n in ("flat", "lockstep", "profile"):
        c.loc[c.predictor == n, "mean_err_pct"] = 3.0
    assert _claims(p88, c).loc["c", "met"]
    c.loc[c.predictor == name, "mean_err_pct"] = -1.0
    if name == "profile":  # (a) and (b) kept: the pairs and row order at twice local's, the grouped at 0 against 2
        c.loc[c.variant.isin([p88.PAIRS, p88.ROW]) & (c.predictor == name), "mean_err_pct"] = 2.0
        c.loc[c.variant.isin(p88.GROUPED) & (c.predictor == name), "mean_err_pct"] = 0.0
        c.loc[c.variant.isin(p88.GROUPED) & (c.predictor == "local"), "mean_err_pct"] = 2.0  # local 1.5, profile 1.0
    cl = _claims(p88, c)
    assert not cl.loc["c", "met"] and cl.loc["adopt", "value"] == "yes"  # (c) is not in the rule


def test_claim_e_needs_two_judged_h_and_every_one_right(p88, as_local):
    c = as_local[0].copy()
    row = c.variant == p88.ROW
    lock = c[row & (c.predictor == "lockstep")].set_index("h").predicted_us
    measured = c.loc[row, "h"].map(lock * 1.17)  # every H between kept and lost: nothing judged
    c.loc[row, "measured_us"] = measured
    assert not _claims(p88, c).loc["e", "met"]
    c.loc[row & (c.h == 6656), "measured_us"] = lock[6656] * 1.05  # kept, as local says
    assert not _claims(p88, c).loc["e", "met"]  # one judged H only
    c.loc[row & (c.h == 15360), "measured_us"] = lock[15360] * 1.3  # lost, as local says
    assert _claims(p88, c).loc["e", "met"]
    c.loc[row & (c.h == 8448), "measured_us"] = lock[8448] * 1.05  # kept where local says lost
    assert not _claims(p88, c).loc["e", "met"]


def test_a_call_missing_a_producer_is_refused_in_one_line(p88, registered, tmp_path, capsys):
    run = _call(p88, registered, tmp_path / "run")
    (run / "OUT_H8448" / f"percta-tiles-{p88.M}-{p88.PAIRS}.csv.gz").unlink()
    assert p88.main(["--judge", str(run), "--out", str(tmp_path / "j")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("plan88_local_spread: no ") and "(plan 88's call runs" in err
    assert "\n" not in err and not (tmp_path / "j").exists()


def test_a_b200_call_is_refused(p88, registered, tmp_path, capsys):
    run = _call(p88, registered, tmp_path / "run")
    (run / "env.txt").write_text("index, name\n0, NVIDIA B200, GPU-1\n")
    assert p88.main(["--judge", str(run), "--out", str(tmp_path / "j")]) == 2
    assert "names no GPU of H100, H200" in capsys.readouterr().err


@pytest.fixture(scope="module")
def pls():
    return load_bench("posthoc_local_spread")


def test_the_committed_post_hoc_tables_are_what_the_script_gives(pls, tmp_path):
    assert pls.main(["--out", str(tmp_path)]) == 0
    for f in ("cases.csv", "summary.csv"):
        assert (tmp_path / f).read_text() == (pls.OUT / f).read_text(), f


def test_the_post_hoc_figures_the_registration_quotes(pls, p88):
    s = pd.read_csv(pls.OUT / "summary.csv").set_index(["gpu", "variant"])
    doc = " ".join(p88.__doc__.split())
    pairs, row = s.loc[("H100", p88.PAIRS)], s.loc[("H100", p88.ROW)]
    assert (f"pairs at {pairs.local_mae_pct:.1f}% mean |error| (at the family's spread {pairs.profile_mae_pct:.1f}%, "
            f"at spread 0 {pairs.lockstep_mae_pct:.1f}%; {int(pairs.cases)} cases)") in doc
    assert f"row order at {row.local_mae_pct:.1f}% ({row.profile_mae_pct:.1f}%, {int(row.cases)} cases;" in doc
    h200 = s.loc[("H200", p88.ROW)]
    assert f"row order at {h200.local_mae_pct:.1f}% ({h200.profile_mae_pct:.1f}%, {int(h200.cases)} cases)" in doc
    c = pd.read_csv(pls.OUT / "cases.csv")
    g8 = c[c.variant == p88.GROUPED[1]].span_rate
    assert f"groups of 8 {g8.min():.3f}-{g8.max():.3f} a wave on two H100s" in doc
    g4, pairs_rate = c[c.variant == p88.GROUPED[0]], c[c.variant == p88.PAIRS].span_rate
    assert f"groups of 4 {g4.span_rate.min():.3f}-{g4.span_rate.max():.3f} on three GPUs" in doc
    assert g4.gpu.nunique() == 2 and g4.call.nunique() == 3  # two H100 units (plans 85, 86) and the H200 probe
    assert f"the pairs less ({pairs_rate.min():.3f}-{pairs_rate.max():.3f}:" in doc


def test_a_changed_trace_changes_the_post_hoc_table(pls, tmp_path, monkeypatch):
    """The figures come from the tile tables: one call's pairs at H = 7168 run 10% longer, its errors 10% lower."""
    import shutil

    call = next(x for x in pls.CALLS if x[0] == "plan 86")
    root = tmp_path / "root"
    shutil.copytree(pls.ROOT / call[2] / "OUT_H7168", root / call[2] / "OUT_H7168")
    f = root / call[2] / "OUT_H7168" / f"percta-tiles-16384-{load_bench('plan85_grouped_kept').PAIRS}.csv.gz"
    t = pd.read_csv(f)
    t["t_compute_end"] = t.t_acquire + ((t.t_compute_end - t.t_acquire) * 1.1).astype(np.int64)
    t.to_csv(f, index=False)
    monkeypatch.setattr(pls, "ROOT", root)
    monkeypatch.setattr(pls, "CALLS", ((call[0], call[1], call[2], {7168: "OUT_H7168"}, (16384,)),))
    got = pls.cases().set_index("variant")
    base = pd.read_csv(pls.OUT / "cases.csv").set_index(["call", "h", "variant"]).sort_index().loc[("plan 86", 7168)]
    pairs = "cutlass_ctapipe_w21"
    assert got.loc[pairs, "measured_us"] == pytest.approx(base.loc[pairs, "measured_us"] * 1.1, rel=0.002)
    assert got.loc[pairs, "local_err_pct"] == pytest.approx(
        ((1 + base.loc[pairs, "local_err_pct"] / 100) / 1.1 - 1) * 100, abs=0.02)
    assert got.loc["cutlass_ctapipe", "local_err_pct"] == base.loc["cutlass_ctapipe", "local_err_pct"]


def test_a_tile_table_without_mainloop_ends_is_refused_in_one_line(p88, registered, tmp_path, capsys):
    """The spread reads ``t_mainloop_end`` (the median mainloop), which the wave medians do not."""
    run = _call(p88, registered, tmp_path / "run")
    f = run / "OUT_H7680" / f"percta-tiles-{p88.M}-{p88.GROUPED[0]}.csv.gz"
    pd.read_csv(f).drop(columns="t_mainloop_end").to_csv(f, index=False)
    assert p88.main(["--judge", str(run), "--out", str(tmp_path / "j")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("plan88_local_spread: ") and "no column t_mainloop_end" in err
    assert "\n" not in err and not (tmp_path / "j").exists()


def test_the_committed_h100_call_judges_as_committed_and_docs_quote_it(p88, tmp_path):
    """The call (bench/results/hw-h100/2026-12-07-registered88-1gpu, GPU-f4563d06) judged again gives the committed
    tables: (a)-(d) met, (e) missed, adopted, registered; docs/validation.md's plan 88 table is its cases.csv; the
    one-GPU spread plan 88's ``local`` reads is ``ctasim.costs.alone_ticket_spread``."""
    from ctasim.costs import alone_ticket_spread
    from ctasim.spec import load_hardware

    c, cl = _rejudged(p88, "2026-12-07-registered88-1gpu", "validation-registered88", tmp_path)
    assert cl.met.tolist() == [True, True, True, True, False, True] and cl.loc["adopt", "value"] == "yes"
    assert cl.provenance.str.startswith("registered: predictions added in 9db0654f").all()
    assert cl.loc["e", "value"] == ("6656: between / kept, 7680: between / between, 8448: between / lost, "
                                    "15360: lost / lost")
    hw = load_hardware("h100-x8-mechanism")
    assert p88.predictors("h100-x8-mechanism")["local"][1] == alone_ticket_spread(hw) == 0.0189
    assert alone_ticket_spread(hw) < hw.config(128, 256, kernel="ctapipe").ticket_spread
    doc = _doc_section(p88, 88)
    _assert_doc_table(doc, c, p88.VARIANTS, p88.PREDICTORS)
    flat = " ".join(doc.split())
    la, pa = cl.loc["a", "value"].split(" against ")
    assert f"local {la} against the profile's {pa} (a); row order {cl.loc['b', 'value']} (b)" in flat
    pairs = c[c.variant == p88.PAIRS].groupby("predictor").mean_err_pct.apply(lambda x: x.abs().mean())
    assert f"spread 0 was nearer again ({pairs['lockstep']:.2f}% against {pairs['local']:.2f}%;" in flat


def test_the_adopted_profile_post_hoc_is_what_the_docs_quote(pls, p88):
    """The ``now_`` columns: the profile as both adoptions leave it (plan 87's exposed rate on the H100, plan 88's
    one-GPU spread for a grid alone), on the calls before plan 88; what docs/validation.md's plan 88 section quotes."""
    s = pd.read_csv(pls.OUT / "summary.csv").set_index(["gpu", "variant"])
    h100 = s.loc["H100"]
    pairs, row = h100.loc[p88.PAIRS], h100.loc[p88.ROW]
    g4, g8 = h100.loc[p88.GROUPED[0]], h100.loc[p88.GROUPED[1]]
    assert pairs.now_local_mae_pct < min(pairs.now_lockstep_mae_pct, pairs.now_family_mae_pct, pairs.local_mae_pct)
    assert g8.now_local_mae_pct < g8.local_mae_pct  # the exposed rate moves the grouped producers
    h200 = s.loc[("H200", p88.ROW)]
    assert h200.now_local_mae_pct == h200.local_mae_pct  # the H200's profile took neither change
    doc = " ".join((pls.ROOT / "docs/validation.md").read_text().split())
    assert (f"prices the H100s' pairs at {pairs.now_local_mae_pct:.2f}% (the same profile at spread 0 "
            f"{pairs.now_lockstep_mae_pct:.2f}%, at the family's {pairs.now_family_mae_pct:.2f}%), groups of 4 and 8 "
            f"at {g4.now_local_mae_pct:.2f} and {g8.now_local_mae_pct:.2f}%, and row order at "
            f"{row.now_local_mae_pct:.2f}%") in doc
