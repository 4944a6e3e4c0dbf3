"""bench/plan93_tile_rate_domain.py: registered plan 93's registration (mainloops: the model's tile time less its
fixed part, floored at the committed tensor-copy probes' mean L2-to-SM rate), its judge on made-up calls whose first
waves are chosen, and calls it must refuse (no GPU)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from tests.helpers import load_bench
from tests.test_plan85_grouped_kept import _judge
from tests.test_plan92_tile_rate_wave0 import _as


@pytest.fixture(scope="module")
def p93():
    return load_bench("plan93_tile_rate_domain")


@pytest.fixture(scope="module")
def registered(p93):
    return pd.read_csv(p93.REGISTERED / "predicted.csv")


def test_the_registration_is_mainloops_floored_at_the_two_probes_mean_rate(p93, registered):
    """``model`` and ``flat`` are tile times less the profile's tile_fixed_ns (2.24 us); ``by_n`` floors the 1x1
    mainloop at 132 tiles' (128 + 256) x K x 2 bytes over the two probe runs' mean rate at n, linear in n."""
    import json

    import plan85_grouped_kept as p85
    from ctasim.spec import load_hardware

    now = p93.register()
    assert np.allclose(now.wave0_us, registered.wave0_us, atol=1e-4)
    assert np.allclose(now.rate_gbps, registered.rate_gbps, atol=0.05)
    hw = load_hardware("h100-x8-mechanism")
    assert p93.fixed_us(hw) == pytest.approx(2.24)
    runs = [{int(k): v for k, v in json.loads(f.read_text())["tile_l2_gbps"].items()} for f in p93.PROBES]
    assert p93.rate_by_n(22) == pytest.approx((runs[0][22] + runs[1][22]) / 2)
    assert p93.rate_by_n(24) == pytest.approx((runs[0][22] + runs[1][22] + runs[0][26] + runs[1][26]) / 4)
    r = registered.set_index(["h", "variant", "predictor"])
    for h in p93.HS:
        tile = float(p85.wave_prediction(h, p93.ROW, "lockstep", hw, 0.0, p93.M)[0])
        assert r.loc[(h, p93.ROW, "model"), "wave0_us"] == pytest.approx(tile - 2.24, abs=1e-3)
        floor = 132 * 384 * h * 2 / r.loc[(h, p93.ROW, "by_n"), "rate_gbps"] / 1e3
        assert r.loc[(h, p93.ROW, "by_n"), "wave0_us"] == pytest.approx(floor, rel=1e-4)  # binds at every H
        assert r.loc[(h, p93.W21, "by_n"), "wave0_us"] == r.loc[(h, p93.W21, "model"), "wave0_us"]


def _made_up(p93, run, times):
    from tests.test_plan92_tile_rate_wave0 import _made_up as made

    return made(p93, run, times)


def test_a_call_that_runs_as_by_n_predicts_meets_every_claim(p93, registered, tmp_path):
    c, cl = _judge(p93, _made_up(p93, tmp_path / "run", _as(registered, "by_n")), tmp_path)
    assert cl.met.all(), cl
    assert np.allclose(c[c.predictor == "by_n"].err_pct, 0, atol=0.01)


def test_a_call_that_runs_as_the_model_says_misses_a_b_d(p93, registered, tmp_path):
    _, cl = _judge(p93, _made_up(p93, tmp_path / "run", _as(registered, "model")), tmp_path)
    assert cl.met.tolist() == [False, False, True, False]


def test_each_claim_turns_at_its_edge(p93, registered, tmp_path):
    t = _as(registered, "by_n")
    cases = {
        "b": ({**t, (8960, p93.ROW): t[(8960, p93.ROW)] / 1.041}, {**t, (8960, p93.ROW): t[(8960, p93.ROW)] / 1.039}),
        "c": ({**t, (6400, p93.W21): t[(6400, p93.W21)] / 1.031}, {**t, (6400, p93.W21): t[(6400, p93.W21)] / 1.029}),
        "d": ({**t, (9472, p93.ROW): t[(9472, p93.W21)] * 1.049}, {**t, (9472, p93.ROW): t[(9472, p93.W21)] * 1.051}),
    }
    for claim, (out, inside) in cases.items():
        _, cl = _judge(p93, _made_up(p93, tmp_path / f"{claim}-out", out), tmp_path / f"j{claim}o")
        assert not cl.loc[claim, "met"], (claim, cl)
        _, cl = _judge(p93, _made_up(p93, tmp_path / f"{claim}-in", inside), tmp_path / f"j{claim}i")
        assert cl.loc[claim, "met"], (claim, cl)


def test_a_call_it_cannot_judge_is_refused_in_one_line(p93, registered, tmp_path, capsys):
    run = _made_up(p93, tmp_path / "run", _as(registered, "model"))
    (run / "OUT_H8960" / "percta-tiles-24576-cutlass_ctapipe_w21.csv.gz").unlink()
    out = tmp_path / "judged"
    assert p93.main(["--judge", str(run), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("plan93_tile_rate_domain: ") and "percta-tiles-24576-cutlass_ctapipe_w21.csv.gz" in err
    assert "\n" not in err and not out.exists()


def test_the_committed_h100_call_judges_as_committed_and_docs_quote_it(p93, tmp_path):
    """The call (bench/results/hw-h100/2026-12-07-registered93-1gpu, GPU-a62b2e9d) judged again gives the committed
    tables: (a) and (d) met, (b) and (c) missed, registered; docs/validation.md's plan 93 tables are what it gives."""
    from tests.test_plan85_grouped_kept import _doc_section, _rejudged

    c, cl = _rejudged(p93, "2026-12-07-registered93-1gpu", "validation-registered93", tmp_path)
    assert cl.met.tolist() == [True, False, False, True]
    assert cl.provenance.str.startswith("registered: predictions added in c4d67a98").all()
    doc = " ".join(_doc_section(p93, 93).split())
    for claim in "abcd":
        assert cl.loc[claim, "value"] in doc, claim
    t = c.set_index(["h", "variant", "predictor"])
    for h in p93.HS:
        row = (f"| {h} ({h // 256}) | {t.loc[(h, p93.ROW, 'model'), 'measured_us']:.1f} | "
               f"{t.loc[(h, p93.W21, 'model'), 'measured_us']:.1f} ({t.loc[(h, p93.ROW, 'model'), 'row_over']:.3f}) | "
               + " | ".join(f"{t.loc[(h, p93.ROW, p), 'err_pct']:+.1f}" for p in ("flat", "model", "by_n"))
               + f" | {t.loc[(h, p93.W21, 'model'), 'err_pct']:+.1f} |")
        assert row in doc, row


