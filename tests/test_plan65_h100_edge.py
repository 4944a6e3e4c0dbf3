"""bench/plan65_h100_edge.py: registered plan 65's registration (the H100 datasheet profile and its latency twin
beside the naive line and the H200s' measured medians), its claims and adoption rule on made-up runs, and its judge
on a call it must refuse (no GPU)."""

from __future__ import annotations

import pandas as pd
import pytest

from tests.helpers import h200_calls_as, load_bench


@pytest.fixture(scope="module")
def p65():
    return load_bench("plan65_h100_edge")


@pytest.fixture(scope="module")
def registered(p65):
    return pd.read_csv(p65.REGISTERED / "predicted.csv")


def test_the_registration_is_what_its_sources_give(p65, registered):
    pd.testing.assert_frame_equal(p65.register().reset_index(drop=True), registered, check_exact=False, rtol=0,
                                  atol=5e-5, check_dtype=False)
    counts = registered.groupby("source").size()
    assert set(counts.index) == set(p65.SOURCES) and counts.nunique() == 1 and counts.iloc[0] == 27
    # the twin differs from the model only by the exposed HBM share's rate: it is never slower
    w = registered.pivot_table(index=["experiment", "case", "strategy"], columns="source", values="predicted_ms")
    assert (w["latency"] <= w["model"] + 1e-9).all() and (w["latency"] < w["model"]).any()


def _timed(registered, source):
    m = registered[registered["source"] == source][["experiment", "case", "strategy", "predicted_ms"]]
    return m.rename(columns={"predicted_ms": "measured_ms"})


def test_an_h100_as_the_model_priced_it_meets_the_model_claims_and_adopts_nothing(p65, registered):
    cl = p65.claims(p65.cases(registered, _timed(registered, "model")), "test").set_index("claim")
    assert cl.loc[list("abcd"), "met"].all(), cl
    assert not cl.loc[["e", "f", "adopt"], "met"].any()


def test_an_h100_as_the_twin_priced_it_adopts_the_twin(p65, registered):
    cl = p65.claims(p65.cases(registered, _timed(registered, "latency")), "test").set_index("claim")
    assert cl.loc[["e", "f", "adopt"], "met"].all(), cl


def test_an_h100_that_runs_as_an_h200_misses_c(p65, registered):
    cl = p65.claims(p65.cases(registered, _timed(registered, "h200-measured")), "test").set_index("claim")
    assert not cl.loc["c", "met"]


def test_a_case_without_its_timing_is_refused(p65, registered):
    meas = _timed(registered, "model")
    drop = (meas["experiment"] == "reg56-chain-gradual-h6912") & (meas["case"] == "m=12288") & \
        (meas["strategy"] == "intragpu-row")
    with pytest.raises(p65.JudgeError, match="reg56-chain-gradual-h6912: no timed run of m=12288 intragpu-row"):
        p65.cases(registered, meas[~drop])


H200_CALLS = {"reg49-reference": "2026-12-05-registered59-1gpu",
              "reg49-chain-order-h5120": "2026-12-04-registered49-1gpu",
              "reg56-chain-gradual-h6912": "2026-12-05-registered56-1gpu"}


def _call(p65, tmp_path, gpu):
    """The three experiments as H200 calls timed them, under an env.txt naming ``gpu``."""
    return h200_calls_as(H200_CALLS, tmp_path / gpu.replace(" ", "-"), gpu)


def test_the_judge_refuses_an_h200_call_and_judges_one_named_an_h100(p65, tmp_path, capsys):
    out = tmp_path / "o"
    assert p65.main(["--judge", str(_call(p65, tmp_path, "NVIDIA H200")), "--out", str(out)]) == 2
    assert "not an H100" in capsys.readouterr().err and not out.exists()
    assert p65.main(["--judge", str(_call(p65, tmp_path, "NVIDIA H100 80GB HBM3")), "--out", str(out)]) == 0
    cl = pd.read_csv(out / "claims.csv").set_index("claim")
    assert list(cl.index) == [*p65.CLAIMS, "adopt"] and cl["provenance"].str.startswith("post-hoc").all()
    # H200 timings: the H200s' medians hold them (1 of 3 calls at H = 5120, 1 of 2 at 6912), so (c) misses
    assert not cl.loc["c", "met"]
