"""bench/plan63_reference_scaled.py: registered plan 63's registration (the registered predictions it scales), the
scaling on made-up runs, and its judge on plan 59's committed call (post-hoc) and on calls it must refuse (no GPU)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest

from tests.helpers import load_bench

CALL = Path(__file__).resolve().parent.parent / "bench/results/hw/2026-12-05-registered59-1gpu"


@pytest.fixture(scope="module")
def p63():
    return load_bench("plan63_reference_scaled")


@pytest.fixture(scope="module")
def registered(p63):
    return pd.read_csv(p63.REGISTERED / "predicted.csv")


def test_the_registration_is_the_registered_predictions_it_scales(p63, registered):
    got = p63.register()
    pd.testing.assert_frame_equal(got.reset_index(drop=True), registered, check_exact=False, rtol=0, atol=5e-5)
    assert set(registered["source"]) == {"model", "naive"} and set(registered["experiment"]) == set(p63.EXPERIMENTS)
    # plan 58's rows are its twin's (the profile as it is now), not plan 58's own (the profile before its adoption)
    twin = pd.read_csv(p63.PREDICTIONS / "reg58-gap-law-h7424-gaps" / "predictions.csv")
    own = pd.read_csv(p63.PREDICTIONS / "reg58-gap-law-h7424" / "predictions.csv")
    key = (twin["case"] == "m=16384") & (twin["strategy"] == "intragpu-row") & (twin["source"] == "model")
    r = registered[(registered["experiment"] == "reg58-gap-law-h7424") & (registered["case"] == "m=16384")
                   & (registered["strategy"] == "intragpu-row") & (registered["source"] == "model")]
    assert float(r["predicted_ms"].iloc[0]) == pytest.approx(float(twin[key]["makespan_ms"].iloc[0]), abs=5e-5)
    assert float(r["predicted_ms"].iloc[0]) != pytest.approx(float(own[key.values]["makespan_ms"].iloc[0]), rel=1e-3)


def _measured(registered, slow=1.0, off=None):
    """Made-up timings: every case ``slow`` times its registered model prediction, ``off`` (key -> factor) apart."""
    m = registered[registered["source"] == "model"].rename(columns={"predicted_ms": "measured_ms"}).drop(
        columns="source")
    m["measured_ms"] = m["measured_ms"] * slow
    for (exp, case, strategy), f in (off or {}).items():
        k = (m["experiment"] == exp) & (m["case"] == case) & (m["strategy"] == strategy)
        m.loc[k, "measured_ms"] *= f
    return m


def test_a_uniformly_slow_machine_is_taken_out_by_its_reference(p63, registered):
    c = p63.cases(registered, _measured(registered, slow=1.04))
    model = c[(c["source"] == "model") & c["judged"]]
    assert model["error_pct"].round(3).eq(round((1 / 1.04 - 1) * 100, 3)).all()
    assert model["scaled_error_pct"].abs().max() < 1e-9
    cl = p63.claims(c, "test").set_index("claim")
    assert cl.loc[["a", "b", "d"], "met"].all()
    out = c[~c["judged"]]
    assert len(out) == 2 and set(zip(out["experiment"], out["case"])) == {(p63.REFERENCE, "m=16384")}


def test_a_machine_whose_reference_alone_is_off_is_made_worse(p63, registered):
    """The reference 5% slow, every other case as predicted: scaling puts every other case 5% over, so (a), (b) and
    (d) fail."""
    c = p63.cases(registered, _measured(registered, off={("reg49-reference", "m=16384", "sequential"): 1.05}))
    cl = p63.claims(c, "test").set_index("claim")
    assert not cl.loc[["a", "b", "d"], "met"].any(), cl


def test_the_judge_on_plan_59s_call(p63, tmp_path):
    out = tmp_path / "v"
    assert p63.main(["--judge", str(CALL), "--out", str(out)]) == 0
    cl = pd.read_csv(out / "claims.csv").set_index("claim")
    assert cl["met"].tolist() == [True, False, True, True] and cl["provenance"].str.startswith("post-hoc").all()
    assert "scaled 1.89% against as registered 3.27% (51 cases" in cl.loc["a", "value"]


def test_the_judge_refuses_a_call_without_the_reference_or_plan_58(p63, tmp_path, capsys):
    for missing in ("reg49-reference", "reg58-gap-law-h8448"):
        run = tmp_path / missing
        for e in p63.EXPERIMENTS:
            if e != missing:
                (run / e).mkdir(parents=True)
                shutil.copy(CALL / e / "results.csv", run / e / "results.csv")
        assert p63.main(["--judge", str(run), "--out", str(tmp_path / f"o-{missing}")]) == 2
        assert missing in capsys.readouterr().err and not (tmp_path / f"o-{missing}").exists()


def test_a_case_the_call_ran_without_its_timing_or_a_source_without_its_reference_is_refused(p63, registered):
    meas = _measured(registered)
    drop = (meas["experiment"] == "reg58-gap-law-h8448") & (meas["case"] == "m=16384") & \
        (meas["strategy"] == "intragpu-row")
    with pytest.raises(p63.JudgeError, match="reg58-gap-law-h8448: no timed run of m=16384 intragpu-row"):
        p63.cases(registered, meas[~drop])
    no_naive_ref = registered[~((registered["experiment"] == p63.REFERENCE) & (registered["case"] == "m=16384")
                                & (registered["source"] == "naive"))]
    with pytest.raises(p63.JudgeError, match="not one per source"):
        p63.cases(no_naive_ref, meas)