def test_the_pairs_first_wave_reading_is_what_the_script_gives(tmp_path):
    """bench/posthoc_first_wave_hbm.py: the committed table byte for byte; the model's mainloop within 1.1% of the
    pairs' first wave under 70 MB of W and 2.1-9.0% short from it (docs/validation.md, plan 93); plan 93's rows are its
    judged mainloops as registered, plans 91-92's their tile times less 2.24 us."""
    pf = load_bench("posthoc_first_wave_hbm")
    assert pf.main(["--out", str(tmp_path)]) == 0
    assert (tmp_path / "cases.csv").read_text() == (pf.OUT / "cases.csv").read_text()
    c = pd.read_csv(pf.OUT / "cases.csv")
    small, big = c[c.w_mb < pf.SPLIT_MB], c[c.w_mb >= pf.SPLIT_MB]
    assert len(small) == 7 and small.err_pct.abs().max() < 1.1
    assert len(big) == 24 and big.err_pct.max() == pytest.approx(-2.10, abs=0.005)
    assert big.err_pct.min() == pytest.approx(-8.96, abs=0.005) and f"{big.err_pct.mean():.2f}" == "-4.90"
    judged = pd.read_csv(pf.ROOT / "bench/results/validation-registered93/cases.csv")
    row = judged[(judged.predictor == "model") & (judged.variant == pf.PAIRS) & (judged.h == 6400)].iloc[0]
    assert c[(c.call == "plan 93") & (c.h == 6400)].model_us.iloc[0] == pytest.approx(row.predicted_us)
    doc = " ".join((pf.ROOT / "docs/validation.md").read_text().split())
    assert ("within 1.1% of the pairs' first wave while W is under 70 MB (7 cases, 11-23 tiles a row) and 2.1-9.0% "
            "short from 75 MB on (24 cases, mean -4.90%)") in doc
    # plan 95's yardstick: the model's tile time against the mainloop plus the call's own exposed epilogue
    assert c.epilogue_us.between(1.3, 1.65).all()
    lift = c.tile_err_pct - c.err_pct
    assert (f"+{small.tile_err_pct.min():.1f} to +{small.tile_err_pct.max():.1f}% under 70 MB (mean "
            f"{small.tile_err_pct.mean():+.2f}%) and {big.tile_err_pct.max():.1f} to {big.tile_err_pct.min():.1f}% "
            f"from 75 MB on (mean {big.tile_err_pct.mean():.2f}%); the yardstick moves each case "
            f"{lift.min():.1f}-{lift.max():.1f} points up") in doc
    model_doc = " ".join((pf.ROOT / "docs/model.md").read_text().split())
    assert (f"+{small.tile_err_pct.min():.1f} to +{small.tile_err_pct.max():.1f}% over under 70 MB and "
            f"{big.tile_err_pct.max():.1f} to {big.tile_err_pct.min():.1f}% short from 75 MB on") in model_doc
