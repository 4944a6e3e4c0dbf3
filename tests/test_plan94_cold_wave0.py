"""bench/plan94_cold_wave0.py: registered plan 94's registration (mainloops; the cold rule on the call's own probe),
its judge on made-up calls whose probe and first waves are chosen, and calls it must refuse (no GPU)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from tests.helpers import load_bench
from tests.test_plan85_grouped_kept import _judge
from tests.test_plan92_tile_rate_wave0 import _as


@pytest.fixture(scope="module")
def p94():
    return load_bench("plan94_cold_wave0")


@pytest.fixture(scope="module")
def registered(p94):
    return pd.read_csv(p94.REGISTERED / "predicted.csv")


def test_the_registration_is_mainloops_and_the_probe_runs_at_the_plans_n(p94, registered):
    now = p94.register()
    assert np.allclose(now.wave0_us, registered.wave0_us, atol=1e-4)
    assert set(registered.predictor) == {"flat", "model", "by_n"}
    assert p94.BEFORE.endswith("--cold-ns 16,19,21,41")
    assert p94.cold_us(p94.ROW, 40.0, 45.0) == 45.0 and p94.cold_us(p94.ROW, 40.0, 35.0) == 40.0
    assert p94.cold_us(p94.W21, 40.0, 45.0) == 40.0


def _made_up(p94, run, times, probe):
    from tests.test_plan92_tile_rate_wave0 import _made_up as tables

    tables(p94, run, times)
    (run / "l2rate").mkdir()
    (run / "l2rate" / "l2-rate.json").write_text(json.dumps({"tile_cold_us": {str(n): t for n, t in probe.items()}}))
    return run


def test_a_call_where_the_1x1_wave_is_its_cold_loads_meets_a_b_d(p94, registered, tmp_path):
    model = _as(registered, "model")
    probe = {16: 45.0, 19: 55.0, 21: 61.0, 41: 150.0}  # over the model at every n
    times = {**model, **{(h, p94.ROW): probe[h // 256] for h in p94.HS}}
    times[(10496, p94.ROW)] = 150.0 / 1.2  # the probe 20% over the GEMM at 41: (c) met
    c, cl = _judge(p94, _made_up(p94, tmp_path / "run", times, probe), tmp_path)
    assert cl.met.all(), cl
    cold = c[(c.predictor == "cold") & (c.variant == p94.ROW)].set_index("n").err_pct
    assert np.allclose(cold.loc[[16, 19, 21]], 0, atol=0.01) and cold.loc[41] == pytest.approx(20.0, abs=0.01)


def test_a_call_that_runs_as_the_model_says_misses_a_b(p94, registered, tmp_path):
    """The probe 5-8% over the model at 16-21 tiles a row: cold off by that, by_n (13-16% over) further: (d) met."""
    probe = {16: 45.0, 19: 55.0, 21: 61.0, 41: 150.0}
    _, cl = _judge(p94, _made_up(p94, tmp_path / "run", _as(registered, "model"), probe), tmp_path)
    assert cl.met.tolist() == [False, False, True, True]
    _, cl = _judge(p94, _made_up(p94, tmp_path / "r2", _as(registered, "by_n"), probe), tmp_path / "j2")
    assert not cl.loc["d", "met"]  # the waves ran at by_n: cold is the farther


@pytest.mark.parametrize("damage, message", [
    (lambda run: (run / "l2rate" / "l2-rate.json").unlink(), "l2-rate.json (plan 94's call runs python3"),
    (lambda run: (run / "l2rate" / "l2-rate.json").write_text('{"tile_cold_us": {"16": 1}}'),
     "no cold probe time at 19 tiles a row"),
    (lambda run: (run / "l2rate" / "l2-rate.json").write_text("[]"), "not the probe's output"),
])
def test_a_call_it_cannot_judge_is_refused_in_one_line(p94, registered, tmp_path, capsys, damage, message):
    run = _made_up(p94, tmp_path / "run", _as(registered, "model"), {16: 1.0, 19: 1.0, 21: 1.0, 41: 1.0})
    damage(run)
    out = tmp_path / "judged"
    assert p94.main(["--judge", str(run), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("plan94_cold_wave0: ") and message in err and "\n" not in err, err
    assert not out.exists()


def test_the_committed_h100_call_judges_as_committed_and_docs_quote_it(p94, tmp_path):
    """The call (bench/results/hw-h100/2026-12-07-registered94-1gpu, GPU-26f96699) judged again gives the committed
    tables: (a) and (b) missed, (c) and (d) met, registered; docs/validation.md's plan 94 tables are what it gives."""
    from tests.test_plan85_grouped_kept import _doc_section, _rejudged

    c, cl = _rejudged(p94, "2026-12-07-registered94-1gpu", "validation-registered94", tmp_path)
    assert cl.met.tolist() == [False, False, True, True]
    assert cl.provenance.str.startswith("registered: predictions added in 13e904b4").all()
    doc = " ".join(_doc_section(p94, 94).split())
    for claim in "abcd":
        assert cl.loc[claim, "value"] in doc, claim
    t = c.set_index(["h", "variant", "predictor"])
    for h in p94.HS:
        row = (f"| {h} ({h // 256}) | {t.loc[(h, p94.ROW, 'model'), 'measured_us']:.1f} | "
               f"{t.loc[(h, p94.W21, 'model'), 'measured_us']:.1f} | {t.loc[(h, p94.ROW, 'model'), 'probe_us']:.1f} | "
               + " | ".join(f"{t.loc[(h, p94.ROW, p), 'err_pct']:+.1f}" for p in ("flat", "model", "by_n", "cold"))
               + " |")
        assert row in doc, row
