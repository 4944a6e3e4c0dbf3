"""bench/plan86_x8_exposed.py: registered plan 86's registration (h100-x8-mechanism against its twin with plan 76's
exposed rate, the producers alone at new H), its judge on made-up calls whose producers run at a named predictor's
times, and calls it must refuse (no GPU)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from tests.helpers import GZ_FAST, kept_made_up_call, load_bench
from tests.test_plan83_alone_edge import ENV
from tests.test_plan85_grouped_kept import _assert_doc_table, _doc_section, _judge, _rejudged


@pytest.fixture(scope="module")
def p86():
    return load_bench("plan86_x8_exposed")


@pytest.fixture(scope="module")
def registered(p86):
    return pd.read_csv(p86.REGISTERED / "predicted.csv")


def test_the_registration_is_what_the_model_gives(p86, registered):
    """Every H, producer and predictor, each wave, as the two profiles give it; the twin under the profile wherever
    HBM is read (its exposed share charged at a faster rate), over the flat predictor, and the two equal where the
    spread does not enter (the grouped producers at the higher H). The full waves: a partial last one has fewer
    tiles to fetch for."""
    import plan83_alone_edge as p83
    from ctasim.spec import load_hardware

    assert set(registered.gpu) == {"H100"} and sorted(set(registered.h)) == list(p86.HS)
    assert set(registered.variant) == set(p86.VARIANTS) and set(registered.predictor) == set(p86.PREDICTORS)
    twin = load_hardware(p86.TWIN)
    assert twin.l2_hbm_exposed_gbps == load_hardware("h100-x1-datasheet").l2_hbm_exposed_gbps > twin.hbm_gbps
    mine = registered[(registered.h == 13312) & (registered.variant == p86.GROUPED[0])]
    spread = twin.config(128, 256, kernel="ctapipe").ticket_spread
    assert np.allclose(mine[mine.predictor == "twin"].sort_values("wave").us,
                       p83.wave_times(13312, p86.GROUPED[0], twin, spread), atol=1e-3)
    full = registered[registered.wave < registered.h.map(lambda h: p86.tiles(h) // 132)]  # the last wave partial
    by = full.groupby(["h", "variant", "predictor", "wave"]).us.first().unstack("predictor")
    assert (by.twin_lockstep < by.lockstep).all() and (by.twin < by.profile + 1e-9).all()
    assert (by.flat < by.twin_lockstep).all()
    assert (by.flat.round(3).groupby(level="h").nunique() == 1).all()
    g = by.loc[(slice(None), list(p86.GROUPED)), :].loc[[13312, 14336]]
    assert np.allclose(g.twin, g.twin_lockstep) and np.allclose(g.profile, g.lockstep)


@kept_made_up_call
def _call(p86, registered, run, gpu="H100", times=None, early=None, ratios=None):
    """A made-up call on ``gpu``: every tile of (H, variant) from wave 2 on runs the registered per-wave time of
    ``times[v]`` (a predictor's name; default twin), waves 0-1 that of ``early[v]`` (default twin_lockstep), the last
    partial wave 3x (left out); each traced run's late mainloop ``ratios[v]`` (default 1.01) times its early one."""
    run.mkdir(parents=True, exist_ok=True)
    (run / "env.txt").write_text("index, name, uuid, serial, driver_version, clocks.current.sm [MHz]\n"
                                 + ENV[gpu] + "\n")
    for h in p86.HS:
        (run / f"OUT_H{h}").mkdir()
        runs = []
        for v in p86.VARIANTS:
            mine = registered[(registered.h == h) & (registered.variant == v)]

            def us(name):
                return mine[mine.predictor == name].sort_values("wave")["us"].to_numpy()

            cta = np.arange(p86.tiles(h, p86.M))
            wave = cta // 132
            late, first = us((times or {}).get(v, "twin")), us((early or {}).get(v, "twin_lockstep"))
            t = np.where(wave < 2, first[wave], late[wave]) * np.where(wave < p86.tiles(h, p86.M) // 132, 1, 3)
            start = cta * 40 + wave * 300_000
            end = start + 500 + (t * 1e3).astype(np.int64)
            pd.DataFrame({"cta": cta, "sm": cta % 132, "t_start": start, "t_acquire": start + 500,
                          "t_mainloop_end": end - 1000, "t_compute_end": end}).to_csv(
                run / f"OUT_H{h}" / f"percta-tiles-{p86.M}-{v}.csv.gz", index=False, compression=GZ_FAST)
            r = np.resize(np.asarray((ratios or {}).get(v, [1.01]), dtype=float), p86.RUNS)
            runs.append(pd.DataFrame({"m": p86.M, "variant": v, "run": np.arange(p86.RUNS), "plain_ms": 5.0,
                                      "mainloop_early_ns": 100_000.0, "mainloop_late_ns": 100_000.0 * r}))
        pd.concat(runs).to_csv(run / f"OUT_H{h}" / "percta-runs.csv", index=False)
        pd.DataFrame({"m": p86.M, "variant": list(p86.VARIANTS), "slots": 132}).to_csv(
            run / f"OUT_H{h}" / "percta.csv", index=False)
    return run


@pytest.fixture(scope="module")
def as_twin(p86, registered, tmp_path_factory):
    """The cases of a call that runs as the twin says (row order at its lost level), judged once."""
    tmp = tmp_path_factory.mktemp("p86")
    return _judge(p86, _call(p86, registered, tmp / "run"), tmp)


def test_a_call_that_runs_as_the_twin_says_meets_every_claim_and_adopts(p86, as_twin):
    c, cl = as_twin
    assert cl.met.all() and cl.loc["adopt", "value"] == "yes", cl
    twin = c[(c.predictor == "twin") & c.variant.isin(p86.GROUPED)]
    assert np.allclose(twin.mean_err_pct, 0, atol=0.01)
    assert cl.loc["a", "value"].startswith("0.00% against ") and cl.loc["c", "value"].startswith("0.00% against ")


def test_a_call_that_runs_as_the_profile_says_adopts_nothing(p86, registered, tmp_path):
    """Every producer at h100-x8-mechanism's times (waves 0-1 at its lockstep level): (a), (b) and (d) missed, no
    adoption; (c) met (the twin nearer than the flat predictor even so: 2.86 against 4.95%), and the profile's row order
    lost, so (e) met."""
    run = _call(p86, registered, tmp_path / "run", times={v: "profile" for v in p86.VARIANTS},
                early={v: "lockstep" for v in p86.VARIANTS})
    _, cl = _judge(p86, run, tmp_path)
    assert cl.met.tolist() == [False, False, True, False, True, False] and cl.loc["adopt", "value"] == "no"
    assert cl.loc["b", "value"] == "worst -3.48% (w21g4 at H = 7168)"


def test_the_naive_predictor_can_win(p86, registered, tmp_path):
    """Grouped producers at the flat predictor's times: the twin's error is flat's excess, so (c) missed and the
    adoption still open on (a), (b) and (d)."""
    run = _call(p86, registered, tmp_path / "run", times={v: "flat" for v in p86.GROUPED})
    _, cl = _judge(p86, run, tmp_path)
    assert not cl.loc["c", "met"] and cl.loc["c", "value"].endswith("against 0.00%")


def test_the_early_claim_reads_waves_0_and_1_only(p86, registered, tmp_path):
    """Waves 0-1 at lockstep's level, every later wave at the twin's: (d) missed, (a)-(c) met, no adoption."""
    run = _call(p86, registered, tmp_path / "run", early={v: "lockstep" for v in p86.VARIANTS})
    _, cl = _judge(p86, run, tmp_path)
    assert cl.met.tolist() == [True, True, True, False, True, False]


def test_row_order_that_keeps_its_reuse_misses_claim_e_only(p86, registered, tmp_path):
    run = _call(p86, registered, tmp_path / "run", times={p86.ROW: "lockstep"})
    _, cl = _judge(p86, run, tmp_path)
    assert cl.met.tolist() == [True, True, True, True, False, True]
    assert cl.loc["e", "value"] == "6144: 1.00x, 7168: 1.00x"


@pytest.mark.parametrize("value, met", [(2.5, True), (-2.51, False)])
def test_claim_b_turns_at_its_edge(p86, as_twin, value, met):
    c = as_twin[0].copy()
    c.loc[(c.variant == p86.GROUPED[1]) & (c.h == 7168) & (c.predictor == "twin"), "mean_err_pct"] = value
    assert p86.claims(c, "post-hoc").set_index("claim").loc["b", "met"] == met


@pytest.mark.parametrize("damage, message", [
    (lambda run: (run / "env.txt").unlink(), "run/env.txt (plan 86's call"),
    (lambda run: (run / "OUT_H14336" / "percta-runs.csv").unlink(), "OUT_H14336/percta-runs.csv (plan 86's call"),
    (lambda run: pd.read_csv(run / "OUT_H6144" / "percta-runs.csv").iloc[1:].to_csv(
        run / "OUT_H6144" / "percta-runs.csv", index=False), "not the 5 (0 to 4) plan 86 asks"),
    (lambda run: (run / "OUT_H7168" / "percta-tiles-16384-cutlass_ctapipe_w21.csv.gz").unlink(),
     "percta-tiles-16384-cutlass_ctapipe_w21.csv.gz (plan 86's call"),
])
def test_a_call_it_cannot_judge_is_refused_in_one_line(p86, registered, tmp_path, capsys, damage, message):
    run = _call(p86, registered, tmp_path / "run")
    damage(run)
    out = tmp_path / "judged"
    assert p86.main(["--judge", str(run), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("plan86_x8_exposed: ") and message in err and "\n" not in err, err
    assert not out.exists()


def test_an_h200_call_is_refused(p86, registered, tmp_path, capsys):
    """Plan 86 is an H100's: an H200's call has no rows to be judged on."""
    run = _call(p86, registered, tmp_path / "run")
    (run / "env.txt").write_text("index, name\n" + ENV["H200"] + "\n")
    assert p86.main(["--judge", str(run), "--out", str(tmp_path / "j")]) == 2
    assert "the registration has no rows for H200" in capsys.readouterr().err


def _set(c, p86, predictor, column, value, variants=None):
    c = c.copy()
    at = (c.predictor == predictor) & c.variant.isin(variants or p86.VARIANTS)
    c.loc[at, column] = value
    return c


@pytest.mark.parametrize("profile, met", [(2.0, True), (1.99, False)])
def test_claim_a_turns_at_half_the_profiles_error(p86, as_twin, profile, met):
    c = _set(as_twin[0], p86, "twin", "mean_err_pct", -1.0, p86.GROUPED)
    c = _set(c, p86, "profile", "mean_err_pct", profile, p86.GROUPED)
    assert p86.claims(c, "post-hoc").set_index("claim").loc["a", "met"] == met


@pytest.mark.parametrize("lockstep, met", [(2.0, True), (1.99, False)])
def test_claim_d_turns_at_half_and_reads_the_pairs_and_grouped_twin_lockstep(p86, as_twin, lockstep, met):
    """Over the pairs and the grouped producers, twin_lockstep's early error against lockstep's; row order's and the
    twin-at-its-spread's early errors do not enter."""
    early = (p86.PAIRS, *p86.GROUPED)
    c = _set(as_twin[0], p86, "twin_lockstep", "early_err_pct", 1.0, early)
    c = _set(c, p86, "lockstep", "early_err_pct", -lockstep, early)
    c = _set(c, p86, "twin_lockstep", "early_err_pct", 50.0, [p86.ROW])
    c = _set(c, p86, "twin", "early_err_pct", 50.0)
    assert p86.claims(c, "post-hoc").set_index("claim").loc["d", "met"] == met
    c = _set(c, p86, "twin_lockstep", "early_err_pct", 50.0, [p86.PAIRS])
    assert not p86.claims(c, "post-hoc").set_index("claim").loc["d", "met"]


@pytest.mark.parametrize("over, met", [(1.25, True), (1.249, False)])
def test_claim_e_turns_at_its_edge(p86, as_twin, over, met):
    c = as_twin[0].copy()
    at = (c.variant == p86.ROW) & (c.predictor == "lockstep") & (c.h == 7168)
    c.loc[at, "predicted_us"] = c.loc[at, "measured_us"] / over
    assert p86.claims(c, "post-hoc").set_index("claim").loc["e", "met"] == met


def test_the_early_means_are_waves_0_and_1_and_the_late_ones_from_wave_2(p86, registered):
    """Waves 0, 1 and 2 of one case at 100, 200 and 5000 us: the early mean 150, and wave 2 in the full-wave mean."""
    from percta_predict import full_waves

    twin = registered[registered.predictor == "twin"]
    meas = twin.assign(measured_us=twin.us, run=-1, ratio=np.nan)[["gpu", "h", "variant", "wave", "measured_us",
                                                                     "run", "ratio"]].copy()
    one = (meas.h == 6144) & (meas.variant == p86.PAIRS)
    for w, us in ((0, 100.0), (1, 200.0), (2, 5000.0)):
        meas.loc[one & (meas.wave == w), "measured_us"] = us
    runs = pd.DataFrame([dict(gpu="H100", h=h, variant=v, wave=-1, measured_us=np.nan, run=0, ratio=1.0)
                         for h in p86.HS for v in p86.VARIANTS])
    c = p86.cases(registered, pd.concat([meas, runs], ignore_index=True)).set_index(["h", "variant", "predictor"])
    row = c.loc[(6144, p86.PAIRS, "twin")]
    assert row.early_measured_us == 150.0
    full = full_waves(meas[one], p86.tiles(6144))
    assert row.measured_us == pytest.approx(full.measured_us.mean()) and 2 in set(full.wave)


def test_the_committed_h100_call_judges_as_committed(p86, tmp_path):
    """The call (bench/results/hw-h100/2026-12-07-registered86-1gpu, GPU-136218d1) judged again gives the committed
    tables, and what docs/validation.md reads off them: (a), (c), (d) met, (b) and (e) missed, nothing adopted."""
    c, cl = _rejudged(p86, "2026-12-07-registered86-1gpu", "validation-registered86", tmp_path)
    assert list(cl.met) == [True, False, True, True, False, False] and cl.loc["adopt", "value"] == "no"
    assert cl.loc["b", "value"] == "worst +2.63% (w21g4 at H = 6144)"
    assert cl.provenance.str.startswith("registered: predictions added in 74ab720c").all()


def test_docs_quote_the_committed_call(p86):
    """docs/validation.md's plan 86 table is the committed cases.csv: each H's measured means and the flat, profile
    and twin errors per producer; and the claims' figures."""
    doc = _doc_section(p86, 86)
    c = pd.read_csv(p86.ROOT / "bench/results/validation-registered86/cases.csv")
    _assert_doc_table(doc, c, p86.VARIANTS, ("flat", "profile", "twin"))
    cl = pd.read_csv(p86.ROOT / "bench/results/validation-registered86/claims.csv").set_index("claim")
    for claim in "acd":
        a, b = cl.loc[claim, "value"].split(" against ")
        assert a in doc and b.rstrip("%") in doc, claim


def test_the_post_hoc_figures_are_the_committed_cases(p86):
    """Plan 86's post-hoc paragraph: the twin at lockstep on the grouped producers (-1.4 to +1.5%, mean |error| 0.90%,
    groups of 4 at 6144 +1.0%) and on the pairs (+0.7, -3.0, -9.4, -8.6% by H)."""
    c = pd.read_csv(p86.ROOT / "bench/results/validation-registered86/cases.csv")
    t = c[c.predictor == "twin_lockstep"].set_index(["h", "variant"])["mean_err_pct"]
    g = t[t.index.get_level_values("variant").isin(p86.GROUPED)]
    assert (round(g.min(), 1), round(g.max(), 1), round(g.abs().mean(), 2)) == (-1.4, 1.5, 0.90)
    assert round(t[(6144, p86.GROUPED[0])], 1) == 1.0
    assert [round(t[(h, p86.PAIRS)], 1) for h in p86.HS] == [0.7, -3.0, -9.4, -8.6]
    doc = _doc_section(p86, 86)
    assert "within -1.4 to +1.5% at every H (mean |error| 0.90%)" in " ".join(doc.split())


def test_the_row_order_edge_by_unit_is_the_committed_tables(p86):
    """The paragraph on the four H100 units: each unit's row-order figures by H, from plans 83, 85 and 86's judged
    tables (measured over lockstep) and plan 84's (the median late-over-early ratio)."""
    r = p86.ROOT / "bench/results"
    doc = " ".join((p86.ROOT / "docs/validation.md").read_text().split())
    m = pd.read_csv(r / "validation-registered83/means.csv")
    m = m[m.variant == p86.ROW]
    units = {"GPU-ef03c33f (plan 83)": dict(zip(m.h, m.measured_us / m.lockstep))}
    for plan, gpu in (("85", "GPU-d3274ca1"), ("86", "GPU-136218d1")):
        c = pd.read_csv(r / f"validation-registered{plan}/cases.csv")
        c = c[(c.variant == p86.ROW) & (c.predictor == "lockstep")]
        units[f"{gpu} (plan {plan})"] = dict(zip(c.h, c.measured_us / c.predicted_us))
    for unit, by_h in units.items():
        want = unit + " " + ", ".join(f"{h} {x:.2f}x" for h, x in sorted(by_h.items()))
        assert want in doc, want
    c = pd.read_csv(r / "validation-registered84/cases.csv")
    assert "GPU-5f25ad10 (plan 84) " + ", ".join(f"{h} {x:.2f}" for h, x in zip(c.h, c.ratio_median)) in doc
