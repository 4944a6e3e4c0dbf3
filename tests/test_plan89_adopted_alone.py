"""bench/plan89_adopted_alone.py: registered plan 89's registration (the producers alone at M = 24576 under the model
as registered plans 87 and 88 left it, beside the model before them, spread 0 and the flat line), its judge on
made-up calls whose producers run at a named predictor's times, and calls it must refuse (no GPU)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from tests.helpers import load_bench
from tests.test_plan85_grouped_kept import _judge
from tests.test_plan88_local_spread import _call


@pytest.fixture(scope="module")
def p89():
    return load_bench("plan89_adopted_alone")


@pytest.fixture(scope="module")
def registered(p89):
    return pd.read_csv(p89.REGISTERED / "predicted.csv")


def _mean(p89, registered, h, v, name, gpu="H100"):
    from percta_predict import full_waves

    x = registered[(registered.gpu == gpu) & (registered.h == h) & (registered.variant == v)
                   & (registered.predictor == name)]
    return full_waves(x, p89.tiles(h, p89.M)).us.mean()


def test_the_registration_is_what_the_profiles_give(p89, registered):
    """Both GPUs, every H, producer, predictor and wave, as the script computes them now; ``adopted`` is the profile as
    it is at the one-GPU tickets' spread, ``before`` the profile as plans 83-88 registered it at the family's."""
    from ctasim.costs import alone_ticket_spread
    from ctasim.profiles import before_h100_x8_exposed
    from ctasim.spec import load_hardware

    assert set(registered.gpu) == {"H100", "H200"} and sorted(set(registered.h)) == list(p89.HS)
    assert set(registered.m) == {24576} and set(registered.predictor) == set(p89.PREDICTORS)
    now = p89.register()
    assert len(now) == len(registered)
    assert np.allclose(now.us.to_numpy(), registered.us.to_numpy(), rtol=0, atol=6e-5)  # written to 4 places
    assert (now[["gpu", "h", "variant", "predictor", "wave"]].to_numpy()
            == registered[["gpu", "h", "variant", "predictor", "wave"]].to_numpy()).all()
    for gpu, profile in p89.GPUS.items():
        spread = registered[registered.gpu == gpu].groupby("predictor").spread.first()
        hw = load_hardware(profile)
        assert spread["adopted"] == alone_ticket_spread(hw) == 0.0189 and spread["lockstep"] == 0.0
        assert spread["before"] == before_h100_x8_exposed(profile).config(128, 256, kernel="ctapipe").ticket_spread
    preds = p89.predictors("h100-x8-mechanism")
    assert preds["adopted"][0] is preds["lockstep"][0] and preds["adopted"][0].l2_hbm_exposed_gbps == 4257.3663
    assert preds["before"][0].l2_hbm_exposed_gbps != 4257.3663  # the rate plans 83-88 registered with
    # plan 87's adoption moved the H100's profile and not the H200's: before's grouped level differs on the H100 only
    assert _mean(p89, registered, 12800, p89.GROUPED[1], "before") > 1.01 * _mean(
        p89, registered, 12800, p89.GROUPED[1], "lockstep")
    assert _mean(p89, registered, 12800, p89.GROUPED[1], "before", "H200") == pytest.approx(
        _mean(p89, registered, 12800, p89.GROUPED[1], "lockstep", "H200"))


def test_the_registration_readme_shows_the_registered_means(p89, registered):
    """Every row of the README's table is the registered predictions' mean over full waves >= 2."""
    names = {p89.ROW: "row", p89.PAIRS: "pairs", p89.GROUPED[0]: "groups of 4", p89.GROUPED[1]: "groups of 8"}
    readme = (p89.REGISTERED / "README.md").read_text()
    for gpu in p89.GPUS:
        for h in p89.HS:
            for v in p89.VARIANTS:
                m = {n: _mean(p89, registered, h, v, n, gpu) for n in p89.PREDICTORS}
                row = (f"| {gpu} | {h} | {names[v]} | " + " | ".join(f"{m[n]:.1f}" for n in p89.PREDICTORS)
                       + f" | {m['adopted'] / m['lockstep']:.2f} |")
                assert row in readme, row


@pytest.fixture(scope="module")
def as_adopted(p89, registered, tmp_path_factory):
    """A call on an H100 that runs as ``adopted`` says, judged once."""
    tmp = tmp_path_factory.mktemp("p89")
    return _judge(p89, _call(p89, registered, tmp / "run", default="adopted"), tmp)


def _claims(p89, c):
    return p89.claims(c, "post-hoc").set_index("claim")


def test_a_call_that_runs_as_adopted_says_meets_every_claim(p89, as_adopted):
    c, cl = as_adopted
    assert "adopt" not in cl.index  # no adoption rule
    assert cl.index.tolist() == list("abcdef") and cl.met.all(), cl
    assert np.allclose(c[c.predictor == "adopted"].mean_err_pct, 0, atol=0.01)
    assert cl.loc["a", "value"].startswith("0.00%, worst ")
    assert cl.loc["e", "value"] == "5632: kept / kept, 7424: lost / lost, 9984: lost / lost, 12800: lost / lost"
    # the full waves >= 2 of each H: the last partial wave left out, 5632's last wave (exactly full) kept
    assert c.groupby("h").waves.first().to_dict() == {5632: 30, 7424: 40, 9984: 54, 12800: 70}


def test_a_call_that_runs_at_spread_0_misses_what_turns_on_the_spread(p89, registered, tmp_path):
    """Every producer at lockstep's times: (a) and (b) missed (the pairs 6-8% under adopted's), (d) missed (spread 0
    nearer on the pairs), (e) and (f) missed (row order kept where adopted says lost); (c) met."""
    run = _call(p89, registered, tmp_path / "run", default="lockstep")
    _, cl = _judge(p89, run, tmp_path)
    assert cl.met.tolist() == [False, False, True, False, False, False], cl
    assert "w21 at H = " in cl.loc["a", "value"]


def test_a_call_that_runs_as_before_misses_c(p89, registered, tmp_path):
    _, cl = _judge(p89, _call(p89, registered, tmp_path / "run", default="before"), tmp_path)
    assert not cl.loc["c", "met"] and cl.loc["c", "value"].split(" against ")[1].startswith("0.00% (lockstep ")


def test_an_h200_call_is_judged_on_its_own_profiles_rows(p89, registered, tmp_path):
    c, cl = _judge(p89, _call(p89, registered, tmp_path / "run", gpu="H200", default="adopted"), tmp_path)
    assert set(c.gpu) == {"H200"} and cl.met.all()
    assert cl.loc["e", "value"] == ("5632: kept / kept, 7424: between / between, 9984: lost / lost, "
                                    "12800: lost / lost")


@pytest.mark.parametrize("err, met", [(3.0, True), (3.01, False)])
def test_claim_a_turns_at_the_mean_target(p89, as_adopted, err, met):
    c = as_adopted[0].copy()
    rows = c.variant.isin((p89.PAIRS, *p89.GROUPED)) & (c.predictor == "adopted")
    c.loc[rows, "mean_err_pct"] = err
    c.loc[c.predictor == "flat", "mean_err_pct"] = 10.0  # (b) out of the way
    assert _claims(p89, c).loc["a", "met"] == met


@pytest.mark.parametrize("worst, met", [(-6.0, True), (-6.01, False)])
def test_claim_a_turns_at_the_worst_target(p89, as_adopted, worst, met):
    c = as_adopted[0].copy()
    rows = c.variant.isin((p89.PAIRS, *p89.GROUPED)) & (c.predictor == "adopted")
    c.loc[rows, "mean_err_pct"] = 0.0
    c.loc[rows & (c.h == 9984) & (c.variant == p89.PAIRS), "mean_err_pct"] = worst
    cl = _claims(p89, c)
    assert cl.loc["a", "met"] == met and f"worst {worst:+.2f}% (w21 at H = 9984)" in cl.loc["a", "value"]


def test_claim_b_turns_at_half_the_flat_error_and_reads_no_row_order(p89, as_adopted):
    c = as_adopted[0].copy()
    kept = c.variant.isin((p89.PAIRS, *p89.GROUPED))
    c.loc[kept & (c.predictor == "flat"), "mean_err_pct"] = -4.0
    c.loc[kept & (c.predictor == "adopted"), "mean_err_pct"] = 2.0
    c.loc[~kept, "mean_err_pct"] = 50.0  # row order under every predictor: not in (b)
    assert _claims(p89, c).loc["b", "met"]
    c.loc[kept & (c.predictor == "adopted"), "mean_err_pct"] = 2.01
    assert not _claims(p89, c).loc["b", "met"]


def test_claim_c_reads_the_twelve_not_row_order(p89, as_adopted):
    c = as_adopted[0].copy()
    kept = c.variant.isin((p89.PAIRS, *p89.GROUPED))
    c.loc[kept & (c.predictor == "adopted"), "mean_err_pct"] = 2.0
    c.loc[kept & (c.predictor == "before"), "mean_err_pct"] = -2.5
    c.loc[~kept & (c.predictor == "adopted"), "mean_err_pct"] = 90.0  # row order: not in (c)
    assert _claims(p89, c).loc["c", "met"]
    c.loc[kept & (c.predictor == "before"), "mean_err_pct"] = 2.0  # a tie is not nearer
    c.loc[~kept & (c.predictor == "before"), "mean_err_pct"] = 90.0
    assert not _claims(p89, c).loc["c", "met"]


def test_claim_d_reads_the_pairs_only(p89, as_adopted):
    c = as_adopted[0].copy()
    pairs = c.variant == p89.PAIRS
    c.loc[pairs & (c.predictor == "adopted"), "mean_err_pct"] = 1.0
    c.loc[pairs & (c.predictor == "lockstep"), "mean_err_pct"] = 1.5
    c.loc[~pairs & (c.predictor == "adopted"), "mean_err_pct"] = 30.0
    assert _claims(p89, c).loc["d", "met"]
    c.loc[pairs & (c.predictor == "lockstep"), "mean_err_pct"] = -1.0  # a tie is not nearer
    assert not _claims(p89, c).loc["d", "met"]


def test_claim_e_needs_every_h_in_adopted_state_between_included(p89, as_adopted):
    c = as_adopted[0].copy()
    row = c.variant == p89.ROW
    lock = c[row & (c.predictor == "lockstep")].set_index("h").predicted_us
    assert _claims(p89, c).loc["e", "met"]  # kept, lost, lost, lost as adopted says
    c.loc[row & (c.h == 7424), "measured_us"] = lock[7424] * 1.2  # between where adopted says lost
    cl = _claims(p89, c)
    assert not cl.loc["e", "met"] and "7424: between / lost" in cl.loc["e", "value"]
    c.loc[row & (c.h == 7424), "measured_us"] = lock[7424] * 1.3
    c.loc[row & (c.h == 5632), "measured_us"] = lock[5632] * 1.15  # between where adopted says kept
    assert not _claims(p89, c).loc["e", "met"]
    c.loc[row & (c.h == 5632), "measured_us"] = lock[5632] * 1.09
    assert _claims(p89, c).loc["e", "met"]


def test_claim_f_needs_adopted_under_both_others_on_row_order(p89, as_adopted):
    c = as_adopted[0].copy()
    row = c.variant == p89.ROW
    c.loc[row & (c.predictor == "adopted"), "mean_err_pct"] = 10.0
    c.loc[row & (c.predictor == "lockstep"), "mean_err_pct"] = -30.0
    c.loc[row & (c.predictor == "before"), "mean_err_pct"] = 40.0
    c.loc[~row, "mean_err_pct"] = 99.0  # the other producers: not in (f)
    assert _claims(p89, c).loc["f", "met"]
    c.loc[row & (c.predictor == "before"), "mean_err_pct"] = -9.0
    cl = _claims(p89, c)
    assert not cl.loc["f", "met"] and cl.loc["f", "value"] == "10.00% against lockstep 30.00%, before 9.00%"


def test_a_call_missing_a_producer_is_refused_in_one_line(p89, registered, tmp_path, capsys):
    run = _call(p89, registered, tmp_path / "run", default="adopted")
    (run / "OUT_H9984" / f"percta-tiles-{p89.M}-{p89.PAIRS}.csv.gz").unlink()
    assert p89.main(["--judge", str(run), "--out", str(tmp_path / "j")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("plan89_adopted_alone: no ") and "(plan 89's call runs" in err and "--ms 24576" in err
    assert "\n" not in err and not (tmp_path / "j").exists()


def test_a_call_at_another_m_is_refused_in_one_line(p89, registered, tmp_path, capsys):
    """A call that ran M = 16384 (plans 83-88's) is not this plan's: refused, nothing written."""
    run = _call(p89, registered, tmp_path / "run", default="adopted")
    f = run / "OUT_H5632" / "percta.csv"
    pd.read_csv(f).assign(m=16384).to_csv(f, index=False)
    assert p89.main(["--judge", str(run), "--out", str(tmp_path / "j")]) == 2
    err = capsys.readouterr().err.strip()
    assert "at M = 24576 ran 0 times, not once" in err and "\n" not in err and not (tmp_path / "j").exists()


def test_the_readme_quotes_the_record_it_names(p89):
    """The figures of the README's "what the record says", from the committed files they name, over the adopted
    profile's lockstep level where they are ratios."""
    import plan85_grouped_kept as p85
    from ctasim.costs import alone_ticket_spread
    from ctasim.spec import load_hardware
    from percta_predict import full_waves

    readme = " ".join((p89.REGISTERED / "README.md").read_text().split())
    res = p89.ROOT / "bench/results"
    c88 = pd.read_csv(res / "validation-registered88/cases.csv")
    grouped = c88[c88.variant.isin(p89.GROUPED) & (c88.predictor == "flat")]
    over = (grouped.measured_us / grouped.predicted_us - 1) * 100
    mae = lambda x: x.mean_err_pct.abs().mean()  # noqa: E731
    kept = c88[c88.variant.isin((p89.PAIRS, *p89.GROUPED)) & (c88.predictor == "flat")]
    assert (f"ran {over.min():.2f}-{over.max():.2f}% over the flat line (its mean |error| {mae(grouped):.2f}% on them, "
            f"{mae(kept):.2f}% with the pairs)") in readme
    pairs88 = c88[c88.variant == p89.PAIRS]
    assert (f"(plan 88's call: {mae(pairs88[pairs88.predictor == 'lockstep']):.2f} against "
            f"{mae(pairs88[pairs88.predictor == 'local']):.2f}%)") in readme
    s = pd.read_csv(res / "posthoc-local-spread/summary.csv").set_index(["gpu", "variant"]).loc[("H100", p89.PAIRS)]
    assert (f"(8 cases) the adopted profile at the one-GPU spread is {s.now_local_mae_pct:.2f}% off, at spread 0 "
            f"{s.now_lockstep_mae_pct:.2f}%") in readme and s.cases == 8
    c = pd.read_csv(res / "posthoc-local-spread/cases.csv")
    row = c[(c.variant == p89.ROW) & (c.gpu == "H100")]
    ratio = 1 / (1 + row.now_lockstep_err_pct / 100)
    low, high = ratio[row.h <= 8448], ratio[row.h > 8448]
    assert set(row[row.h <= 8448].h) == {6144, 7168, 8192} and set(row[row.h <= 8448].call) == {"plan 83", "plan 86"}
    assert f"at H = 6144-8192 ran {low.min():.2f}-{low.max():.2f}x the adopted lockstep level" in readme
    assert f"from 8704 up {high.min():.2f}-{high.max():.2f}x (lost)" in readme
    hw = load_hardware("h100-x8-mechanism")

    def mean(h, m, spread):
        t = p85.wave_prediction(h, p89.ROW, "lockstep", hw, spread, m)
        return full_waves(pd.DataFrame({"wave": range(len(t)), "us": t}), p89.tiles(h, m)).us.mean()

    r88 = c88[(c88.variant == p89.ROW) & (c88.predictor == "flat")].set_index("h").measured_us
    assert ("plan 88's unit " + ", ".join(f"{r88[h] / mean(h, 16384, 0.0):.2f}" for h in (6656, 7680))
            + f" and {r88[8448] / mean(8448, 16384, 0.0):.2f}x at 6656-8448") in readme
    c87 = pd.read_csv(res / "validation-registered87/cases.csv")
    m87 = c87[(c87.variant == p89.ROW) & (c87.h == 7168)].measured_us.iloc[0]
    assert f"plan 87's {m87 / mean(7168, 32768, 0.0):.2f}x at 7168 with M = 32768" in readme
    assert (f"at 7168 with M = 32768 it said {mean(7168, 32768, alone_ticket_spread(hw)) / mean(7168, 32768, 0.0):.2f}x"
            in readme)


def test_the_committed_h100_call_judges_as_committed_and_docs_quote_it(p89, tmp_path):
    """The call (bench/results/hw-h100/2026-12-07-registered89-1gpu, GPU-17c4041b) judged again gives the committed
    tables: (a), (c) and (f) met, (b), (d) and (e) missed, registered; docs/validation.md's plan 89 table is its
    cases.csv and its claims table says each claim's value."""
    from tests.test_plan85_grouped_kept import _assert_doc_table, _doc_section, _rejudged

    c, cl = _rejudged(p89, "2026-12-07-registered89-1gpu", "validation-registered89", tmp_path)
    assert cl.met.tolist() == [True, False, True, False, False, True]
    assert cl.provenance.str.startswith("registered: predictions added in 117d87cf").all()
    assert cl.loc["e", "value"] == ("5632: between / kept, 7424: between / lost, 9984: lost / lost, "
                                    "12800: lost / lost")
    doc = _doc_section(p89, 89)
    _assert_doc_table(doc, c, p89.VARIANTS, p89.PREDICTORS)
    flat = " ".join(doc.split())
    for claim in "abcdf":
        assert cl.loc[claim, "value"].replace("lockstep ", "").split(" (")[0].split(", before")[0] in flat, claim
    kept = c[c.variant.isin((p89.PAIRS, *p89.GROUPED)) & (c.predictor == "adopted")]
    assert (kept.mean_err_pct > 0).all()  # "slow on all twelve"
    assert "The model is slow on all twelve" in flat


@pytest.fixture(scope="module")
def pcm():
    return load_bench("posthoc_cluster_mainloop")


def test_the_committed_cluster_tables_are_what_the_script_gives_and_the_docs_quote(pcm, tmp_path):
    assert pcm.main(["--out", str(tmp_path)]) == 0
    for f in ("cases.csv", "summary.csv"):
        assert (tmp_path / f).read_text() == (pcm.OUT / f).read_text(), f
    s = pd.read_csv(pcm.OUT / "summary.csv").set_index(["gpu", "variant"])
    c = pd.read_csv(pcm.OUT / "cases.csv")
    doc = " ".join((pcm.ROOT / "docs/validation.md").read_text().split())
    w21, c21 = s.loc[("H100", "cutlass_ctapipe_w21")], s.loc[("H200", "cutlass_ctapipe_c21")]
    h100_c21, c12 = s.loc[("H100", "cutlass_ctapipe_c21")], s.loc[("H200", "cutlass_ctapipe_c12")]
    pct = lambda x: f"{(x - 1) * 100:.1f}"  # noqa: E731
    assert (f"ran {pct(w21.row_over_min)}-{pct(w21.row_over_max)}% longer than the 2x1 pairs' (`_w21`) on the H100s "
            f"(median {pct(w21.row_over_median)}%, {int(w21.cases)} cases, four units; `_c21` "
            f"{pct(h100_c21.row_over_min)}-{pct(h100_c21.row_over_max)}% on a fifth) and "
            f"{pct(c21.row_over_min)}-{pct(c21.row_over_max)}% longer than the 2x1 pairs' (`_c21`) on the H200s "
            f"(median {pct(c21.row_over_median)}%, {int(c21.cases)} cases)") in doc
    assert f"ran only {pct(c12.row_over_min)}-{pct(c12.row_over_max)}% shorter than 1x1" in doc
    pairs = c[c.variant.isin(["cutlass_ctapipe_w21", "cutlass_ctapipe_c21"])]
    assert pairs.model_row_over.between(0.999, 1.0).all() and (pairs.row_over > 1.03).all()
    assert set(c[c.variant == "cutlass_ctapipe_w21"].call) == {"plan 85", "plan 86", "plan 87", "plan 88", "plan 89"}


def test_a_slower_first_wave_changes_the_cluster_table(pcm, tmp_path, monkeypatch):
    """The ratios come from the tile tables: plan 89's row order at H = 5632 with its wave 0 10% longer."""
    import shutil

    call = next(x for x in pcm.CALLS if x[0] == "plan 89")
    root = tmp_path / "root"
    shutil.copytree(pcm.ROOT / call[2] / "OUT_H5632", root / call[2] / "OUT_H5632")
    shutil.copytree(pcm.ROOT / pcm.RATE_CALL[0], root / pcm.RATE_CALL[0])  # where the L2-to-SM rate is read
    f = root / call[2] / "OUT_H5632" / "percta-tiles-24576-cutlass_ctapipe.csv.gz"
    t = pd.read_csv(f)
    first = t.cta < pcm.SLOTS
    t.loc[first, "t_mainloop_end"] = t.t_acquire + ((t.t_mainloop_end - t.t_acquire) * 1.1).astype(np.int64)
    t.to_csv(f, index=False)
    monkeypatch.setattr(pcm, "ROOT", root)
    monkeypatch.setattr(pcm, "CALLS", ((call[0], call[1], call[2], {5632: "OUT_H5632"}, (24576,)),))
    got = pcm.cases().set_index("variant")
    base = pd.read_csv(pcm.OUT / "cases.csv").set_index(["call", "h", "variant"]).sort_index().loc[("plan 89", 5632)]
    for v in ("cutlass_ctapipe_w21", "cutlass_ctapipe_w21g8"):
        assert got.loc[v, "row_over"] == pytest.approx(base.loc[v, "row_over"] * 1.1, rel=2e-3)
        assert got.loc[v, "wave0_us"] == base.loc[v, "wave0_us"]


def test_the_l2_to_sm_bound_post_hoc_is_read_off_plan_90_and_the_docs_quote_it(pcm):
    """``bound``: wave 0 floored at its tiles' L2 reads at the rate read off plan 90's 1x1 first wave (one case);
    never under the model, a 2x1 producer's floor a third lower than a 1x1's, and docs/validation.md's figures."""
    from ctasim.costs import l2_sm_reads
    from ctasim.spec import Layer

    rate = pcm.l2_sm_rate()
    layer = Layer(16384, 5632, 5632, 128, 256)
    assert rate == pytest.approx(132 * l2_sm_reads(layer, 2) / 65_656, rel=2e-3)  # plan 90's 65.66 us
    assert pcm.cluster_of("cutlass_ctapipe_w21") == (2, 1) and pcm.cluster_of("cutlass_ctapipe_c12") == (1, 2)
    c = pd.read_csv(pcm.OUT / "cases.csv")
    assert (c.bound_us >= c.model_us).all() and (c.bound_us > c.model_us).any()
    assert "plan 90" not in set(c.call)  # the rate's own call is not among the cases
    s = pd.read_csv(pcm.OUT / "summary.csv").set_index(["gpu", "variant"])
    h100, h200 = s.loc[("H100", "cutlass_ctapipe")], s.loc[("H200", "cutlass_ctapipe")]
    assert h100.bound_mae_pct < h100.model_mae_pct and h200.bound_mae_pct < h200.model_mae_pct
    doc = " ".join((pcm.ROOT / "docs/validation.md").read_text().split())
    assert (f"at {rate / 1e3:.1f} TB/s the 1x1 producer's first wave is {h100.bound_mae_pct:.2f}% off on the H100s "
            f"({int(h100.cases)} cases, the model {h100.model_mae_pct:.2f}%) and {h200.bound_mae_pct:.2f}% on the "
            f"H200s ({int(h200.cases)} cases, {h200.model_mae_pct:.2f}%)") in doc
