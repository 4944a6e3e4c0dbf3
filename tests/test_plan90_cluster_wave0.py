"""bench/plan90_cluster_wave0.py: registered plan 90's registration (row order's first wave over the 2x1 and 1x2
producers', the model's 1.00 against the post-hoc reading), its judge on made-up calls whose first waves run at chosen
ratios, and calls it must refuse (no GPU)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from tests.helpers import GZ_FAST, load_bench
from tests.test_plan83_alone_edge import ENV
from tests.test_plan85_grouped_kept import _judge


@pytest.fixture(scope="module")
def p90():
    return load_bench("plan90_cluster_wave0")


@pytest.fixture(scope="module")
def registered(p90):
    return pd.read_csv(p90.REGISTERED / "predicted.csv")


def test_the_registration_is_the_model_and_the_post_hoc_reading(p90, registered):
    """The model prices every cluster's first wave alike (1.000); the reading is the committed post-hoc medians; at
    both H the four producers' first waves hold the same 132 tiles."""
    from ctahw.percta import producer_case

    now = p90.register()
    assert np.allclose(now.row_over, registered.row_over, atol=1e-9) and np.allclose(now.wave0_us, registered.wave0_us)
    model = registered[registered.predictor == "model"]
    assert np.allclose(model.row_over, 1.0, atol=1e-6)
    s = pd.read_csv(p90.ROOT / "bench/results/posthoc-cluster-mainloop/summary.csv").set_index(["gpu", "variant"])
    assert p90.READING["H100"][p90.W21] == s.loc[("H100", p90.W21), "row_over_median"]
    assert p90.READING["H100"][p90.C21] == s.loc[("H100", p90.C21), "row_over_median"]
    assert p90.READING["H200"][p90.C21] == p90.READING["H200"][p90.W21] == s.loc[("H200", p90.C21), "row_over_median"]
    assert p90.READING["H100"][p90.C12] == p90.READING["H200"][p90.C12] == s.loc[("H200", p90.C12), "row_over_median"]
    for h in p90.HS:
        first = {v: set(producer_case(p90.M, h, v).kernel.order[:132].tolist()) for v in p90.VARIANTS}
        assert all(x == first[p90.ROW] for x in first.values()), h
        assert {producer_case(p90.M, h, v).cluster for v in p90.VARIANTS} == {"1x1", "1x2", "2x1"}


