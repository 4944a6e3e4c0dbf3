"""bench/plan91_l2_rate_wave0.py: registered plan 91's registration (the model's first waves, floored at the tile's
L2-to-SM reads at plan 90's read-off rate and at every rate the call's probe may give), its judge on made-up calls
whose probe and first waves are chosen, and calls it must refuse (no GPU)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from tests.helpers import load_bench
from tests.test_plan85_grouped_kept import _judge


@pytest.fixture(scope="module")
def p91():
    return load_bench("plan91_l2_rate_wave0")


@pytest.fixture(scope="module")
def registered(p91):
    return pd.read_csv(p91.REGISTERED / "predicted.csv")


def test_the_registration_is_the_model_floored_at_each_rate(p91, registered):
    """``model`` as plan 90 registered it; the floor moves only the 1x1 producer at plan 90's rate (the 1x2 and 2x1
    reads are under the model's time there) and every producer at low enough a rate; the 1x1 floor is its 132 tiles'
    (128 + 256) x K x 2 bytes over the rate."""
    now = p91.register()
    assert np.allclose(now.wave0_us, registered.wave0_us, atol=1e-4)
    assert (now[["gpu", "h", "variant", "predictor"]].values == registered[["gpu", "h", "variant", "predictor"]]
            .values).all()
    r = registered.set_index(["gpu", "h", "variant", "predictor", "rate_gbps"])["wave0_us"]
    for h in p91.HS:
        model = r.xs(("H100", h), level=("gpu", "h")).xs("model", level="predictor")
        assert model.nunique() == 1
        plan90 = r.xs(("H100", h, "plan90"), level=("gpu", "h", "predictor"))
        assert plan90.loc[p91.ROW].iloc[0] == pytest.approx(132 * 384 * h * 2 / 8695.0 / 1e3, rel=1e-3)
        assert plan90.loc[p91.C12].iloc[0] == plan90.loc[p91.W21].iloc[0] == model.iloc[0]
        low = r.loc[("H100", h, p91.W21, "probe", 3000.0)]
        assert low == pytest.approx(132 * 256 * h * 2 / 3000.0 / 1e3, rel=1e-3)  # the 2x1 floor at 3 TB/s
    assert set(registered[registered.predictor == "probe"].rate_gbps) == set(map(float, p91.RATES))


def test_the_nearest_registered_rate_is_taken_the_lower_on_a_tie(p91):
    assert p91.nearest_rate(8695.0) == 8700.0 and p91.nearest_rate(8649.0) == 8600.0
    assert p91.nearest_rate(8650.0) == 8600.0


def _made_up(p91, run, times, rate=8700.0, bound="l2", gpu="H100"):
    """A made-up call on ``gpu``: the probe gave ``rate`` and ``bound``; producer v's wave 0 at H runs
    ``times[(h, v)]`` us, its later waves 150 us (``test_plan92_tile_rate_wave0._made_up``'s tables)."""
    from tests.test_plan92_tile_rate_wave0 import _made_up as tables

    tables(p91, run, times, gpu)
    (run / "l2rate").mkdir()
    (run / "l2rate" / "l2-rate.json").write_text(json.dumps({"l2_sm_read_gbps": rate, "bound": bound}))
    return run


def _as(registered, predictor, rate=None, gpu="H100"):
    p = registered[(registered.gpu == gpu) & (registered.predictor == predictor)]
    if rate is not None:
        p = p[p.rate_gbps == rate]
    return {(int(r.h), r.variant): float(r.wave0_us) for r in p.itertuples()}


def test_a_call_that_runs_as_the_probe_predicts_meets_every_claim(p91, registered, tmp_path):
    c, cl = _judge(p91, _made_up(p91, tmp_path / "run", _as(registered, "probe", 8700.0)), tmp_path)
    assert cl.met.all(), cl
    assert np.allclose(c[c.predictor == "probe"].err_pct, 0, atol=0.01)
    assert set(c[c.predictor == "probe"].rate_gbps) == {8700.0}
    assert cl.loc["b", "value"] == "8700 GB/s (+0.1%)"


def test_a_call_that_runs_as_the_model_says_misses_c_d_e(p91, registered, tmp_path):
    _, cl = _judge(p91, _made_up(p91, tmp_path / "run", _as(registered, "model")), tmp_path)
    assert cl.met.tolist() == [True, True, False, False, False]


@pytest.mark.parametrize("rate, bound, claim", [(8700.0, "sm", "a"), (8700.0, "neither", "a"),
                                                (7390.0, "l2", "b")])
def test_the_probes_claims_turn_at_their_edges(p91, registered, tmp_path, rate, bound, claim):
    times = _as(registered, "probe", p91.nearest_rate(rate))
    _, cl = _judge(p91, _made_up(p91, tmp_path / "run", times, rate=rate, bound=bound), tmp_path)
    assert not cl.loc[claim, "met"] and cl.drop(index=claim).met.all(), cl


def test_a_probe_rate_too_high_to_floor_any_wave_misses_b_c_d_e(p91, registered, tmp_path):
    """At 10000 GB/s (15% over plan 90's) no floor binds: the probe predicts as the model; the waves ran at plan
    90's rate's floor."""
    _, cl = _judge(p91, _made_up(p91, tmp_path / "run", _as(registered, "plan90"), rate=10000.0), tmp_path)
    assert cl.met.tolist() == [True, False, False, False, False]
    assert cl.loc["b", "value"] == "10000 GB/s (+15.0%)"


def test_claim_b_holds_inside_its_band(p91, registered, tmp_path):
    times = _as(registered, "probe", 7400.0)
    _, cl = _judge(p91, _made_up(p91, tmp_path / "run", times, rate=7400.0), tmp_path)  # -14.9%
    assert cl.loc["b", "met"] and cl.loc["b", "value"] == "7400 GB/s (-14.9%)"


def test_claim_d_turns_at_five_percent_of_the_1x1_wave(p91, registered, tmp_path):
    times = _as(registered, "probe", 8700.0)
    h = p91.HS[1]
    over = {**times, (h, p91.ROW): times[(h, p91.ROW)] / 1.051}  # the probe 5.1% over at one H
    _, cl = _judge(p91, _made_up(p91, tmp_path / "run", over), tmp_path)
    assert not cl.loc["d", "met"] and f"{h}: +5.10%" in cl.loc["d", "value"]
    inside = {**times, (h, p91.ROW): times[(h, p91.ROW)] / 1.049}
    _, cl = _judge(p91, _made_up(p91, tmp_path / "inside", inside), tmp_path / "j")
    assert cl.loc["d", "met"]


@pytest.mark.parametrize("damage, message", [
    (lambda run: (run / "l2rate" / "l2-rate.json").unlink(), "l2-rate.json (plan 91's call runs python3 bench/hw/"),
    (lambda run: (run / "l2rate" / "l2-rate.json").write_text("{}"), "not the probe's output"),
    (lambda run: (run / "l2rate" / "l2-rate.json").write_text('{"l2_sm_read_gbps": 25000, "bound": "l2"}'),
     "a rate of 25000 GB/s, outside the registered 3000-20000"),
    (lambda run: (run / "env.txt").unlink(), "env.txt (plan 91's call"),
    (lambda run: pd.read_csv(run / "OUT_H4608" / "percta.csv").assign(cluster="1x1").to_csv(
        run / "OUT_H4608" / "percta.csv", index=False), "cutlass_ctapipe_c12 ran at cluster 1x1, not 1x2"),
])
def test_a_call_it_cannot_judge_is_refused_in_one_line(p91, registered, tmp_path, capsys, damage, message):
    run = _made_up(p91, tmp_path / "run", _as(registered, "model"))
    damage(run)
    out = tmp_path / "judged"
    assert p91.main(["--judge", str(run), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("plan91_l2_rate_wave0: ") and message in err and "\n" not in err, err
    assert not out.exists()


def test_the_committed_h100_call_judges_as_committed_and_docs_quote_it(p91, tmp_path):
    """The call (bench/results/hw-h100/2026-12-07-registered91-1gpu, GPU-0a5b92bd) judged again gives the committed
    tables: every claim missed, registered; docs/validation.md's plan 91 tables are what it gives."""
    from tests.test_plan85_grouped_kept import _doc_section, _rejudged

    c, cl = _rejudged(p91, "2026-12-07-registered91-1gpu", "validation-registered91", tmp_path)
    assert not cl.met.any()
    assert cl.provenance.str.startswith("registered: predictions added in 1d78d534").all()
    doc = " ".join(_doc_section(p91, 91).split())
    for claim in "abcde":
        assert cl.loc[claim, "value"] in doc, claim
    t = c.set_index(["h", "variant", "predictor"])
    for h in p91.HS:
        m = {v: t.loc[(h, v, "model"), "measured_us"] for v in p91.VARIANTS}
        row = (f"| {h} | {m[p91.ROW]:.1f} | " + " | ".join(
            f"{m[v]:.1f} ({t.loc[(h, v, 'model'), 'row_over']:.3f})" for v in p91.VARIANTS[1:])
            + "".join(f" | {t.loc[(h, p91.ROW, name), 'predicted_us']:.1f}" for name in ("model", "plan90", "probe"))
            + " |")
        assert row in doc, row
