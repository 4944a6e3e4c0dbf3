"""bench/plan85_grouped_kept.py: registered plan 85's registration (the grouped producers at the kept level), its judge
on made-up calls whose producers run at a named predictor's times, and calls it must refuse (no GPU)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from tests.helpers import GZ_FAST, kept_made_up_call, load_bench
from tests.test_plan83_alone_edge import ENV


@pytest.fixture(scope="module")
def p85():
    return load_bench("plan85_grouped_kept")


@pytest.fixture(scope="module")
def registered(p85):
    return pd.read_csv(p85.REGISTERED / "predicted.csv")


def _means(p85, registered):
    from percta_predict import full_waves

    rows = [dict(gpu=g, h=h, variant=v, predictor=p, us=full_waves(x, p85.tiles(h))["us"].mean())
            for (g, h, v, p), x in registered.groupby(["gpu", "h", "variant", "predictor"])]
    return pd.DataFrame(rows).set_index(["gpu", "h", "variant", "predictor"])["us"]


def test_the_registration_is_what_the_model_gives(p85, registered):
    """Every GPU, H, producer and predictor, each wave; the grouped producers' profile at their lockstep level, the
    pairs' over it, row order's far over it (its lost level), and the flat predictor one time for all."""
    assert set(registered.gpu) == set(p85.GPUS) and sorted(set(registered.h)) == list(p85.HS)
    assert set(registered.variant) == set(p85.VARIANTS) and set(registered.predictor) == set(p85.PREDICTORS)
    mine = registered[(registered.gpu == "H100") & (registered.h == 10240) & (registered.variant == p85.G8)]
    import plan83_alone_edge as p83
    hw, spread = p85.predictors("h100-x8-mechanism")["profile"]
    assert np.allclose(mine[mine.predictor == "profile"].sort_values("wave").us, p83.wave_times(10240, p85.G8, hw,
                                                                                               spread), atol=1e-3)
    m = _means(p85, registered)
    for gpu in p85.GPUS:
        for h in p85.HS:
            at = m.loc[gpu, h]
            for v in p85.GROUPED:
                assert at.loc[v, "profile"] == pytest.approx(at.loc[v, "lockstep"], rel=1e-3)
                assert at.loc[v, "flat"] < at.loc[v, "lockstep"]
            assert at.loc[p85.PAIRS, "profile"] > at.loc[p85.PAIRS, "lockstep"] * 1.03
            assert at.loc[p85.ROW, "profile"] > at.loc[p85.ROW, "lockstep"] * 1.4
            assert len({round(at.loc[v, "flat"], 3) for v in p85.VARIANTS}) == 1


@kept_made_up_call
def _call(p85, registered, run, gpu="H100", times=None, ratios=None):
    """A made-up call on ``gpu``: every tile of (H, variant) runs the registered per-wave time of ``times[v]`` (a
    predictor's name; default lockstep); each traced run's late mainloop ``ratios[v]`` (default 1.02) times its early
    one of 100 us."""
    run.mkdir(parents=True, exist_ok=True)
    (run / "env.txt").write_text("index, name, uuid, serial, driver_version, clocks.current.sm [MHz]\n"
                                 + ENV[gpu] + "\n")
    for h in p85.HS:
        (run / f"OUT_H{h}").mkdir()
        runs = []
        for v in p85.VARIANTS:
            name = (times or {}).get(v, "lockstep")
            us = registered[(registered.gpu == gpu) & (registered.h == h) & (registered.variant == v)
                            & (registered.predictor == name)].sort_values("wave")["us"].to_numpy()
            cta = np.arange(p85.tiles(h))
            start = cta * 40 + (cta // 132) * 300_000
            wave = cta // 132
            judged = (wave >= 2) & (wave < p85.tiles(h) // 132)  # waves 0-1 and the partial last one: 3x, left out
            end = start + 500 + (us[wave] * 1e3 * np.where(judged, 1, 3)).astype(np.int64)
            pd.DataFrame({"cta": cta, "sm": cta % 132, "t_start": start, "t_acquire": start + 500,
                          "t_mainloop_end": end - 1000, "t_compute_end": end}).to_csv(
                run / f"OUT_H{h}" / f"percta-tiles-{p85.M}-{v}.csv.gz", index=False, compression=GZ_FAST)
            r = np.resize(np.asarray((ratios or {}).get(v, [1.02]), dtype=float), p85.RUNS)
            runs.append(pd.DataFrame({"m": p85.M, "variant": v, "run": np.arange(p85.RUNS), "plain_ms": 5.0,
                                      "mainloop_early_ns": 100_000.0, "mainloop_late_ns": 100_000.0 * r}))
        pd.concat(runs).to_csv(run / f"OUT_H{h}" / "percta-runs.csv", index=False)
        pd.DataFrame({"m": p85.M, "variant": list(p85.VARIANTS), "slots": 132}).to_csv(run / f"OUT_H{h}" / "percta.csv",
                                                                                     index=False)
    return run


def _judge(plan, run, tmp_path):
    """``plan``'s judge on ``run`` into ``tmp_path/judged``: its cases and claims (the producer-alone plans 85-88)."""
    out = tmp_path / "judged"
    assert plan.main(["--judge", str(run), "--out", str(out)]) == 0
    return pd.read_csv(out / "cases.csv"), pd.read_csv(out / "claims.csv").set_index("claim")


def _rejudged(plan, call: str, judged: str, tmp_path):
    """The committed call ``bench/results/hw-h100/<call>`` judged again: its cases and claims, each table asserted
    byte for byte the committed ``bench/results/<judged>/``'s."""
    c, cl = _judge(plan, plan.ROOT / "bench/results/hw-h100" / call, tmp_path)
    for name in ("cases.csv", "claims.csv"):
        assert (tmp_path / "judged" / name).read_text() == (plan.ROOT / "bench/results" / judged / name).read_text()
    return c, cl


def _doc_section(plan, n: int) -> str:
    """docs/validation.md's section of registered plan ``n``."""
    return (plan.ROOT / "docs/validation.md").read_text().split(f"### Registered plan {n}")[1].split("\n### ")[0]


def _assert_doc_table(doc: str, cases: pd.DataFrame, variants, predictors) -> None:
    """Each H's row of a producer-alone plan's table in ``doc``: per producer its measured mean over full waves and
    ``predictors``' errors of it, as ``cases`` (a judged cases.csv) has them."""
    for h, g in cases.groupby("h"):
        cells = []
        for v in variants:
            x = g[g.variant == v].set_index("predictor")
            cells.append(f"{x.measured_us.iloc[0]:.1f}; " + " / ".join(f"{x.mean_err_pct[p]:+.1f}" for p in predictors))
        want = f"| {h} | " + " | ".join(cells) + " |"
        assert want in doc, want


def test_a_call_that_runs_as_the_model_says_meets_every_claim(p85, as_modelled):
    """The grouped producers at the profile's (kept) level, the pairs at lockstep, row order lost: every claim met."""
    c = as_modelled
    cl = p85.claims(c, "post-hoc").set_index("claim")
    assert cl.met.all(), cl
    prof = c[c.predictor == "profile"]
    assert np.allclose(prof[prof.variant.isin(p85.GROUPED)].mean_err_pct, 0, atol=0.01)
    assert cl.loc["d", "value"] == "9216: w21g8, 10240: w21g8, 11264: w21g8, 12288: w21g8"


def test_grouped_producers_that_lose_their_reuse_miss_the_claims(p85, registered, tmp_path):
    """The grouped producers as slow as row order's lost level would make them (their time x 1.5) and escaping in
    every run; the pairs at the profile's level: every claim missed."""
    run = _call(p85, registered, tmp_path / "run", times={p85.PAIRS: "profile", p85.ROW: "lockstep"},
                ratios={p85.G4: [1.02, 1.6], p85.G8: [1.9]})
    c, cl = _judge(p85, run, tmp_path)
    assert cl.loc[["b", "e"], "met"].tolist() == [False, False]
    d = c.copy()
    slow = d.variant.isin(p85.GROUPED)
    d.loc[slow, "measured_us"] *= 1.5
    d.loc[slow, "mean_err_pct"] = (d.loc[slow, "predicted_us"] / d.loc[slow, "measured_us"] - 1) * 100
    assert p85.claims(d, "post-hoc").met.tolist() == [False, False, False, False, False]


def test_the_naive_predictor_can_win(p85, registered, tmp_path):
    """Grouped producers at the flat predictor's times: the profile 2.8-7.5% slow on them, so (a) missed by groups of 4
    and (c) missed (flat exact); (b) and (d) still met."""
    run = _call(p85, registered, tmp_path / "run", times={p85.G4: "flat", p85.G8: "flat", p85.ROW: "profile"})
    _, cl = _judge(p85, run, tmp_path)
    assert cl.met.tolist() == [False, True, False, True, True]
    assert cl.loc["a", "value"] == "worst +7.5% (w21g4 at H = 9216)"
    assert cl.loc["c", "value"].endswith("against 0.0%")


def test_one_run_or_one_h_is_enough_to_miss(p85, registered, tmp_path):
    """(b) fails on one grouped run of five over 1.15; (d) on one H where a grouped producer is not the fastest; (e) on
    one H where the pairs run at the profile's level, and on a tie."""
    run = _call(p85, registered, tmp_path / "run", times={p85.ROW: "profile"},
                ratios={p85.G8: [1.02, 1.03, 1.2, 1.01, 1.02]})
    c, cl = _judge(p85, run, tmp_path)
    assert not cl.loc["b", "met"] and cl.loc["b", "value"] == "ratios 1.01-1.20"
    d = c.copy()
    at = (d.h == 11264) & d.variant.isin(p85.GROUPED)
    d.loc[at, "measured_us"] = 500.0
    assert not p85.claims(d, "post-hoc").set_index("claim").loc["d", "met"]
    for lockstep, profile in ((-6.9, 0.5), (-3.0, 3.0)):
        e = c.copy()
        pairs = (e.h == 10240) & (e.variant == p85.PAIRS)
        e.loc[pairs & (e.predictor == "lockstep"), "mean_err_pct"] = lockstep
        e.loc[pairs & (e.predictor == "profile"), "mean_err_pct"] = profile
        assert not p85.claims(e, "post-hoc").set_index("claim").loc["e", "met"]
    assert p85.claims(c, "post-hoc").set_index("claim").loc["e", "met"]


@pytest.fixture(scope="module")
def as_modelled(p85, registered, tmp_path_factory):
    """The cases of a call that runs as the model says (row order at its lost level), judged once."""
    tmp = tmp_path_factory.mktemp("p85")
    return _judge(p85, _call(p85, registered, tmp / "run", times={p85.ROW: "profile"}), tmp)[0]


@pytest.mark.parametrize("claim, variant, column, value, met", [
    ("a", "cutlass_ctapipe_w21g8", "mean_err_pct", 4.9, True),
    ("a", "cutlass_ctapipe_w21g8", "mean_err_pct", -5.1, False),
    ("b", "cutlass_ctapipe_w21g4", "ratio_max", 1.149, True),
    ("b", "cutlass_ctapipe_w21g4", "ratio_max", 1.15, False),
])
def test_each_claim_turns_at_its_edge(p85, as_modelled, claim, variant, column, value, met):
    c = as_modelled.copy()
    c.loc[(c.variant == variant) & (c.h == 10240) & (c.predictor == "profile"), column] = value
    assert p85.claims(c, "post-hoc").set_index("claim").loc[claim, "met"] == met


def test_an_h200_call_is_judged_on_the_h200_rows(p85, registered, tmp_path):
    run = _call(p85, registered, tmp_path / "run", gpu="H200", times={p85.ROW: "profile"})
    c, cl = _judge(p85, run, tmp_path)
    assert set(c.gpu) == {"H200"} and cl.loc[["a", "b", "d", "e"], "met"].all()


@pytest.mark.parametrize("damage, message", [
    (lambda run: (run / "env.txt").unlink(), "run/env.txt (plan 85's call"),
    (lambda run: (run / "OUT_H12288" / "percta-runs.csv").unlink(), "OUT_H12288/percta-runs.csv (plan 85's call"),
    (lambda run: (run / "OUT_H9216" / "percta-tiles-16384-cutlass_ctapipe_w21g8.csv.gz").unlink(),
     "percta-tiles-16384-cutlass_ctapipe_w21g8.csv.gz (plan 85's call"),
    (lambda run: pd.read_csv(run / "OUT_H9216" / "percta-runs.csv").iloc[1:].to_csv(
        run / "OUT_H9216" / "percta-runs.csv", index=False), "4 runs of cutlass_ctapipe at M = 16384, not the 5"),
    (lambda run: pd.read_csv(run / "OUT_H9216" / "percta-runs.csv").assign(run=lambda d: d.run + 0.5).to_csv(
        run / "OUT_H9216" / "percta-runs.csv", index=False), "not the 5 (0 to 4) plan 85 asks"),
    (lambda run: pd.read_csv(run / "OUT_H9216" / "percta.csv").assign(slots=114).to_csv(
        run / "OUT_H9216" / "percta.csv", index=False), "ran 114 CTAs at once, not the 132"),
    (lambda run: (run / "OUT_H10240" / "percta.csv").unlink(), "OUT_H10240/percta.csv (plan 85's call"),
    (lambda run: pd.read_csv(run / "OUT_H9216" / "percta-tiles-16384-cutlass_ctapipe_w21.csv.gz").assign(
        t_acquire=lambda d: d.t_acquire.astype(str).where(d.cta != 7, "x")).to_csv(
        run / "OUT_H9216" / "percta-tiles-16384-cutlass_ctapipe_w21.csv.gz", index=False),
     "t_acquire of row 7 is not a number"),
    (lambda run: pd.read_csv(run / "OUT_H9216" / "percta-tiles-16384-cutlass_ctapipe_w21.csv.gz").assign(
        cta=lambda d: d.cta.where(d.cta != 5, 6)).to_csv(
        run / "OUT_H9216" / "percta-tiles-16384-cutlass_ctapipe_w21.csv.gz", index=False),
     "the CTAs are not 0 to 4607, each once"),
    (lambda run: pd.read_csv(run / "OUT_H9216" / "percta-tiles-16384-cutlass_ctapipe.csv.gz").iloc[1:].to_csv(
        run / "OUT_H9216" / "percta-tiles-16384-cutlass_ctapipe.csv.gz", index=False), "4607 tiles, not the 4608"),
])
def test_a_call_it_cannot_judge_is_refused_in_one_line(p85, registered, tmp_path, capsys, damage, message):
    run = _call(p85, registered, tmp_path / "run")
    damage(run)
    out = tmp_path / "judged"
    assert p85.main(["--judge", str(run), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("plan85_grouped_kept: ") and message in err and "\n" not in err, err
    assert not out.exists()


def test_the_committed_h100_call_judges_as_committed(p85, tmp_path):
    """The call (bench/results/hw-h100/2026-12-07-registered85-1gpu, GPU-d3274ca1) judged again gives the committed
    tables, and what docs/validation.md reads off them: (a), (b) and (d) met, (c) and (e) missed, as registered."""
    c, cl = _rejudged(p85, "2026-12-07-registered85-1gpu", "validation-registered85", tmp_path)
    assert list(cl.met) == [True, True, False, True, False]
    assert cl.provenance.str.startswith("registered: predictions added in 7c4df3ef").all()


def test_docs_quote_the_committed_call(p85):
    """docs/validation.md's plan 85 table is the committed cases.csv: each H's measured means and the three
    predictors' errors per producer."""
    doc = _doc_section(p85, 85)
    c = pd.read_csv(p85.ROOT / "bench/results/validation-registered85/cases.csv")
    _assert_doc_table(doc, c, p85.VARIANTS, p85.PREDICTORS)


def test_a_kept_made_up_call_is_copied_and_keyed_by_what_builds_it(p85, registered, tmp_path):
    """``tests.helpers.kept_made_up_call``: a damaged copy leaves the next copy whole; other keywords or another
    registration build another call."""
    a = _call(p85, registered, tmp_path / "a")
    (a / "env.txt").unlink()
    b = _call(p85, registered, tmp_path / "b")
    assert (b / "env.txt").is_file()
    f = f"OUT_H{p85.HS[0]}/percta-tiles-{p85.M}-{p85.ROW}.csv.gz"
    c = _call(p85, registered, tmp_path / "c", times={p85.ROW: "profile"})
    assert pd.read_csv(c / f).t_compute_end.max() > pd.read_csv(b / f).t_compute_end.max()
    slower = registered.assign(us=registered.us * 2)
    d = _call(p85, slower, tmp_path / "d")
    assert pd.read_csv(d / f).t_compute_end.max() > pd.read_csv(b / f).t_compute_end.max()