def first_wave_call(plan, run, times, gpu="H100", early=None, wave_ns=400_000):
    """A made-up call of ``plan``'s producers alone on ``gpu`` (the producer-alone plans 90-94): producer v's wave 0
    at H runs ``times[(h, v)]`` us, its later waves 150 us, a wave every ``wave_ns``; ``percta-runs.csv``'s waves 0-1
    median ``early[(h, v)]`` ns (default the wave-0 time)."""
    from plan83_alone_edge import tiles

    run.mkdir(parents=True, exist_ok=True)
    (run / "env.txt").write_text("index, name, uuid, serial, driver_version, clocks.current.sm [MHz]\n"
                                 + ENV[gpu] + "\n")
    for h in plan.HS:
        out = run / f"OUT_H{h}"
        out.mkdir()
        n = tiles(h, plan.M)
        cta = np.arange(n)
        runs = []
        for i, v in enumerate(plan.VARIANTS):
            main = np.where(cta < 132, times[(h, v)] * 1e3, 150_000).astype(np.int64)
            start = (cta // 132) * wave_ns + cta % 132
            acquire = start + 100 + 3_000 * i  # each producer waits its own time before its mainloop
            pd.DataFrame({"cta": cta, "sm": cta % 132, "t_start": start, "t_acquire": acquire,
                          "t_mainloop_end": acquire + main, "t_compute_end": acquire + 1500 + main}).to_csv(
                out / f"percta-tiles-{plan.M}-{v}.csv.gz", index=False, compression=GZ_FAST)
            runs.append(pd.DataFrame({"m": plan.M, "variant": v, "run": np.arange(plan.RUNS),
                                      "mainloop_early_ns": early[(h, v)] if early else times[(h, v)] * 1e3}))
        pd.concat(runs).to_csv(out / "percta-runs.csv", index=False)
        pd.DataFrame({"m": plan.M, "variant": list(plan.VARIANTS), "slots": 132,
                      "cluster": [plan.CLUSTER[v] for v in plan.VARIANTS]}).to_csv(out / "percta.csv", index=False)
    return run


def _made_up(p90, run, ratios=None, gpu="H100", early=100_000.0):
    """A made-up call on ``gpu``: each producer's wave 0 runs row order's 100 us over ``ratios[v]`` (default the
    H100 reading's), its later waves 150 us (:func:`first_wave_call`)."""
    ratios = {p90.ROW: 1.0, **(ratios or p90.READING["H100"])}
    keys = [(h, v) for h in p90.HS for v in p90.VARIANTS]
    return first_wave_call(p90, run, {k: 100 / ratios[k[1]] for k in keys}, gpu,
                           early={k: early / ratios[k[1]] for k in keys}, wave_ns=200_000)


def test_a_call_that_runs_as_the_reading_says_meets_every_claim(p90, tmp_path):
    c, cl = _judge(p90, _made_up(p90, tmp_path / "run"), tmp_path)
    assert cl.met.all(), cl
    assert np.allclose(c[c.predictor == "reading"].err_points, 0, atol=0.01)
    assert cl.loc["a", "value"] == "5632: 1.073, 16896: 1.073"
    assert np.allclose(c.early_measured, c.measured, atol=1e-3)


def test_a_call_that_runs_as_the_model_says_misses_a_and_d(p90, tmp_path):
    run = _made_up(p90, tmp_path / "run", ratios={p90.C12: 1.0, p90.C21: 1.0, p90.W21: 1.0})
    _, cl = _judge(p90, run, tmp_path)
    assert cl.met.tolist() == [False, True, True, False]


@pytest.mark.parametrize("ratios, claim", [
    ({"cutlass_ctapipe_c21": 1.039, "cutlass_ctapipe_w21": 1.039}, "a"),  # 2x1 saves under 4%
    ({"cutlass_ctapipe_c12": 1.03}, "b"),  # A multicast saves 3%
    ({"cutlass_ctapipe_w21": 1.0727 * 1.021}, "c"),  # counting 2.1% faster than pushing
    ({"cutlass_ctapipe_w21": 1.0727 / 1.021}, "c"),  # pushing 2.1% faster than counting
])
def test_each_claim_turns_at_its_edge(p90, tmp_path, ratios, claim):
    base = dict(p90.READING["H100"], **{p90.W21: p90.READING["H100"][p90.C21]})
    _, cl = _judge(p90, _made_up(p90, tmp_path / "run", ratios={**base, **ratios}), tmp_path)
    assert not cl.loc[claim, "met"] and cl.drop(index=[claim, "d"]).met.all(), cl


def test_claim_c_is_pushing_over_counting_and_passes_inside_its_band(p90, tmp_path):
    ratios = dict(p90.READING["H100"], **{p90.W21: 1.0727 * 1.019})  # counting 1.9% faster
    _, cl = _judge(p90, _made_up(p90, tmp_path / "run", ratios=ratios), tmp_path)
    assert cl.loc["c", "met"] and cl.loc["c", "value"] == "5632: 1.019, 16896: 1.019"


def test_an_h200_call_is_judged_on_its_rows(p90, tmp_path):
    c, cl = _judge(p90, _made_up(p90, tmp_path / "run", ratios=p90.READING["H200"], gpu="H200"), tmp_path)
    assert set(c.gpu) == {"H200"} and cl.met.all()
    assert np.allclose(c[c.predictor == "reading"].err_points, 0, atol=0.01)


@pytest.mark.parametrize("damage, message", [
    (lambda run: (run / "env.txt").unlink(), "env.txt (plan 90's call"),
    (lambda run: (run / "OUT_H5632" / "percta-tiles-16384-cutlass_ctapipe_c12.csv.gz").unlink(),
     "percta-tiles-16384-cutlass_ctapipe_c12.csv.gz (plan 90's call"),
    (lambda run: pd.read_csv(run / "OUT_H16896" / "percta-runs.csv").iloc[1:].to_csv(
        run / "OUT_H16896" / "percta-runs.csv", index=False), "4 runs of cutlass_ctapipe at M = 16384, not the 5"),
    (lambda run: pd.read_csv(run / "OUT_H5632" / "percta.csv").assign(slots=66).to_csv(
        run / "OUT_H5632" / "percta.csv", index=False), "ran 66 CTAs at once, not the 132"),
    (lambda run: pd.read_csv(run / "OUT_H5632" / "percta-tiles-16384-cutlass_ctapipe_w21.csv.gz").iloc[1:].to_csv(
        run / "OUT_H5632" / "percta-tiles-16384-cutlass_ctapipe_w21.csv.gz", index=False), "2815 tiles, not the 2816"),
    (lambda run: pd.read_csv(run / "OUT_H16896" / "percta.csv").assign(cluster="1x1").to_csv(
        run / "OUT_H16896" / "percta.csv", index=False), "cutlass_ctapipe_c12 ran at cluster 1x1, not 1x2"),
    (lambda run: pd.read_csv(run / "OUT_H5632" / "percta-tiles-16384-cutlass_ctapipe_c21.csv.gz").assign(
        t_start=lambda t: t.t_start + np.where(t.cta == 131, 10**6, 0)).to_csv(
        run / "OUT_H5632" / "percta-tiles-16384-cutlass_ctapipe_c21.csv.gz", index=False),
     "a CTA of wave 0 started after another had finished"),
])
def test_a_call_it_cannot_judge_is_refused_in_one_line(p90, tmp_path, capsys, damage, message):
    run = _made_up(p90, tmp_path / "run")
    damage(run)
    out = tmp_path / "judged"
    assert p90.main(["--judge", str(run), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("plan90_cluster_wave0: ") and message in err and "\n" not in err, err
    assert not out.exists()


def test_the_committed_h100_call_judges_as_committed_and_docs_quote_it(p90, tmp_path):
    """The call (bench/results/hw-h100/2026-12-07-registered90-1gpu, GPU-0d29e4a7) judged again gives the committed
    tables: (a) and (b) missed, (c) and (d) met, registered; docs/validation.md's plan 90 tables are what it gives."""
    from tests.test_plan85_grouped_kept import _doc_section, _rejudged

    c, cl = _rejudged(p90, "2026-12-07-registered90-1gpu", "validation-registered90", tmp_path)
    assert cl.met.tolist() == [False, False, True, True]
    assert cl.provenance.str.startswith("registered: predictions added in 2dd4dcce").all()
    doc = " ".join(_doc_section(p90, 90).split())
    for claim in "abcd":
        assert cl.loc[claim, "value"] in doc, claim
    m = p90.measured(p90.ROOT / "bench/results/hw-h100/2026-12-07-registered90-1gpu").set_index(["h", "variant"])
    ratio = c[c.predictor == "model"].set_index(["h", "variant"]).measured
    for h in p90.HS:
        row = f"| {h} | {m.loc[(h, p90.ROW), 'wave0_us']:.1f} | " + " | ".join(
            f"{m.loc[(h, v), 'wave0_us']:.1f} ({ratio[(h, v)]:.3f})" for v in p90.VARIANTS[1:]) + " |"
        assert row in doc, row
